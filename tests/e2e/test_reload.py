"""SIGHUP re-reads --instances-file: an instance added to the file gets a
link and serves sessions; one removed from it is gone (404), while
instances given with --instance stay."""
import os
import signal
import time
import unittest

import harness
from harness import Daemon, FrameValidator, Stack


class InstancesReload(unittest.TestCase):

    @classmethod
    def setUpClass(cls):
        FrameValidator.get()
        cls.dir_holder = Stack()  # only for a private directory and binaries
        d = cls.dir_holder.dir
        cls.file = os.path.join(d, "instances")
        cls.write_instances("# no instances yet\n")
        cls.stack = Stack(gateway_args=["--instances-file", cls.file])
        cls.extra_sock = os.path.join(cls.stack.dir, "extra.sock")
        cls.extra = Daemon("sidecar-extra", [cls.stack.sidecar_bin, "--listen",
                                             "unix:" + cls.extra_sock, "--instance-id",
                                             "inst-extra"], cls.stack.dir)
        cls.extra.start()
        cls.stack.start()

    @classmethod
    def tearDownClass(cls):
        problems = cls.stack.stop()
        p = cls.extra.stop()
        if p:
            problems.append(p)
        cls.stack.cleanup(keep=bool(problems))
        cls.dir_holder.cleanup()
        if problems:
            raise AssertionError("daemon problems:\n" + "\n".join(problems))

    @classmethod
    def write_instances(cls, text):
        tmp = cls.file + ".tmp"
        with open(tmp, "w", encoding="utf-8") as f:
            f.write(text)
        os.replace(tmp, cls.file)

    def ready_state(self):
        r = self.stack.http("GET", "/readyz")
        return r.json().get("instances", {})

    def wait_for(self, predicate, what, timeout=10):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if predicate():
                return
            time.sleep(0.05)
        self.fail("%s within %d s; readyz: %s\n%s" % (what, timeout, self.ready_state(),
                                                       self.stack.logs()))

    def test_add_then_remove_an_instance(self):
        self.assertNotIn("inst-extra", self.ready_state())
        self.write_instances("inst-extra unix:%s\n" % self.extra_sock)
        os.kill(self.stack.gateway.pid, signal.SIGHUP)
        self.wait_for(lambda: self.ready_state().get("inst-extra") == "up",
                      "the added instance's link is up")
        r = self.stack.http("POST", "/agents/inst-extra/sessions", {"command": ["/bin/sh"]},
                            token=self.stack.token(sub="ops", scope="sessions",
                                                   instance_id="inst-extra"))
        self.assertEqual(r.status, 201, r)

        self.write_instances("# inst-extra retired\n")
        os.kill(self.stack.gateway.pid, signal.SIGHUP)
        self.wait_for(lambda: "inst-extra" not in self.ready_state(),
                      "the removed instance is gone")
        r = self.stack.http("GET", "/agents/inst-extra/sessions",
                            token=self.stack.token(sub="ops", scope="sessions",
                                                   instance_id="inst-extra"))
        self.assertEqual(r.status, 404, r)
        # The --instance flag's instance is never dropped by a reload.
        self.assertEqual(self.ready_state().get(self.stack.instance), "up")


if __name__ == "__main__":
    unittest.main(verbosity=2)
