"""The latency bound of a slow connection (--max-queue-ms): a client whose
oldest queued output has waited that long falls behind even far under
--max-queue-bytes: what it had is followed by PTY_OUTPUT_LAGGED, then a
Keyframe, then live output, sequences in order; the controller that
keeps up loses nothing."""
import harness
from harness import E2ETestCase, matches

FLOOD = ("i=0; while [ $i -lt 40 ]; do yes | head -c 65536; i=$((i+1)); sleep 0.05; done;"
         " echo flood-$((5+5))-done")  # 2.6 MB over about 3 s


class QueueAge(E2ETestCase):
    # A byte cap no flood here reaches: only the age bound can lag.
    GATEWAY_ARGS = ("--max-queue-bytes", 1 << 30, "--max-queue-ms", 500)

    async def test_stale_observer_lags_under_the_byte_cap(self):
        sid, alice = await self.session_with("controller", sub="alice")
        slow = self.raw(sid, sub="slow", rcvbuf=4096)
        await slow.expect_hello(sid)
        await slow.join("observer")
        await slow.wait_for("pty.session_frame", "Keyframe")
        # From here the observer reads nothing until the flood is over.
        await alice.type(FLOOD + "\n")
        await alice.wait_output("flood-10-done", timeout=60)
        lagged = [f for f in alice.frames if f["payload"].get("code") == "PTY_OUTPUT_LAGGED"]
        self.assertEqual(lagged, [], "the controller kept up and lost nothing")

        _, seen = await slow.recv_until(
            lambda f: matches(f, "pty.session_frame", "Error"), timeout=20,
            what="PTY_OUTPUT_LAGGED")
        self.assertEqual(seen[-1]["payload"]["code"], "PTY_OUTPUT_LAGGED")
        keyframe = await slow.recv(timeout=10)
        self.assertTrue(matches(keyframe, "pty.session_frame", "Keyframe"),
                        "after PTY_OUTPUT_LAGGED comes a Keyframe, got %s"
                        % harness.summarize([keyframe]))
        before = [f["sequence"] for f in seen if "sequence" in f]
        self.assertEqual(before, sorted(before), "frames before the lag in order")
        self.assertGreater(keyframe["sequence"], max(before))
        received = sum(len(f["payload"].get("data", "")) for f in slow.frames) * 3 // 4
        self.assertLess(received, 1000000, "the stale backlog was dropped, not delivered")
        await alice.run("echo after-flood-$((6+6))", "after-flood-12")
        await slow.wait_output("after-flood-12", timeout=20)


if __name__ == "__main__":
    harness.main()
