"""A half-open client is reaped by the heartbeat with the cleanup of a clean
close: its slot is freed and MembershipChanged is broadcast."""
import time

import harness
from harness import E2ETestCase


def heartbeat_count(metrics):
    found = {k: v for k, v in metrics.items() if "heartbeat" in k}
    assert found, "no heartbeat metric in /metrics: %s" % sorted(metrics)
    return sum(found.values())


class HalfOpenClient(E2ETestCase):
    GATEWAY_ARGS = ("--ping-interval", 1, "--pong-timeout", 1)

    async def test_silent_client_is_reaped(self):
        sid, alice = await self.session_with("controller", sub="alice")
        before = heartbeat_count(self.stack.metrics())

        ghost = self.raw(sid, sub="ghost", scope="pty:observe")
        ghost.answer_pings = False
        await ghost.expect_hello(sid)
        await ghost.join("observer", label="ghost")
        ra = await ghost.expect_frame("pty.session_frame", "RoleAssigned")
        ghost_id = ra["payload"]["client_id"]
        # From here on the ghost never reads, never answers a ping.
        mc = await alice.wait_for("pty.session_frame", "MembershipChanged",
                                  where=lambda f: ghost_id in ids(f))
        t0 = time.monotonic()
        gone = await alice.wait_for("pty.session_frame", "MembershipChanged", timeout=9,
                                    where=lambda f: ghost_id not in ids(f))
        # Reaped by this heartbeat (a ping after 1 s idle, no pong within
        # 1 s more), not by anything faster, nor by the defaults (a ping
        # after 30 s, a pong timeout of 10 s): the heartbeat needs about
        # 2 s, the wait above allows 9 (a loaded machine's timers run late,
        # never early), the defaults would need 40.
        elapsed = time.monotonic() - t0
        self.assertGreater(elapsed, 1.0, "reaped before the pong timeout could run out")
        self.assertLess(elapsed, 9.0, "the heartbeat took %.1f s for 1 s + 1 s" % elapsed)
        self.assertEqual([c["client_id"] for c in gone["payload"]["controllers"]], [alice.client_id])
        self.assertGreater(gone["sequence"], mc["sequence"])

        # Alice answered every ping (the library does) and is still live.
        await alice.run("echo alive-$((3+3))", "alive-6")
        self.assertGreater(heartbeat_count(self.stack.metrics()), before)
        info = self.stack.get_session(sid)
        self.assertEqual(harness.count_members(info["observers"]), 0, info)


def ids(frame):
    p = frame["payload"]
    return [c["client_id"] for c in p["controllers"] + p["observers"]]


if __name__ == "__main__":
    harness.main()
