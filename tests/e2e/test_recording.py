"""Recordings over the gateway: GET .../sessions/{s}/recording and
`ptygate sessions export`, against the recording of a known program (printf
of known lines with sleeps between them), for an exited and a live session,
with and without --state-dir; the asciicast's header and events' text are
checked, never its timings."""
import json
import os
import subprocess
import tempfile
import time
import unittest

import harness

TIMEOUT = 60
KNOWN = ["/bin/sh", "-c",
         "printf 'rec line one\\n'; sleep 0.2; printf 'rec line two\\n'; sleep 0.2; "
         "printf 'rec \\303\\251t\\303\\251 three\\n'"]


def parse_cast(text):
    lines = text.splitlines()
    header = json.loads(lines[0])
    events = [json.loads(l) for l in lines[1:]]
    return header, events


class Recording(unittest.TestCase):
    sidecar_args = ()

    def setUp(self):
        self.cli = harness.cli_binary()
        self.stack = harness.Stack(sidecar_args=self.sidecar_args).start()
        self.addCleanup(harness.stop_stack, self.stack)

    def wait_exited(self, sid):
        deadline = time.monotonic() + TIMEOUT
        while self.stack.get_session(sid)["state"] != "exited":
            self.assertLess(time.monotonic(), deadline, "the session never exited")
            time.sleep(0.05)

    def recording(self, sid, token=None):
        return self.stack.http(
            "GET", "/agents/%s/sessions/%s/recording" % (self.stack.instance, sid),
            token=token or self.stack.token(sub="e2e-admin", scope="sessions"))

    def check_known(self, text):
        header, events = parse_cast(text)
        self.assertEqual(header["version"], 2)
        self.assertEqual((header["width"], header["height"]), (100, 25))
        self.assertGreater(header["timestamp"], 1_600_000_000)
        out = "".join(e[2] for e in events if e[1] == "o")
        self.assertIn("rec line one\r\nrec line two\r\nrec été three\r\n", out)
        times = [e[0] for e in events]
        self.assertEqual(times, sorted(times))

    def test_exited_session_over_rest_and_cli(self):
        sid = self.stack.create_session(command=KNOWN, cols=100, rows=25)
        self.wait_exited(sid)
        r = self.recording(sid)
        self.assertEqual(r.status, 200, r)
        self.assertEqual(r.header("Content-Type"), "application/x-asciicast")
        self.check_known(r.body.decode())
        if self.cli:
            with tempfile.TemporaryDirectory() as d:
                path = os.path.join(d, "rec.cast")
                env = dict(os.environ,
                           PTYGATE_TOKEN=self.stack.token(sub="e2e-admin", scope="sessions"),
                           PTYGATE_GATEWAY="http://127.0.0.1:%d" % self.stack.port,
                           PTYGATE_INSTANCE=self.stack.instance)
                p = subprocess.run([self.cli, "sessions", "export", sid, "-o", path],
                                   capture_output=True, env=env, timeout=TIMEOUT)
                self.assertEqual(p.returncode, 0, p.stderr)
                with open(path, encoding="utf-8") as f:
                    self.check_known(f.read())

    def test_live_session_and_scopes(self):
        sid = self.stack.create_session(
            command=["/bin/sh", "-c", "printf 'live-a\\n'; exec sleep 300"], cols=100, rows=25)
        deadline = time.monotonic() + TIMEOUT
        while True:
            r = self.recording(sid)
            self.assertEqual(r.status, 200, r)
            if "live-a" in r.body.decode():
                break
            self.assertLess(time.monotonic(), deadline, r.body)
            time.sleep(0.05)
        # pty:observe on that session is enough; another session's is not,
        # nor the tasks scope alone.
        ok = self.stack.token(sub="bob", session_id=sid, scope="pty:observe")
        self.assertEqual(self.recording(sid, ok).status, 200)
        other = self.stack.token(sub="bob", session_id="another-session", scope="pty:observe")
        self.assertEqual(self.recording(sid, other).status, 403)
        self.assertEqual(self.recording(sid, self.stack.token(sub="bob", scope="tasks")).status,
                         403)
        self.assertEqual(self.recording("no-such-session").status, 404)

    def test_large_history_in_pages(self):
        # More than one page (1 MiB) of output: the pages join seamlessly.
        sid = self.stack.create_session(
            command=["/bin/sh", "-c", "i=0; while [ $i -lt 30000 ]; do "
                     "printf 'row-%05d abcdefghijklmnopqrstuvwxyz0123456789\\n' $i; "
                     "i=$((i+1)); done"], cols=100, rows=25)
        self.wait_exited(sid)
        r = self.recording(sid)
        self.assertEqual(r.status, 200, r)
        _, events = parse_cast(r.body.decode())
        out = "".join(e[2] for e in events if e[1] == "o")
        rows = [l for l in out.split("\r\n") if l.startswith("row-")]
        self.assertEqual(rows[0][:9], "row-00000")
        self.assertEqual(rows[-1][:9], "row-29999")
        self.assertEqual(len(rows), 30000)


class RecordingDurable(Recording):
    """The same over the frame log (--state-dir)."""

    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="ptg-e2e-rec-")
        self.addCleanup(subprocess.run, ["rm", "-rf", self.dir])
        self.sidecar_args = ("--state-dir", self.dir, "--state-plaintext")
        super().setUp()


if __name__ == "__main__":
    unittest.main()
