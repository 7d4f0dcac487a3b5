"""An instance removed on SIGHUP.

- Its connections are told first: binding_goodbye {reason: other} and close
  4404, joined or not; a connection upgraded but not joined keeps no
  dangling link pointer for its join to write through.
- Instances read from --instances-file at start are the file's, not flags:
  a reload that no longer names one removes it (/readyz stops listing it).
"""
import unittest

import harness
from harness import FrameValidator


class RemovedInstanceSaysGoodbye(unittest.IsolatedAsyncioTestCase):

    @classmethod
    def setUpClass(cls):
        FrameValidator.get()
        cls.fs = harness.FileStack("# nothing yet\n")
        cls.fs.start()

    @classmethod
    def tearDownClass(cls):
        problems = cls.fs.stop()
        if problems:
            raise AssertionError("daemon problems:\n" + "\n".join(problems))

    async def test_upgraded_and_joined_clients_get_goodbye_4404(self):
        fs, st = self.fs, self.fs.stack
        fs.reload("inst-extra unix:{sock}\n")
        fs.wait_for(lambda: fs.ready().get("inst-extra") == "up", "inst-extra up")
        admin = st.token(sub="ops", scope="sessions", instance_id="inst-extra")
        r = st.http("POST", "/agents/inst-extra/sessions",
                    {"command": ["/bin/sh"], "env": {"PS1": "$ ", "PATH": "/usr/bin:/bin"}},
                    token=admin)
        self.assertEqual(r.status, 201, r)
        sid = r.json()["session_id"]

        def token(sub):
            return st.token(sub=sub, session_id=sid, instance_id="inst-extra")

        joined = await harness.Client.connect(st, sid, token("joined"), instance="inst-extra")
        await joined.expect_hello(sid)
        await joined.join("controller")
        await joined.wait_for("pty.session_frame", "Keyframe")
        waiting = await harness.Client.connect(st, sid, token("waiting"), instance="inst-extra")
        await waiting.expect_hello(sid)

        fs.reload("# inst-extra retired\n")
        fs.wait_for(lambda: "inst-extra" not in fs.ready(), "inst-extra removed")
        # The one that never joined joins now: it must not reach a freed link.
        try:
            await waiting.join("controller")
        except Exception:
            pass  # the gateway may have closed it already
        for c in (waiting, joined):
            bye = await c.wait_for("binding_goodbye", timeout=5)
            self.assertEqual(bye["payload"]["reason"], "other")
            await c.expect_close(4404, allow=("Output", "MembershipChanged", "Error"))
        self.assertTrue(st.gateway.alive(), st.gateway.log_tail())
        # The instance's own sessions still answer through a new attach? No:
        # it is not served any more.
        r = st.http("GET", "/agents/inst-extra/sessions", token=admin)
        self.assertEqual(r.status, 404, r)


class FileInstancesAreReloadable(unittest.TestCase):

    def test_instance_from_the_file_at_start_can_be_removed(self):
        FrameValidator.get()
        fs = harness.FileStack("inst-extra unix:{sock}\n")
        try:
            fs.start()
            fs.wait_for(lambda: fs.ready().get("inst-extra") == "up", "inst-extra up")
            fs.reload("# inst-extra retired\n")
            fs.wait_for(lambda: "inst-extra" not in fs.ready(), "inst-extra removed")
            # The --instance flag's instance stays.
            self.assertEqual(fs.ready().get(fs.stack.instance), "up")
        finally:
            problems = fs.stop()
        self.assertEqual(problems, [])


if __name__ == "__main__":
    unittest.main(verbosity=2)
