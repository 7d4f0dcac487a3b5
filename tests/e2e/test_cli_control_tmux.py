"""`ptygate attach` in a session whose control policy is approve, in a
real terminal (tmux): an observer's ask for control shows in the
controller's terminal with the key that answers, Ctrl-] then n denies,
Ctrl-] then y approves (the asker becomes a controller), and Ctrl-]
twice still detaches."""
import asyncio
import os
import re
import shutil
import time
import unittest

import harness

TIMEOUT = 30.0
CONTROL_URI = "urn:ptygate:extensions:control-approval:v1"


@unittest.skipUnless(shutil.which("tmux"), "tmux is not installed")
class CliControlApproval(unittest.IsolatedAsyncioTestCase):

    def setUp(self):
        self.cli = harness.cli_binary()
        if not self.cli:
            self.skipTest("ptygate CLI not built")
        self.stack = harness.Stack().start()
        self.addCleanup(harness.stop_stack, self.stack)
        self.tmux = harness.Tmux(self.stack.dir)
        self.addCleanup(self.tmux.stop)

    async def wait_screen(self, pattern, timeout=TIMEOUT):
        rx = re.compile(pattern, re.M)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if rx.search(self.tmux("capture-pane", "-p", "-t", "t")):
                return
            await asyncio.sleep(0.1)
        raise AssertionError("%r never came; screen:\n%s\n%s"
                             % (pattern, self.tmux("capture-pane", "-p", "-t", "t"),
                                self.stack.logs()))

    async def ask(self, bob):
        await bob.send("pty.request_role", {"role": "controller"})
        ra = await bob.wait_for("pty.session_frame", "RoleAssigned")
        self.assertEqual(ra["payload"]["role"], "observer")
        await self.wait_screen(r"bob \(c-[0-9a-f]+\) asks for control: Ctrl-\] then y approves")

    async def test_deny_then_approve_from_the_keyboard(self):
        sid = self.stack.create_session(cols=100, rows=30, control_policy="approve")
        token_file = os.path.join(self.stack.dir, "token")
        with open(token_file, "w") as f:
            f.write(self.stack.token(sub="alice", session_id=sid))
        url = "ws://127.0.0.1:%d/agents/%s/sessions/%s/attach" % (
            self.stack.port, self.stack.instance, sid)
        self.tmux("new-session", "-d", "-s", "t", "-x", "100", "-y", "30",
                  "%s attach --url %s --token-file %s --label alice; echo attach-exit-$?; sleep 60"
                  % (os.path.abspath(self.cli), url, token_file))
        self.tmux("set-option", "-g", "status", "off")
        await self.wait_screen(r"^\$")

        bob = await self.stack.client(sid, sub="bob", label="bob")
        self.addAsyncCleanup(bob.close)
        await bob.send("pty.join_session", {"role": "observer", "client_label": "bob"},
                       extensions=[harness.EXTENSION_URI, CONTROL_URI])
        await bob.wait_for("pty.session_frame", "Keyframe")

        await self.ask(bob)
        self.tmux("send-keys", "-t", "t", "C-]")
        await self.wait_screen(r"y approves, n denies, Ctrl-\] detaches")
        self.tmux("send-keys", "-t", "t", "n")
        ra = await bob.wait_for("pty.session_frame", "RoleAssigned")
        self.assertEqual(ra["payload"]["role"], "observer")
        self.assertIn("denied", ra["payload"]["reason"])
        await self.wait_screen(r"control: you denied c-")

        await self.ask(bob)
        self.tmux("send-keys", "-t", "t", "C-]")
        await self.wait_screen(r"y approves, n denies, Ctrl-\] detaches")
        self.tmux("send-keys", "-t", "t", "y")
        ra = await bob.wait_for("pty.session_frame", "RoleAssigned")
        self.assertEqual(ra["payload"]["role"], "controller")
        await self.wait_screen(r"approved by alice")
        await bob.run("echo bob-$((6*7))", "bob-42")
        await self.wait_screen(r"^bob-42$")

        # Nothing waits: Ctrl-] detaches at once, as it always did.
        self.tmux("send-keys", "-t", "t", "C-]")
        await self.wait_screen(r"^attach-exit-0$")


if __name__ == "__main__":
    harness.main()
