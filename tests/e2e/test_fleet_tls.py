"""Forwarding between gateways that serve TLS (--tls-cert): two gateways on
a real three-member etcd cluster, their fleet URLs https://, each trusting
the other's certificate with --fleet-cacert. A REST call and a wss://
attach for the other gateway's instance reach it through the forwarding
gateway's TLS connection to the owner (libcurl for both, the attach then
relayed over it): the echo comes back, and a burst of output far bigger
than the relay's buffers arrives whole and in order. A gateway that does
not trust the owner's certificate answers 502 and forwards nothing."""
import copy
import os
import time
import unittest

import harness
from etcd_cluster import EtcdCluster
from harness import FrameValidator
from test_tls import TlsStack, make_cert

BOUND = 30.0


class FleetTls(unittest.IsolatedAsyncioTestCase):

    @classmethod
    def setUpClass(cls):
        FrameValidator.get()
        cls.cluster = EtcdCluster()
        cls.stacks = []
        try:
            cls.cluster.start()
            d = cls.cluster.dir
            cls.cert, cls.key = make_cert(d, "fleet", "ptygate-fleet")
            with open(os.path.join(d, "fleet.secret"), "w") as f:
                f.write(os.urandom(32).hex())
            common = ["--registry", "etcd:" + cls.cluster.endpoints(), "--registry-prefix",
                      "/fleet-tls-%d/" % os.getpid(), "--fleet-secret-file",
                      os.path.join(d, "fleet.secret"),
                      # Every byte must arrive: no lag recovery for output
                      # that waits on a slow (sanitizer) build's relay.
                      "--max-queue-ms", "0",
                      # Connecting to the owner (its TLS handshake
                      # included) may take this long: only the untrusted
                      # certificate may fail it, never a loaded machine's
                      # slow handshake (a 504 instead of the 502).
                      "--request-timeout-ms", "60000"]
            for gid, inst, trust in (("gw-a", "inst-a", True), ("gw-b", "inst-b", True),
                                     ("gw-c", "inst-c", False)):
                st = TlsStack()
                st.instance = inst
                st.gateway.argv[st.gateway.argv.index("--instance") + 1] = \
                    "%s=unix:%s" % (inst, st.socket_path)
                st.sidecar.argv[st.sidecar.argv.index("--instance-id") + 1] = inst
                st.gateway.argv += common + ["--gateway-id", gid] + \
                    (["--fleet-cacert", cls.cert] if trust else [])
                st.use_cert((cls.cert, cls.key))
                st.cert_a = st.cert_b = (cls.cert, cls.key)
                cls.stacks.append(st)
                st.start()
            cls.wait_routes()
        except BaseException:
            cls.tearDownClass()
            raise

    @classmethod
    def wait_routes(cls):
        deadline = time.monotonic() + BOUND
        while time.monotonic() < deadline:
            if all(st.http("GET", "/readyz").json()["registry"].get("routes") == 3
                   for st in cls.stacks):
                return
            time.sleep(0.05)
        raise AssertionError("routes did not converge:\n" +
                             "\n".join(st.logs() for st in cls.stacks))

    @classmethod
    def tearDownClass(cls):
        problems = []
        for st in cls.stacks:
            problems += st.stop()
            st.cleanup()
        cls.cluster.stop()
        cls.cluster.cleanup()
        if problems:
            raise AssertionError("\n".join(problems))

    def via(self, owner, door):
        """owner's paths and tokens, door's port."""
        d = copy.copy(owner)
        d.port = door.port
        return d

    def test_rest_forwarded_over_tls(self):
        a, b, _ = self.stacks
        token = a.token(sub="admin", scope="sessions")
        r = self.via(a, b).http("GET", "/agents/inst-a/sessions", token=token)
        self.assertEqual(r.status, 200, "%r\n%s" % (r, b.logs()))
        self.assertGreaterEqual(b.metrics().get("ptygate_forwarded_requests_total", 0), 1)

    def test_untrusted_owner_certificate_is_502(self):
        a, _, c = self.stacks
        r = self.via(a, c).http("GET", "/agents/inst-a/sessions",
                                token=a.token(sub="admin", scope="sessions"))
        self.assertEqual(r.status, 502, r)
        self.assertEqual(r.json()["code"], "BAD_GATEWAY")

    async def test_wss_attach_relayed_over_tls(self):
        a, b, _ = self.stacks
        sid = a.create_session()
        c = await self.via(a, b).wss_client(sid, sub="alice")
        try:
            await c.join_fresh("controller")
            await c.run("echo tls-$((40+2))", "tls-42")
            # Far more than the relay buffers (256 KiB) and a TLS record:
            # every line arrives, in order.
            await c.run("seq 1 60000 | tr '\\n' ' '; echo; echo done-$((1+1))", "done-2",
                        timeout=60)
            text = c.output.decode("utf-8", "replace")
            self.assertIn(" 59999 60000", text)
        finally:
            await c.close()
        self.assertGreaterEqual(b.metrics().get("ptygate_relayed_connections_total", 0), 1)


if __name__ == "__main__":
    harness.main()
