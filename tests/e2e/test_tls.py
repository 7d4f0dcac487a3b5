"""TLS in the gateway: --tls-cert and --tls-key serve https://
and wss:// (the gateway's own TLS in front of libmicrohttpd: tlsfront.h), the
certificate is re-read on SIGHUP while open connections carry on, and a
non-loopback --listen without TLS fails the start unless --allow-plaintext.
The certificate is self-signed, made here with openssl."""
import asyncio
import hashlib
import http.client
import os
import pty
import signal
import socket
import ssl
import struct
import subprocess
import threading
import time
import unittest

import websockets

import harness
from harness import Client, FrameValidator, Stack


HEAD_TIMEOUT_S = 3


def make_cert(directory, name, cn):
    cert, key = os.path.join(directory, name + ".pem"), os.path.join(directory, name + ".key")
    subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt",
                    "ec_paramgen_curve:prime256v1", "-nodes", "-keyout", key, "-out", cert,
                    "-days", "2", "-subj", "/CN=" + cn,
                    "-addext", "subjectAltName=IP:127.0.0.1,DNS:localhost"],
                   check=True, capture_output=True, timeout=30)
    return cert, key


def tcp_bytes_received(sock):
    """Linux's tcp_info.tcpi_bytes_received: every byte the socket took in."""
    info = sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_INFO, 256)
    return struct.unpack_from("Q", info, 128)[0]


class CountingClient(Client):
    """Counts the bytes of the text frames it reads."""

    frame_bytes = 0

    async def _recv_text(self, timeout):
        msg = await super()._recv_text(timeout)
        self.frame_bytes += len(msg.encode())
        return msg


class TlsStack(Stack):
    def __init__(self, head_timeout_s=HEAD_TIMEOUT_S, extra_args=()):
        super().__init__(gateway_args=["--tls-cert", "{dir}/live.pem", "--tls-key", "{dir}/live.key",
                                       "--request-head-timeout", head_timeout_s, *extra_args])
        self.cert_a = make_cert(self.dir, "a", "ptygate-test-a")
        self.cert_b = make_cert(self.dir, "b", "ptygate-test-b")
        self.use_cert(self.cert_a)

    def use_cert(self, pair):
        for src, dst in zip(pair, ("live.pem", "live.key")):
            with open(src, "rb") as f, open(os.path.join(self.dir, dst + ".tmp"), "wb") as g:
                g.write(f.read())
            os.replace(os.path.join(self.dir, dst + ".tmp"), os.path.join(self.dir, dst))

    def context(self):
        """Trusts both test certificates."""
        ctx = ssl.create_default_context()
        for cert, _ in (self.cert_a, self.cert_b):
            ctx.load_verify_locations(cert)
        return ctx

    def http(self, method, path, body=None, token=None, headers=None, timeout=10):
        conn = http.client.HTTPSConnection("127.0.0.1", self.port, timeout=timeout,
                                           context=self.context())
        real = http.client.HTTPConnection
        try:
            http.client.HTTPConnection = lambda *a, **k: conn  # reuse Stack.http's body
            return super().http(method, path, body, token, headers, timeout)
        finally:
            http.client.HTTPConnection = real

    def served_cert(self):
        """The SHA-256 of the certificate a new handshake gets."""
        with socket.create_connection(("127.0.0.1", self.port), 5) as raw:
            with self.context().wrap_socket(raw, server_hostname="127.0.0.1") as s:
                return hashlib.sha256(s.getpeercert(binary_form=True)).hexdigest()

    @staticmethod
    def fingerprint(pair):
        with open(pair[0]) as f:
            der = ssl.PEM_cert_to_DER_cert(f.read())
        return hashlib.sha256(der).hexdigest()

    async def wss_client(self, sid, sub="alice", token=None, auth="header", client_class=Client):
        uri = "wss://127.0.0.1:%d%s" % (self.port, self.attach_path(sid))
        token = token or self.token(sub=sub, session_id=sid)
        protos, headers = [harness.SUBPROTOCOL], {}
        if auth == "header":
            headers["Authorization"] = "Bearer " + token
        else:
            protos.append("bearer." + harness.b64url(token.encode()))
        ws = await websockets.connect(
            uri, ssl=self.context(), subprotocols=protos, extra_headers=headers,
            compression=None, ping_interval=None, max_size=16 << 20, open_timeout=5, close_timeout=2)
        c = client_class(ws, sub)
        await c.expect_hello(sid)
        return c


class Tls(unittest.TestCase):

    @classmethod
    def setUpClass(cls):
        FrameValidator.get()
        cls.stack = TlsStack().start()

    @classmethod
    def tearDownClass(cls):
        harness.stop_stack(cls.stack)

    def test_rest_over_https_and_wss_urls(self):
        r = self.stack.http("GET", "/healthz")
        self.assertEqual(r.status, 200, r)
        sid = self.stack.create_session()
        r = self.stack.http("GET", "/agents/%s/sessions" % self.stack.instance,
                            token=self.stack.token(sub="e2e-admin", scope="sessions"))
        self.assertEqual(r.status, 200)
        self.assertIn(sid, r.body.decode())
        r = self.stack.http("POST", "/agents/%s/sessions" % self.stack.instance, {"command": ["/bin/sh"]},
                            token=self.stack.token(sub="e2e-admin", scope="sessions"))
        self.assertTrue(r.json()["attach_url"].startswith("wss://127.0.0.1:%d/" % self.stack.port), r.json())

    def test_plain_http_gets_no_answer_on_the_tls_port(self):
        failed = "ptygate_tls_handshakes_failed_total"
        before = self.stack.metrics()[failed]
        conn = http.client.HTTPConnection("127.0.0.1", self.stack.port, timeout=5)
        try:
            conn.request("GET", "/healthz")
            status = conn.getresponse().status
        except (OSError, http.client.HTTPException):
            status = None
        finally:
            conn.close()
        self.assertNotEqual(status, 200)
        self.assertEqual(self.stack.metrics()[failed], before + 1)

    def test_the_largest_token_passes_both_ways(self):
        """The request head of an 8 KiB token (JWT_MAX_TOKEN), 10.9 KiB as
        the bearer subprotocol, fits libmicrohttpd's per-connection memory,
        and the TLS relay of the upgraded socket still has room."""
        async def run():
            sid = self.stack.create_session()
            pad = 5000
            while True:
                token = self.stack.token(sub="big", session_id=sid, extra={"pad": "x" * pad})
                if len(token) > 8192:
                    pad -= 1
                elif len(token) < 8150:
                    pad += 20
                else:
                    break
            for auth in ("header", "subprotocol"):
                c = await self.stack.wss_client(sid, "big", token=token, auth=auth)
                await c.join_fresh()
                await c.run("echo big-$((40+2))", "big-42")
                await c.close()
        asyncio.run(asyncio.wait_for(run(), 60))

    def test_a_stalled_handshake_is_cut_at_the_head_deadline(self):
        with socket.create_connection(("127.0.0.1", self.stack.port), 5) as s:
            s.sendall(b"\x16\x03\x01")  # the start of a ClientHello, never finished
            # The cut is due at HEAD_TIMEOUT_S; a gateway that never cut would
            # leave it open for good. The rest is for a loaded machine.
            s.settimeout(HEAD_TIMEOUT_S + 30)
            start = time.monotonic()
            try:
                data = s.recv(4096)
            except ConnectionResetError:
                data = b""
            waited = time.monotonic() - start
        self.assertEqual(data, b"")
        self.assertGreaterEqual(waited, HEAD_TIMEOUT_S - 0.5)

    def test_wss_attach_and_echo(self):
        async def run():
            sid = self.stack.create_session()
            c = await self.stack.wss_client(sid)
            await c.join_fresh()
            await c.run("echo tls-$((6*7))", "tls-42")
            await c.close()
        asyncio.run(asyncio.wait_for(run(), 60))

    def test_output_reaches_a_wss_client_in_whole_records(self):
        """libmicrohttpd's own TLS relayed an upgraded WebSocket from an
        8-byte buffer: a 26-byte record for every 4 bytes of frame, and a 2 MB
        listing did not reach a wss:// client in 120 s. The gateway's own TLS
        relays whole records. Counted in bytes, not time, so no machine's
        load can change it: everything the client's TCP socket received
        (TLS, WebSocket framing, the handshake) against the frames' bytes,
        over a listing the client reads to its end."""
        async def run():
            sid = self.stack.create_session(
                command=["/bin/sh", "-c", "stty -echo; read go; seq 1 30000; echo seq-$((6*7)); exec cat"])
            c = await self.stack.wss_client(sid, client_class=CountingClient)
            await c.join_fresh()
            sock = c.ws.transport.get_extra_info("socket")
            wire0, frames0 = tcp_bytes_received(sock), c.frame_bytes
            await c.type("go\r")
            await c.wait_output("seq-42", timeout=60)
            # Nothing follows the marker: every byte received is read.
            wire, frames = tcp_bytes_received(sock) - wire0, c.frame_bytes - frames0
            await c.close()
            return wire, frames
        wire, frames = asyncio.run(asyncio.wait_for(run(), 90))
        self.assertGreater(frames, 150_000)
        self.assertLess(wire / frames, 1.2, "%d bytes on the wire for %d of frames" % (wire, frames))

    def test_keystroke_echo_is_not_held_for_a_delayed_ack(self):
        """Over TLS MHD keeps the client's TCP socket and relays through a
        socket pair; with Nagle on that socket every echo waited for the
        client's delayed ACK, 40 ms or more each (a keystroke's echo is
        0.1-2 ms otherwise). Most of 30 echoes, waited for one at a time,
        must come sooner: only a machine too loaded to echo half of them in
        35 ms would fail it."""
        async def run():
            sid = self.stack.create_session(
                command=["/bin/sh", "-c", "stty -echo -icanon min 1; exec cat"])
            c = await self.stack.wss_client(sid)
            await c.join_fresh()
            slow = 0
            for i in range(30):
                key = chr(ord("g") + i % 20)
                mark, t0 = len(c.output), time.monotonic()
                await c.type(key)
                await c.wait_output(key, since=mark)
                slow += time.monotonic() - t0 >= 0.035
            await c.close()
            return slow
        slow = asyncio.run(asyncio.wait_for(run(), 60))
        self.assertLess(slow, 15, "%d of 30 echoes took 35 ms or more" % slow)

    def test_sighup_reloads_the_certificate_and_open_connections_carry_on(self):
        async def run():
            sid = self.stack.create_session()
            before = await asyncio.to_thread(self.stack.served_cert)
            c = await self.stack.wss_client(sid, sub="before-reload")
            await c.join_fresh()
            current, other = ((self.stack.cert_a, self.stack.cert_b)
                              if before == TlsStack.fingerprint(self.stack.cert_a)
                              else (self.stack.cert_b, self.stack.cert_a))
            self.assertEqual(before, TlsStack.fingerprint(current))
            self.stack.use_cert(other)
            os.kill(self.stack.gateway.pid, signal.SIGHUP)
            deadline = time.monotonic() + 10
            after = before
            while after == before and time.monotonic() < deadline:
                await asyncio.sleep(0.1)
                after = await asyncio.to_thread(self.stack.served_cert)
            self.assertEqual(after, TlsStack.fingerprint(other), "SIGHUP did not load the new certificate")
            # The connection made under the old certificate still works.
            await c.run("echo still-$((40+2))", "still-42")
            d = await self.stack.wss_client(sid, sub="after-reload")
            await d.join(role="observer")
            await d.wait_for("pty.session_frame", "Keyframe")
            await c.close()
            await d.close()
            # A broken pair on SIGHUP keeps what is loaded.
            with open(os.path.join(self.stack.dir, "live.key"), "w") as f:
                f.write("not a key\n")
            os.kill(self.stack.gateway.pid, signal.SIGHUP)
            await asyncio.sleep(0.5)
            self.assertEqual(await asyncio.to_thread(self.stack.served_cert), after)
            self.stack.use_cert(other)
        asyncio.run(asyncio.wait_for(run(), 60))


class RecordCounter:
    """A TCP relay in front of the gateway that counts the TLS records the
    client sends (the record layer's 5-byte headers are in the clear)."""

    def __init__(self, port):
        self.target, self.records = port, 0
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        threading.Thread(target=self.serve, daemon=True).start()

    def serve(self):
        self.listener.settimeout(30)
        client, _ = self.listener.accept()
        server = socket.create_connection(("127.0.0.1", self.target), 10)
        threading.Thread(target=self.pump, args=(server, client, False), daemon=True).start()
        self.pump(client, server, True)

    def pump(self, src, dst, count):
        pending = b""
        while True:
            try:
                data = src.recv(65536)
            except OSError:
                data = b""
            if not data:
                dst.close()
                return
            dst.sendall(data)
            if count:
                pending += data
                while len(pending) >= 5 and len(pending) >= 5 + int.from_bytes(pending[3:5], "big"):
                    self.records += 1
                    pending = pending[5 + int.from_bytes(pending[3:5], "big"):]


class CliRecords(unittest.TestCase):
    """`ptygate attach` over wss:// sends a keystroke's frame as one TLS
    record. wslay writes a frame's header and payload apart; each was its
    own record (and, with Nagle off, its own segment): 27 bytes of record
    and a packet more per key toward a gateway far away."""

    KEYS = 20

    def test_a_keystroke_is_one_record(self):
        cli = harness.cli_binary()
        if not cli:
            self.skipTest("ptygate CLI not built")
        stack = TlsStack().start()
        self.addCleanup(harness.stop_stack, stack)
        sid = stack.create_session(command=["/bin/sh", "-c", "stty -echo -icanon min 1; exec cat"])
        relay = RecordCounter(stack.port)
        env = dict(os.environ, PTYGATE_TOKEN=stack.token(sub="alice", session_id=sid), TERM="xterm")
        pid, fd = pty.fork()
        if pid == 0:
            os.execve(cli, [cli, "attach", "--gateway", "https://127.0.0.1:%d" % relay.port,
                            "--ca-file", stack.cert_a[0], "--instance", stack.instance, sid], env)
        try:
            harness.pty_read(fd, None, 20)  # the join's screen, until quiet
            # A first key's echo: attached for sure, the handshake and the
            # join behind us, whatever the machine's load.
            os.write(fd, b"f")
            self.assertTrue(harness.pty_read(fd, b"f", 30), "the first key echoed")
            before = relay.records
            for k in range(self.KEYS):
                key = bytes([ord("g") + k])
                os.write(fd, key)
                self.assertTrue(harness.pty_read(fd, key, 20), "key %r echoed" % key)
            typed = relay.records - before
        finally:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            os.close(fd)
        # A heartbeat's pong may fall in the window: a few records of slack.
        self.assertLessEqual(typed, self.KEYS + 3, "%d records for %d keys" % (typed, self.KEYS))


class TlsShutdown(unittest.TestCase):
    """SIGTERM over TLS: every wss:// client is told goodbye and closed
    through the gateway's TLS, and the gateway exits 0 (a write into a
    socket pair the front had closed raised a SIGPIPE that killed it at
    exit, status -13)."""

    def test_sigterm_says_goodbye_to_tls_clients_and_exits_0(self):
        stack = TlsStack().start()
        try:
            async def run():
                sid = stack.create_session()
                clients = [await stack.wss_client(sid, sub="tls-%d" % i) for i in range(4)]
                for i, c in enumerate(clients):
                    await c.join_fresh("controller" if i == 0 else "observer")
                clients[-1].ws.transport.abort()  # one gone without a word
                stack.gateway.proc.send_signal(signal.SIGTERM)
                for c in clients[:-1]:
                    bye = await c.wait_for("binding_goodbye", timeout=10)
                    self.assertEqual(bye["payload"]["reason"], "server_shutdown")
                    await c.expect_close(1000, timeout=10, allow=("Output", "MembershipChanged"))
            asyncio.run(asyncio.wait_for(run(), 60))
            self.assertEqual(stack.gateway.proc.wait(30), 0, "a clean exit after SIGTERM")
            stack.start_gateway()  # for stop_stack, which stops what it started
        finally:
            harness.stop_stack(stack)


class TlsAddressCap(unittest.TestCase):
    """The gateway's TLS hands libmicrohttpd each client with the client's
    own address, so the accept policy counts TLS clients as it counts plain
    ones."""

    CAP = 3

    @classmethod
    def setUpClass(cls):
        cls.stack = TlsStack(head_timeout_s=60,
                             extra_args=["--max-conns-per-ip", cls.CAP]).start()

    @classmethod
    def tearDownClass(cls):
        harness.stop_stack(cls.stack)

    def test_over_the_address_cap_a_tls_client_is_answered_429(self):
        held = []
        try:
            for _ in range(self.CAP):
                raw = socket.create_connection(("127.0.0.1", self.stack.port), 10)
                held.append(self.stack.context().wrap_socket(raw, server_hostname="127.0.0.1"))
            r = self.stack.http("GET", "/healthz")
            self.assertEqual(r.status, 429, r.body)
            self.assertIn(b"--max-conns-per-ip", r.body)
        finally:
            for s in held:
                s.close()


class Plaintext(unittest.TestCase):

    def gateway(self, *args):
        s = Stack()
        try:
            p = subprocess.run([s.gateway_bin, "--instance", "i=unix:" + s.socket_path,
                                "--hs256-secret-file", s.secret_file, *args],
                               stdin=subprocess.DEVNULL, capture_output=True, timeout=8)
        except subprocess.TimeoutExpired:
            raise AssertionError("the gateway started with %r" % (args,))
        finally:
            s.cleanup()
        return p.returncode, p.stderr.decode()

    def test_plain_listen_off_loopback_fails_the_start(self):
        status, err = self.gateway("--listen", "0.0.0.0:%d" % harness.free_port())
        self.assertEqual(status, 1, err)
        self.assertIn("--listen 0.0.0.0", err)
        self.assertIn("--allow-plaintext", err)

    def test_tls_cert_without_key_is_a_usage_error(self):
        status, err = self.gateway("--tls-cert", "/nonexistent.pem")
        self.assertEqual(status, 2, err)
        self.assertIn("--tls-cert and --tls-key", err)

    def test_unreadable_cert_fails_the_start(self):
        status, err = self.gateway("--listen", "127.0.0.1:0", "--tls-cert", "/nonexistent.pem",
                                   "--tls-key", "/nonexistent.key")
        self.assertEqual(status, 1, err)
        self.assertIn("/nonexistent.pem", err)


if __name__ == "__main__":
    unittest.main(verbosity=2)
