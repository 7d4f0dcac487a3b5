"""The recording player ("?play" on a session's page, web/src/player.js) in
a real headless chromium against a real gateway and sidecar,
driven by web/test/player.mjs: the recording of a known program (printf
lines with sleeps, one on a red background) is opened, sought to the end
(the terminal's text read from xterm.js's buffer) and back, a screenshot's
pixels are counted, pause holds the time, and 4x ends in a quarter of 1x's
steps of the player's own clock (injected by the driver: no wall-clock
bound); a live session's recording grows with Reload and is opened from
the session page's "Recording" link; a token for another session is
refused. The player's logic has node unit tests (web/test/player.test.mjs),
run here too. Skipped only when chromium is not installed."""
import os
import shutil
import subprocess
import time
import unittest

import harness
from test_web import CHROMIUM, DIST, WEB, build_web
from test_web_features import run_driver

TIMEOUT = 60
ENV = {"PS1": "$ ", "PATH": "/usr/bin:/bin", "TERM": "xterm-256color", "LC_ALL": "C"}
KNOWN = ["/bin/sh", "-c",
         "printf 'play line one\\n'; sleep 0.3; printf 'play line two\\n'; sleep 0.3; "
         "printf '\\033[41mplay line three\\033[0m\\n'"]


def live_program(gate):
    return ["/bin/sh", "-c",
            "printf 'live one\\n'; while [ ! -e %s ]; do sleep 0.05; done; "
            "printf 'live two\\n'; exec sleep 600" % gate]


class PlayerModule(unittest.TestCase):
    def test_player_module(self):
        node = shutil.which("node")
        self.assertIsNotNone(node, "node is needed for the web page's tests")
        r = subprocess.run([node, "--test", os.path.join(WEB, "test", "player.test.mjs")],
                           capture_output=True, text=True, timeout=120)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)


@unittest.skipUnless(os.access(CHROMIUM, os.X_OK),
                     "chromium is not installed (%s): apt-get install chromium" % CHROMIUM)
class Player(unittest.TestCase):

    def setUp(self):
        build_web()
        self.stack = harness.Stack(gateway_args=["--static-dir", DIST]).start()
        self.addCleanup(harness.stop_stack, self.stack)

    def wait_exited(self, sid):
        deadline = time.monotonic() + TIMEOUT
        while self.stack.get_session(sid)["state"] != "exited":
            self.assertLess(time.monotonic(), deadline, "the session never exited")
            time.sleep(0.05)

    def test_play_seek_pause_speed_live_and_refused(self):
        exited = self.stack.create_session(command=KNOWN, env=ENV, cols=80, rows=12)
        self.wait_exited(exited)
        gate = os.path.join(self.stack.dir, "gate")
        live = self.stack.create_session(command=live_program(gate), env=ENV, cols=80, rows=12)
        shots = os.path.join(self.stack.dir, "shots")
        os.mkdir(shots)
        env = dict(os.environ,
                   PTG_WEB_BASE="http://127.0.0.1:%d" % self.stack.port,
                   PTG_WEB_INSTANCE=self.stack.instance,
                   PTG_WEB_EXITED=exited,
                   PTG_WEB_EXITED_TOKEN=self.stack.token(sub="alice", session_id=exited,
                                                         scope="pty:observe"),
                   PTG_WEB_LIVE=live,
                   PTG_WEB_LIVE_TOKEN=self.stack.token(sub="bob", session_id=live,
                                                       scope="pty:observe"),
                   PTG_WEB_GATE=gate, PTG_WEB_SHOTS=shots, PTG_CHROMIUM=CHROMIUM)
        run_driver(self, "player.mjs", env)
        with open(os.path.join(shots, "player-end.png"), "rb") as f:
            self.assertEqual(f.read(8), b"\x89PNG\r\n\x1a\n")


if __name__ == "__main__":
    harness.main()
