"""The CLI never prints a server's escape sequences.

A hostile gateway (a plain HTTP server on loopback: the test is about a
hostile peer) answers the attach of `ptygate attach` and `ptygate run`
with a 403 whose message retitles the window and clears the screen, and
`ptygate sessions list|get` with sessions whose fields hold C0, C1 and DEL
controls. Whatever each command prints on stdout and stderr holds none of
them, and the text around them is still shown, escaped."""
import json
import subprocess
import threading
import unittest
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import harness

HOSTILE = "\x1b]0;pwned\x07\x1b[2J\x9b1;1H\x7fend"
SESSION = {"session_id": "s-1" + HOSTILE, "state": "running\x1b[5m", "cols": 80,
           "rows": 24, "controllers": [], "observers": [], "exit_code": None,
           "created_at": "2026-01-01T00:00:00Z", "label": HOSTILE}


class Hostile(BaseHTTPRequestHandler):
    def log_message(self, *args):
        pass

    def answer(self, status, doc):
        body = json.dumps(doc).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self):
        path = self.path.split("?")[0]
        if path.endswith("/attach"):
            self.answer(403, {"code": "PERMISSION_DENIED\x1b[1m", "message": HOSTILE})
        elif path.endswith("/sessions"):
            self.answer(200, {"sessions": [SESSION]})
        elif path.endswith("/sessions/ok"):
            self.answer(200, SESSION)
        else:
            self.answer(404, {"code": "NOT_FOUND", "message": HOSTILE})


def controls(text):
    """The C0 (but the line ends), DEL and C1 characters in text."""
    return sorted({c for c in text
                   if (ord(c) < 0x20 and c not in "\n\r") or 0x7f <= ord(c) <= 0x9f})


class CliEscapes(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.cli = harness.cli_binary()
        if cls.cli is None:
            raise unittest.SkipTest("the ptygate CLI is not built")
        cls.server = ThreadingHTTPServer(("127.0.0.1", 0), Hostile)
        cls.thread = threading.Thread(target=cls.server.serve_forever, daemon=True)
        cls.thread.start()
        cls.gateway = "http://127.0.0.1:%d" % cls.server.server_address[1]

    @classmethod
    def tearDownClass(cls):
        cls.server.shutdown()
        cls.server.server_close()

    def run_cli(self, *args):
        # Options before the operands: `run` ends its own at "--".
        opts = ["--gateway", self.gateway, "--instance", "i", "--token", "t"]
        p = subprocess.run([self.cli, *args[:2], *opts, *args[2:]],
                           stdin=subprocess.DEVNULL,
                           capture_output=True, timeout=60)
        # Bytes as the terminal would get them: latin-1 keeps each one.
        return p.returncode, p.stdout.decode("latin-1"), p.stderr.decode("latin-1")

    def assert_clean(self, out, err, *shown):
        self.assertEqual(controls(out), [], out)
        self.assertEqual(controls(err), [], err)
        for text in shown:
            self.assertIn(text, out + err)

    def test_attach_refused(self):
        rc, out, err = self.run_cli("attach", "--session=s-1")
        self.assertEqual(rc, 1, err)
        self.assert_clean(out, err, "403", "pwned", "\\x1b[2J", "end")

    def test_run_refused(self):
        rc, out, err = self.run_cli("run", "--session=s-1", "--", "true")
        self.assertNotEqual(rc, 0, err)
        self.assert_clean(out, err, "403", "pwned")

    def test_sessions_list_and_get(self):
        rc, out, err = self.run_cli("sessions", "list")
        self.assertEqual(rc, 0, err)
        self.assert_clean(out, err, "SESSION", "running\\x1b[5m")
        rc, out, err = self.run_cli("sessions", "get", "ok")
        self.assertEqual(rc, 0, err)
        self.assert_clean(out, err, "label: \\x1b]0;pwned\\x07", "\\u009b1;1H\\x7fend")
        rc, out, err = self.run_cli("sessions", "get", "--output", "json", "ok")
        self.assertEqual(rc, 0, err)
        self.assert_clean(out, err)
        self.assertEqual(json.loads(out)["label"], HOSTILE)  # still the same JSON

    def test_sessions_error_body(self):
        rc, out, err = self.run_cli("sessions", "get", "missing")
        self.assertEqual(rc, 1, err)
        self.assert_clean(out, err, "NOT_FOUND", "pwned")


if __name__ == "__main__":
    unittest.main()
