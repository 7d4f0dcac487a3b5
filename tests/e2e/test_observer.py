"""An observer joins mid-session: it gets the screen as it is, and is
refused input and resize (docs/protocol.md, "Roles")."""
import base64

import harness
from harness import E2ETestCase, screen_text


class ObserverMidSession(E2ETestCase):

    async def test_observer_sees_screen_and_cannot_drive(self):
        sid, ctl = await self.session_with("controller", sub="alice")
        await ctl.run("echo marker-$((6*7))", "marker-42")

        obs = await self.connect(sid, sub="bob", scope="pty:observe")
        ra, mc, kf = await obs.join_fresh("observer", label="bob@review")
        self.assertEqual(ra["payload"]["role"], "observer")
        self.assertEqual(mc["payload"]["observers"], [{"client_id": ra["payload"]["client_id"], "label": "bob@review"}])
        self.assertEqual([c["label"] for c in mc["payload"]["controllers"]], ["alice"])
        snapshot = base64.b64decode(kf["payload"]["snapshot"])
        self.assertIn("marker-42", screen_text(snapshot), "the Keyframe shows what is on screen")
        self.assertEqual((kf["payload"]["snapshot_cols"], kf["payload"]["snapshot_rows"]), (120, 30))

        # The controller is told about the newcomer with the same membership.
        seen = await ctl.wait_for("pty.session_frame", "MembershipChanged")
        self.assertEqual(seen["sequence"], mc["sequence"])
        self.assertEqual(seen["payload"], mc["payload"])

        input_id = await obs.type("echo SHOULD-NOT-$((1+1))\n")
        err = await obs.expect_error("PERMISSION_DENIED", echo_id=input_id)
        self.assertIsInstance(err["payload"]["message"], str)
        resize_id = await obs.send("pty.session_resize", {"cols": 80, "rows": 24})
        await obs.expect_error("PERMISSION_DENIED", echo_id=resize_id)

        # Neither reached the PTY: no output of it, no Resize broadcast.
        mark = len(ctl.output)
        await ctl.run("echo after-$((2+3))", "after-5")
        self.assertNotIn(b"SHOULD-NOT-2", ctl.output)
        resizes = [f for f in ctl.frames + obs.frames if harness.matches(f, "pty.session_frame", "Resize")]
        self.assertEqual(resizes, [])
        self.assertEqual(self.stack.get_session(sid)["cols"], 120)
        self.assertGreater(len(ctl.output), mark)

    async def test_observe_scope_is_downgraded_from_controller(self):
        sid, _ = await self.session_with("controller", sub="alice")
        obs = await self.connect(sid, sub="carol", scope="pty:observe")
        await obs.join("controller")
        ra = await obs.expect_frame("pty.session_frame", "RoleAssigned")
        self.assertEqual(ra["payload"]["role"], "observer")
        self.assertIs(ra["payload"].get("downgraded"), True)
        self.assertTrue(ra["payload"].get("reason"))


if __name__ == "__main__":
    harness.main()
