"""deploy/config/sidecar.conf, the example the sidecar package installs as
/etc/ptygate/sidecar.conf: it shows every key ptygate-sidecar.conf(5)
lists (and no other), a sidecar starts with it as shipped, and with every
default in it uncommented, so each shown default is a value the sidecar
takes."""
import os
import re
import shutil
import signal
import subprocess
import tempfile
import time
import unittest

import harness

HERE = os.path.dirname(os.path.abspath(__file__))
EXAMPLE = os.path.join(HERE, "..", "..", "deploy", "config", "sidecar.conf")
TIMEOUT = 20
# Keys whose line shows an example for a deployment, not a default: left
# commented when the defaults are tried (they name files, users and
# addresses of a real VM).
EXAMPLES_ONLY = {"listen", "dial", "instance-id", "instance-token-file", "session-user",
                 "task-handler", "state-dir", "state-key-file", "state-old-key-file"}


class SidecarConfigExample(unittest.TestCase):

    @classmethod
    def setUpClass(cls):
        cls.sidecar = harness.find_binary("PTG_SIDECAR", "ptygate-sidecar")
        with open(EXAMPLE) as f:
            cls.text = f.read()

    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="ptg-sdconf-")
        self.addCleanup(shutil.rmtree, self.dir, True)

    def shown_keys(self):
        return re.findall(r"(?m)^#([a-z][a-z0-9-]*) = \S", self.text)

    def test_every_key_shown_once(self):
        man = subprocess.run([self.sidecar, "--help-man-conf"], capture_output=True,
                             text=True, timeout=TIMEOUT).stdout
        keys = [k.replace("\\-", "-")
                for k in re.findall(r"(?m)^\\fB([a-z\\-]+)\\fR = ", man)]
        self.assertIn("max-sessions", keys)
        shown = self.shown_keys()
        self.assertEqual(sorted(shown), sorted(set(shown)), "a key shown twice")
        self.assertEqual(sorted(shown), sorted(keys))

    def start(self, text):
        """Starts a sidecar on text as its config file and a unix link;
        returns once it listens, then stops it: its exit status and log."""
        conf = os.path.join(self.dir, "sidecar.conf")
        sock = os.path.join(self.dir, "link.sock")
        log = os.path.join(self.dir, "sidecar.log")
        with open(conf, "w") as f:
            f.write(text)
        with open(log, "w") as out:
            p = subprocess.Popen([self.sidecar, "--config", conf, "--listen", "unix:" + sock],
                                 stdout=out, stderr=subprocess.STDOUT)
        try:
            deadline = time.monotonic() + TIMEOUT
            while not os.path.exists(sock) and p.poll() is None \
                    and time.monotonic() < deadline:
                time.sleep(0.05)
            listening = os.path.exists(sock)
            if p.poll() is None:
                p.send_signal(signal.SIGTERM)
            rc = p.wait(timeout=TIMEOUT)
        finally:
            if p.poll() is None:
                p.kill()
                p.wait()
        with open(log) as f:
            return listening, rc, f.read()

    def test_starts_as_shipped(self):
        listening, rc, log = self.start(self.text)
        self.assertTrue(listening, log)
        self.assertEqual(rc, 0, log)

    def test_starts_with_every_default(self):
        def uncomment(m):
            return m.group(0) if m.group(1) in EXAMPLES_ONLY else m.group(0)[1:]
        text = re.sub(r"(?m)^#([a-z][a-z0-9-]*) = .*$", uncomment, self.text)
        self.assertIn("\nmax-sessions = 256\n", text)
        listening, rc, log = self.start(text)
        self.assertTrue(listening, log)
        self.assertEqual(rc, 0, log)


if __name__ == "__main__":
    unittest.main()
