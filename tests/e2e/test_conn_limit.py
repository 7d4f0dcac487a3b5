"""The gateway's sockets stay within what --max-conns budgets (its open-file
fit counts one socket per connection, plus HTTP_EXTRA plain requests).
libmicrohttpd's connection limit (--max-conns + 64) used to count the
WebSockets too, since MHD kept every upgraded socket; a plain upgraded
socket now leaves MHD at once, and the accept policy still counts it, so
WebSockets and waiting HTTP connections together stay under the same
limit (counted here as the gateway's open descriptors)."""
import os
import socket
import time

import harness
from harness import RawWs

MAX_CONNS = 2
HTTP_EXTRA = 64  # HTTP__EXTRA_CONNS in gateway/http.c


class ConnLimit(harness.E2ETestCase):
    GATEWAY_ARGS = ("--max-conns", MAX_CONNS, "--max-conns-per-ip", 1000,
                    "--request-head-timeout", 30)
    SHARED_SESSION = True

    def gateway_fds(self):
        return len(os.listdir("/proc/%d/fd" % self.stack.gateway.pid))

    def test_websockets_count_against_the_connection_limit(self):
        held, idle = [], []
        before = self.gateway_fds()
        try:
            for i in range(MAX_CONNS):
                tok = self.stack.token(sub="lim%d" % i, session_id=self.sid, scope="pty:observe")
                r, sock, _ = RawWs.handshake(self.stack.port, self.stack.attach_path(self.sid),
                                             {"Authorization": "Bearer " + tok}, timeout=5)
                self.assertEqual(r.status if r else None, 101)
                held.append(sock)
            # Idle TCP connections that never send a request: the gateway
            # takes them up to the limit minus the WebSockets; the rest
            # are refused or wait in the listen queue.
            for _ in range(HTTP_EXTRA + 6):
                idle.append(socket.create_connection(("127.0.0.1", self.stack.port), timeout=5))
                time.sleep(0.005)
            time.sleep(1)
            sockets = self.gateway_fds() - before
            harness.note("the gateway holds %d sockets for %d WebSockets and %d idle connections"
                         % (sockets, MAX_CONNS, len(idle)))
            self.assertLessEqual(sockets, MAX_CONNS + HTTP_EXTRA)
            self.assertGreaterEqual(sockets, MAX_CONNS + HTTP_EXTRA - 2, "the limit was not reached")
            # One WebSocket going frees a place for a request.
            for s in idle:
                s.close()
            idle = []
            held.pop().close()
            time.sleep(0.5)
            s = socket.create_connection(("127.0.0.1", self.stack.port), timeout=5)
            idle.append(s)
            s.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
            s.settimeout(5)
            self.assertIn(b" 200 ", s.recv(4096))
        finally:
            for s in held + idle:
                s.close()


if __name__ == "__main__":
    harness.main()
