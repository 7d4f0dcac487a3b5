"""The program's end reaches every client (docs/protocol.md, "Roles"): Closed, goodbye
session_closed, close 1000; DELETE ends a session as `killed`."""
import asyncio

import harness
from harness import E2ETestCase


async def expect_session_end(client, reason, exit_code=None):
    closed = await client.wait_for("pty.session_frame", "Closed", timeout=10)
    assert closed["payload"]["reason"] == reason, closed["payload"]
    if exit_code is not None:
        assert closed["payload"].get("exit_code") == exit_code, closed["payload"]
    bye = await client.expect_frame("binding_goodbye")
    assert bye["payload"]["reason"] == "session_closed", bye["payload"]
    await client.expect_close(1000, allow=())
    return closed


class ProgramExit(E2ETestCase):
    SIDECAR_ARGS = ("--kill-grace-ms", 500)

    async def test_exit_status_reaches_everyone(self):
        sid, ctl = await self.session_with("controller", sub="alice")
        obs = await self.connect(sid, sub="bob", scope="pty:observe")
        await obs.join_fresh("observer")
        await ctl.run("echo bye-$((1+2))", "bye-3")
        await ctl.type("exit 3\n")
        a, b = await asyncio.gather(expect_session_end(ctl, "normal", 3),
                                    expect_session_end(obs, "normal", 3))
        self.assertEqual((a["sequence"], a["ts"]), (b["sequence"], b["ts"]), "one broadcast frame")

        info = self.stack.get_session(sid)
        self.assertEqual((info["state"], info["exit_code"]), ("exited", 3), info)

        # An exited session can still be attached: an observer, the final
        # screen, then Closed and goodbye.
        late = await self.connect(sid, sub="carol")
        await late.join("controller")
        ra = await late.expect_frame("pty.session_frame", "RoleAssigned")
        self.assertEqual(ra["payload"]["role"], "observer")
        kf = await late.wait_for("pty.session_frame", "Keyframe")
        self.assertIn("bye-3", harness.screen_text(harness.base64.b64decode(kf["payload"]["snapshot"])))
        await expect_session_end(late, "normal", 3)

    async def test_delete_kills_the_session(self):
        sid, ctl = await self.session_with("controller", sub="alice")
        await ctl.run("echo alive-$((2*2))", "alive-4")
        r = await self.in_thread(self.stack.delete_session, sid)
        self.assertIn(r.status, (200, 202, 204), r)
        await expect_session_end(ctl, "killed")
        deadline = asyncio.get_running_loop().time() + 5
        while self.stack.get_session(sid)["state"] != "exited":
            self.assertLess(asyncio.get_running_loop().time(), deadline, "the session did not end")
            await asyncio.sleep(0.1)

    async def test_terminate_on_last_controller(self):
        sid = self.stack.create_session(policy="terminate_on_last_controller")
        ctl = await self.connect(sid, sub="alice")
        await ctl.join_fresh("controller")
        obs = await self.connect(sid, sub="bob", scope="pty:observe")
        await obs.join_fresh("observer")
        await ctl.send("pty.leave_session", {})
        await ctl.wait_for("binding_goodbye")
        closed = await obs.wait_for("pty.session_frame", "Closed", timeout=10)
        self.assertIn(closed["payload"]["reason"], ("killed", "normal"))
        bye = await obs.expect_frame("binding_goodbye")
        self.assertEqual(bye["payload"]["reason"], "session_closed")
        await obs.expect_close(1000, allow=())


if __name__ == "__main__":
    harness.main()
