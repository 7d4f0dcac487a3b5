"""Any gateway serves any request, behind a plain load balancer: three
gateways on a real three-member etcd cluster (etcd_cluster.py), each with
its own sidecar and instance, and real HAProxy in front running
deploy/haproxy/ptygate.cfg (its ports and servers substituted, TLS left
out) round-robin over all three. Through HAProxy, whichever gateway a
request lands on: every instance's REST calls and AgentCard, attach,
tasks and the browser page's files. A client attached through a gateway
that does not own the instance types and sees its echo, and an observer
through the third gateway sees the same frames. A client that forges the
fleet header is refused (401, logged); an owner that is down is a 502 or
503 in seconds, never a hang."""
import hashlib
import hmac
import os
import struct
import re
import secrets
import shutil
import time
import unittest

import harness
from etcd_cluster import EtcdCluster, wait_until
from harness import Client, Daemon, E2ETestCase, FrameValidator, Stack, free_port, note

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
HAPROXY_CFG = os.path.join(REPO, "deploy", "haproxy", "ptygate.cfg")
HAPROXY = shutil.which("haproxy") or "/usr/sbin/haproxy"
TTL = 2
# A failure guard, not a measurement (a loaded two-core machine, ASan).
BOUND = 30.0
INSTANCES = ("inst-a", "inst-b", "inst-c")


def haproxy_config(port, backends):
    """The deployed config with this test's frontend port and gateways:
    the TLS bind and the redirect out (no certificate, no root)."""
    with open(HAPROXY_CFG, encoding="utf-8") as f:
        conf = f.read()
    conf, n = re.subn(r"\n    bind :443 ssl[^\n]*", "", conf)
    conf, m = re.subn(r"\n    bind :80\n", "\n    bind 127.0.0.1:%d\n" % port, conf)
    conf, r = re.subn(r"\n    http-request redirect scheme https[^\n]*", "", conf)
    conf, s = re.subn(r"(\n    server gw\d [^\n]*)+",
                      "".join("\n    server gw%d 127.0.0.1:%d" % (i + 1, p)
                              for i, p in enumerate(backends)), conf)
    # Not root here: the file descriptors a big maxconn needs are not ours.
    conf, c = re.subn(r"\n    maxconn \d+\n", "\n    maxconn 1000\n", conf)
    if (n, m, r, s, c) != (1, 1, 1, 1, 1):
        raise AssertionError("%s no longer has the shape this test edits" % HAPROXY_CFG)
    # The health checks every 2 s as shipped; this test waits for them.
    return conf


def fleet_header(secret, method, target, xff, ts=None):
    """X-Ptygate-Fleet-Auth as docs/fleet.md describes it, made here
    independently of the gateway: HMAC-SHA-512 cut to 32 bytes, keyed by
    BLAKE2b-256 of the secret (keyed with the label), over the label, the
    timestamp, the method, the target and X-Forwarded-For, each after its
    4-byte big-endian length."""
    label = b"ptygate-fleet-auth-v1"
    ts = str(int(time.time()) if ts is None else ts)
    key = hashlib.blake2b(secret.strip().encode(), digest_size=32, key=label).digest()
    msg = b"".join(struct.pack(">I", len(f)) + f
                   for f in (label, ts.encode(), method.encode(), target.encode(),
                             xff.encode()))
    mac = hmac.new(key, msg, hashlib.sha512).digest()[:32]
    return "v1 %s %s" % (ts, harness.b64url(mac))


class Via:
    """Another door to a stack's instance: the same paths and tokens, a
    different port (HAProxy's, or a gateway that does not own it)."""

    def __init__(self, stack, port):
        self.stack, self.port = stack, port
        self.instance = stack.instance

    def attach_path(self, sid, instance=None):
        return self.stack.attach_path(sid, instance)

    def http(self, method, path, body=None, token=None, headers=None, timeout=10):
        saved = self.stack.port
        self.stack.port = self.port
        try:
            return self.stack.http(method, path, body, token=token, headers=headers,
                                   timeout=timeout)
        finally:
            self.stack.port = saved


class Fleet(E2ETestCase):
    cluster = None
    stacks = ()
    lb = None

    @classmethod
    def setUpClass(cls):
        FrameValidator.get()
        if not os.access(HAPROXY, os.X_OK):
            raise unittest.SkipTest("haproxy is not installed (scripts/install-deps.sh)")
        cls.cluster = EtcdCluster()
        cls.stacks = []
        try:
            cls.cluster.start()
            cls.start_fleet()
        except BaseException:
            cls.stop_fleet()
            raise

    @classmethod
    def start_fleet(cls):
        cls.prefix = "/fleet-lb-%d/" % os.getpid()
        cls.dir = cls.cluster.dir
        cls.secret_path = os.path.join(cls.dir, "fleet.secret")
        with open(cls.secret_path, "w") as f:
            f.write(secrets.token_hex(32) + "\n")
        cls.static = os.path.join(cls.dir, "static")
        os.makedirs(cls.static, exist_ok=True)
        with open(os.path.join(cls.static, "index.html"), "w") as f:
            f.write("<!doctype html><title>ptygate fleet page</title>\n")
        for i, inst in enumerate(INSTANCES):
            cls.stacks.append(cls.fleet_stack("gw-%s" % inst[-1], inst))
        for st in cls.stacks:
            st.start()
        cls.wait_routes(cls.stacks, len(INSTANCES))
        cls.lb_port = free_port()
        conf = os.path.join(cls.dir, "haproxy.cfg")
        with open(conf, "w") as f:
            f.write(haproxy_config(cls.lb_port, [st.port for st in cls.stacks]))
        cls.lb = Daemon("haproxy", [HAPROXY, "-db", "-f", conf], cls.dir)
        cls.lb.start()
        cls.wait_lb_up()

    @classmethod
    def fleet_stack(cls, gid, inst, extra=()):
        return Stack(instance=inst, gateway_args=[
            "--registry", "etcd:" + cls.cluster.endpoints(), "--registry-prefix", cls.prefix,
            "--registry-ttl", str(TTL), "--gateway-id", gid,
            "--fleet-secret-file", cls.secret_path, "--trusted-proxy", "127.0.0.1",
            "--static-dir", cls.static, *extra])

    @classmethod
    def wait_routes(cls, stacks, n):
        def synced():
            for st in stacks:
                reg = st.http("GET", "/readyz").json()["registry"]
                if reg["state"] != "up" or reg["routes"] < n:
                    return False
            return True
        wait_until(synced, "every gateway routes %d instances" % n,
                   logs=lambda: "\n".join(s.logs() for s in stacks))

    @classmethod
    def wait_lb_up(cls):
        """Every server up in HAProxy's eyes: one round of requests sees all
        three gateways (X-Ptg-Gateway is no header the gateway sends, so this
        counts through /metrics instead)."""
        def served_by_all():
            before = [st.metrics().get("ptygate_http_requests_total", 0) for st in cls.stacks]
            for _ in range(6):
                try:
                    cls.lb_http("GET", "/healthz")
                except OSError:
                    return False
            after = [st.metrics().get("ptygate_http_requests_total", 0) for st in cls.stacks]
            return all(a > b for a, b in zip(after, before))
        wait_until(served_by_all, "HAProxy round-robins over the three gateways",
                   logs=lambda: cls.lb.log_tail())

    @classmethod
    def lb_http(cls, method, path, body=None, token=None, headers=None):
        return Via(cls.stacks[0], cls.lb_port).http(method, path, body, token, headers)

    @classmethod
    def stop_fleet(cls):
        problems = []
        if cls.lb:
            cls.lb.stop()
        for st in cls.stacks:
            problems += st.stop()
            st.cleanup()
        if cls.cluster:
            cls.cluster.stop()
            cls.cluster.cleanup()
        return problems

    @classmethod
    def tearDownClass(cls):
        problems = cls.stop_fleet()
        if problems:
            raise AssertionError("\n".join(problems))

    def setUp(self):
        super().setUp()
        self.stack = self.stacks[0]

    def logs(self):
        return "\n".join(st.logs() for st in self.stacks) + "\n--- haproxy\n" + \
            self.lb.log_tail()

    def forwarded(self):
        return sum(st.metrics().get("ptygate_forwarded_requests_total", 0)
                   for st in self.stacks)

    def relayed(self):
        return sum(st.metrics().get("ptygate_relayed_connections_total", 0)
                   for st in self.stacks)

    async def client(self, door, owner, sid, sub, scope, label):
        c = await Client.connect(door, sid, owner.token(sub=sub, session_id=sid, scope=scope),
                                 label=label)
        self.clients.append(c)
        return c

    # -- REST, AgentCard, the page

    def test_rest_and_card_of_every_instance_on_every_gateway(self):
        before = self.forwarded()
        for st in self.stacks:
            admin = st.token(sub="e2e-admin", scope="sessions")
            # Six rounds over three gateways: each lands on every one twice.
            for _ in range(6):
                r = self.lb_http("GET", "/agents/%s/sessions" % st.instance, token=admin)
                self.assertEqual(r.status, 200, "%r\n%s" % (r, self.logs()))
                card = self.lb_http("GET", "/agents/%s/.well-known/agent-card.json"
                                    % st.instance)
                self.assertEqual(card.status, 200, card)
            created = self.lb_http("POST", "/agents/%s/sessions" % st.instance,
                                   {"command": ["/bin/sh"], "cols": 80, "rows": 24},
                                   token=admin)
            self.assertEqual(created.status, 201, "%r\n%s" % (created, self.logs()))
            sid = created.json()["session_id"]
            for _ in range(3):
                got = self.lb_http("GET", "/agents/%s/sessions/%s" % (st.instance, sid),
                                   token=admin)
                self.assertEqual((got.status, got.json()["session_id"]), (200, sid))
            gone = self.lb_http("DELETE", "/agents/%s/sessions/%s" % (st.instance, sid),
                                token=admin)
            self.assertIn(gone.status, (200, 202, 204), gone)
            # The owner still checks the token: none is a 401 from it.
            r = self.lb_http("GET", "/agents/%s/sessions" % st.instance)
            self.assertEqual(r.status, 401, r)
        # Two of three requests landed on a gateway that does not own the
        # instance: many were forwarded.
        self.assertGreaterEqual(self.forwarded() - before, 3 * 6)

    def test_unknown_instance_is_404_everywhere(self):
        # The AgentCard needs no token (each stack here has its own key, and
        # a REST call checks the token before the instance).
        for _ in range(3):
            r = self.lb_http("GET", "/agents/no-such/.well-known/agent-card.json")
            self.assertEqual(r.status, 404, r)
            self.assertEqual(r.json()["code"], "NOT_FOUND")

    def test_page_files_on_every_gateway(self):
        sid = self.stacks[1].create_session()
        for path in ("/", "/index.html", "/agents/inst-b/sessions/%s/" % sid):
            for _ in range(3):
                r = self.lb_http("GET", path)
                self.assertEqual(r.status, 200, "%s: %r" % (path, r))
                self.assertIn(b"ptygate fleet page", r.body)

    # -- attach and tasks

    async def test_attach_through_forwarding_gateway_and_observer_through_third(self):
        a, b, c = self.stacks
        sid = a.create_session()
        before = self.relayed()
        ctl = await self.client(Via(a, b.port), a, sid, "alice", "pty:control", "alice")
        await ctl.expect_hello(sid)
        await ctl.join_fresh("controller")
        obs = await self.client(Via(a, c.port), a, sid, "bob", "pty:observe", "bob")
        await obs.expect_hello(sid)
        await obs.join_fresh("observer")
        await ctl.run("echo through-$((20+22))", "through-42")
        await obs.wait_output("through-42")
        # The same frames, by sequence, to both.
        seq = lambda cl: {f["sequence"]: f["payload"] for f in cl.frames
                          if harness.matches(f, "pty.session_frame", "Output")}
        both = set(seq(ctl)) & set(seq(obs))
        self.assertTrue(both)
        for s in both:
            self.assertEqual(seq(ctl)[s], seq(obs)[s])
        self.assertGreaterEqual(self.relayed() - before, 2)

    async def test_attach_and_task_through_haproxy(self):
        for owner in self.stacks:
            sid = owner.create_session(cwd=owner.dir)
            for _ in range(3):  # lands on each gateway once
                cl = await self.client(Via(owner, self.lb_port), owner, sid, "agent",
                                       "pty:control tasks", "agent")
                await cl.expect_hello(sid)
                await cl.join("controller")
                await cl.expect_frame("pty.session_frame", "RoleAssigned")
                await cl.run("echo lb-$((6*7))-%s" % owner.instance[-1],
                              "lb-42-%s" % owner.instance[-1])
                rid = await cl.send("SendMessage", {"message": {
                    "messageId": harness.uuid7(), "role": "ROLE_USER",
                    "parts": [{"text": "echo task-ok"}]}})
                frame, _ = await cl.recv_until(
                    lambda f: f.get("id") == rid and f["op"] != "TaskStatusUpdate",
                    what="the SendMessage answer")
                self.assertEqual(frame["op"], "SendMessage.Response", frame)
                await cl.close()

    # -- the fleet header

    def test_forged_fleet_header_is_refused_and_logged(self):
        a = self.stacks[0]
        token = a.token(scope="sessions")
        for value in ("v1 %d AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA" % int(time.time()),
                      "garbage"):
            r = a.http("GET", "/agents/inst-a/sessions", token=token,
                       headers={"X-Ptygate-Fleet-Auth": value,
                                "X-Forwarded-For": "203.0.113.9"})
            self.assertEqual(r.status, 401, r)
        wait_until(lambda: "fleet" in a.gateway.log_tail(80) and
                   "refused 401" in a.gateway.log_tail(80),
                   "the refusal logged", logs=self.logs)

    def test_signed_forward_accepted_and_never_forwarded_again(self):
        a, b, _ = self.stacks
        with open(self.secret_path) as f:
            secret = f.read()
        path = "/agents/inst-b/sessions"
        token = b.token(sub="admin", scope="sessions")
        # At the owner, a correctly signed forward is served.
        r = b.http("GET", path, token=token, headers={
            "X-Forwarded-For": "198.51.100.7",
            "X-Ptygate-Fleet-Auth": fleet_header(secret, "GET", path, "198.51.100.7")})
        self.assertEqual(r.status, 200, r)
        # At a gateway that does not own inst-b, it is not sent on again.
        r = a.http("GET", path, token=token, headers={
            "X-Forwarded-For": "198.51.100.7",
            "X-Ptygate-Fleet-Auth": fleet_header(secret, "GET", path, "198.51.100.7")})
        self.assertEqual(r.status, 503, r)
        self.assertEqual(r.json()["code"], "UNAVAILABLE")
        wait_until(lambda: "not forwarded again" in a.gateway.log_tail(80),
                   "the loop logged", logs=self.logs)
        # A signature from a minute ago is refused.
        r = b.http("GET", path, token=token, headers={
            "X-Forwarded-For": "198.51.100.7",
            "X-Ptygate-Fleet-Auth": fleet_header(secret, "GET", path, "198.51.100.7",
                                                 ts=int(time.time()) - 60)})
        self.assertEqual(r.status, 401, r)

    # -- an owner down

    def test_owner_down_is_an_answer_in_seconds(self):
        d = self.fleet_stack("gw-d", "inst-d")
        try:
            d.start()
            self.wait_routes(self.stacks + [d], 4)
            token = d.token(scope="sessions")
            d.gateway.kill()
            a = self.stacks[0]
            t0 = time.monotonic()
            r = a.http("GET", "/agents/inst-d/sessions", token=token, timeout=BOUND)
            took = time.monotonic() - t0
            note("a request for a SIGKILLed owner's instance answered %d in %.2f s"
                 % (r.status, took))
            self.assertIn(r.status, (404, 502, 503), r)
            self.assertEqual(r.header("Content-Type"), "application/json")
            self.assertLess(took, 10.0)
            # Within the TTL its route is gone: the instance is unknown.
            wait_until(lambda: a.http("GET", "/agents/inst-d/.well-known/agent-card.json"
                                      ).status == 404,
                       "inst-d unknown after the TTL", logs=self.logs)
        finally:
            d.stop()
            d.cleanup()


class RegistryAway(unittest.TestCase):
    """etcd gone: a route in the cache is still forwarded; an instance the
    cache does not hold is a 503 with Retry-After (not a 404: the registry
    cannot say), at once, never a hang."""

    def setUp(self):
        self.cluster = EtcdCluster()
        self.stacks = []
        self.addCleanup(self.cleanup)
        self.cluster.start()
        secret = os.path.join(self.cluster.dir, "fleet.secret")
        with open(secret, "w") as f:
            f.write(secrets.token_hex(32))
        for gid, inst in (("gw-a", "inst-a"), ("gw-b", "inst-b")):
            st = Stack(instance=inst, gateway_args=[
                "--registry", "etcd:" + self.cluster.endpoints(), "--registry-ttl", str(TTL),
                "--gateway-id", gid, "--fleet-secret-file", secret])
            self.stacks.append(st)
            st.start()
        Fleet.wait_routes(self.stacks, 2)

    def cleanup(self):
        problems = []
        for st in self.stacks:
            problems += st.stop()
            st.cleanup()
        self.cluster.stop()
        self.cluster.cleanup()
        self.assertEqual(problems, [])

    def test_cached_route_forwarded_unknown_one_503(self):
        a, b = self.stacks
        self.cluster.stop_all()
        wait_until(lambda: a.http("GET", "/readyz").json()["registry"]["state"] != "up",
                   "the registry reported down", logs=a.logs)
        r = a.http("GET", "/agents/inst-b/.well-known/agent-card.json")
        self.assertEqual(r.status, 200, "a cached route still works: %r" % r)
        t0 = time.monotonic()
        r = a.http("GET", "/agents/inst-new/.well-known/agent-card.json")
        self.assertLess(time.monotonic() - t0, 5.0)
        self.assertEqual(r.status, 503, r)
        self.assertEqual(r.json()["code"], "UNAVAILABLE")
        self.assertEqual(r.header("Retry-After"), "2")


if __name__ == "__main__":
    harness.main()
