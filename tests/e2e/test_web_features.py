"""The browser page's own controls in a real headless chromium against a
real gateway and sidecar (web/test/features.mjs, playwright-core): the tab
title and member labels are the principal, the size line says the
session's size and who set it, links open on a click, the scrollback
search finds and highlights, font size and theme change and are kept, and
the key bar of a phone-sized window sends Esc, Ctrl, Tab and the arrows
(in both cursor key modes) to a real `od -c`. Each step checks a
screenshot's pixels; the screenshots stay in the stack's directory
(PTG_E2E_KEEP=1 keeps it). Skipped only when chromium is not installed."""
import os
import shutil
import subprocess
import unittest

import harness
from test_web import CHROMIUM, DIST, WEB, build_web

DRIVER_TIMEOUT = 240
SHOTS = ("link-hover.png", "search.png", "font.png", "theme-light.png", "keybar.png",
         "size-line.png")


def run_driver(test, script, env):
    """Runs a page driver to its end; fails the test with its transcript."""
    node = shutil.which("node")
    test.assertIsNotNone(node, "node is needed to drive the browser")
    try:
        r = subprocess.run([node, os.path.join(WEB, "test", script)], cwd=WEB, env=env,
                           stdin=subprocess.DEVNULL, capture_output=True, text=True,
                           timeout=DRIVER_TIMEOUT)
    except subprocess.TimeoutExpired as e:
        test.fail("%s ran over %d s:\n%s" % (script, DRIVER_TIMEOUT, e.stdout))
    for line in r.stdout.splitlines():
        harness.note(line)
    test.assertEqual(r.returncode, 0, "%s failed:\n%s\n%s" % (script, r.stdout[-6000:], r.stderr[-3000:]))
    test.assertIn("browser: PASS", r.stdout.splitlines())
    return r.stdout


@unittest.skipUnless(os.access(CHROMIUM, os.X_OK),
                     "chromium is not installed (%s): apt-get install chromium" % CHROMIUM)
class PageFeatures(unittest.TestCase):

    def setUp(self):
        build_web()
        self.stack = harness.Stack(gateway_args=["--static-dir", DIST]).start()
        self.addCleanup(harness.stop_stack, self.stack)

    def test_links_search_font_theme_keybar_and_size_line(self):
        sid = self.stack.create_session(cols=100, rows=30)
        shots = os.path.join(self.stack.dir, "shots")
        os.mkdir(shots)
        env = dict(os.environ,
                   PTG_WEB_BASE="http://127.0.0.1:%d" % self.stack.port,
                   PTG_WEB_INSTANCE=self.stack.instance, PTG_WEB_SESSION=sid,
                   PTG_WEB_TOKEN=self.stack.token(sub="alice", session_id=sid, scope="pty:control"),
                   PTG_WEB_OBSERVER_TOKEN=self.stack.token(sub="bob", session_id=sid,
                                                           scope="pty:observe"),
                   PTG_WEB_SHOTS=shots, PTG_CHROMIUM=CHROMIUM)
        run_driver(self, "features.mjs", env)
        for name in SHOTS:
            with open(os.path.join(shots, name), "rb") as f:
                self.assertEqual(f.read(8), b"\x89PNG\r\n\x1a\n", name)


if __name__ == "__main__":
    harness.main()
