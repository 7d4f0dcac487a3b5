"""A gateway dies and nothing is lost: three gateways on a real
three-member etcd cluster (etcd_cluster.py) behind real HAProxy
(deploy/haproxy/ptygate.cfg, its ports substituted, TLS left out). One
sidecar dials two of them, as a sandbox keeps links to the two gateways
of its host; the third gateway serves the instance by forwarding. A
client attached through HAProxy reads a program's numbered lines; the
gateway that owns the instance in the registry is SIGKILLed by PID. Its
instance key moves to the surviving gateway of the host, the sidecar's
other link carries on, and the client reconnects through HAProxy with
replay_from set to the last sequence it saw: the lines it then holds are
exactly 1..N, none missing, none twice. The time from the kill to the
first frame after the reconnect is printed."""
import asyncio
import os
import re
import secrets
import time
import unittest

import websockets

import harness
from etcd_cluster import EtcdCluster, wait_until
from harness import Client, Daemon, DialStack, E2ETestCase, FrameValidator, free_port, note
from test_fleet_lb import HAPROXY, Via, haproxy_config

TTL = 2
# Failure guards, not measurements (a loaded two-core machine, ASan).
BOUND = 30.0
LINES = 300
# The line that must have arrived before the kill: output is flowing.
KILL_AFTER = 30
PROGRAM = ("read go; i=1; while [ $i -le %d ]; do printf 'L%%d\\n' $i; i=$((i+1)); "
           "sleep 0.02; done; echo DONE; exec sleep 3600" % LINES)
GATEWAY_IDS = ("gw-a", "gw-b", "gw-c")


def numbered_lines(output):
    return [int(n) for n in re.findall(rb"L(\d+)\r\n", bytes(output))]


def outputs(client):
    return [f for f in client.frames
            if harness.matches(f, "pty.session_frame", "Output")]


class Failover(E2ETestCase):
    cluster = None
    lb = None

    @classmethod
    def setUpClass(cls):
        FrameValidator.get()
        if not os.access(HAPROXY, os.X_OK):
            raise unittest.SkipTest("haproxy is not installed (scripts/install-deps.sh)")
        cls.cluster = EtcdCluster()
        cls.stack = None
        try:
            cls.cluster.start()
            cls.start_fleet()
        except BaseException:
            cls.stop_fleet()
            raise

    @classmethod
    def start_fleet(cls):
        cls.prefix = "/failover-%d/" % os.getpid()
        secret = os.path.join(cls.cluster.dir, "fleet.secret")
        with open(secret, "w") as f:
            f.write(secrets.token_hex(32) + "\n")
        common = ["--registry", "etcd:" + cls.cluster.endpoints(), "--registry-prefix",
                  cls.prefix, "--registry-ttl", str(TTL), "--fleet-secret-file", secret,
                  "--trusted-proxy", "127.0.0.1"]
        # The sidecar dials gw-a and gw-b; gw-c has no link to it.
        cls.stack = DialStack(gateway_args=common, gateways=2)
        cls.stack.add_gateway(common)
        for gw, gid in zip(cls.stack.gateways, GATEWAY_IDS):
            gw.argv += ["--gateway-id", gid]
            gw.gid = gid
        cls.stack.start()
        wait_until(lambda: all(cls.registry(gw)["state"] == "up" and
                               cls.registry(gw)["routes"] == 1
                               for gw in cls.stack.gateways),
                   "every gateway routes the instance", logs=cls.stack.logs)
        cls.lb_port = free_port()
        conf = os.path.join(cls.cluster.dir, "haproxy.cfg")
        with open(conf, "w") as f:
            f.write(haproxy_config(cls.lb_port, [gw.port for gw in cls.stack.gateways]))
        cls.lb = Daemon("haproxy", [HAPROXY, "-db", "-f", conf], cls.cluster.dir)
        cls.lb.start()
        cls.wait_lb_up()

    @classmethod
    def registry(cls, gw):
        return cls.stack.http_on(gw, "GET", "/readyz").json()["registry"]

    @classmethod
    def metric(cls, gw, name):
        for line in cls.stack.http_on(gw, "GET", "/metrics").body.decode().splitlines():
            key, _, value = line.rpartition(" ")
            if key == name:
                return float(value)
        return 0.0

    @classmethod
    def wait_lb_up(cls):
        """Every gateway up in HAProxy's eyes: one round of requests through
        it reaches all three (counted in their /metrics)."""
        gws = cls.stack.gateways

        def served_by_all():
            before = [cls.metric(gw, "ptygate_http_requests_total") for gw in gws]
            for _ in range(6):
                try:
                    Via(cls.stack, cls.lb_port).http("GET", "/healthz")
                except OSError:
                    return False
            after = [cls.metric(gw, "ptygate_http_requests_total") for gw in gws]
            return all(a > b for a, b in zip(after, before))
        wait_until(served_by_all, "HAProxy round-robins over the three gateways",
                   logs=lambda: cls.lb.log_tail())

    @classmethod
    def stop_fleet(cls):
        problems = []
        if cls.lb:
            cls.lb.stop()
        if cls.stack:
            problems += cls.stack.stop()
            cls.stack.cleanup()
        if cls.cluster:
            cls.cluster.stop()
            cls.cluster.cleanup()
        return problems

    @classmethod
    def tearDownClass(cls):
        problems = cls.stop_fleet()
        if problems:
            raise AssertionError("\n".join(problems))

    def logs(self):
        return self.stack.logs() + "\n--- haproxy\n" + self.lb.log_tail()

    def owner(self):
        """The gateway the registry names for the instance, or None."""
        key = self.cluster.get_prefix(self.prefix + "instances/").get(
            self.prefix + "instances/" + self.stack.instance)
        if not key:
            return None
        return next((gw for gw in self.stack.gateways if gw.gid == key[0]["gateway"]), None)

    def connections(self, gw):
        body = self.stack.http_on(gw, "GET", "/metrics").body.decode()
        return sum(float(line.rpartition(" ")[2]) for line in body.splitlines()
                   if line.startswith("ptygate_connections{"))

    async def attach_through_owner(self, sid, token, owner, other):
        """An attach through HAProxy whose path goes through the owner: held
        by the owner itself, or relayed to it by gw-c. One that lands on the
        other linked gateway (served there, locally) is closed and made
        again: round robin moves on at each."""
        door = Via(self.stack, self.lb_port)
        for _ in range(6):
            c = await Client.connect(door, sid, token, label="reader")
            await c.expect_hello(sid)
            await c.join_fresh("controller")
            if await self.in_thread(self.connections, other) == 0:
                self.clients.append(c)
                return c
            await c.close()
            await self.in_thread(wait_until, lambda: self.connections(other) == 0,
                                 "the stray attach closed")
        raise AssertionError("no attach through HAProxy reached the owner in 6 tries\n"
                             + self.logs())

    async def reconnect(self, sid, token, replay_from):
        """Attaches through HAProxy with replay_from until a join is
        answered: a refused or failed attach (the dead owner's port, a 502
        from a gateway whose cache still names it, a 404 between its key's
        expiry and the survivor's claim) is tried again. Returns the client,
        the answers refused on the way and when the first frame came."""
        door = Via(self.stack, self.lb_port)
        refused = []
        deadline = time.monotonic() + BOUND
        while time.monotonic() < deadline:
            try:
                c = await Client.connect(door, sid, token, label="reader-again",
                                         open_timeout=10)
            except (websockets.exceptions.WebSocketException, OSError,
                    asyncio.TimeoutError) as e:
                refused.append(getattr(e, "status_code", None) or type(e).__name__)
                await asyncio.sleep(0.05)
                continue
            self.clients.append(c)
            try:
                await c.expect_hello(sid)
                await c.join("controller", replay_from=replay_from)
                first = await c.recv(10)
            except (harness.Closed, AssertionError, asyncio.TimeoutError) as e:
                refused.append("join: %s" % e)
                await c.close()
                await asyncio.sleep(0.05)
                continue
            return c, refused, first, time.monotonic()
        raise AssertionError("no reconnect through HAProxy within %.0f s; refused: %s\n%s"
                             % (BOUND, refused[-10:], self.logs()))

    async def test_owner_sigkilled_client_reconnects_with_nothing_lost(self):
        st = self.stack
        gw_a, gw_b, gw_c = st.gateways
        owner = await self.in_thread(wait_until, self.owner, "an owner in the registry")
        self.assertIn(owner, (gw_a, gw_b), "a gateway the sidecar dials owns the instance")
        survivor = gw_b if owner is gw_a else gw_a
        sid = st.create_session(command=["/bin/sh", "-c", PROGRAM])
        token = st.token(sub="reader", session_id=sid, scope="pty:control")

        first = await self.attach_through_owner(sid, token, owner, survivor)
        await first.type("\n")
        await first.wait_output("L%d\r\n" % KILL_AFTER, timeout=BOUND)
        # The key as the kill finds it: a lease the owner lost on a loaded
        # machine (a late keep-alive) would have let the survivor claim it.
        held_at_kill = await self.in_thread(self.owner)
        owner.kill()
        killed = time.monotonic()
        moved_at = []

        # The instance's key moves to the gateway that still has a link.
        def moved():
            if self.owner() is survivor:
                moved_at.append(time.monotonic())
                return True
            return False
        key_moved = asyncio.ensure_future(self.in_thread(
            wait_until, moved, "the key held by the survivor", BOUND, self.logs))
        # What the first connection got before it noticed.
        try:
            while True:
                await first.recv(BOUND)
        except harness.Closed:
            pass
        seen = first.last_sequence()
        self.assertGreater(seen, 0)

        again, refused, frame, answered = await self.reconnect(sid, token, seen)
        recovery = answered - killed
        self.assertTrue(harness.matches(frame, "pty.session_frame", "RoleAssigned"),
                        harness.summarize([frame]))
        await again.wait_output("DONE", timeout=4 * BOUND)

        await key_moved
        moved_after = moved_at[0] - killed
        self.assertEqual(st.readyz(survivor).get(st.instance), "up", "its link carried on")
        # The sidecar logs its dead link once it reads the end of it, which
        # nothing waited for above orders: waited for, then asserted.
        lost = "link to unix:%s lost" % st.link_socks[st.gateways.index(owner)]
        await self.in_thread(wait_until, lambda: lost in st.sidecar.log_text(),
                             "the sidecar's log of its lost link", BOUND, self.logs)
        self.assertIn(lost, st.sidecar.log_text())

        # Nothing lost, nothing twice: by sequence, and by the lines.
        before, after = outputs(first), outputs(again)
        self.assertTrue(all(f["sequence"] <= seen for f in before))
        seqs = [f["sequence"] for f in after]
        self.assertEqual(seqs, sorted(set(seqs)), "replayed in order, once each")
        self.assertTrue(all(s > seen for s in seqs), "nothing replayed that was seen")
        lines = numbered_lines(first.output + again.output)
        self.assertEqual(lines, list(range(1, LINES + 1)),
                         "lines 1..%d once each in order" % LINES)
        if held_at_kill is owner:
            key_note = "its key on %s %.2f s after the kill" % (survivor.gid, moved_after)
        else:
            key_note = "its key had moved to %s before the kill (%d leases lost)" % (
                survivor.gid, self.metric(survivor, "ptygate_registry_leases_lost_total"))
        note("owner %s SIGKILLed after line %d (sequence %d): reconnected through HAProxy "
             "%.2f s later (kill to first frame; %d attempts refused: %s); %s (TTL %d s)" % (
                 owner.gid, numbered_lines(first.output)[-1], seen, recovery, len(refused),
                 sorted(set(map(str, refused))), key_note, TTL))


if __name__ == "__main__":
    harness.main()
