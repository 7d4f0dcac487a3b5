"""A compromised sandbox cannot stall or bloat the shared gateway.
A fake sidecar (fake_sidecar.py) serves a second instance and misbehaves;
meanwhile a client of the real instance keeps typing into `cat` and
/healthz is polled: both must answer fast, and the gateway's RSS
stays under a bound.

- bomb: one 16 MB message of 8 million empty Members (decoded whole it
  would cost seconds of the loop and ~1 GB); the decoder's budget refuses
  it.
- flood: Output frames as fast as the fake can write, for a session no
  client watches: nothing is JSON-encoded for it, and the link's reads
  are budgeted per loop turn.
- deaf: the fake never reads; the gateway's queue toward it is capped by
  --link-queue-bytes, then the link is dropped and dialled again.
- wrongid: the fake reports another instance id: the link is refused,
  /readyz says why and a metric counts it.
"""
import asyncio
import concurrent.futures
import os
import statistics
import sys
import threading
import time

import harness
from harness import Daemon, E2ETestCase

HERE = os.path.dirname(os.path.abspath(__file__))
ATTACK_SECONDS = 3.0
# Documented in docs/security.md: gateway RSS growth during an attack.
RSS_BOUND_MIB = 64
os.environ["ASAN_OPTIONS"] = (os.environ.get("ASAN_OPTIONS", "detect_leaks=1:abort_on_error=1")
                              + ":quarantine_size_mb=16")


class HostileLinkCase(E2ETestCase):
    MODE = None
    GATEWAY_ARGS = ("--instance", "inst-fake=unix:{dir}/fake.sock",
                    "--link-queue-bytes", 1 << 20, "--request-timeout-ms", 2000)

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        st = cls.stack
        cls.fake = Daemon("fake-sidecar", [sys.executable, os.path.join(HERE, "fake_sidecar.py"),
                                           cls.MODE, os.path.join(st.dir, "fake.sock"),
                                           "inst-fake"], st.dir)
        cls.fake.start()

    @classmethod
    def tearDownClass(cls):
        cls.fake.kill()
        super().tearDownClass()

    async def measure_during(self, attack_done):
        """Echo and /healthz latencies (ms) while the attack runs, and the
        gateway's RSS growth (MiB)."""
        st = self.stack
        sid, alice = await self.session_with("controller", sub="alice")
        await alice.run("stty -icanon -echo; cat", "", prompt=None)
        base = st.gateway.rss_kib()
        echo, health, rss = [], [], [base]
        t_end = time.monotonic() + ATTACK_SECONDS
        i = 0
        while time.monotonic() < t_end or not attack_done():
            self.assertLess(time.monotonic(), t_end + 30, "the attack never took effect")
            mark = len(alice.output)
            t0 = time.monotonic()
            await alice.type("e%d;" % i)
            await alice.wait_output("e%d;" % i, since=mark, timeout=10)
            echo.append((time.monotonic() - t0) * 1000)
            t0 = time.monotonic()
            self.assertEqual(st.http("GET", "/healthz", timeout=10).status, 200)
            health.append((time.monotonic() - t0) * 1000)
            rss.append(st.gateway.rss_kib())
            i += 1
            await asyncio.sleep(0.02)
        grown = (max(rss) - base) / 1024
        harness.note("%s: echo median %.1f max %.1f ms, /healthz median %.1f max %.1f ms "
                     "(%d samples), RSS %.1f MiB, grew %.1f MiB"
                     % (self.MODE, statistics.median(echo), max(echo), statistics.median(health),
                        max(health), len(echo), base / 1024, grown))
        slow = 3 if st.sanitized else 1
        self.assertLess(statistics.median(echo), 100 * slow)
        self.assertLess(statistics.median(health), 100 * slow)
        # One sample may wait for a core on a loaded machine (one took
        # 1.5 s while another suite's 1,000 observers ran); the stalls this
        # guards against lasted 2.5 to 8 s.
        self.assertLess(max(echo), 2000 * slow)
        self.assertLess(max(health), 2000 * slow)
        self.assertLess(grown, RSS_BOUND_MIB * (2 if st.sanitized else 1))
        self.assertTrue(st.gateway.alive(), st.gateway.log_tail())

    def metric(self, name):
        return self.stack.metrics().get(name, 0)


class BombMessage(HostileLinkCase):
    MODE = "bomb"

    async def test_bomb_is_refused_cheaply(self):
        await self.measure_during(lambda: True)
        # On a loaded machine the fake may send its first bomb after the
        # measurement ends: wait for the refusal, do not read the log once.
        deadline = time.monotonic() + 60
        while True:
            with open(self.stack.gateway.log_path, errors="replace") as f:
                if "bad message" in f.read():
                    break
            self.assertLess(time.monotonic(), deadline, "the bomb was never refused")
            await asyncio.sleep(0.1)


class OutputFlood(HostileLinkCase):
    MODE = "flood"

    async def test_flood_for_nobody_costs_little(self):
        await self.measure_during(lambda: True)


class DeafSidecar(HostileLinkCase):
    MODE = "deaf"

    async def test_queue_toward_a_deaf_sidecar_is_capped(self):
        st = self.stack
        token = st.token(sub="ops", scope="sessions", instance_id="inst-fake")
        body = {"command": ["/bin/sh"] + ["x" * 200] * 250}
        stop = threading.Event()
        statuses = []

        def create():
            while not stop.is_set():
                try:
                    statuses.append(st.http("POST", "/agents/inst-fake/sessions", body,
                                            token=token, timeout=10).status)
                except OSError:
                    pass

        pool = concurrent.futures.ThreadPoolExecutor(8)
        futures = [pool.submit(create) for _ in range(8)]
        try:
            await self.measure_during(
                lambda: self.metric("ptygate_link_queue_overflows_total") >= 1)
        finally:
            stop.set()
            for f in futures:
                f.result()
            pool.shutdown()
        harness.note("deaf: creates answered %s" % sorted(set(statuses)))
        self.assertGreaterEqual(self.metric("ptygate_link_queue_overflows_total"), 1)
        self.assertIn(503, statuses)


class WrongInstanceId(HostileLinkCase):
    MODE = "wrongid"

    async def test_mismatched_instance_is_refused(self):
        st = self.stack
        deadline = time.monotonic() + 10
        while self.metric("ptygate_link_instance_mismatches_total") < 1:
            self.assertLess(time.monotonic(), deadline, st.logs())
            await asyncio.sleep(0.05)
        state = st.http("GET", "/readyz").json()["instances"]
        self.assertEqual(state[st.instance], "up")
        self.assertIn("someone-else", state["inst-fake"])
        self.assertTrue(state["inst-fake"].startswith("refused"), state)
        token = st.token(sub="ops", scope="sessions", instance_id="inst-fake")
        r = st.http("GET", "/agents/inst-fake/sessions", token=token)
        self.assertEqual(r.status, 503, r)
        await self.measure_during(lambda: True)


del HostileLinkCase

if __name__ == "__main__":
    harness.main()
