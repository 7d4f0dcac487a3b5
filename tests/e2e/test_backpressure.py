"""One client cannot grow the gateway or stall the others.

- An observer that sends ping ops and never reads: every reply counts
  against its queue cap; over it the gateway stops reading it, and after
  --queue-stall-timeout closes it 4429. Gateway RSS stays bounded, and the
  ping ops it read are all answered: no reply is dropped, even with the
  session data a lagging observer loses.
- A client flooding WebSocket Pings does not slow another client's echo.
- Ops over --max-ops-per-sec are not refused: the client is not read until
  its bucket refills, and every op is answered.
"""
import asyncio
import json
import os
import socket
import struct
import threading
import time

import harness
from harness import Closed, E2ETestCase

os.environ["ASAN_OPTIONS"] = (os.environ.get("ASAN_OPTIONS", "detect_leaks=1:abort_on_error=1")
                              + ":quarantine_size_mb=16")


def masked(opcode, payload):
    mask = os.urandom(4)
    body = bytes(b ^ mask[i % 4] for i, b in enumerate(payload))
    n = len(payload)
    head = bytes([0x80 | opcode])
    head += bytes([0x80 | n]) if n < 126 else bytes([0x80 | 126]) + struct.pack(">H", n)
    return head + mask + body


def ping_op(raw, i):
    frame = raw.envelope("ping", {"client_ts": harness.now_ts()}, id="00000000-0000-7000-8000-%012d" % i)
    return masked(0x1, json.dumps(frame).encode())


def rss_sampler(daemon, stop, out):
    while not stop.is_set():
        try:
            out.append(daemon.rss_kib())
        except OSError:
            return
        time.sleep(0.05)


class NeverReadingObserver(E2ETestCase):
    GATEWAY_ARGS = ("--max-queue-bytes", 1 << 20, "--queue-stall-timeout", 2,
                    "--max-ops-per-sec", 100000)

    async def test_rss_bounded_replies_kept_then_4429(self):
        st = self.stack
        sid, alice = await self.session_with("controller", sub="alice")
        ghost = self.raw(sid, sub="ghost", scope="pty:observe", rcvbuf=4096)
        await ghost.expect_hello(sid)
        await ghost.join("observer")
        await ghost.wait_for("pty.session_frame", "Keyframe")
        base = st.gateway.rss_kib()

        # Session output the ghost does not read, so it lags too.
        await alice.type("head -c 3000000 /dev/zero | tr '\\0' x; echo flood-$((4+4))\n")
        stop, samples = threading.Event(), []
        sampler = threading.Thread(target=rss_sampler, args=(st.gateway, stop, samples))
        sampler.start()
        sent, done = [], threading.Event()

        def send_pings():
            ghost.sock.settimeout(0.3)
            i = 0
            try:
                while i < 400000 and not done.is_set():
                    batch = b"".join(ping_op(ghost, i + k) for k in range(200))
                    ghost.sock.sendall(batch)
                    sent.extend(range(i, i + 200))
                    i += 200
            except (socket.timeout, OSError):
                pass  # blocked: the gateway stopped reading

        sender = threading.Thread(target=send_pings)
        t0 = time.monotonic()
        sender.start()

        # Blocking work runs in threads: alice's client must keep answering
        # the gateway's pings meanwhile.
        def wait_for_stall_close():
            while st.metrics().get("ptygate_queue_stall_closes_total", 0) < 1:
                if time.monotonic() - t0 > 60:
                    return False
                time.sleep(0.05)
            return True

        # Then read at once (the close's linger is 2 s), and parse after.
        def read_everything():
            raw = bytearray(ghost.buf)
            ghost.sock.settimeout(1)
            while True:
                try:
                    chunk = ghost.sock.recv(1 << 20)
                except OSError:
                    break
                if not chunk:
                    break
                raw += chunk
            ghost.buf = bytes(raw)
            answered, code = [], None
            while True:
                try:
                    _, opcode, payload = ghost.read_frame(0.1)
                except (Closed, asyncio.TimeoutError):
                    break
                if opcode == 0x8:
                    code = struct.unpack(">H", payload[:2])[0]
                    break
                if opcode == 0x1:
                    f = json.loads(payload)
                    if f["op"] == "pong" or f["op"] == "Error" and f["id"] in ghost.sent_ids:
                        answered.append(int(f["id"].rsplit("-", 1)[1]))
            return answered, code

        self.assertTrue(await self.in_thread(wait_for_stall_close), "no stall close")
        done.set()
        sender.join()
        harness.note("ghost sent %d ping ops; stall close after %.1f s"
                     % (len(sent), time.monotonic() - t0))
        answered, code = await self.in_thread(read_everything)
        harness.note("%d ping ops answered, then close %s" % (len(answered), code))
        # Replies are never dropped as lagging session data is: those that
        # went out are all there, in order. How many went out before the
        # stall close depends on scheduling: that close drops what was not
        # sent yet so the close frame goes next.
        self.assertEqual(answered, list(range(len(answered))), "a reply is missing")
        self.assertEqual(code, 4429)
        # The flood is over once the shell runs the next line. Alice may
        # have lagged through the flood herself (her queue is 1 MiB too,
        # and a long line now streams faster than this client reads), so
        # its own end marker may have come inside a Keyframe, not Output.
        await alice.run("echo flood-over-$((4+4))", "flood-over-8", timeout=30)
        stop.set()
        sampler.join()
        grown = (max(samples) - base) / 1024
        harness.note("gateway RSS %.1f MiB at the start, grew by at most %.1f MiB"
                     % (base / 1024, grown))
        self.assertLess(grown, 96 if st.sanitized else 48)

        await alice.run("echo still-$((5+5))", "still-10")


class WebSocketPingFlood(E2ETestCase):

    async def test_echo_of_another_client_stays_fast(self):
        st = self.stack
        sid, alice = await self.session_with("controller", sub="alice")
        await alice.run("stty -icanon -echo; cat", "", prompt=None)
        sid2 = st.create_session()
        flooder = self.raw(sid2, sub="flooder", scope="pty:observe")
        await flooder.expect_hello(sid2)
        stop = threading.Event()
        pings = b"".join(masked(0x9, b"p") for _ in range(4000))

        def flood():
            flooder.sock.settimeout(0.5)
            while not stop.is_set():
                try:
                    flooder.sock.sendall(pings)
                except socket.timeout:
                    continue
                except OSError:
                    return

        def drain():
            flooder.sock.settimeout(0.5)
            while not stop.is_set():
                try:
                    if not flooder.sock.recv(1 << 20):
                        return
                except socket.timeout:
                    continue
                except OSError:
                    return

        threads = [threading.Thread(target=flood), threading.Thread(target=drain)]
        for t in threads:
            t.start()
        try:
            await harness.asyncio.sleep(0.5)
            lat = []
            for i in range(20):
                mark = len(alice.output)
                t0 = time.monotonic()
                await alice.type("k%d;" % i)
                await alice.wait_output("k%d;" % i, since=mark, timeout=10)
                lat.append((time.monotonic() - t0) * 1000)
        finally:
            stop.set()
            for t in threads:
                t.join()
        lat.sort()
        harness.note("echo under a WebSocket Ping flood: median %.1f ms, max %.1f ms"
                     % (lat[len(lat) // 2], lat[-1]))
        # Unloaded a few ms; main took seconds under ASan. The bounds are
        # for a loaded 2-core machine (101 ms seen in release beside
        # stress-ng), far below what the fault cost.
        self.assertLess(lat[len(lat) // 2], 1000 if st.sanitized else 400)
        self.assertTrue(st.gateway.alive())


class OpRateLimit(E2ETestCase):
    GATEWAY_ARGS = ("--max-ops-per-sec", 200)
    N = 1000

    async def test_ops_over_the_rate_wait_and_are_all_answered(self):
        sid = self.stack.create_session()
        c = self.raw(sid, sub="fast", scope="pty:observe")
        await c.expect_hello(sid)
        t0 = time.monotonic()
        c.sock.sendall(b"".join(ping_op(c, i) for i in range(self.N)))
        pongs = []
        while len(pongs) < self.N:
            f = await c.recv(10)
            self.assertEqual(f["op"], "pong", f)
            pongs.append(int(f["id"].rsplit("-", 1)[1]))
        took = time.monotonic() - t0
        m = self.stack.metrics()
        harness.note("%d ping ops at --max-ops-per-sec 200: all answered in %.2f s, "
                     "throttled %d times" % (self.N, took, m["ptygate_ops_throttled_total"]))
        # Two seconds' worth (400) pass at once; the rest wait for the rate
        # (a read's worth of ops is handled whole, so roughly, not exactly).
        self.assertEqual(pongs, list(range(self.N)))
        self.assertGreater(took, 1.5)
        self.assertGreaterEqual(m["ptygate_ops_throttled_total"], 1)
        # The connection is fine afterwards.
        await c.send("ping", {"client_ts": harness.now_ts()})
        self.assertEqual((await c.recv(5))["op"], "pong")

    async def test_refused_input_counts_as_violations(self):
        sid, alice = await self.session_with("controller", sub="alice")
        obs = await self.connect(sid, sub="obs", scope="pty:observe")
        await obs.join_fresh("observer")
        for _ in range(10):  # --violation-limit
            await obs.type("x")
        for _ in range(10):
            await obs.expect_error("PERMISSION_DENIED", skip_output=True)
        await obs.expect_close(4400, allow=("Output", "MembershipChanged", "Keyframe"))


if __name__ == "__main__":
    harness.main()
