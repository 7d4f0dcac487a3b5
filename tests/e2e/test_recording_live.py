"""The export of a live session ends: a program prints numbered
lines without end while a client reads its recording more slowly than it
prints (after every 256 KiB read, the reader waits until the program has
printed another 512 KiB, whatever the machine's speed). The export ends
where the history ended when it began: it holds the program's output
from its first line, whole and in order, at least all that was printed
before the request and no more than was printed when its answer came;
an export taken later is longer and starts with the first. With the
ring and with the frame log (--state-dir)."""
import http.client
import json
import socket
import time
import unittest

import harness

TIMEOUT = 120
KIB, MIB = 1 << 10, 1 << 20
# Numbered lines in bursts of about 24 KB: at most a few MB/s, so the
# history of the whole test stays within --replay-bytes below.
PROGRAM = ["/usr/bin/python3", "-c",
           "import sys, time\n"
           "i = 0\n"
           "while True:\n"
           "    sys.stdout.write(''.join('n%09d\\n' % (i + k) for k in range(1, 2001)))\n"
           "    sys.stdout.flush()\n"
           "    i += 2000\n"
           "    time.sleep(0.01)\n"]


def socket_send_max():
    """The most a connection's send buffer may grow to on this machine."""
    try:
        with open("/proc/sys/net/ipv4/tcp_wmem") as f:
            return int(f.read().split()[2])
    except (OSError, ValueError, IndexError):
        return 4 * MIB


# Printed before the export: more than the gateway can push ahead of the
# reader at once (a socket's send buffer, two pages, the reader's buffer),
# so an export that follows the program can only catch it up by reading,
# which the program outpaces.
BEFORE = socket_send_max() + 4 * MIB
READ_STEP = 256 * KIB  # read by the client between two waits
PRINT_STEP = 512 * KIB  # printed by the program meanwhile


def printed_text(cast):
    lines = cast.decode().splitlines()
    header = json.loads(lines[0])
    assert header["version"] == 2, header
    return "".join(e[2] for e in map(json.loads, lines[1:]) if e[1] == "o")


class LiveExportEnds(unittest.TestCase):
    sidecar_args = ("--replay-bytes", 256 * MIB)

    def setUp(self):
        self.stack = harness.Stack(sidecar_args=self.sidecar_args).start()
        self.addCleanup(harness.stop_stack, self.stack)
        self.sid = self.stack.create_session(command=PROGRAM, cols=100, rows=25)
        self.addCleanup(self.stack.delete_session, self.sid)

    def printed(self):
        s = self.stack.get_session(self.sid)
        self.assertEqual(s["state"], "running", "the program stopped")
        return s["output_bytes"]

    def wait_printed(self, at_least):
        deadline = time.monotonic() + TIMEOUT
        for _ in range(100000):
            n = self.printed()
            if n >= at_least:
                return n
            self.assertLess(time.monotonic(), deadline, "the program printed %d bytes" % n)
            time.sleep(0.02)
        self.fail("the program printed too slowly")

    def path(self):
        return "/agents/%s/sessions/%s/recording" % (self.stack.instance, self.sid)

    def token(self):
        return self.stack.token(sub="e2e-admin", scope="sessions")

    def slow_export(self):
        """The recording read slowly; with the bytes printed before the
        request and when its answer came."""
        before = self.wait_printed(BEFORE)
        conn = http.client.HTTPConnection("127.0.0.1", self.stack.port, timeout=TIMEOUT)
        conn.connect()
        self.addCleanup(conn.close)
        conn.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 64 * KIB)
        conn.request("GET", self.path(), headers={"Authorization": "Bearer " + self.token()})
        r = conn.getresponse()
        self.assertEqual(r.status, 200)
        answered = self.printed()
        # A recording of what was printed by then is well under twice
        # its size (escapes, one event per frame): past that, the export
        # follows the program.
        cap = 2 * answered + 2 * MIB
        cast, since_wait, seen = b"", 0, answered
        deadline = time.monotonic() + 3 * TIMEOUT
        while True:
            data = r.read(64 * KIB)
            if not data:
                break
            cast += data
            since_wait += len(data)
            self.assertLess(len(cast), cap, "the export follows the live program")
            self.assertLess(time.monotonic(), deadline, "the export never ends")
            if since_wait >= READ_STEP:
                since_wait = 0
                seen = self.wait_printed(seen + PRINT_STEP)
        return cast, before, answered

    def check_whole(self, text):
        """Lines from n000000001 on, each once and in order; the last may
        be cut where the export ended, which is where a frame ended: a
        PTY read can end anywhere, between a line's CR and its LF too."""
        parts = text.split("\r\n")
        whole, last = parts[:-1], parts[-1]
        self.assertGreater(len(whole), 0)
        for i, line in enumerate(whole, 1):
            if line != "n%09d" % i:
                self.fail("line %d is %r" % (i, line[:40]))
        self.assertTrue(("n%09d\r" % (len(whole) + 1)).startswith(last), repr(last))

    def test_slow_export_ends_at_its_start(self):
        cast, before, answered = self.slow_export()
        first = printed_text(cast)
        self.check_whole(first)
        harness.note("live export: %d bytes printed before the request, %d when answered, "
                     "the export holds %d (recording %d bytes)"
                     % (before, answered, len(first), len(cast)))
        self.assertGreaterEqual(len(first), before)
        self.assertLessEqual(len(first), answered)
        # Later, more was printed: a new export takes it.
        self.wait_printed(answered + PRINT_STEP)
        r = self.stack.http("GET", self.path(), token=self.token(), timeout=TIMEOUT)
        self.assertEqual(r.status, 200)
        second = printed_text(r.body)
        self.check_whole(second)
        self.assertGreater(len(second), len(first))
        self.assertTrue(second.startswith(first))


class LiveExportEndsFromFrameLog(LiveExportEnds):
    sidecar_args = ("--replay-bytes", 256 * MIB, "--state-dir", "{dir}/state",
                    "--state-plaintext")


if __name__ == "__main__":
    unittest.main()
