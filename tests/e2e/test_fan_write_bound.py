"""An observer is written at most CONN_FAN_WRITE_MAX (128 KiB,
gateway/conn/conn.h) a loop turn. A socket with room for megabytes (loopback,
a fast path) took them in one write, and with a thousand observers such
writes held the gateway's loop, and with it the link and the
controller's input, for tens of milliseconds a turn. The rest of the
observer's queue goes on later turns, all of it and in order."""
import os
import signal
import time

import harness
from harness import E2ETestCase

FLOOD_BYTES = 1500000  # "y\n" each: 750000 lines, "y\r\n" on the terminal
CUT = "ptygate_fanout_writes_cut_total"


class FanWriteBound(E2ETestCase):
    # Neither lag bound applies: every byte must reach the observer.
    GATEWAY_ARGS = ("--max-queue-bytes", 64 << 20, "--max-queue-ms", 0)

    async def test_backlog_goes_out_in_bounded_pieces(self):
        sid, alice = await self.session_with("controller", sub="alice")
        # Room for megabytes in the observer's socket, so only the bound
        # can cut a write short.
        obs = self.raw(sid, sub="obs", rcvbuf=4 << 20)
        await obs.expect_hello(sid)
        await obs.join("observer")
        await obs.wait_for("pty.session_frame", "Keyframe")
        cuts = self.stack.metrics().get(CUT, 0)
        done = os.path.join(self.stack.dir, "flood-done")
        mark = len(alice.output)
        await alice.type("sleep 1; yes | head -c %d; touch %s; echo end-$((2+3))\n"
                         % (FLOOD_BYTES, done))
        await alice.wait_output(done, since=mark, timeout=10)  # the shell has the line
        # The gateway stops while the flood fills the link (the PTY, the
        # sidecar's queue and the socket): its first turn back routes
        # far more than 128 KiB to the observer at once.
        os.kill(self.stack.gateway.proc.pid, signal.SIGSTOP)
        try:
            time.sleep(3)
        finally:
            os.kill(self.stack.gateway.proc.pid, signal.SIGCONT)
        await alice.wait_output("end-5", since=mark, timeout=60)
        await obs.wait_output("end-5", timeout=60)

        frames = [f for f in obs.frames if f["op"] == "pty.session_frame"]
        seqs = [f["sequence"] for f in frames]
        self.assertEqual(seqs, sorted(set(seqs)), "frames in sequence order, none twice")
        lagged = [f for f in frames if f["payload"].get("code") == "PTY_OUTPUT_LAGGED"]
        self.assertEqual(lagged, [], "the observer was never dropped to a Keyframe")
        self.assertEqual(alice.output.count(b"y\r\n"), FLOOD_BYTES // 2)
        self.assertEqual(obs.output.count(b"y\r\n"), FLOOD_BYTES // 2,
                         "the observer got all of the flood")
        after = self.stack.metrics().get(CUT, 0)
        harness.note("observer writes cut at the bound: %d" % (after - cuts))
        self.assertGreater(after, cuts, "the observer's backlog went out in one write")


if __name__ == "__main__":
    harness.main()
