"""A fleet behind real nginx: two hosts, each a gateway with its own sidecar
and instance, the gateways sharing a real three-member etcd cluster
(etcd_cluster.py) and a fleet secret, and nginx in front running
deploy/nginx/ptygate-fleet.conf (with this test's addresses and a
self-signed certificate: nginx terminates TLS, clients use https:// and
wss://), round-robin over both gateways with no per-instance map.
Requests and WebSocket upgrades for /agents/{instance}/... must reach the
host that runs that instance whichever gateway nginx picks, with the
token, the subprotocol and the frames passing through untouched."""
import http.client
import json
import os
import re
import ssl
import subprocess
import time
import unittest

import websockets

import harness
from etcd_cluster import EtcdCluster
from harness import Client, FrameValidator, SUBPROTOCOL, Stack, b64url

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
FLEET_CONF = os.path.join(REPO, "deploy", "nginx", "ptygate-fleet.conf")


def fleet_config(port, gateways, cert, key):
    """The deployed server config with this test's listen port, hosts and
    certificate; the port-80 redirect server is left out (no root)."""
    with open(FLEET_CONF, encoding="utf-8") as f:
        conf = f.read()
    conf, n = re.subn(r"server \{\n    listen 80;.*?\n\}\n", "", conf, flags=re.S)
    if n != 1:
        raise AssertionError("no port-80 redirect server in " + FLEET_CONF)
    conf = re.sub(r"listen 443 ssl;", "listen 127.0.0.1:%d ssl;" % port, conf)
    conf = re.sub(r"ssl_certificate +\S+;", "ssl_certificate %s;" % cert, conf)
    conf = re.sub(r"ssl_certificate_key +\S+;", "ssl_certificate_key %s;" % key, conf)
    conf = re.sub(r"ssl_session_cache .*;", "", conf)
    if cert not in conf or key not in conf:
        raise AssertionError("could not place the test's certificate in " + FLEET_CONF)
    servers = "".join("    server 127.0.0.1:%d max_fails=2 fail_timeout=5s;\n" % p
                      for _, p in gateways)
    conf, n = re.subn(r"(upstream ptygate_gateways \{\n)(?:    server .*\n)+",
                      lambda m: m.group(1) + servers, conf)
    if n != 1 or "127.0.0.1:%d" % gateways[0][1] not in conf:
        raise AssertionError("could not place the test's gateways in " + FLEET_CONF)
    return conf


class Proxy:
    def __init__(self, workdir, gateways):
        self.dir = os.path.join(workdir, "nginx")
        self.port = harness.free_port()
        self.nginx = harness.NginxProcess(self.dir, self.port)
        self.cert, self.key = os.path.join(self.dir, "cert.pem"), os.path.join(self.dir, "key.pem")
        subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt",
                        "ec_paramgen_curve:prime256v1", "-nodes", "-keyout", self.key,
                        "-out", self.cert, "-days", "2", "-subj", "/CN=localhost",
                        "-addext", "subjectAltName=IP:127.0.0.1,DNS:localhost"],
                       check=True, capture_output=True, timeout=30)
        self.ssl = ssl.create_default_context(cafile=self.cert)
        self.nginx.write_config([fleet_config(self.port, gateways, self.cert, self.key)],
                                access_log=True)
        self.conf = self.nginx.conf

    def answers(self):
        conn = http.client.HTTPSConnection("127.0.0.1", self.port, timeout=1, context=self.ssl)
        conn.request("GET", "/")
        conn.getresponse().read()
        return True

    def start(self):
        self.nginx.start(self.answers)

    def stop(self):
        self.nginx.stop()

    def log(self):
        return self.nginx.log()

    def http(self, method, path, token=None, body=None):
        conn = http.client.HTTPSConnection("127.0.0.1", self.port, timeout=10, context=self.ssl)
        headers = {"Content-Type": "application/json"}
        if token:
            headers["Authorization"] = "Bearer " + token
        conn.request(method, path, json.dumps(body) if body is not None else None, headers)
        r = conn.getresponse()
        return r.status, r.read()


class FleetProxy(unittest.IsolatedAsyncioTestCase):

    @classmethod
    def setUpClass(cls):
        FrameValidator.get()
        cls.cluster = EtcdCluster()
        cls.a = cls.b = cls.proxy = None
        try:
            cls.cluster.start()
            secret = os.path.join(cls.cluster.dir, "fleet.secret")
            with open(secret, "w") as f:
                f.write(os.urandom(32).hex())
            # Behind the proxy each client counts by X-Forwarded-For; the
            # gateways find each other's instances in etcd.
            fleet = ["--trusted-proxy", "127.0.0.1", "--registry",
                     "etcd:" + cls.cluster.endpoints(), "--registry-prefix",
                     "/fleet-proxy-%d/" % os.getpid(), "--fleet-secret-file", secret]
            cls.a = Stack(instance="inst-a", gateway_args=fleet + ["--gateway-id", "gw-a"])
            cls.b = Stack(instance="inst-b", gateway_args=fleet + ["--gateway-id", "gw-b"])
            cls.a.start()
            cls.b.start()
            cls.wait_routes()
            cls.proxy = Proxy(cls.a.dir, [("inst-a", cls.a.port), ("inst-b", cls.b.port)])
            cls.proxy.start()
        except BaseException:
            cls.tearDownClass()
            raise

    @classmethod
    def wait_routes(cls):
        """Both gateways know both instances (a failure guard, not a measure)."""
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            if all(st.http("GET", "/readyz").json()["registry"].get("routes") == 2
                   for st in (cls.a, cls.b)):
                return
            time.sleep(0.05)
        raise AssertionError("the gateways' routes did not converge:\n%s\n%s"
                             % (cls.a.logs(), cls.b.logs()))

    @classmethod
    def tearDownClass(cls):
        if getattr(cls, "proxy", None):
            cls.proxy.stop()
        problems = []
        for st in (cls.a, cls.b):
            if st:
                problems += st.stop()
                st.cleanup(keep=bool(problems))
        cls.cluster.stop()
        cls.cluster.cleanup()
        if problems:
            raise AssertionError("daemon problems:\n" + "\n".join(problems))

    async def attach_via_proxy(self, stack, sid, auth="header"):
        token = stack.token(sub="fleet-user", session_id=sid)
        headers, protos = {}, [SUBPROTOCOL]
        if auth == "header":
            headers["Authorization"] = "Bearer " + token
        else:
            protos.append("bearer." + b64url(token.encode()))
        uri = "wss://127.0.0.1:%d%s" % (self.proxy.port, stack.attach_path(sid))
        ws = await websockets.connect(uri, ssl=self.proxy.ssl, subprotocols=protos, extra_headers=headers,
                                      ping_interval=None, open_timeout=5, close_timeout=2)
        self.addAsyncCleanup(ws.close)
        self.assertEqual(ws.subprotocol, SUBPROTOCOL)
        return Client(ws, "via-proxy")

    def test_rest_reaches_the_owner_whichever_gateway_nginx_picks(self):
        for stack in (self.a, self.b):
            token = stack.token(sub="admin", scope="sessions")
            # Round-robin over two gateways: of two creates, one lands on
            # the gateway that does not own the instance.
            sids = []
            for _ in range(2):
                status, body = self.proxy.http(
                    "POST", "/agents/%s/sessions" % stack.instance, token=token,
                    body={"command": ["/bin/sh"], "env": {"PS1": "$ "}})
                self.assertEqual(status, 201, body)
                sids.append(json.loads(body)["session_id"])
            # Each session lives on that host's sidecar; the other gateway
            # forwards to it.
            other = self.b if stack is self.a else self.a
            for sid in sids:
                self.assertEqual(stack.get_session(sid)["session_id"], sid)
                r = other.http("GET", "/agents/%s/sessions/%s" % (stack.instance, sid),
                               token=token)
                self.assertEqual((r.status, r.json()["session_id"]), (200, sid))

    def test_unknown_instance_is_404_json(self):
        # Whichever gateway answers (a REST call checks its token first:
        # the AgentCard needs none).
        for _ in range(2):
            status, body = self.proxy.http("GET",
                                           "/agents/inst-zzz/.well-known/agent-card.json")
            self.assertEqual(status, 404, body)
        self.assertEqual(json.loads(body)["code"], "NOT_FOUND")

    def test_a_token_of_one_host_is_refused_by_the_other(self):
        status, body = self.proxy.http("GET", "/agents/inst-b/sessions",
                                       token=self.a.token(sub="admin", scope="sessions",
                                                          instance_id="inst-b"))
        self.assertEqual(status, 401, body)

    async def test_websocket_attach_through_the_proxy(self):
        for stack, auth in ((self.a, "header"), (self.b, "subprotocol")):
            sid = stack.create_session()
            # Twice each: one lands on the gateway that relays to the owner.
            for _ in range(2):
                c = await self.attach_via_proxy(stack, sid, auth)
                await c.expect_hello(sid)
                await c.join_fresh("controller")
                await c.run("echo via-$((20+22))-%s" % stack.instance,
                            "via-42-" + stack.instance)
                await c.ws.close()


if __name__ == "__main__":
    unittest.main(verbosity=2)
