"""Roles and capacity (docs/protocol.md, "Roles"): downgrade, a full session, role requests,
keyframe requests and their throttle, and the keyframe cadence."""

import harness
from harness import E2ETestCase, matches, summarize


def role_of(frame):
    return frame["payload"]["role"]


class RolesAndCapacity(E2ETestCase):
    SIDECAR_ARGS = ("--max-controllers", 1, "--max-observers", 1, "--keyframe-frames", 10)

    async def test_second_controller_is_downgraded_and_a_full_session_refused(self):
        sid, alice = await self.session_with("controller", sub="alice")
        bob = await self.connect(sid, sub="bob")
        await bob.join("controller")
        ra = await bob.expect_frame("pty.session_frame", "RoleAssigned")
        self.assertEqual(role_of(ra), "observer")
        self.assertIs(ra["payload"].get("downgraded"), True)
        self.assertTrue(ra["payload"].get("reason"), "a downgrade says why")
        mc = await bob.wait_for("pty.session_frame", "MembershipChanged")
        self.assertEqual([c["label"] for c in mc["payload"]["controllers"]], ["alice"])
        self.assertEqual([o["label"] for o in mc["payload"]["observers"]], ["bob"])

        carol = await self.connect(sid, sub="carol")
        join_id = await carol.join("observer")
        await carol.expect_error("RATE_LIMITED", echo_id=join_id)
        await carol.expect_close(4429, allow=("Output", "binding_goodbye"))
        members = self.stack.get_session(sid)
        self.assertEqual((harness.count_members(members["controllers"]),
                          harness.count_members(members["observers"])), (1, 1), members)

    async def test_request_role_up_and_down(self):
        sid, alice = await self.session_with("controller", sub="alice")
        await alice.send("pty.request_role", {"role": "observer"})
        ra = await alice.wait_for("pty.session_frame", "RoleAssigned")
        self.assertEqual(role_of(ra), "observer")
        mc = await alice.wait_for("pty.session_frame", "MembershipChanged")
        self.assertEqual((mc["payload"]["controllers"], len(mc["payload"]["observers"])), ([], 1))
        refused = await alice.send("pty.session_input", {"data": harness.b64("true\n")})
        await alice.expect_error("PERMISSION_DENIED", echo_id=refused)

        bob = await self.connect(sid, sub="bob")
        ra_bob, _, _ = await bob.join_fresh("controller")
        self.assertEqual(role_of(ra_bob), "controller", "the controller slot was freed")

        await alice.send("pty.request_role", {"role": "controller"})
        ra = await alice.wait_for("pty.session_frame", "RoleAssigned")
        self.assertEqual(role_of(ra), "observer")
        self.assertTrue(ra["payload"].get("reason"), "a refused request says why")

        await bob.send("pty.leave_session", {})
        await bob.wait_for("binding_goodbye")
        await alice.wait_for("pty.session_frame", "MembershipChanged",
                             where=lambda f: f["payload"]["controllers"] == [])
        await alice.send("pty.request_role", {"role": "controller"})
        ra = await alice.wait_for("pty.session_frame", "RoleAssigned")
        self.assertEqual(role_of(ra), "controller")
        self.assertEqual(ra["payload"]["client_id"], alice.client_id, "client_id is stable")
        mc = await alice.wait_for("pty.session_frame", "MembershipChanged")
        self.assertEqual([c["client_id"] for c in mc["payload"]["controllers"]], [alice.client_id])
        await alice.run("echo back-$((8*8))", "back-64")

    async def test_request_keyframe_and_throttle(self):
        sid, alice = await self.session_with("controller", sub="alice")
        await alice.run("echo kf-$((9*9))", "kf-81")
        await alice.quiet(1.1)  # the join's Keyframe counts against the throttle
        # The two requests leave together, so the second reaches the
        # sidecar well within the first's second, however loaded the
        # machine. The Keyframe (due within 1 s) is the answer to the
        # first, sent as it is taken, not by a later timer: it comes
        # before the second's refusal. The wait allows any slowness.
        first = await alice.send("pty.request_keyframe", {})
        second = await alice.send("pty.request_keyframe", {})
        kf, seen = await alice.recv_until(
            lambda f: matches(f, "pty.session_frame", "Keyframe") or f["op"] == "Error",
            what="the Keyframe")
        self.assertTrue(matches(kf, "pty.session_frame", "Keyframe"),
                        "request %s: %s came before the Keyframe" % (first, summarize([kf])))
        self.assertIn("kf-81", harness.screen_text(harness.base64.b64decode(kf["payload"]["snapshot"])))
        await alice.expect_error("RATE_LIMITED", echo_id=second)
        # A second later (by the sidecar's clock too: it took the first
        # request before the Keyframe left) a request is answered again.
        await alice.quiet(1.1)
        await alice.send("pty.request_keyframe", {})
        await alice.wait_for("pty.session_frame", "Keyframe")

    async def test_keyframe_cadence_under_sustained_output(self):
        sid, alice = await self.session_with("controller", sub="alice")
        start = len(alice.frames)
        # Each command waits for the last one's output, so each makes at
        # least one Output frame of its own, however the sidecar's reads
        # fall (a program printing on a timer made fewer, larger frames
        # on a loaded machine).
        for i in range(40):
            await alice.run("echo line-$((%d*3))" % i, "line-%d\r\n" % (i * 3))
        frames = [f for f in alice.frames[start:] if f["op"] == "pty.session_frame"]
        outputs = sum(1 for f in frames if matches(f, "pty.session_frame", "Output"))
        keyframes = sum(1 for f in frames if matches(f, "pty.session_frame", "Keyframe"))
        self.assertGreater(outputs, 30, "the loop produced many Output frames")
        run = longest = 0
        for f in frames:
            kind = f["payload"]["kind"]
            run = 0 if kind == "Keyframe" else run + (kind == "Output")
            longest = max(longest, run)
        self.assertLessEqual(longest, 10, "a Keyframe at least every 10 Output frames "
                             "(%d outputs, %d keyframes)" % (outputs, keyframes))


if __name__ == "__main__":
    harness.main()
