"""Flow control on the link: the gateway never makes the link
wait for a slow client, so the link backs up only while the gateway as a
whole does not read. Then the sidecar stops reading the PTY (the program
waits, as on any terminal) instead of queueing without bound, which put
seconds of output ahead of every client's next frame and a controller's
echo; and a gateway that stops reading for good holds the program no
longer than the stall bound (SESSION_LINK_STALL_MS), after which its link
is dropped."""
import asyncio
import os
import signal
import time

import harness
from harness import E2ETestCase

# Far more than the link's high-water mark (64 KiB), and little enough
# that an unheld sidecar takes it all in about a second (its screen model
# digests "y" lines at some 5 MB/s on a loaded two-core machine).
FLOOD_BYTES = 4000000
STALL_S = 10  # SESSION_LINK_STALL_MS in sidecar/session.h


class Flood(E2ETestCase):
    """What both cases share (no tests of its own)."""

    async def start_flood(self, sub):
        """A controller's session whose shell floods FLOOD_BYTES after a
        second, then touches a file; returns (client, the file's path)."""
        sid, alice = await self.session_with("controller", sub=sub)
        done = os.path.join(self.stack.dir, "flood-done-" + sub)
        cmd = "sleep 1; yes | head -c %d; touch %s" % (FLOOD_BYTES, done)
        mark = len(alice.output)
        await alice.type(cmd + "\n")
        # The shell has the whole line (it echoed it) before the gateway stops.
        await alice.wait_output(done, since=mark, timeout=10)
        return alice, done

    def stop_gateway(self):
        os.kill(self.stack.gateway.proc.pid, signal.SIGSTOP)

    def cont_gateway(self):
        os.kill(self.stack.gateway.proc.pid, signal.SIGCONT)



class HeldProgram(Flood):
    async def test_stopped_gateway_holds_the_program(self):
        alice, done = await self.start_flood("held")
        self.stop_gateway()
        try:
            # The flood starts after 1 s and, unheld, is over a second later.
            time.sleep(10 if self.stack.sanitized else 5)
            finished_while_stopped = os.path.exists(done)
        finally:
            self.cont_gateway()
        self.assertFalse(finished_while_stopped,
                         "the program wrote %d bytes while the gateway read none: the "
                         "sidecar queued them instead of holding the PTY" % FLOOD_BYTES)
        deadline = time.monotonic() + (120 if self.stack.sanitized else 60)
        while not os.path.exists(done) and time.monotonic() < deadline:
            try:
                await alice.recv(timeout=1)
            except asyncio.TimeoutError:
                pass
        self.assertTrue(os.path.exists(done), "the flood went on once the gateway read again")
        t0 = time.monotonic()
        await alice.run("echo after-$((2+3))", "after-5", timeout=30)
        harness.note("first command after the flood answered in %.0f ms"
                     % ((time.monotonic() - t0) * 1000))



class StalledLink(Flood):
    """A class of its own: its stack's link is dropped on purpose."""

    async def test_stalled_link_is_dropped(self):
        alice, done = await self.start_flood("stalled")
        self.stop_gateway()
        try:
            # Held while the link makes no progress, then let go with the link.
            deadline = time.monotonic() + STALL_S + (20 if self.stack.sanitized else 10)
            while not os.path.exists(done) and time.monotonic() < deadline:
                time.sleep(0.2)
            released = os.path.exists(done)
        finally:
            self.cont_gateway()
        self.assertTrue(released, "a gateway that reads nothing held the program past "
                        "the stall bound")
        _, seen = await alice.recv_until(
            lambda f: f.get("op") == "Error" and "link" in f["payload"].get("message", ""),
            timeout=30, what="the link-lost Error")
        self.assertEqual(seen[-1]["payload"]["code"], "INTERNAL")


if __name__ == "__main__":
    harness.main()
