"""A recording larger than any buffer, streamed: `ptygate sessions
export` of a recording over 16 MiB is whole and byte-identical (sha256) to
what the sidecar stores (`ptygate-sidecar --export-asciicast` on the same
--state-dir), and while a client reads slowly the gateway holds about two
pages of it, neither in memory nor in a spooled file."""
import hashlib
import http.client
import os
import socket
import subprocess
import tempfile
import time
import unittest

import harness

TIMEOUT = 120
MIB = 1 << 20
# About 20 MB of output: its asciicast (every "\r\n" escaped) is larger.
PROGRAM = ["/bin/sh", "-c",
           "yes 'ptygate streamed recording line 0123456789abcdefghijklmnopqrstuv' "
           "| head -c 20000000"]


class RecordingStream(unittest.TestCase):

    @classmethod
    def setUpClass(cls):
        cls.cli = harness.cli_binary()
        cls.state = tempfile.mkdtemp(prefix="ptg-e2e-recstream-")
        cls.stack = harness.Stack(
            sidecar_args=("--state-dir", cls.state, "--state-plaintext")).start()
        try:
            cls.sid = cls.stack.create_session(command=PROGRAM, cols=100, rows=25)
            deadline = time.monotonic() + TIMEOUT
            while cls.stack.get_session(cls.sid)["state"] != "exited":
                if time.monotonic() > deadline:
                    raise AssertionError("the session never exited")
                time.sleep(0.1)
            p = subprocess.run([cls.stack.sidecar_bin, "--export-asciicast", cls.sid,
                                "--state-dir", cls.state, "--state-plaintext"],
                               capture_output=True, timeout=TIMEOUT)
            if p.returncode != 0:
                raise AssertionError("--export-asciicast: %r" % p.stderr)
            cls.stored = p.stdout
        except BaseException:
            cls.tearDownClass()
            raise

    @classmethod
    def tearDownClass(cls):
        try:
            harness.stop_stack(cls.stack)
        finally:
            subprocess.run(["rm", "-rf", cls.state])

    def path(self):
        return "/agents/%s/sessions/%s/recording" % (self.stack.instance, self.sid)

    def token(self):
        return self.stack.token(sub="e2e-admin", scope="sessions")

    def test_cli_exports_more_than_16_mib_whole(self):
        if not self.cli:
            self.skipTest("no ptygate CLI")
        self.assertGreater(len(self.stored), 16 * MIB)
        with tempfile.TemporaryDirectory() as d:
            out = os.path.join(d, "big.cast")
            env = dict(os.environ, PTYGATE_TOKEN=self.token(),
                       PTYGATE_GATEWAY="http://127.0.0.1:%d" % self.stack.port,
                       PTYGATE_INSTANCE=self.stack.instance)
            p = subprocess.run([self.cli, "sessions", "export", self.sid, "-o", out],
                               capture_output=True, env=env, timeout=TIMEOUT)
            self.assertEqual(p.returncode, 0, p.stderr)
            self.assertFalse(os.path.exists(out + ".part"))
            with open(out, "rb") as f:
                got = f.read()
        self.assertEqual(len(got), len(self.stored))
        self.assertEqual(hashlib.sha256(got).hexdigest(),
                         hashlib.sha256(self.stored).hexdigest())

    def spooled_bytes(self):
        """Bytes in deleted files the gateway holds open (a spooled answer)."""
        total = 0
        fd_dir = "/proc/%d/fd" % self.stack.gateway.pid
        for name in os.listdir(fd_dir):
            try:
                target = os.readlink(os.path.join(fd_dir, name))
                if target.endswith("(deleted)"):
                    total += os.stat(os.path.join(fd_dir, name)).st_size
            except OSError:
                pass
        return total

    def held(self):
        return self.stack.metrics().get("ptygate_reply_bytes", 0)

    def test_slow_reader_costs_the_gateway_two_pages(self):
        rss0 = self.stack.gateway.rss_kib()
        conn = http.client.HTTPConnection("127.0.0.1", self.stack.port, timeout=TIMEOUT)
        conn.connect()
        self.addCleanup(conn.close)
        conn.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 64 * 1024)
        conn.request("GET", self.path(), headers={"Authorization": "Bearer " + self.token()})
        r = conn.getresponse()
        self.assertEqual(r.status, 200)
        self.assertEqual(r.getheader("Content-Type"), "application/x-asciicast")
        head = r.read(256 * 1024)
        # The client stops reading: the gateway fills the socket, then
        # waits. Wait until what it holds stands still, for at most 10 s:
        # past 30 s the gateway rightly drops a client that reads nothing.
        deadline = time.monotonic() + 10
        last, still = None, 0
        for _ in range(200):
            now = (self.held(), self.spooled_bytes())
            still = still + 1 if now == last else 0
            if still == 5 or time.monotonic() > deadline:
                break
            last = now
            time.sleep(0.2)
        (held, spooled), rss = now, self.stack.gateway.rss_kib()
        harness.note("slow reader: gateway holds %d bytes of pages, %d bytes spooled, "
                     "RSS %d -> %d KiB (recording %d bytes)"
                     % (held, spooled, rss0, rss, len(self.stored)))
        self.assertLessEqual(held, 3 * MIB)
        self.assertLess(spooled, MIB)
        if not self.stack.sanitized:  # ASan's quarantine keeps what was freed
            self.assertLess((rss - rss0) * 1024, len(self.stored) // 2)
        rest = r.read()
        got = head + rest
        self.assertEqual(hashlib.sha256(got).hexdigest(),
                         hashlib.sha256(self.stored).hexdigest())
        # The export gave back all it held.
        self.assertEqual(self.held(), 0)


if __name__ == "__main__":
    unittest.main()
