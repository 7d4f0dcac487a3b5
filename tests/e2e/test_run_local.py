"""scripts/run-local.sh end to end, on the build under test
(PTYGATE_BUILD, its directory) with a private state directory and port:
with the port busy it exits non-zero and says so; on the happy path its
output has no warning, the printed curl line works pasted into a fresh
`sh -c` with a clean environment, Ctrl-C (SIGINT to the script) exits 0,
and no /tmp/ptygate-run.* folder is left. Its daemons are stopped by the
test, by PID, whatever happens."""
import glob
import os
import re
import shutil
import signal
import socket
import subprocess
import tempfile
import time
import unittest

import harness

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
SCRIPT = os.path.join(ROOT, "scripts", "run-local.sh")
# The script checks the packages, builds the page and the (built) targets:
# on a loaded machine that may take a while.
START_TIMEOUT = 300.0


def pid_alive(pid):
    try:
        os.kill(pid, 0)
        return True
    except ProcessLookupError:
        return False


class RunLocal(unittest.TestCase):
    def setUp(self):
        self.state = tempfile.mkdtemp(prefix="ptg-runlocal-")
        self.port = harness.free_port()
        build = os.path.dirname(harness.find_binary("PTG_GATEWAY", "ptygate-gateway"))
        self.env = dict(os.environ, PTYGATE_PORT=str(self.port),
                        PTYGATE_STATE=self.state, PTYGATE_BUILD=build,
                        PTYGATE_INSTANCE="runlocal")
        self.tmp_before = set(glob.glob("/tmp/ptygate-run.*"))
        self.daemon_pids = []

    def tearDown(self):
        for pid in self.daemon_pids + self.pids_in_state():
            if pid_alive(pid):
                os.kill(pid, signal.SIGKILL)
        shutil.rmtree(self.state, ignore_errors=True)

    def pids_in_state(self):
        pids = []
        for name in ("gateway.pid", "sidecar.pid"):
            try:
                with open(os.path.join(self.state, name)) as f:
                    pids.append(int(f.read()))
            except (OSError, ValueError):
                pass
        return pids

    def assert_no_tmp_left(self):
        self.assertEqual(set(glob.glob("/tmp/ptygate-run.*")) - self.tmp_before, set())

    def test_busy_port_fails(self):
        busy = socket.socket()
        busy.bind(("127.0.0.1", self.port))
        busy.listen(1)
        try:
            p = subprocess.run(["sh", SCRIPT], env=self.env, stdin=subprocess.DEVNULL,
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                               timeout=START_TIMEOUT)
        finally:
            busy.close()
        out = p.stdout.decode("utf-8", "replace")
        self.assertNotEqual(p.returncode, 0, out)
        self.assertIn("gateway exited at start", out)
        self.assertEqual(self.pids_in_state(), [], "pid files left")
        self.assertFalse(os.path.exists(os.path.join(self.state, "links.sock")))
        self.assert_no_tmp_left()

    def test_happy_path(self):
        p = subprocess.Popen(["sh", SCRIPT], env=self.env, stdin=subprocess.DEVNULL,
                             stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                             start_new_session=True)
        lines = []
        try:
            deadline = time.monotonic() + START_TIMEOUT
            while time.monotonic() < deadline:
                line = p.stdout.readline().decode("utf-8", "replace")
                if not line:
                    break
                lines.append(line)
                if line.startswith("Press Ctrl-C to stop."):
                    break
            out = "".join(lines)
            self.assertIn("Press Ctrl-C to stop.", out)
            self.daemon_pids = self.pids_in_state()
            self.assertEqual(len(self.daemon_pids), 2, out)
            self.assertNotRegex(out.lower(), "warn", out)

            curl = [l.strip() for l in lines if l.strip().startswith("curl ")]
            self.assertEqual(len(curl), 1, out)
            r = subprocess.run(["env", "-i", "/bin/sh", "-c", curl[0] + " -fsS"],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               timeout=60)
            self.assertEqual(r.returncode, 0, r.stderr)
            self.assertIn(b'"session_id"', r.stdout)
            session = re.search(r"session:\s+(\S+)", out).group(1)
            self.assertIn(session.encode(), r.stdout)

            os.kill(p.pid, signal.SIGINT)
            rest, _ = p.communicate(timeout=120)
            out += rest.decode("utf-8", "replace")
            self.assertEqual(p.returncode, 0, out)
            self.assertNotRegex(out.lower(), "warn", out)
            for pid in self.daemon_pids:
                deadline = time.monotonic() + 30
                while pid_alive(pid) and time.monotonic() < deadline:
                    time.sleep(0.1)
                self.assertFalse(pid_alive(pid), "daemon %d still running" % pid)
            self.assertFalse(os.path.exists(os.path.join(self.state, "links.sock")))
            self.assertTrue(os.path.exists(os.path.join(self.state, "gateway.log")))
            self.assert_no_tmp_left()
        finally:
            if p.poll() is None:
                os.kill(p.pid, signal.SIGKILL)
                p.wait()


if __name__ == "__main__":
    unittest.main()
