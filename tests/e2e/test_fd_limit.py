"""The gateway under a small open-file limit.

Started with a soft limit of 128 and a hard one of 256, it raises the soft
limit to the hard one and lowers --max-conns to what fits. Sixty upgrades
then get either a 101 or a clean refusal with a JSON body; the gateway
does not crash (no NULL timer once descriptors run out), and a client attached before keeps working."""
import json
import time

import harness
from harness import E2ETestCase, RawWs

ATTEMPTS = 300  # more than fit in 256 fds at one fd per connection


class SmallFdLimit(E2ETestCase):
    # Every client here comes from 127.0.0.1: lift the per-address cap.
    GATEWAY_ARGS = ("--max-conns-per-ip", "100000")

    @classmethod
    def setUpClass(cls):
        # Wrap the gateway in prlimit before the Stack starts it.
        orig = harness.Stack.__init__

        def init(self, *a, **kw):
            orig(self, *a, **kw)
            self.gateway.argv = ["prlimit", "--nofile=128:256", "--"] + self.gateway.argv

        harness.Stack.__init__ = init
        try:
            super().setUpClass()
        finally:
            harness.Stack.__init__ = orig

    async def test_refusals_are_clean_and_others_unaffected(self):
        st = self.stack
        sid, alice = await self.session_with("controller", sub="alice")
        await alice.run("echo before-$((2+2))", "before-4")

        held, statuses = [], {}
        try:
            for i in range(ATTEMPTS):
                token = st.token(sub="p%d" % (i % 32), session_id=sid, scope="pty:observe")
                r, sock, _ = RawWs.handshake(st.port, st.attach_path(sid),
                                             {"Authorization": "Bearer " + token})
                statuses[r.status] = statuses.get(r.status, 0) + 1
                if sock:
                    held.append(sock)
                    continue
                self.assertIn(r.status, (429, 503), r)
                body = json.loads(r.body)
                self.assertIn(body["code"], ("RATE_LIMITED", "UNAVAILABLE"), body)
                self.assertTrue(body["message"])
            harness.note("statuses under nofile 256: %s" % statuses)
            self.assertTrue(st.gateway.alive(), st.gateway.log_tail())
            self.assertGreater(statuses.get(101, 0), 8, statuses)
            self.assertGreater(sum(v for k, v in statuses.items() if k != 101), 0, statuses)
            t0 = time.monotonic()
            await alice.run("echo during-$((3+3))", "during-6")
            harness.note("echo with the gateway full: %.1f ms" % ((time.monotonic() - t0) * 1000))
            self.assertEqual(st.http("GET", "/healthz").status, 200)
        finally:
            for s in held:
                s.close()
        # The slots come back: a new client gets in again.
        deadline = time.monotonic() + 10
        while True:
            token = st.token(sub="late", session_id=sid, scope="pty:observe")
            r, sock, _ = RawWs.handshake(st.port, st.attach_path(sid),
                                         {"Authorization": "Bearer " + token})
            if sock:
                sock.close()
                break
            self.assertLess(time.monotonic(), deadline, r)
            time.sleep(0.1)
        m = st.metrics()
        self.assertIn("ptygate_conn_setup_failures_total", m)
        # The soft limit was raised to the hard one, and the chosen limit logged.
        with open(st.gateway.log_path, encoding="utf-8", errors="replace") as f:
            self.assertIn("open-file limit 256", f.read())


if __name__ == "__main__":
    harness.main()
