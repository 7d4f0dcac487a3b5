"""Seed 2 (reconnect-replay.txt): reconnect with replay_from gets exactly
what another client saw live; out of range gets REPLAY_OUT_OF_RANGE and a
Keyframe (docs/protocol.md, "Joining a session")."""
import re

import harness
from harness import E2ETestCase, matches


def same(frame):
    """What a replayed frame must keep: sequence, ts and payload."""
    return (frame["sequence"], frame["ts"], frame["payload"])


async def read_replay(client, timeout=10):
    """After a join with replay_from: RoleAssigned, the replayed frames, the
    Keyframe. Returns (role_assigned, replayed, keyframe)."""
    ra = await client.expect_frame("pty.session_frame", "RoleAssigned")
    kf, seen = await client.recv_until(
        lambda f: matches(f, "pty.session_frame", "Keyframe") and f["sequence"] > ra["sequence"],
        timeout, what="the post-replay Keyframe")
    return ra, seen[:-1], kf


class ReplayInRange(E2ETestCase):

    async def test_reconnect_gets_exactly_what_was_missed(self):
        sid, live = await self.session_with("controller", sub="alice")
        await live.run("echo one-$((0+1))", "one-1")

        bob = await self.connect(sid, sub="bob", scope="pty:observe")
        await bob.join_fresh("observer")
        last_seen = bob.last_sequence()
        await bob.close()                      # Bob's network drops
        await live.wait_for("pty.session_frame", "MembershipChanged")
        for i in range(3):
            await live.run("echo missed-$((%d*11))" % (i + 1), "missed-%d" % ((i + 1) * 11))

        bob2 = await self.connect(sid, sub="bob", scope="pty:observe")
        current = bob2.hello["payload"]["session"]["current_sequence"]
        await live.catch_up(current)
        join_id = await bob2.join("observer", replay_from=last_seen)
        ra, replayed, kf = await read_replay(bob2)
        self.assertEqual(ra["sequence"], current + 1)
        self.assertEqual(ra["payload"]["role"], "observer")

        expected = [same(f) for f in live.frames
                    if f["op"] == "pty.session_frame" and last_seen < f["sequence"] <= current]
        self.assertTrue(expected, "something happened while Bob was away")
        self.assertEqual([same(f) for f in replayed], expected,
                         "replay = the frames Alice saw live, same sequence, ts and payload")
        self.assertIn(b"missed-33", bob2.output)
        self.assertNotEqual(kf["id"], join_id)

        mc = await bob2.expect_frame("pty.session_frame", "MembershipChanged")
        self.assertGreater(mc["sequence"], kf["sequence"])
        self.assertIn(ra["payload"]["client_id"], [o["client_id"] for o in mc["payload"]["observers"]])
        seen = await live.wait_for("pty.session_frame", "MembershipChanged",
                                   where=lambda f: f["sequence"] == mc["sequence"])
        self.assertEqual(seen["payload"], mc["payload"])

        # Live resumes after the seam.
        await live.run("echo live-$((5*5))", "live-25")
        await bob2.wait_output("live-25")

    async def test_two_clients_from_one_cursor_get_identical_frames(self):
        sid, live = await self.session_with("controller", sub="alice")
        cursor = live.last_sequence()
        for i in range(3):
            await live.run("echo burst-$((%d+100))" % i, "burst-%d" % (i + 100))
        a = await self.connect(sid, sub="carol", scope="pty:observe")
        b = await self.connect(sid, sub="dave", scope="pty:observe")
        await a.join("observer", replay_from=cursor)
        await b.join("observer", replay_from=cursor)
        _, ra_frames, _ = await read_replay(a)
        _, rb_frames, _ = await read_replay(b)
        # Frames after a's join (its MembershipChanged) may sit inside b's
        # replay; compare what both were replayed up to a's current sequence.
        upto = a.hello["payload"]["session"]["current_sequence"]
        pick = lambda fs: [same(f) for f in fs if f["sequence"] <= upto]
        self.assertTrue(pick(ra_frames))
        self.assertEqual(pick(ra_frames), pick(rb_frames))

    async def test_replay_from_current_replays_nothing(self):
        sid, live = await self.session_with("controller", sub="alice")
        await live.run("echo idle-$((1+1))", "idle-2")
        c = await self.connect(sid, sub="erin", scope="pty:observe")
        current = c.hello["payload"]["session"]["current_sequence"]
        await c.join("observer", replay_from=current)
        ra = await c.expect_frame("pty.session_frame", "RoleAssigned")
        kf = await c.expect_frame("pty.session_frame", "Keyframe")
        self.assertGreater(kf["sequence"], ra["sequence"])
        mc = await c.expect_frame("pty.session_frame", "MembershipChanged")
        self.assertGreater(mc["sequence"], kf["sequence"])

    async def test_replay_from_zero_replays_the_whole_history(self):
        sid, live = await self.session_with("controller", sub="alice")
        # Alice saw live every frame after her RoleAssigned.
        joined = next(f for f in live.frames if matches(f, "pty.session_frame", "RoleAssigned"))["sequence"]
        await live.run("echo first-$((3*3))", "first-9")
        c = await self.connect(sid, sub="frank", scope="pty:observe")
        current = c.hello["payload"]["session"]["current_sequence"]
        await c.join("observer", replay_from=0)
        _, replayed, _ = await read_replay(c)
        self.assertIn(b"first-9", c.output)
        seqs = [f["sequence"] for f in replayed]
        self.assertEqual(seqs, sorted(seqs))
        self.assertEqual(seqs[-1], current)
        await live.catch_up(current)
        broadcast = lambda f: f["payload"]["kind"] not in ("RoleAssigned", "Keyframe")
        expected = [same(f) for f in live.frames if f["op"] == "pty.session_frame"
                    and joined < f["sequence"] <= current and broadcast(f)]
        got = [same(f) for f in replayed if f["sequence"] > joined and broadcast(f)]
        self.assertEqual(got, expected)

    async def test_nothing_lost_or_doubled_at_the_seam(self):
        """Output keeps coming while the replay is sent: after the Keyframe
        it follows in order, nothing lost, nothing twice."""
        sid, live = await self.session_with("controller", sub="alice")
        await live.run("echo start-$((1+1))", "start-2")
        cursor = live.last_sequence()
        await live.type("i=1; while [ $i -le 150 ]; do echo seam-$i; i=$((i+1)); sleep 0.01; done;"
                        " echo seam-$((100*5))-end\n")
        await live.wait_output("seam-40\r\n", timeout=10)
        c = await self.connect(sid, sub="gina", scope="pty:observe")
        await c.join("observer", replay_from=cursor)
        await c.wait_output("seam-500-end", timeout=20)
        await c.quiet(0.3)
        frames = [f for f in c.frames if f["op"] == "pty.session_frame"]
        seqs = [f["sequence"] for f in frames]
        self.assertEqual(len(seqs), len(set(seqs)), "no frame twice")
        self.assertEqual(sorted(seqs), list(range(cursor + 1, max(seqs) + 1)), "no frame lost")
        kf = next(f for f in frames if matches(f, "pty.session_frame", "Keyframe"))
        after = [f["sequence"] for f in frames[frames.index(kf) + 1:]]
        self.assertEqual(after, sorted(after), "live frames follow the Keyframe in order")
        text = bytes(c.output)
        for i in range(1, 151):
            self.assertEqual(text.count(b"seam-%d\r\n" % i), 1, "seam-%d exactly once" % i)


class ReplayOutOfRange(E2ETestCase):
    SIDECAR_ARGS = ("--replay-frames", 3, "--replay-seconds", 0)

    async def test_out_of_range_gets_error_then_keyframe(self):
        sid, live = await self.session_with("controller", sub="alice")
        for i in range(6):
            await live.run("echo evict-$((%d+200))" % i, "evict-%d" % (i + 200))
        info = self.stack.get_session(sid)
        oldest = info["oldest_retained_sequence"]
        self.assertGreater(oldest, 2, "with 3 frames retained the start is evicted: %r" % info)

        c = await self.connect(sid, sub="bob", scope="pty:observe")
        join_id = await c.join("observer", replay_from=1)
        err = await c.expect_frame("Error")
        p = err["payload"]
        self.assertEqual(err["id"], join_id)
        self.assertEqual(p["code"], "REPLAY_OUT_OF_RANGE")
        self.assertIsNone(p["a2a_error"])
        self.assertIs(p["retryable"], False)
        numbers = [int(n) for n in re.findall(r"\d+", p["message"])]
        self.assertIn(1, numbers, p["message"])
        self.assertIn(oldest, numbers, "message names the oldest retained sequence: %r" % p["message"])
        kf = await c.expect_frame("pty.session_frame", "Keyframe")
        self.assertIn("evict-205", harness.screen_text(harness.base64.b64decode(kf["payload"]["snapshot"])))
        ra = await c.expect_frame("pty.session_frame", "RoleAssigned")
        self.assertEqual(ra["payload"]["role"], "observer")
        await c.expect_frame("pty.session_frame", "MembershipChanged")
        await live.run("echo still-$((7*7))", "still-49")
        await c.wait_output("still-49")

    async def test_ahead_of_current_is_out_of_range(self):
        sid, live = await self.session_with("controller", sub="alice")
        c = await self.connect(sid, sub="bob", scope="pty:observe")
        ahead = c.hello["payload"]["session"]["current_sequence"] + 100
        join_id = await c.join("observer", replay_from=ahead)
        err = await c.expect_error("REPLAY_OUT_OF_RANGE", echo_id=join_id)
        self.assertIn(ahead, [int(n) for n in re.findall(r"\d+", err["payload"]["message"])])
        await c.expect_frame("pty.session_frame", "Keyframe")
        await c.expect_frame("pty.session_frame", "RoleAssigned")
        await c.expect_frame("pty.session_frame", "MembershipChanged")

    async def test_oldest_minus_one_is_still_in_range(self):
        sid, live = await self.session_with("controller", sub="alice")
        for i in range(5):
            await live.run("echo edge-$((%d+300))" % i, "edge-%d" % (i + 300))
        oldest = self.stack.get_session(sid)["oldest_retained_sequence"]
        c = await self.connect(sid, sub="bob", scope="pty:observe")
        await c.join("observer", replay_from=oldest - 1)
        first = await c.recv()
        self.assertEqual(first["payload"].get("kind"), "RoleAssigned",
                         "N = oldest_retained - 1 is within retention: %s" % harness.summarize([first]))
        _, replayed, _ = await read_replay_after(c, first)
        self.assertEqual(replayed[0]["sequence"], oldest)


async def read_replay_after(client, ra, timeout=10):
    kf, seen = await client.recv_until(
        lambda f: matches(f, "pty.session_frame", "Keyframe") and f["sequence"] > ra["sequence"],
        timeout, what="the post-replay Keyframe")
    return ra, seen[:-1], kf


if __name__ == "__main__":
    harness.main()
