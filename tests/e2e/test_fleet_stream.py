"""Forwarded answers streamed, and the relay's idle bound: three gateways
on a real three-member etcd cluster (etcd_cluster.py), gw-a owning inst-a
and gw-c inst-c, gw-b forwarding to them.

- A recording export past 16 MiB (the cap forwarded answers once had)
  through gw-b arrives whole, byte for byte what the owner sends
  directly, with the owner's Content-Length; the throughput of both,
  paired, is printed (median of 5).
- A client reading slowly: gw-b's RSS stays far below the body's size
  (the owner is paused once gw-b holds its window).
- The owner SIGKILLed mid-body: the client's answer ends short of its
  Content-Length (a broken answer, logged), never a clean short one. A
  client that goes away mid-body ends the owner's transfer.
- An attach relayed by gw-b with no byte either way for its idle bound
  (twice its heartbeat: --ping-interval 2 --pong-timeout 2, 8 s) is
  closed on both sides; one kept busy with pings is not. The owners
  ping once an hour, so only the clients' traffic moves a relay."""
import asyncio
import hashlib
import os
import secrets
import socket
import statistics
import time

import harness
from etcd_cluster import EtcdCluster, wait_until
from harness import Client, E2ETestCase, FrameValidator, Stack, note
from test_fleet_lb import Via

TIMEOUT = 120  # a guard against hangs, never a measurement
OLD_CAP = 16 << 20
IDLE_S = 2 * (2 + 2)  # gw-b's relay idle bound: 2 * (ping + pong)
# 18,000,000 'x' in lines of 99: an asciicast of about 18.5 MB.
BIG = ["/bin/sh", "-c", "head -c 18000000 /dev/zero | tr '\\0' x | fold -w 99"]


def get(port, path, token, rcvbuf=None):
    """A GET on a plain socket (read as the caller chooses): the socket,
    the status, the headers (lower-case names) and the body bytes read
    with the head."""
    s = socket.socket()
    if rcvbuf:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)
    s.settimeout(TIMEOUT)
    s.connect(("127.0.0.1", port))
    s.sendall(("GET %s HTTP/1.1\r\nHost: 127.0.0.1:%d\r\nAuthorization: Bearer %s\r\n"
               "Connection: close\r\n\r\n" % (path, port, token)).encode())
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = s.recv(65536)
        if not chunk:
            raise AssertionError("the connection closed before the head: %r" % data)
        data += chunk
    head, rest = data.split(b"\r\n\r\n", 1)
    lines = head.decode("latin-1").split("\r\n")
    headers = {k.strip().lower(): v.strip()
               for k, v in (line.split(":", 1) for line in lines[1:])}
    return s, int(lines[0].split()[1]), headers, rest


def read_rest(s, length, first, every=None):
    """Reads until length bytes (first included) or EOF; every(n) after
    each read. Returns the bytes read and their sha256."""
    n = len(first)
    h = hashlib.sha256(first)
    while n < length:
        chunk = s.recv(min(65536, length - n))
        if not chunk:
            break
        h.update(chunk)
        n += len(chunk)
        if every:
            every(n)
    return n, h


def read_body(s, headers, first, every=None):
    """The body after the head, by its Content-Length or chunked (the
    owner streams a recording): (its bytes read, their sha256, whole: the
    length reached, or the last chunk seen)."""
    if "content-length" in headers:
        length = int(headers["content-length"])
        n, h = read_rest(s, length, first, every)
        return n, h, n == length
    assert headers.get("transfer-encoding", "").lower() == "chunked", headers
    buf, n, h = bytearray(first), 0, hashlib.sha256()

    def fill():
        chunk = s.recv(65536)
        buf.extend(chunk)
        return bool(chunk)

    while True:
        while buf.find(b"\r\n") < 0:
            if not fill():
                return n, h, False
        end = buf.find(b"\r\n")
        size = int(bytes(buf[:end]).split(b";")[0], 16)
        del buf[:end + 2]
        if size == 0:
            return n, h, True
        while len(buf) < size + 2:
            if not fill():
                h.update(buf[:size])
                return n + min(size, len(buf)), h, False
        h.update(buf[:size])
        n += size
        del buf[:size + 2]
        if every:
            every(n)


class FleetStream(E2ETestCase):
    cluster = None
    stacks = ()

    @classmethod
    def setUpClass(cls):
        FrameValidator.get()
        cls.cluster = EtcdCluster()
        cls.stacks = []
        try:
            cls.cluster.start()
            secret = os.path.join(cls.cluster.dir, "fleet.secret")
            with open(secret, "w") as f:
                f.write(secrets.token_hex(32) + "\n")
            for gid, inst, beat in (("gw-a", "inst-a", 3600), ("gw-b", "inst-b", 2),
                                    ("gw-c", "inst-c", 3600)):
                st = Stack(instance=inst, gateway_args=[
                    "--registry", "etcd:" + cls.cluster.endpoints(),
                    "--registry-prefix", "/fleet-stream-%d/" % os.getpid(),
                    "--gateway-id", gid, "--fleet-secret-file", secret,
                    "--ping-interval", str(beat), "--pong-timeout", "2",
                    # The owner answers an export's head once it has the
                    # whole file: slow under the sanitizer on a loaded
                    # machine, past the default head deadline.
                    "--request-timeout-ms", "60000"])
                cls.stacks.append(st)
                st.start()
            wait_until(lambda: all(st.http("GET", "/readyz").json()["registry"]["routes"] == 3
                                   for st in cls.stacks),
                       "every gateway routes the three instances", logs=cls.all_logs)
            cls.a, cls.b, cls.c = cls.stacks
            cls.big_a = cls.big_session(cls.a)
        except BaseException:
            cls.stop_all()
            raise

    @classmethod
    def all_logs(cls):
        return "\n".join(st.logs() for st in cls.stacks)

    @classmethod
    def stop_all(cls):
        problems = []
        for st in cls.stacks:
            problems += st.stop()
            st.cleanup()
        if cls.cluster:
            cls.cluster.stop()
            cls.cluster.cleanup()
        return problems

    @classmethod
    def tearDownClass(cls):
        problems = cls.stop_all()
        if problems:
            raise AssertionError("\n".join(problems))

    @classmethod
    def big_session(cls, owner):
        sid = owner.create_session(command=BIG, cols=100, rows=25)
        wait_until(lambda: owner.get_session(sid)["state"] == "exited",
                   "the big session exits", timeout=TIMEOUT, logs=owner.logs)
        return sid

    def setUp(self):
        super().setUp()
        self.stack = self.b

    def logs(self):
        return self.all_logs()

    def export_path(self, owner, sid):
        return "/agents/%s/sessions/%s/recording" % (owner.instance, sid)

    def export(self, owner, door, sid):
        """The whole export through door: (status, its length, bytes read,
        sha256, seconds in all, seconds from the head to the end). The
        owner streams the recording (chunked), so the length is what came
        when the answer ended whole."""
        t0 = time.monotonic()
        s, status, headers, rest = get(door.port, self.export_path(owner, sid),
                                       owner.token(sub="e2e-admin", scope="sessions"))
        t_head = time.monotonic()
        with s:
            self.assertEqual(status, 200, rest[:300])
            n, h, whole = read_body(s, headers, rest)
            self.assertTrue(whole, "the answer ended whole")
            self.assertEqual(s.recv(1), b"", "nothing past the body")
            length = n
        t_end = time.monotonic()
        return status, length, n, h.hexdigest(), t_end - t0, t_end - t_head

    # -- streamed answers

    def test_big_export_whole_through_forwarding_gateway(self):
        direct = self.export(self.a, self.a, self.big_a)
        via = self.export(self.a, self.b, self.big_a)
        self.assertGreater(direct[1], OLD_CAP)
        self.assertEqual(via[:4], direct[:4], "the same length and bytes through gw-b")
        self.assertEqual(via[2], via[1], "whole")
        # Throughput, paired: owner directly and through gw-b, five times.
        mb = lambda run, i: run[1] / run[i] / 1e6
        rounds = []
        for i in range(5):  # which goes first alternates
            if i % 2:
                v = self.export(self.a, self.b, self.big_a)
            d = self.export(self.a, self.a, self.big_a)
            if i % 2 == 0:
                v = self.export(self.a, self.b, self.big_a)
            self.assertEqual(v[:4], d[:4])
            rounds.append((mb(d, 4), mb(v, 4), v[4] / d[4], mb(d, 5), mb(v, 5), v[5] / d[5]))
        med = [statistics.median(r[i] for r in rounds) for i in range(6)]
        note("export of %.1f MB, median of 5 paired rounds: in all %.1f MB/s directly, "
             "%.1f MB/s forwarded (time ratio %.2f); the body alone %.0f MB/s directly, "
             "%.0f MB/s forwarded (time ratio %.2f)" % (direct[1] / 1e6, *med))

    def test_slow_reader_keeps_forwarding_gateway_rss_bounded(self):
        base = self.b.gateway.rss_kib()
        most = [base]

        def sample(n):
            if n // (256 << 10) != (n - 65536) // (256 << 10):
                most[0] = max(most[0], self.b.gateway.rss_kib())
            if n < (4 << 20):
                time.sleep(0.005)  # a slow reader for the first 4 MiB

        s, status, headers, rest = get(self.b.port, self.export_path(self.a, self.big_a),
                                       self.a.token(sub="e2e-admin", scope="sessions"),
                                       rcvbuf=65536)
        with s:
            self.assertEqual(status, 200)
            n, _, whole = read_body(s, headers, rest, sample)
        self.assertTrue(whole)
        length = n
        grew = most[0] - base
        note("forwarding gateway RSS during a slow %.1f MB export: %d KiB at start, "
             "+%d KiB at most" % (length / 1e6, base, grew))
        self.assertLess(grew, length // 2 // 1024, "gw-b holds far less than the body")

    def test_owner_killed_mid_body_breaks_the_answer(self):
        sid = self.big_session(self.c)
        s, status, headers, rest = get(self.b.port, self.export_path(self.c, sid),
                                       self.c.token(sub="e2e-admin", scope="sessions"),
                                       rcvbuf=65536)
        with s:
            self.assertEqual(status, 200)
            while len(rest) < (1 << 20):
                chunk = s.recv(65536)
                self.assertTrue(chunk, "the body broke before the owner was killed")
                rest += chunk
            self.c.gateway.expected_exit = True
            self.c.gateway.proc.kill()
            self.c.gateway.proc.wait(TIMEOUT)
            n, _, whole = read_body(s, headers, rest)
        self.assertFalse(whole, "the client's answer ends short (%d bytes): broken, "
                         "not whole" % n)
        wait_until(lambda: "answer broke after" in self.b.gateway.log_tail(200),
                   "gw-b logs the broken answer", logs=self.b.logs)
        self.assertGreaterEqual(self.b.metrics().get("ptygate_forward_broken_total", 0), 1)

    def test_client_gone_aborts_the_owners_transfer(self):
        s, status, headers, rest = get(self.b.port, self.export_path(self.a, self.big_a),
                                       self.a.token(sub="e2e-admin", scope="sessions"),
                                       rcvbuf=65536)
        with s:
            self.assertEqual(status, 200)
            while len(rest) < (1 << 20):
                chunk = s.recv(65536)
                self.assertTrue(chunk)
                rest += chunk
            self.assertEqual(self.b.metrics().get("ptygate_forwards_in_flight"), 1,
                             "the owner's transfer is under way, paused")
        wait_until(lambda: self.b.metrics().get("ptygate_forwards_in_flight") == 0,
                   "the owner's transfer aborted once the client went away", logs=self.logs)

    # -- the relay's idle bound

    async def attach(self, owner, sid):
        c = await Client.connect(Via(owner, self.b.port), sid,
                                 owner.token(sub="alice", session_id=sid,
                                             scope="pty:control"), label="alice")
        self.clients.append(c)
        await c.expect_hello(sid)
        await c.join_fresh("controller")
        return c

    async def test_idle_relay_closed_on_both_sides(self):
        sid = self.a.create_session(command=["/bin/sleep", "600"])
        wait_until(lambda: self.a.connections() == 0, "the owner holds no client yet",
                   logs=self.logs)
        before = 0
        c = await self.attach(self.a, sid)
        wait_until(lambda: self.a.connections() == before + 1, "the owner holds the client")
        last = time.monotonic()
        t_closed = None
        deadline = last + TIMEOUT
        while t_closed is None:
            self.assertLess(time.monotonic(), deadline, "the idle relay was never closed")
            try:
                await c.recv(timeout=1)
                last = time.monotonic()
            except asyncio.TimeoutError:
                continue
            except harness.Closed:
                t_closed = time.monotonic()
        quiet = t_closed - last
        note("idle relay closed after %.1f s without a byte (bound %d s)" % (quiet, IDLE_S))
        # The client sees the last frame a little after the relay moved
        # it: half the bound is what a loaded machine cannot shave off.
        self.assertGreaterEqual(quiet, IDLE_S / 2, "not long before the idle bound")
        wait_until(lambda: self.a.connections() == before,
                   "the owner's side of the idle relay is closed too", logs=self.logs)
        wait_until(lambda: self.b.metrics().get("ptygate_relayed_connections") == 0,
                   "gw-b relays nothing", logs=self.logs)

    async def test_busy_relay_stays_open(self):
        sid = self.a.create_session(command=["/bin/sleep", "600"])
        c = await self.attach(self.a, sid)
        until = time.monotonic() + 2.5 * IDLE_S
        while time.monotonic() < until:
            pong = await c.ws.ping()
            await asyncio.wait_for(pong, TIMEOUT)
            await asyncio.sleep(0.5)
        self.assertIsNone(c.closed)
        self.assertEqual(self.b.metrics().get("ptygate_relayed_connections"), 1)
        pong = await c.ws.ping()
        await asyncio.wait_for(pong, TIMEOUT)


if __name__ == "__main__":
    harness.main()
