"""A slow observer never slows the controller or the PTY (docs/protocol.md, "A slow connection"): its
queue is bounded, it gets PTY_OUTPUT_LAGGED then a Keyframe, and the
gateway's memory stays bounded."""
import asyncio
import base64
import statistics
import time

import harness
from harness import E2ETestCase, matches, screen_text

QUEUE_BYTES = 1000000
# 64 KiB bursts of "y\n", 96 KiB each on the terminal ("y\r\n"): far more
# than the observer's queue, at a pace (about 4 MB/s) a Python controller
# follows with CPU to spare, so its echo times measure the gateway and not
# a client decoding a backlog on a loaded machine. 300 bursts (29 MB) in the release build; under
# ASan everything is several times slower and 100 (10 MB, still ten
# queues' worth) keep the test inside its time bound on a loaded machine.
BURST_ON_TTY = 65536 * 3 // 2


def flood(bursts):
    return ("i=0; while [ $i -lt %d ]; do yes | head -c 65536; i=$((i+1)); sleep 0.02; done;"
            " echo flood-$((5+5))-done" % bursts)
KEYS = "abcdefghijklmnopqrsx"  # never in the flood ("y\r\n")


class SlowObserver(E2ETestCase):
    # The slow observer reads nothing, pongs included, until the flood is
    # over; on a loaded machine that took over 40 s, and the default
    # heartbeat (a ping after 30 s, 10 s for the pong) closed it first.
    GATEWAY_ARGS = ("--max-queue-bytes", QUEUE_BYTES, "--ping-interval", 600)

    async def sample_rss(self, stop, peak):
        while not stop.is_set():
            peak[0] = max(peak[0], self.stack.gateway.rss_kib())
            await asyncio.sleep(0.05)

    async def test_flooded_slow_observer(self):
        sanitized = self.stack.sanitized
        bursts = 100 if sanitized else 300
        sid, alice = await self.session_with("controller", sub="alice")
        slow = self.raw(sid, sub="slow", rcvbuf=4096)
        await slow.expect_hello(sid)
        await slow.join("observer")
        await slow.wait_for("pty.session_frame", "Keyframe")
        lags_before = lag_count(self.stack.metrics())
        # From here the slow observer reads nothing until the flood is over.

        stop, peak = asyncio.Event(), [0]
        sampler = asyncio.create_task(self.sample_rss(stop, peak))
        try:
            mark = len(alice.output)
            await alice.type(flood(bursts) + "\n")
            await alice.wait_output(b"y\r\ny\r\ny\r\n", since=mark, timeout=10)
            rtts = []
            for key in KEYS:
                mark = len(alice.output)
                t0 = time.monotonic()
                await alice.type(key)
                await alice.wait_output(key, since=mark, timeout=10)
                rtts.append(time.monotonic() - t0)
            await alice.type("\x15")  # kill the typed line before the shell reads it
            flood_running = b"flood-10-done" not in alice.output
            # 40 s did not do beside stress-ng: a deadline, not a measure.
            await alice.wait_output("flood-10-done", timeout=150)
        finally:
            stop.set()
            await sampler
        lagged = [f for f in alice.frames if f["payload"].get("code") == "PTY_OUTPUT_LAGGED"]
        self.assertEqual(lagged, [], "the controller itself lagged: this client could not keep up")
        self.assertTrue(flood_running, "the keystrokes were measured during the flood")
        median_ms = statistics.median(rtts) * 1000
        harness.note("echo rtt median %.1f ms, gateway VmRSS peak %d KiB" % (median_ms, peak[0]))
        # No bound on the times: a loaded machine stretches them. That the
        # observer does not hold the controller up is what the two checks
        # above show: every keystroke came back while the flood ran and
        # while the observer read nothing at all.
        self.assertLess(peak[0], (400 if sanitized else 200) * 1024, "gateway VmRSS peak %d KiB" % peak[0])

        # The slow observer wakes up: what it had is followed by the lag
        # Error and then a Keyframe; then it is live again.
        _, seen = await slow.recv_until(
            lambda f: matches(f, "pty.session_frame", "Error"), timeout=20, what="PTY_OUTPUT_LAGGED")
        err = seen[-1]
        self.assertEqual(err["payload"]["code"], "PTY_OUTPUT_LAGGED")
        after = await slow.recv(timeout=10)
        self.assertTrue(matches(after, "pty.session_frame", "Keyframe"),
                        "after PTY_OUTPUT_LAGGED comes a Keyframe, got %s" % harness.summarize([after]))
        dropped_after = max(f["sequence"] for f in seen if "sequence" in f)
        self.assertGreater(after["sequence"], dropped_after, "the Keyframe is newer than what was lost")
        received = sum(len(f["payload"].get("data", "")) for f in slow.frames) * 3 // 4
        self.assertLess(received, bursts * BURST_ON_TTY * 2 // 3,
                        "the observer's backlog was dropped, not delivered")
        await alice.run("echo after-flood-$((6+6))", "after-flood-12")

        def shows_marker(f=None):
            if b"after-flood-12" in slow.output:
                return True
            return (f is not None and matches(f, "pty.session_frame", "Keyframe") and
                    "after-flood-12" in screen_text(base64.b64decode(f["payload"]["snapshot"])))

        # As output, or inside a Keyframe when the observer, still behind on
        # a loaded machine, lagged once more: either way it has the screen.
        if not shows_marker():
            await slow.recv_until(shows_marker, timeout=20, what="after-flood-12")
        self.assertGreater(lag_count(self.stack.metrics()), lags_before)


def lag_count(metrics):
    found = {k: v for k, v in metrics.items() if "lag" in k}
    assert found, "no lag metric in /metrics: %s" % sorted(metrics)
    return sum(found.values())


if __name__ == "__main__":
    harness.main()
