"""The fleet registry on a real three-member etcd cluster (etcd_cluster.py):
a gateway with --registry writes its gateway key and one key per instance
under its lease; an instance removed (SIGHUP) takes its key with it; a
SIGKILLed gateway's keys are gone within the TTL, a stopped one's at
once (its lease revoked); a gateway that would
take over another live gateway's instance is refused by the transaction
(logged, counted), and claims it once the owner is gone; two gateways see
each other's instances and gateways in their routing caches. Outages:
one etcd member killed goes unnoticed; all three stopped, the gateway
keeps serving its own instance and says the registry is down in
/readyz; etcd back, it converges. Deployments' options: etcd with
authentication on (--registry-user, --registry-password-file), etcd over
TLS with client certificates (--registry-cacert, --registry-cert,
--registry-key); two processes under one --gateway-id never rewrite each
other's keys."""
import os
import signal
import time
import unittest

import harness
import etcd_cluster
from etcd_cluster import EtcdCluster, b64
from harness import Stack, note

TTL = 2
# A failure guard, not a measurement: etcd checks leases every 500 ms and
# a loaded two-core machine running the sanitizer build is slow to answer.
BOUND = 30.0


def wait_until(predicate, what, timeout=BOUND, stacks=()):
    return etcd_cluster.wait_until(predicate, what, timeout,
                                   logs=lambda: "\n".join(s.logs() for s in stacks))


class RegistryCase(unittest.TestCase):
    cluster = None

    @classmethod
    def setUpClass(cls):
        cls.cluster = EtcdCluster()
        try:
            cls.cluster.start()
        except BaseException:
            cls.cluster.stop()
            cls.cluster.cleanup()
            raise

    @classmethod
    def tearDownClass(cls):
        cls.cluster.stop()
        cls.cluster.cleanup()

    def setUp(self):
        self.stacks = []
        # Each test its own prefix: the cluster is the class's.
        self.prefix = "/t-%s-%d/" % (self._testMethodName, os.getpid())

    def tearDown(self):
        problems = []
        for st in self.stacks:
            problems += st.stop()
            st.cleanup()
        self.assertEqual(problems, [], "\n".join(problems))

    def gateway(self, gid, instance="inst-e2e", extra=(), start=True, before_start=None,
                ttl=TTL):
        st = Stack(instance=instance, gateway_args=[
            "--registry", "etcd:" + self.cluster.endpoints(), "--registry-prefix", self.prefix,
            "--registry-ttl", str(ttl), "--gateway-id", gid, *extra])
        self.stacks.append(st)
        if before_start:
            before_start(st)
        if start:
            st.start()
        return st

    def keys(self):
        return self.cluster.get_prefix(self.prefix)

    def key(self, kind, name):
        return self.keys().get(self.prefix + kind + "/" + name)

    def registry(self, st):
        return st.http("GET", "/readyz").json()["registry"]

    def wait_state(self, st, state):
        return wait_until(lambda: self.registry(st)["state"] == state,
                          "registry state %s" % state, stacks=[st])


class Keys(RegistryCase):

    def test_keys_written_and_instance_removal_deletes_its_key(self):
        def instances_file(st):
            with open(os.path.join(st.dir, "instances"), "w") as f:
                f.write("extra-1 unix:%s/none.sock\n" % st.dir)

        a = self.gateway("gw-a", extra=["--instances-file", "{dir}/instances"],
                         before_start=instances_file)
        wait_until(lambda: len(self.keys()) == 3, "three keys", stacks=[a])
        gw_value, gw_lease = self.key("gateways", "gw-a")
        self.assertEqual(gw_value["id"], "gw-a")
        self.assertEqual(gw_value["url"], "http://127.0.0.1:%d" % a.port)
        self.assertTrue(gw_value["version"])
        self.assertRegex(gw_value["boot"], harness.UUID7)
        self.assertNotEqual(gw_lease, 0)
        for inst in ("inst-e2e", "extra-1"):
            value, lease = self.key("instances", inst)
            self.assertEqual(value, {"gateway": "gw-a", "url": gw_value["url"],
                                     "boot": gw_value["boot"]})
            self.assertEqual(lease, gw_lease, "every key under the gateway's lease")
        reg = self.wait_state(a, "up") and self.registry(a)
        self.assertEqual((reg["gateway_id"], reg["lease"]), ("gw-a", True))
        wait_until(lambda: self.registry(a)["routes"] == 2, "two routes cached", stacks=[a])

        with open(os.path.join(a.dir, "instances"), "w") as f:
            f.write("# extra-1 removed\n")
        a.gateway.proc.send_signal(1)  # SIGHUP
        wait_until(lambda: self.key("instances", "extra-1") is None,
                   "extra-1's key deleted", stacks=[a])
        self.assertIsNotNone(self.key("instances", "inst-e2e"))
        wait_until(lambda: self.registry(a)["routes"] == 1, "its route dropped", stacks=[a])

    def test_claims_beyond_those_in_flight_go_on_at_once(self):
        # More instances than claims in flight at once (32), and a TTL whose
        # keep-alive tick (10 s) is past the bound: the claims must follow
        # each other, not wait for a tick each batch.
        n = 70

        def instances_file(st):
            with open(os.path.join(st.dir, "instances"), "w") as f:
                for i in range(n):
                    f.write("many-%02d unix:%s/none.sock\n" % (i, st.dir))

        a = self.gateway("gw-a", extra=["--instances-file", "{dir}/instances",
                                        "--registry-ttl", "30"],
                         before_start=instances_file)
        t0 = time.monotonic()
        wait_until(lambda: len(self.keys()) == n + 2, "every key", timeout=9.5, stacks=[a])
        note("%d instance keys written in %.2f s" % (n + 1, time.monotonic() - t0))

    def test_registered_instance_key_follows_its_link(self):
        # A sidecar that dials in: its key is written when its link is
        # accepted and deleted when, its link gone past --link-grace, the
        # instance is removed.
        st = harness.DialStack(gateway_args=[
            "--registry", "etcd:" + self.cluster.endpoints(), "--registry-prefix",
            self.prefix, "--registry-ttl", str(TTL), "--gateway-id", "gw-dial",
            "--link-grace", "1"])
        self.stacks.append(st)
        st.start()
        value = wait_until(lambda: self.key("instances", "inst-dial"),
                           "the registered instance's key", stacks=[st])[0]
        self.assertEqual(value["gateway"], "gw-dial")
        st.sidecar.kill()
        wait_until(lambda: self.key("instances", "inst-dial") is None,
                   "its key deleted with the instance", stacks=[st])
        self.assertIsNotNone(self.key("gateways", "gw-dial"), "the gateway lives on")

    def test_stray_keys_under_the_prefix_are_left_out(self):
        # Keys no gateway wrote: a name too long, a value that is not
        # JSON, and values big enough that a page of them is over the
        # answer's cap. The map is read all the same, without them.
        self.cluster.put(self.prefix + "instances/" + "x" * 1500, "{}")
        self.cluster.put(self.prefix + "instances/not-json", "not json")
        big = "y" * (1 << 20)
        for i in range(6):
            self.cluster.put(self.prefix + "junk/%d" % i, big)
        a = self.gateway("gw-a")
        self.wait_state(a, "up")
        wait_until(lambda: self.registry(a)["routes"] == 1, "its own route", stacks=[a])
        self.assertGreaterEqual(a.metrics()["ptygate_registry_keys_skipped_total"], 7)

    def test_lease_lost_is_granted_again_and_keys_rewritten(self):
        # A TTL no late keep-alive reaches: the one lease lost is the revoke.
        a = self.gateway("gw-a", ttl=10)
        wait_until(lambda: len(self.keys()) == 2, "two keys", stacks=[a])
        old = self.key("gateways", "gw-a")[1]
        # An operator (or etcd) ends the lease: the keys go with it.
        self.cluster.call("/v3/lease/revoke", {"ID": str(old)})
        t0 = time.monotonic()
        wait_until(lambda: len(self.keys()) == 2 and all(
            lease not in (0, old) for _, lease in self.keys().values()),
            "both keys again under a new lease", stacks=[a])
        note("keys back under a new lease %.2f s after the revoke"
             % (time.monotonic() - t0))
        m = a.metrics()
        self.assertEqual(m["ptygate_registry_leases_lost_total"], 1)
        self.assertEqual(m["ptygate_registry_lease_grants_total"], 2)
        self.wait_state(a, "up")

    def test_sigkill_keys_gone_within_ttl(self):
        a = self.gateway("gw-a")
        wait_until(lambda: len(self.keys()) == 2, "two keys", stacks=[a])
        a.gateway.kill()
        t0 = time.monotonic()
        wait_until(lambda: not self.keys(), "the dead gateway's keys gone", stacks=[a])
        took = time.monotonic() - t0
        note("keys of a SIGKILLed gateway gone after %.2f s (TTL %d s)" % (took, TTL))
        # The lease was kept alive up to the kill: the keys outlive it by at
        # most the TTL plus etcd's expiry check; the bound only guards.
        self.assertLess(took, BOUND)

    def test_sigterm_revokes_the_lease(self):
        # A TTL far longer than the wait: only the revoke can clear the keys.
        a = self.gateway("gw-a", extra=["--registry-ttl", "300"])
        wait_until(lambda: len(self.keys()) == 2, "two keys", stacks=[a])
        self.stacks.remove(a)
        self.addCleanup(a.cleanup)
        problems = a.stop()
        self.assertEqual(problems, [], "\n".join(problems))
        self.assertEqual(self.keys(), {}, "the keys went with the revoked lease")
        with open(a.gateway.log_path) as f:
            self.assertIn("revoked: this gateway's keys are gone", f.read())

    def test_takeover_refused_then_claimed_when_owner_dies(self):
        a = self.gateway("gw-a")
        wait_until(lambda: self.key("instances", "inst-e2e"), "gw-a's instance key", stacks=[a])
        # gw-b serves an instance of the same id (its own sidecar) and one more.
        b = self.gateway("gw-b", extra=["--instance", "inst-b=unix:{dir}/none.sock"])
        wait_until(lambda: b.metrics().get("ptygate_registry_claims_refused_total", 0) >= 1,
                   "gw-b's claim refused", stacks=[a, b])
        with open(b.gateway.log_path) as f:
            log = f.read()
        self.assertIn("instance inst-e2e is held by live gateway gw-a", log)
        self.assertEqual(self.key("instances", "inst-e2e")[0]["gateway"], "gw-a")
        self.assertEqual(self.key("instances", "inst-b")[0]["gateway"], "gw-b")

        # Each sees the other's gateway and instances in its routing cache.
        for st in (a, b):
            wait_until(lambda: self.registry(st)["gateways"] == 2
                       and self.registry(st)["routes"] == 2,
                       "both gateways and both instances cached", stacks=[st])
            self.assertEqual(st.metrics()["ptygate_registry_routes"], 2)

        # The owner dies: its key goes with its lease, and gw-b, which
        # serves the instance too, claims it.
        a.gateway.kill()
        wait_until(lambda: (self.key("instances", "inst-e2e") or ({},))[0].get("gateway")
                   == "gw-b", "gw-b holding inst-e2e", stacks=[b])
        wait_until(lambda: self.registry(b)["gateways"] == 1, "gw-a gone from the cache",
                   stacks=[b])


class Tls(RegistryCase):
    """etcd that speaks TLS only and asks for a client certificate: the
    gateway verifies etcd with --registry-cacert and presents
    --registry-cert/--registry-key; without the certificate it is
    refused."""

    @classmethod
    def setUpClass(cls):
        cls.cluster = EtcdCluster(tls=True)
        try:
            cls.cluster.start()
        except BaseException:
            cls.cluster.stop()
            cls.cluster.cleanup()
            raise

    def test_client_certificate(self):
        tls = self.cluster.tls
        a = self.gateway("gw-a", extra=["--registry-cacert", tls["ca.pem"],
                                        "--registry-cert", tls["client.pem"],
                                        "--registry-key", tls["client.key"]])
        self.wait_state(a, "up")
        wait_until(lambda: self.key("instances", "inst-e2e"), "the instance key", stacks=[a])
        self.assertEqual(self.key("instances", "inst-e2e")[0]["gateway"], "gw-a")

        b = self.gateway("gw-b", instance="inst-b",
                         extra=["--registry-cacert", tls["ca.pem"]])
        wait_until(lambda: b.metrics()["ptygate_registry_request_errors_total"] >= 2,
                   "gw-b refused without a client certificate", stacks=[b])
        self.assertEqual(self.registry(b)["state"], "down")
        self.assertIsNone(self.key("instances", "inst-b"))


class Twins(RegistryCase):

    def revision(self):
        return int(self.cluster.call("/v3/kv/range", {"key": "AA=="})["header"]["revision"])

    def test_two_processes_with_one_gateway_id_do_not_fight(self):
        # Two gateways on one host left at one --gateway-id, serving the
        # same instance: the second is refused both keys, and neither
        # rewrites the other's (no write after write through the watch).
        # A TTL far past the wait: a keep-alive late on a loaded machine
        # must not rewrite a key under a new lease while it is watched.
        a = self.gateway("gw-same", ttl=30)
        wait_until(lambda: len(self.keys()) == 2, "the first one's keys", stacks=[a])
        held = self.keys()
        b = self.gateway("gw-same", ttl=30)
        wait_until(lambda: b.metrics().get("ptygate_registry_claims_refused_total", 0) >= 2,
                   "the twin's claims refused", stacks=[a, b])
        with open(b.gateway.log_path) as f:
            log = f.read()
        self.assertIn("gateway id gw-same is held by another live process", log)
        self.assertIn("(another process with this --gateway-id)", log)
        first = self.revision()
        time.sleep(6)
        self.assertEqual(self.revision(), first, "no key written since")
        self.assertEqual(self.keys(), held, "the first one's keys as they were")


class Outage(RegistryCase):

    def test_hung_member_holding_the_watch(self):
        # The member the watch streams from stops (SIGSTOP: its sockets stay
        # open, nothing breaks). The keep-alives it no longer answers move
        # the watch to another member, so a key written meanwhile reaches
        # the cache.
        a = self.gateway("gw-a")
        self.wait_state(a, "up")
        stopped = self.cluster.members[0]
        stopped.proc.send_signal(signal.SIGSTOP)
        self.addCleanup(lambda: stopped.proc.send_signal(signal.SIGCONT))

        def put():
            # Through another member; if the stopped one led, the others
            # elect a leader first.
            try:
                self.cluster.call("/v3/kv/put", {
                    "key": b64(self.prefix + "instances/elsewhere"),
                    "value": b64('{"gateway":"gw-x","url":"http://x"}')},
                    url=self.cluster.url(1))
                return True
            except OSError:
                return False

        wait_until(put, "a write through another member", stacks=[a])
        wait_until(lambda: self.registry(a)["routes"] == 2, "the new key in the cache",
                   stacks=[a])
        self.assertGreaterEqual(a.metrics()["ptygate_registry_resyncs_total"], 1)
        stopped.proc.send_signal(signal.SIGCONT)

    def test_member_kill_then_all_down_then_back(self):
        # A TTL a loaded machine's late keep-alive cannot reach while the
        # test checks that one member's death goes unnoticed.
        a = self.gateway("gw-a", ttl=10)
        self.wait_state(a, "up")
        wait_until(lambda: len(self.keys()) == 2, "two keys", stacks=[a])

        # One member of three killed: the registry stays (or is at once
        # again) up on the other two, the keys stay.
        self.cluster.kill_member(0)
        self.cluster.wait_healthy()
        self.wait_state(a, "up")
        time.sleep(4)  # past a keep-alive period: still alive
        self.assertEqual(self.registry(a)["state"], "up")
        self.assertEqual(len(self.keys()), 2)

        # All down: the local instance is still served; /readyz says so.
        self.cluster.stop_all()
        wait_until(lambda: self.registry(a)["state"] != "up", "registry reported down",
                   stacks=[a])
        ready = a.http("GET", "/readyz")
        self.assertEqual(ready.status, 200, "local instances keep the gateway ready")
        self.assertEqual(ready.json()["instances"], {"inst-e2e": "up"})
        sid = a.create_session()
        self.assertEqual(a.get_session(sid)["session_id"], sid)
        # A watch that etcd ends cleanly takes the state down uncounted:
        # the failed requests are counted as they come, waited for.
        wait_until(lambda: a.metrics()["ptygate_registry_request_errors_total"] > 0,
                   "a failed registry request counted", stacks=[a])
        self.assertGreater(a.metrics()["ptygate_registry_request_errors_total"], 0)

        # etcd back: the gateway converges (lease, keys, cache).
        t0 = time.monotonic()
        for i in range(3):
            self.cluster.start_member(i)
        self.cluster.wait_healthy()
        self.wait_state(a, "up")
        # etcd restores the old lease with its members: both keys may stand
        # under it for a while, and the gateway rewrites each under its new
        # lease in whichever order its two claims come back.
        def both_under_one_lease():
            inst, gw = self.key("instances", "inst-e2e"), self.key("gateways", "gw-a")
            return inst is not None and gw is not None and inst[1] == gw[1]

        wait_until(both_under_one_lease, "both keys back under one lease", stacks=[a])
        note("registry up again %.2f s after etcd's restart" % (time.monotonic() - t0))
        value, lease = self.key("instances", "inst-e2e")
        self.assertEqual(value["gateway"], "gw-a")
        self.assertEqual(lease, self.key("gateways", "gw-a")[1])
        self.assertGreaterEqual(a.metrics()["ptygate_registry_resyncs_total"], 1)


class Auth(RegistryCase):
    """etcd with authentication on: the gateway authenticates with
    --registry-user and --registry-password-file; without them etcd
    refuses it, which it reports and counts."""

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        try:
            cls.cluster.enable_auth("root", "s3cret-pw")
        except BaseException:
            cls.tearDownClass()
            raise

    def test_authenticated_and_refused(self):
        def password(st):
            with open(os.path.join(st.dir, "etcd.pw"), "w") as f:
                f.write("s3cret-pw\n")

        a = self.gateway("gw-a", extra=["--registry-user", "root",
                                        "--registry-password-file", "{dir}/etcd.pw"],
                         before_start=password)
        self.wait_state(a, "up")
        keys = self.cluster.get_prefix(self.prefix, auth=("root", "s3cret-pw"))
        self.assertEqual(keys[self.prefix + "instances/inst-e2e"][0]["gateway"], "gw-a")
        with open(a.gateway.log_path) as f:
            self.assertIn("authenticated to etcd as root", f.read())

        b = self.gateway("gw-b", instance="inst-b")
        wait_until(lambda: b.metrics()["ptygate_registry_request_errors_total"] >= 2,
                   "gw-b's requests refused", stacks=[b])
        self.assertEqual(self.registry(b)["state"], "down")
        self.assertEqual(b.http("GET", "/readyz").status, 200)

    def test_password_file_reread_on_sighup(self):
        """A new password in the file is taken on SIGHUP and used when etcd
        asks again (changing a user's password drops its tokens); a file
        that cannot be read keeps the current password."""
        root = self.cluster.token(("root", "s3cret-pw"))
        self.cluster.call("/v3/auth/user/add", {"name": "fleet", "password": "pw-one"},
                          token=root)
        self.cluster.call("/v3/auth/user/grant", {"user": "fleet", "role": "root"},
                          token=root)
        pw = []

        def password(st):
            pw.append(os.path.join(st.dir, "etcd.pw"))
            with open(pw[0], "w") as f:
                f.write("pw-one\n")

        a = self.gateway("gw-a", extra=["--registry-user", "fleet",
                                        "--registry-password-file", "{dir}/etcd.pw"],
                         before_start=password)
        self.wait_state(a, "up")

        def count(line):
            with open(a.gateway.log_path) as f:
                return f.read().count(line)

        def hup(line):
            n = count(line)
            a.gateway.proc.send_signal(signal.SIGHUP)
            wait_until(lambda: count(line) > n, line, stacks=[a])

        def change_password(new):
            """etcd drops fleet's tokens; the gateway's lease revoked, its
            grant of a new one is refused and it authenticates again."""
            n = count("authenticated to etcd as fleet")
            root = self.cluster.token(("root", "s3cret-pw"))
            self.cluster.call("/v3/auth/user/changepw", {"name": "fleet", "password": new},
                              token=root)
            gw_key = self.prefix + "gateways/gw-a"
            lease = wait_until(lambda: self.cluster.get_prefix(
                self.prefix, auth=("root", "s3cret-pw")).get(gw_key, (0, 0))[1],
                "the gateway key under a lease", stacks=[a])
            self.cluster.call("/v3/lease/revoke", {"ID": str(lease)}, token=root)
            wait_until(lambda: count("authenticated to etcd as fleet") > n,
                       "authenticated again after the password changed", stacks=[a])
            self.wait_state(a, "up")

        with open(pw[0], "w") as f:
            f.write("pw-two\n")
        hup("SIGHUP: the etcd password re-read")
        change_password("pw-two")
        os.unlink(pw[0])
        hup("SIGHUP: keeping the current etcd password")
        change_password("pw-two")  # the kept password still opens etcd


if __name__ == "__main__":
    unittest.main()
