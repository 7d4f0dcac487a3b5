"""`ptygate attach` on a real PTY lives through a gateway kill and restart:
it reconnects by itself with replay_from, shows what the session printed
while it was away, never sends the keys typed while away, and ends with
the program's exit code."""
import os
import pty
import re
import select
import signal
import time
import unittest

import harness

TIMEOUT = 20.0


class AttachedTerminal:
    """`ptygate attach` on the slave side of a new PTY; we are the user."""

    def __init__(self, argv, env):
        self.out = bytearray()
        self.pid, self.fd = pty.fork()
        if self.pid == 0:  # the child: become ptygate attach
            os.execve(argv[0], argv, env)
        self.status = None

    def pump(self, timeout=0.1):
        r, _, _ = select.select([self.fd], [], [], timeout)
        if r:
            try:
                data = os.read(self.fd, 65536)
            except OSError:  # EIO: the child closed the terminal
                data = b""
            self.out += data
            return bool(data)
        return True

    def type(self, text):
        os.write(self.fd, text.encode())

    def wait_for(self, pattern, start=0, timeout=TIMEOUT):
        rx = re.compile(pattern.encode() if isinstance(pattern, str) else pattern)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            m = rx.search(self.out, start)
            if m:
                return m
            if not self.pump() and self.exited():
                break
        raise AssertionError("no %r in the attach output:\n%r" % (pattern, bytes(self.out[-3000:])))

    def exited(self):
        if self.status is None:
            pid, st = os.waitpid(self.pid, os.WNOHANG)
            if pid:
                self.status = st
        return self.status is not None

    def wait_exit(self, timeout=TIMEOUT):
        deadline = time.monotonic() + timeout
        while not self.exited() and time.monotonic() < deadline:
            self.pump()
        while self.pump(0.05) and len(self.out) and select.select([self.fd], [], [], 0)[0]:
            pass
        if self.status is None:
            raise AssertionError("ptygate attach did not exit:\n%r" % bytes(self.out[-2000:]))
        return os.waitstatus_to_exitcode(self.status)

    def close(self):
        if not self.exited():
            os.kill(self.pid, signal.SIGKILL)
            os.waitpid(self.pid, 0)
        os.close(self.fd)


class AttachReconnect(unittest.TestCase):

    def setUp(self):
        self.stack = harness.Stack().start()
        self.addCleanup(harness.stop_stack, self.stack)

    def test_gateway_kill_and_restart_under_attach(self):
        sid = self.stack.create_session(cols=80, rows=24)
        flag = os.path.join(self.stack.dir, "gateway-down")
        url = "ws://127.0.0.1:%d/agents/%s/sessions/%s/attach" % (
            self.stack.port, self.stack.instance, sid)
        env = dict(os.environ, TERM="xterm-256color",
                   PTYGATE_TOKEN=self.stack.token(sub="alice", session_id=sid, scope="pty:control"))
        term = AttachedTerminal([harness.cli_binary(), "attach", "--url", url, "--label", "e2e"], env)
        self.addCleanup(term.close)

        term.wait_for(r"\$ ")
        term.type("echo one-$((1+1))\r")
        term.wait_for(r"one-2\r\n")
        # Printed only once the gateway is down: the reconnect must replay it.
        term.type("while [ ! -e %s ]; do sleep 0.1; done; echo away-$((2+3)); cat -v\r" % flag)
        term.wait_for(r"cat -v\r\n")
        time.sleep(0.3)

        self.stack.gateway.kill()
        self.stack.gateway.proc.wait(10)
        open(flag, "w").close()
        lost = term.wait_for(r"connection lost[^\r\n]*reconnecting in").end()
        term.type("typed-while-away")
        time.sleep(1.0)
        self.stack.start_gateway()

        back = term.wait_for(r"reconnected; replaying after sequence (\d+)", lost, timeout=45)
        self.assertGreater(int(back.group(1)), 0)
        term.wait_for(r"away-5\r\n", back.end())
        term.type("live-$((3+4))\r")  # cat -v echoes the line back
        term.wait_for(r"live-\$\(\(3\+4\)\)\r\n", back.end())
        time.sleep(0.5)
        term.pump()
        self.assertNotIn(b"typed-while-away", term.out, "keys typed while away were never sent")
        self.assertNotIn(b"^[", term.out[back.end():], "nothing but our keys reached cat -v")

        mark = len(term.out)
        term.type("\x03")
        term.wait_for(r"\^C[^$]*\$ ", mark)
        term.type("exit 7\r")
        rc = term.wait_exit()
        self.assertIn(b"session ended: exit code 7", term.out)
        self.assertEqual(rc, 7, "attach exits with the program's exit code")

    def test_detach_leaves_the_session_running(self):
        sid = self.stack.create_session()
        env = dict(os.environ, TERM="xterm-256color",
                   PTYGATE_TOKEN=self.stack.token(sub="alice", session_id=sid, scope="pty:control"))
        term = AttachedTerminal([harness.cli_binary(), "attach", "--gateway",
                                 "http://127.0.0.1:%d" % self.stack.port,
                                 "--instance", self.stack.instance, "--session", sid], env)
        self.addCleanup(term.close)
        term.wait_for(r"\$ ")
        term.type("\x1d")  # Ctrl-]
        self.assertEqual(term.wait_exit(), 0)
        self.assertIn(b"detached; the session keeps running", term.out)
        self.assertEqual(self.stack.get_session(sid)["state"], "running")

    def test_window_resizes_reach_the_session(self):
        import fcntl
        import struct
        import termios
        sid = self.stack.create_session()
        env = dict(os.environ, TERM="xterm-256color",
                   PTYGATE_TOKEN=self.stack.token(sub="alice", session_id=sid, scope="pty:control"))
        url = "ws://127.0.0.1:%d/agents/%s/sessions/%s/attach" % (
            self.stack.port, self.stack.instance, sid)
        term = AttachedTerminal([harness.cli_binary(), "attach", "--url", url], env)
        self.addCleanup(term.close)
        term.wait_for(r"\$ ")
        # A window dragged through sizes: the kernel sends SIGWINCH each time.
        for rows, cols in ((30, 90), (35, 95), (41, 101)):
            fcntl.ioctl(term.fd, termios.TIOCSWINSZ, struct.pack("HHHH", rows, cols, 0, 0))
            time.sleep(0.02)
        time.sleep(0.5)
        mark = len(term.out)
        term.type("stty size\r")
        term.wait_for(r"41 101\r\n", mark)
        self.assertEqual(self.stack.get_session(sid)["cols"], 101)

    def test_url_and_token_option_warnings(self):
        import subprocess
        cli = harness.cli_binary()
        bad = subprocess.run([cli, "attach", "--url", "ws://h:1/nope"], capture_output=True,
                             text=True, timeout=10, env=dict(os.environ, PTYGATE_TOKEN="x.y.z"))
        self.assertEqual(bad.returncode, 2)
        self.assertIn("bad --url", bad.stderr)
        both = subprocess.run([cli, "attach", "--url", "ws://h:1/agents/i/sessions/s/attach",
                               "--session", "t"], capture_output=True, text=True, timeout=10,
                              env=dict(os.environ, PTYGATE_TOKEN="x.y.z"))
        self.assertEqual(both.returncode, 2)
        self.assertIn("--url names the gateway", both.stderr)
        r = subprocess.run([cli, "sessions", "list", "--gateway", "http://127.0.0.1:%d" % self.stack.port,
                            "--instance", self.stack.instance, "--token",
                            self.stack.token(sub="a", scope="sessions")],
                           capture_output=True, text=True, timeout=10)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("--token is visible to other users", r.stderr)

    def test_sessions_output_json_and_text(self):
        import json
        import subprocess
        sid = self.stack.create_session()
        base = [harness.cli_binary(), "sessions", "list", "--gateway",
                "http://127.0.0.1:%d" % self.stack.port, "--instance", self.stack.instance]
        env = dict(os.environ, PTYGATE_TOKEN=self.stack.token(sub="a", scope="sessions"))
        js = subprocess.run(base + ["--output", "json"], capture_output=True, text=True,
                            timeout=10, env=env)
        self.assertEqual(js.returncode, 0, js.stderr)
        self.assertIn(sid, [s["session_id"] for s in json.loads(js.stdout)["sessions"]])
        text = subprocess.run(base, capture_output=True, text=True, timeout=10, env=env)
        self.assertEqual(text.returncode, 0, text.stderr)
        head, *rows = text.stdout.splitlines()
        self.assertTrue(head.startswith("SESSION"), head)
        row = [r for r in rows if r.startswith(sid)]
        self.assertEqual(len(row), 1, text.stdout)
        self.assertRegex(row[0], r"running\s+120x30\s+0\s+0\s+-")
        bad = subprocess.run(base + ["-o", "yaml"], capture_output=True, text=True, timeout=10,
                             env=env)
        self.assertEqual(bad.returncode, 2)
        get = subprocess.run(base[:2] + ["get"] + base[3:] + [sid], capture_output=True,
                             text=True, timeout=10, env=env)
        self.assertIn("session_id: %s" % sid, get.stdout)
        self.assertIn("state: running", get.stdout)


if __name__ == "__main__":
    harness.main()
