"""binding_hello follows the 101 at once, even when MHD completes the
upgrade inside the gateway's before-poll hook, after that hook's flush:
the hello must not wait for the next wake-up (up to 1 s)."""
import statistics
import time

import harness
from harness import E2ETestCase, RawWs


class HelloLatency(E2ETestCase):

    async def test_hello_within_50ms_of_the_101(self):
        sid = self.stack.create_session()
        token = self.stack.token(sub="quick", session_id=sid, scope="pty:observe")
        delays = []
        for _ in range(7):
            r, sock, rest = RawWs.handshake(self.stack.port, self.stack.attach_path(sid),
                                            {"Authorization": "Bearer " + token})
            t0 = time.monotonic()
            self.assertIsNotNone(sock, r)
            raw = RawWs(sock, rest, "quick")
            await raw.expect_hello(sid)
            delays.append((time.monotonic() - t0) * 1000)
            raw.close()
        harness.note("101 to binding_hello: median %.2f ms, max %.2f ms"
                     % (statistics.median(delays), max(delays)))
        self.assertLess(statistics.median(delays), 50)


if __name__ == "__main__":
    harness.main()
