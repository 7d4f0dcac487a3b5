"""`ptygate attach` over wss:// (GnuTLS): through a TLS-terminating proxy
(Python's ssl, a fresh self-signed certificate for "localhost") in front
of a real gateway. The certificate is verified: trusted with --ca-file,
refused without it, accepted unchecked only with --insecure."""
import os
import socket
import ssl
import subprocess
import threading
import unittest

import harness


class TlsProxy:
    """Accepts TLS on a free loopback port and pipes each connection to
    the gateway's plain port."""

    def __init__(self, cert, key, target_port):
        self.ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        self.ctx.load_cert_chain(cert, key)
        self.target = target_port
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(8)
        self.sock.settimeout(0.2)
        self.port = self.sock.getsockname()[1]
        self.stopping = False
        self.thread = threading.Thread(target=self.serve, daemon=True)
        self.thread.start()

    def serve(self):
        while not self.stopping:
            try:
                raw, _ = self.sock.accept()
            except (socket.timeout, OSError):
                continue
            threading.Thread(target=self.handle, args=(raw,), daemon=True).start()

    def handle(self, raw):
        try:
            raw.settimeout(10)
            tls = self.ctx.wrap_socket(raw, server_side=True)
            tls.settimeout(None)
        except (ssl.SSLError, OSError):
            raw.close()  # e.g. a client that refused our certificate
            return
        up = socket.create_connection(("127.0.0.1", self.target))
        back = threading.Thread(target=self.pipe, args=(up, tls), daemon=True)
        back.start()
        self.pipe(tls, up)
        back.join(10)
        tls.close()
        up.close()

    @staticmethod
    def pipe(src, dst):
        try:
            while True:
                data = src.recv(65536)
                if not data:
                    break
                dst.sendall(data)
        except OSError:
            pass
        finally:
            for s in (src, dst):
                try:
                    s.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass

    def stop(self):
        self.stopping = True
        self.thread.join(5)
        self.sock.close()


class AttachTls(unittest.TestCase):

    @classmethod
    def setUpClass(cls):
        cls.stack = harness.Stack().start()
        cls.cert = os.path.join(cls.stack.dir, "cert.pem")
        key = os.path.join(cls.stack.dir, "key.pem")
        subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt",
                        "ec_paramgen_curve:prime256v1", "-nodes", "-days", "1",
                        "-subj", "/CN=localhost", "-addext", "subjectAltName=DNS:localhost",
                        "-keyout", key, "-out", cls.cert],
                       check=True, capture_output=True, timeout=60)
        cls.proxy = TlsProxy(cls.cert, key, cls.stack.port)

    @classmethod
    def tearDownClass(cls):
        cls.proxy.stop()
        problems = cls.stack.stop()
        cls.stack.cleanup(keep=bool(problems))
        if problems:
            raise AssertionError("daemon problems:\n" + "\n".join(problems))

    def attach(self, *extra, url_host="localhost"):
        sid = self.stack.create_session()
        url = "wss://%s:%d/agents/%s/sessions/%s/attach" % (
            url_host, self.proxy.port, self.stack.instance, sid)
        env = dict(os.environ, PTYGATE_TOKEN=self.stack.token(sub="t", session_id=sid))
        return subprocess.run([harness.cli_binary(), "attach", "--url", url, *extra],
                              input=b"echo tls-$((6*7))\n", capture_output=True,
                              timeout=60, env=env)

    def test_verified_with_ca_file(self):
        r = self.attach("--ca-file", self.cert)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn(b"tls-42", r.stdout)

    def test_untrusted_certificate_is_refused(self):
        r = self.attach()
        self.assertEqual(r.returncode, 1, r.stderr)
        self.assertIn(b"not trusted", r.stderr)
        self.assertNotIn(b"tls-42", r.stdout)

    def test_wrong_host_name_is_refused(self):
        r = self.attach("--ca-file", self.cert, url_host="127.0.0.1")
        self.assertEqual(r.returncode, 1, r.stderr)
        self.assertIn(b"not trusted", r.stderr)

    def test_insecure_accepts_with_a_warning(self):
        r = self.attach("--insecure")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn(b"tls-42", r.stdout)
        self.assertIn(b"--insecure", r.stderr)


if __name__ == "__main__":
    harness.main()
