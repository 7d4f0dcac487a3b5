"""Soak: a few thousand connect / join / leave cycles against one real
gateway and sidecar, a mix of what clients do to a gateway in a day:
clean leaves and closes, observers, controllers typing, connections
dropped without a close frame (before and after the join, and in the
middle of a frame), upgrades abandoned mid-handshake, and refused tokens.
Afterwards the gateway must hold what it held before: its fd count is
back at the baseline (so is the sidecar's), its RSS stayed flat over the
second half, /metrics shows no connection and no queued byte, every
session has no member left, a new client is served, and (ASan build) no
daemon reports a leak at exit (the harness fails on any bad exit).

The whole test is bounded in time: the cycles stop at a deadline even if
the machine is slow (at least a quarter of them must be done). Under
ASan the cycles are fewer, and the RSS bound is not checked (the
allocator's quarantine grows RSS by design). PTG_SOAK_CYCLES overrides
the count for a longer run by hand.
"""
import asyncio
import json
import os
import socket
import struct
import time

import websockets

import harness
from harness import SUBPROTOCOL, E2ETestCase

SESSIONS = 4
WORKERS = 8          # concurrent clients, two per session
CYCLES = 3000        # release build
CYCLES_ASAN = 800
# For the cycles themselves: a bound for a failure, not a measurement. On
# a loaded two-core machine 45 s held 631 release cycles (a fifth).
DEADLINE_S = 120
CYCLE_TIMEOUT_S = 15
RSS_GROWTH_MAX_KIB = 2048  # over the second half of the cycles
# For fds and gauges to come back after the last cycle. A connection
# abandoned inside its request head with a FIN is held until libmicrohttpd
# times it out (0.9.75 in epoll mode does not see a FIN that arrives with
# the head's last bytes): the gateway's 30 s HTTP timeout bounds it.
SETTLE_S = 40
# A 429 at the upgrade is the gateway's right answer while connections
# this client dropped a moment ago still count against its address (a
# loaded gateway reaps them later). The client honours Retry-After, as a
# real one does, a few times per cycle; the retries must stay rare.
RETRIES_PER_CYCLE = 3
RETRIED_CYCLES_MAX_FRACTION = 0.02


def fd_count(pid):
    return len(os.listdir("/proc/%d/fd" % pid))


class Churn:
    """The client side of the soak: one cycle of a given kind against one
    session. Uses websockets directly (no per-frame schema validation:
    thousands of cycles would spend their time in jsonschema; the other
    e2e tests validate every frame of these same flows)."""

    KINDS = ("observer_leave", "observer_leave", "controller_input", "controller_close",
             "drop_after_join", "drop_before_join", "drop_mid_frame",
             "abandon_headers_rst", "abandon_headers_fin", "abandon_upgrade", "bad_token")

    def __init__(self, stack):
        self.stack = stack
        self.counts = {k: 0 for k in self.KINDS}
        self.retried = 0  # cycles that met a 429 and waited its Retry-After

    def uri(self, sid):
        return "ws://127.0.0.1:%d%s" % (self.stack.port, self.stack.attach_path(sid))

    async def open(self, sid, token, max_size=16 << 20):
        """Opens the WebSocket, waiting out a 429's Retry-After at most
        RETRIES_PER_CYCLE times; any other refusal is raised at once."""
        for attempt in range(RETRIES_PER_CYCLE + 1):
            try:
                return await websockets.connect(
                    self.uri(sid), subprotocols=[SUBPROTOCOL],
                    extra_headers={"Authorization": "Bearer " + token}, compression=None,
                    ping_interval=None, max_size=max_size, open_timeout=CYCLE_TIMEOUT_S,
                    close_timeout=2)
            except websockets.InvalidStatusCode as e:
                retry_after = e.headers.get("Retry-After") if e.headers else None
                if e.status_code != 429 or retry_after is None or attempt == RETRIES_PER_CYCLE:
                    raise
                self.retried += attempt == 0
                await asyncio.sleep(min(float(retry_after), 5.0))
        raise AssertionError("unreachable")

    async def connect(self, sid, sub, scope):
        token = self.stack.token(sub=sub, session_id=sid, scope=scope)
        ws = await self.open(sid, token)
        hello = json.loads(await ws.recv())
        assert hello["op"] == "binding_hello", hello
        return ws

    @staticmethod
    async def send(ws, op, payload, **fields):
        frame = {"op": op, "id": harness.uuid7(), "ts": harness.now_ts(), "payload": payload}
        frame.update(fields)
        await ws.send(json.dumps(frame))

    async def join(self, ws, role, sub):
        await self.send(ws, "pty.join_session", {"role": role, "client_label": sub},
                        extensions=[harness.EXTENSION_URI])
        while True:
            f = json.loads(await ws.recv())
            if f["op"] == "Error":
                raise AssertionError("join refused: %s" % f["payload"])
            if f["op"] == "pty.session_frame" and f["payload"].get("kind") == "Keyframe":
                return

    @staticmethod
    async def drain_until_closed(ws):
        try:
            while True:
                await ws.recv()
        except websockets.ConnectionClosed as e:
            return e.rcvd.code if e.rcvd else None

    @staticmethod
    async def abort(ws):
        """Drops the TCP connection with no close frame."""
        ws.transport.abort()
        try:
            await asyncio.wait_for(ws.wait_closed(), 2)
        except asyncio.TimeoutError:
            pass

    async def raw_request(self, sid, token, complete, reset):
        """An upgrade request on a plain socket, abandoned: cut inside the
        headers, or complete and closed before the answer is read; the
        close is a FIN, or a RST when reset."""
        reader, writer = await asyncio.open_connection("127.0.0.1", self.stack.port)
        if reset:
            writer.get_extra_info("socket").setsockopt(
                socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        lines = ["GET %s HTTP/1.1" % self.stack.attach_path(sid),
                 "Host: 127.0.0.1:%d" % self.stack.port, "Upgrade: websocket",
                 "Connection: Upgrade", "Sec-WebSocket-Version: 13",
                 "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==",
                 "Sec-WebSocket-Protocol: " + SUBPROTOCOL,
                 "Authorization: Bearer " + token]
        text = "\r\n".join(lines) + "\r\n\r\n"
        writer.write(text.encode() if complete else text[:len(text) // 2].encode())
        await writer.drain()
        writer.transport.abort()
        return reader

    async def bad_token(self, sid, sub):
        """An upgrade with a token whose signature is wrong: 401."""
        token = self.stack.token(sub=sub, session_id=sid)
        try:
            ws = await self.open(sid, token[:-4] + "AAAA", max_size=1 << 20)
        except websockets.InvalidStatusCode as e:
            assert e.status_code == 401, e.status_code
            return
        await ws.close()
        raise AssertionError("a token with a bad signature was accepted")

    async def cycle(self, kind, sid, sub):
        self.counts[kind] += 1
        if kind.startswith("abandon_"):
            token = self.stack.token(sub=sub, session_id=sid, scope="pty:observe")
            await self.raw_request(sid, token, kind == "abandon_upgrade",
                                   kind == "abandon_headers_rst")
            return
        if kind == "bad_token":
            await self.bad_token(sid, sub)
            return
        controller = kind.startswith("controller") or kind == "drop_mid_frame"
        ws = await self.connect(sid, sub, "pty:control" if controller else "pty:observe")
        if kind == "drop_before_join":
            await self.abort(ws)
            return
        await self.join(ws, "controller" if controller else "observer", sub)
        if kind == "observer_leave":
            await self.send(ws, "pty.leave_session", {})
            code = await asyncio.wait_for(self.drain_until_closed(ws), CYCLE_TIMEOUT_S)
            assert code == 1000, "leave closed with %s" % code
        elif kind == "controller_input":
            await self.send(ws, "pty.session_input", {"data": harness.b64(":\n")})
            await ws.close()
        elif kind == "controller_close":
            await ws.close()
        elif kind == "drop_after_join":
            await self.abort(ws)
        elif kind == "drop_mid_frame":
            # the first 4 bytes of a masked 100-byte text frame, then gone
            ws.transport.write(bytes([0x81, 0x80 | 100, 1, 2]))
            await self.abort(ws)


class Soak(E2ETestCase):
    # Room for the clients a dropped connection leaves for a moment.
    GATEWAY_ARGS = ("--max-conns-per-principal", 64)

    def sample(self):
        gw, sc = self.stack.gateway, self.stack.sidecar
        return {"gw_fds": fd_count(gw.pid), "sc_fds": fd_count(sc.pid),
                "rss": gw.rss_kib()}

    def drained(self):
        """No connection left in any role and nothing queued for clients:
        a closing connection may still hold output for a moment after its
        fd count came back (it lingers to send its close)."""
        m = self.stack.metrics()
        roles = ('ptygate_connections{role="%s"}' % r for r in ("controller", "observer", "pending"))
        return all(m.get(k) == 0.0 for k in roles) and m.get("ptygate_fanout_queue_bytes") == 0.0

    async def settle(self, base):
        """Waits for both daemons' fds to come back to the baseline and the
        gateway to hold no connection and no queued output (a leak stays)."""
        deadline = time.monotonic() + SETTLE_S
        while True:
            now = self.sample()
            if (now["gw_fds"] <= base["gw_fds"] and now["sc_fds"] <= base["sc_fds"]
                    and self.drained()) or time.monotonic() > deadline:
                return now
            await asyncio.sleep(0.1)

    async def run_cycles(self, churn, sids, start, total, deadline, errors,
                         kinds=Churn.KINDS):
        next_i = [start]

        async def worker(w):
            sid = sids[w % len(sids)]
            while next_i[0] < start + total and time.monotonic() < deadline:
                i = next_i[0]
                next_i[0] += 1
                kind = kinds[i % len(kinds)]
                try:
                    await asyncio.wait_for(churn.cycle(kind, sid, "soak-%d" % w),
                                           CYCLE_TIMEOUT_S)
                except Exception as e:  # collected, reported at the end
                    errors.append("cycle %d %s: %r" % (i, kind, e))
            return next_i[0]

        await asyncio.gather(*(worker(w) for w in range(WORKERS)))
        return min(next_i[0], start + total) - start

    async def test_churn_leaves_nothing_behind(self):
        sanitized = self.stack.sanitized
        target = int(os.environ.get("PTG_SOAK_CYCLES") or (CYCLES_ASAN if sanitized else CYCLES))
        sids = [self.stack.create_session() for _ in range(SESSIONS)]
        churn, errors = Churn(self.stack), []

        # Warm-up: every kind on every session, so what is made once per
        # session (the sidecar's timer on first input) and lazily grown
        # buffers are in the baseline.
        t0 = time.monotonic()
        for sid in sids:
            for kind in Churn.KINDS:
                await asyncio.wait_for(churn.cycle(kind, sid, "warm-up"), CYCLE_TIMEOUT_S)
        await self.run_cycles(churn, sids, 0, 4 * len(Churn.KINDS), t0 + 30, errors)
        await asyncio.sleep(0.5)
        base = self.sample()
        deadline = time.monotonic() + DEADLINE_S
        half = target // 2
        done = await self.run_cycles(churn, sids, 1000, half, deadline, errors)
        mid = self.sample()
        # The second half abandons heads with RSTs only, so the FIN ones of
        # the first half (held until the HTTP timeout, see SETTLE_S) are
        # mostly reclaimed by the end and the settle stays short.
        late = tuple(k for k in Churn.KINDS if k != "abandon_headers_fin")
        done += await self.run_cycles(churn, sids, 1000 + half, target - half, deadline,
                                      errors, late)
        elapsed = time.monotonic() - t0
        t_end = time.monotonic()
        end = await self.settle(base)
        settle_s = time.monotonic() - t_end
        metrics = self.stack.metrics()

        harness.note("soak: %d of %d cycles in %.1f s (%s), %d errors"
                     % (done, target, elapsed, "asan" if sanitized else "release", len(errors)))
        harness.note("soak: gateway fds %d -> %d at half -> %d (after %.1f s), sidecar fds "
                     "%d -> %d, gateway RSS %d -> %d at half -> %d KiB"
                     % (base["gw_fds"], mid["gw_fds"], end["gw_fds"], settle_s,
                        base["sc_fds"], end["sc_fds"], base["rss"], mid["rss"], end["rss"]))
        harness.note("soak: cycles by kind %s, %d waited out a 429" % (churn.counts, churn.retried))

        self.assertEqual(errors[:5], [], "%d cycles failed" % len(errors))
        self.assertLessEqual(churn.retried, max(1, int(done * RETRIED_CYCLES_MAX_FRACTION)),
                             "the gateway refused (429) too many of one client's upgrades")
        self.assertGreaterEqual(done, target // 4,
                                "too few cycles before the deadline to mean anything")
        self.assertLessEqual(end["gw_fds"], base["gw_fds"], "the gateway leaks fds")
        self.assertLessEqual(end["sc_fds"], base["sc_fds"], "the sidecar leaks fds")
        if not sanitized:
            self.assertLess(end["rss"] - mid["rss"], RSS_GROWTH_MAX_KIB,
                            "gateway RSS grew over the second half of the churn")
        for role in ("controller", "observer", "pending"):
            key = 'ptygate_connections{role="%s"}' % role
            self.assertEqual(metrics.get(key), 0.0, "%s after the churn" % key)
        self.assertEqual(metrics.get("ptygate_fanout_queue_bytes"), 0.0)
        for sid in sids:
            s = self.stack.get_session(sid)
            self.assertEqual((harness.count_members(s["controllers"]),
                              harness.count_members(s["observers"])), (0, 0),
                             "members left in session %s" % sid)

        # Still serving: a fresh controller types and sees its echo.
        c = await self.connect(sids[0], sub="after")
        await c.join_fresh("controller")
        await c.run("echo soak-$((40+2))", "soak-42")


if __name__ == "__main__":
    harness.main()
