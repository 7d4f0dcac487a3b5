"""The gateway dies (SIGKILL) mid-session and comes back on the same port:
the sidecar kept the session and its sequence, and the client's replay_from
brings back every frame it missed, in order, without gaps (docs/protocol.md,
"Sequences, replay and keyframes")."""
import re

import harness
from harness import E2ETestCase, matches

TICKS = 10
TICKER = "(i=1; while [ $i -le %d ]; do echo tick-$i; i=$((i+1)); sleep 0.3; done) &" % TICKS


class GatewayRestart(E2ETestCase):

    async def test_reconnect_after_gateway_sigkill(self):
        sid, alice = await self.session_with("controller", sub="alice")
        await alice.run("echo before-$((1+1))", "before-2")
        await alice.type(TICKER + "\n")
        await alice.wait_output("tick-2", timeout=5)
        last = alice.last_sequence()
        ticks_seen = set(re.findall(rb"tick-(\d+)", bytes(alice.output)))

        self.stack.gateway.kill()
        await alice.expect_close(None, timeout=5, allow=("Output", "MembershipChanged", "Keyframe"))
        self.stack.start_gateway()  # same port, same flags

        back = await self.connect(sid, sub="alice")
        current = back.hello["payload"]["session"]["current_sequence"]
        self.assertGreater(current, last, "the sequence survived the gateway")
        await back.join("controller", replay_from=last)
        ra = await back.expect_frame("pty.session_frame", "RoleAssigned")
        self.assertEqual(ra["payload"]["role"], "controller", "the old slot went with the old gateway")
        await back.wait_output("tick-%d" % TICKS, timeout=10)
        await back.quiet(0.4)

        frames = [f for f in back.frames if f["op"] == "pty.session_frame"]
        seqs = sorted(f["sequence"] for f in frames)
        self.assertEqual(len(seqs), len(set(seqs)), "no frame twice")
        self.assertEqual(seqs, list(range(last + 1, seqs[-1] + 1)),
                         "every sequence after %d arrived: nothing was lost" % last)
        replayed = [f for f in frames if f["sequence"] <= current]
        self.assertEqual([f["sequence"] for f in replayed], list(range(last + 1, current + 1)),
                         "the replay is in order")
        text = b"".join(harness.base64.b64decode(f["payload"]["data"])
                        for f in sorted(frames, key=lambda f: f["sequence"])
                        if matches(f, "pty.session_frame", "Output"))
        for n in range(1, TICKS + 1):
            if str(n).encode() in ticks_seen:
                continue
            self.assertEqual(text.count(b"tick-%d\r\n" % n), 1, "tick-%d exactly once" % n)

    async def test_sigterm_says_goodbye_to_every_client(self):
        sid, alice = await self.session_with("controller", sub="alice")
        bob = await self.connect(sid, sub="bob", scope="pty:observe")
        await bob.join_fresh("observer")
        self.stack.gateway.proc.send_signal(harness.signal.SIGTERM)
        for c in (alice, bob):
            bye = await c.wait_for("binding_goodbye", timeout=5)
            self.assertEqual(bye["payload"]["reason"], "server_shutdown")
            await c.expect_close(1000, timeout=5, allow=("Output", "MembershipChanged"))
        self.assertEqual(self.stack.gateway.proc.wait(5), 0, "a clean exit after SIGTERM")
        self.stack.start_gateway()
        # The session lived on in the sidecar.
        back = await self.connect(sid, sub="alice")
        self.assertGreater(back.hello["payload"]["session"]["current_sequence"], 0)


if __name__ == "__main__":
    harness.main()
