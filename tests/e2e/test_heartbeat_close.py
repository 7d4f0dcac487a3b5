"""A client that reads everything but never answers pings is closed with
1011 by the heartbeat, and it sees that close code: the socket is not
closed before the close frame is written. A client with a backlog sees
it too: its unsent frames are dropped and the close goes next, so it
need not read megabytes of queued output within the 2 s linger."""
import asyncio
import json
import struct
import time

import harness
from harness import Closed, E2ETestCase


class HeartbeatCloseCode(E2ETestCase):
    GATEWAY_ARGS = ("--ping-interval", 1, "--pong-timeout", 1)

    async def test_silent_reader_gets_1011(self):
        sid = self.stack.create_session()
        ghost = self.raw(sid, sub="ghost", scope="pty:observe")
        ghost.answer_pings = False
        await ghost.expect_hello(sid)
        t0 = time.monotonic()
        code = None
        while time.monotonic() - t0 < 10:
            try:
                await ghost.recv(1)
            except Closed as e:
                code = e.code
                break
            except Exception:  # a timeout: keep reading
                continue
        self.assertEqual(code, 1011, "closed with %r (None: no close frame)" % code)
        harness.note("reaped after %.1f s" % (time.monotonic() - t0))
        self.assertTrue(ghost.wait_eof(5), "the gateway did not end the TCP connection")


FLOOD_BYTES = 6000000  # "y\r\n" over the PTY: about 12 MB queued as JSON
READ_RATE = 1 << 20    # what the slow client reads a second
LINGER_S = 2           # LINGER_MS in gateway/conn/conn.c


def read_until_close(sock, buf, timeout, rate):
    """Reads at about rate bytes a second and returns the close frame's
    code, or None when the TCP connection ends without one; the data
    frames before it are skipped."""
    deadline = time.monotonic() + timeout
    buf, off, got = bytearray(buf), 0, 0
    while time.monotonic() < deadline:
        while len(buf) - off >= 2:
            n, hdr = buf[off + 1] & 0x7F, 2
            if n == 126:
                hdr = 4
            elif n == 127:
                hdr = 10
            if len(buf) - off < hdr:
                break
            if n == 126:
                n = struct.unpack(">H", buf[off + 2:off + 4])[0]
            elif n == 127:
                n = struct.unpack(">Q", buf[off + 2:off + 10])[0]
            if len(buf) - off < hdr + n:
                break
            if buf[off] & 0x0F == 0x8:
                return struct.unpack(">H", buf[off + hdr:off + hdr + 2])[0]
            off += hdr + n
        del buf[:off]
        off = 0
        sock.settimeout(max(0.01, deadline - time.monotonic()))
        try:
            chunk = sock.recv(16384)
        except OSError:
            chunk = b""
        if not chunk:
            return None
        buf += chunk
        got += len(chunk)
        time.sleep(len(chunk) / rate)
    raise AssertionError("neither a close frame nor the end of the connection in %d s" % timeout)


class HeartbeatCloseBehindBacklog(E2ETestCase):
    # No byte or age cap that would drop the backlog by lag first.
    GATEWAY_ARGS = ("--ping-interval", 3, "--pong-timeout", 1,
                    "--max-queue-bytes", 1 << 30, "--max-queue-ms", 0)

    async def test_backlogged_reader_gets_1011(self):
        sid, alice = await self.session_with("controller", sub="alice")
        slow = self.raw(sid, sub="slow", rcvbuf=4096)
        slow.answer_pings = False
        await slow.expect_hello(sid)
        await slow.join("observer")
        await slow.wait_for("pty.session_frame", "Keyframe")
        # From here the slow client reads nothing until the heartbeat has
        # given up on it, its queue holding the whole flood. Until the
        # flood is queued it sends a frame every half second (what it is
        # answered waits in its queue too), so however long the flood
        # takes on a loaded machine the heartbeat gives up only after it.
        stop = asyncio.Event()

        async def keep_alive():
            while not stop.is_set():
                ping = slow.envelope("ping", {"client_ts": harness.now_ts()})
                slow.send_frame(0x1, json.dumps(ping).encode())
                try:
                    await asyncio.wait_for(stop.wait(), 0.5)
                except asyncio.TimeoutError:
                    pass

        alive = asyncio.create_task(keep_alive())
        try:
            await alice.type("yes | head -c %d; echo flood-$((5+5))-done\n" % FLOOD_BYTES)
            await alice.wait_output("flood-10-done", timeout=60)
        finally:
            stop.set()
            await alive
        # Only the slow client is left to time out.
        await alice.close()
        self.clients.remove(alice)
        # The gauge is refreshed once a second: its largest value until
        # the heartbeat gives up is what the slow client had queued.
        queued, deadline = 0, time.monotonic() + 30
        while True:
            m = await self.in_thread(self.stack.metrics)
            queued = max(queued, m["ptygate_fanout_queue_bytes_max"])
            if m.get("ptygate_heartbeat_timeouts_total", 0) >= 1:
                break
            self.assertLess(time.monotonic(), deadline, "no heartbeat timeout in 30 s")
            await asyncio.sleep(0.2)
        harness.note("%.1f MB queued for the slow client when the heartbeat gave up"
                     % (queued / 1e6))
        # Read at READ_RATE, the backlog would take longer than the linger.
        self.assertGreater(queued, 1.5 * LINGER_S * READ_RATE, "the flood did not queue up")
        t0 = time.monotonic()
        code = await self.in_thread(read_until_close, slow.sock, slow.buf, 60, READ_RATE)
        harness.note("close frame %r after %.2f s of reading" % (code, time.monotonic() - t0))
        self.assertEqual(code, 1011, "closed with %r (None: no close frame)" % code)
        dropped = self.stack.metrics()["ptygate_close_dropped_bytes_total"]
        self.assertGreater(dropped, LINGER_S * READ_RATE, "the backlog was not dropped")
        self.assertTrue(slow.wait_eof(10), "the gateway did not end the TCP connection")


if __name__ == "__main__":
    harness.main()
