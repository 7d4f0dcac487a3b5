"""The gateway's sockets stay within what --max-conns budgets (its open-file
fit counts one socket per connection, plus HTTP_EXTRA plain requests).
libmicrohttpd's connection limit (--max-conns + 64) does not see the
WebSockets: a plain upgraded socket leaves MHD at once, and the accept
policy still counts it, so
WebSockets and waiting HTTP connections together stay under the same
limit (counted here as the gateway's open descriptors).

At the limits a client is told why: a connection over
--max-conns-per-ip is answered 429 with the JSON error body and closed,
an attach to a gateway at --max-conns 503 with Retry-After; at the socket
limit the connection that has waited longest for its request head is
evicted, so trickling connections from many addresses cannot keep an
attach out."""
import http.client
import json
import os
import socket
import time

import harness
from harness import RawWs

MAX_CONNS = 2
HTTP_EXTRA = 64  # HTTP__EXTRA_CONNS in gateway/http/http_int.h


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
            # The gateway accepts them as its loop gets to them: wait
            # (bounded) for the limit to be reached, then for a moment
            # more, so one taken past it would show.
            deadline = time.monotonic() + 30
            while (self.gateway_fds() - before < MAX_CONNS + HTTP_EXTRA - 2
                   and time.monotonic() < deadline):
                time.sleep(0.05)
            time.sleep(0.5)
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


def get(port, path, source, timeout=10):
    """GET path from the loopback address source; (status, headers, body)."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout,
                                      source_address=(source, 0))
    try:
        conn.request("GET", path)
        r = conn.getresponse()
        return r.status, dict(r.getheaders()), r.read()
    finally:
        conn.close()


def idle_from(port, source):
    """A connection from source that has sent part of a request head."""
    s = socket.create_connection(("127.0.0.1", port), timeout=5, source_address=(source, 0))
    s.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\n")
    return s


class PerAddressRefusal(harness.E2ETestCase):
    GATEWAY_ARGS = ("--max-conns-per-ip", 3, "--request-head-timeout", 30)

    def test_over_the_address_cap_is_answered_429(self):
        held = [idle_from(self.stack.port, "127.0.0.2") for _ in range(3)]
        try:
            time.sleep(0.3)
            status, headers, body = get(self.stack.port, "/healthz", "127.0.0.2")
            harness.note("the 4th connection from 127.0.0.2: %d %s" % (status, body[:80]))
            self.assertEqual(status, 429)
            self.assertEqual(headers.get("Retry-After"), "1")
            self.assertEqual(headers.get("Connection"), "close")
            doc = json.loads(body)
            self.assertEqual(doc["code"], "RATE_LIMITED")
            self.assertIn("--max-conns-per-ip", doc["message"])
            # An upgrade is answered the same, before any WebSocket exists.
            tok = self.stack.token(sub="capped", scope="pty:observe")
            r, sock, _ = RawWs.handshake(self.stack.port, self.stack.attach_path("x"),
                                         {"Authorization": "Bearer " + tok}, timeout=5,
                                         source="127.0.0.2")
            self.assertEqual(r.status if r else None, 429)
            self.assertEqual(json.loads(r.body)["code"], "RATE_LIMITED")
            # Another address is not affected.
            self.assertEqual(get(self.stack.port, "/healthz", "127.0.0.3")[0], 200)
        finally:
            for s in held:
                s.close()
        m = self.stack.metrics()
        self.assertGreaterEqual(m["ptygate_conn_refusals_address_total"], 2)
        with open(self.stack.gateway.log_path, encoding="utf-8", errors="replace") as f:
            self.assertIn("127.0.0.2: connection refused (429)", f.read())


class GatewayFull(harness.E2ETestCase):
    GATEWAY_ARGS = ("--max-conns", 2, "--max-conns-per-ip", 1000)
    SHARED_SESSION = True

    def test_attach_to_a_full_gateway_is_answered_503(self):
        held = []
        try:
            for i in range(3):
                tok = self.stack.token(sub="full%d" % i, session_id=self.sid, scope="pty:observe")
                r, sock, _ = RawWs.handshake(self.stack.port, self.stack.attach_path(self.sid),
                                             {"Authorization": "Bearer " + tok}, timeout=5)
                if sock:
                    held.append(sock)
            self.assertEqual(len(held), 2)
            self.assertEqual(r.status, 503)
            self.assertEqual(r.header("Retry-After"), "1")
            doc = json.loads(r.body)
            self.assertEqual(doc["code"], "UNAVAILABLE")
            self.assertIn("--max-conns", doc["message"])
        finally:
            for s in held:
                s.close()
        self.assertGreaterEqual(self.stack.metrics()["ptygate_conn_refusals_full_total"], 1)


# --max-conns 4 and 64 places for HTTP: 68 sockets. Six addresses with 12
# connections each would hold 72.
TRICKLE_ADDRS = ["127.0.0.%d" % i for i in range(2, 8)]
TRICKLE_PER_ADDR = 12


class TricklersEvicted(harness.E2ETestCase):
    GATEWAY_ARGS = ("--max-conns", 4, "--max-conns-per-ip", TRICKLE_PER_ADDR,
                    "--request-head-timeout", 60)
    SHARED_SESSION = True

    def test_attaches_get_in_past_trickling_heads(self):
        tricklers, held = [], []
        try:
            for addr in TRICKLE_ADDRS:
                for _ in range(TRICKLE_PER_ADDR):
                    try:
                        tricklers.append(idle_from(self.stack.port, addr))
                    except OSError:
                        pass  # refused at the limit before the fix
            time.sleep(0.5)
            failed = 0
            for i in range(4):
                tok = self.stack.token(sub="real%d" % i, session_id=self.sid, scope="pty:observe")
                r, sock, _ = RawWs.handshake(self.stack.port, self.stack.attach_path(self.sid),
                                             {"Authorization": "Bearer " + tok}, timeout=10)
                if sock:
                    held.append(sock)
                else:
                    failed += 1
            harness.note("%d trickling connections, %d of 4 attaches failed"
                         % (len(tricklers), failed))
            self.assertEqual(failed, 0)
            # The oldest trickler was evicted, and told so.
            first = tricklers[0]
            first.settimeout(10)
            try:
                answer = first.recv(4096)
            except OSError:
                answer = b""
            self.assertTrue(answer.startswith(b"HTTP/1.1 503 "), answer[:80])
            m = self.stack.metrics()
            self.assertGreaterEqual(m["ptygate_head_evictions_total"], 4)
        finally:
            for s in tricklers + held:
                s.close()


if __name__ == "__main__":
    harness.main()
