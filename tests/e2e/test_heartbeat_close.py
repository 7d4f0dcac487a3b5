"""A client that reads everything but never answers pings is closed with
1011 by the heartbeat, and it sees that close code (issue 6, item 7): the
close frame used to be queued and the socket closed before it was
written."""
import time

import harness
from harness import Closed, E2ETestCase


class HeartbeatCloseCode(E2ETestCase):
    GATEWAY_ARGS = ("--ping-interval", 1, "--pong-timeout", 1)

    async def test_silent_reader_gets_1011(self):
        sid = self.stack.create_session()
        ghost = self.raw(sid, sub="ghost", scope="pty:observe")
        ghost.answer_pings = False
        await ghost.expect_hello(sid)
        t0 = time.monotonic()
        code = None
        while time.monotonic() - t0 < 10:
            try:
                await ghost.recv(1)
            except Closed as e:
                code = e.code
                break
            except Exception:  # a timeout: keep reading
                continue
        self.assertEqual(code, 1011, "closed with %r (None: no close frame)" % code)
        harness.note("reaped after %.1f s" % (time.monotonic() - t0))
        self.assertTrue(ghost.wait_eof(5), "the gateway did not end the TCP connection")


if __name__ == "__main__":
    harness.main()
