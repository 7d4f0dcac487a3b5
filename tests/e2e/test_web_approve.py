"""Control approval in the browser page, in a real headless chromium
against a real gateway and sidecar (web/test/approve.mjs): on a session
whose control policy is approve, an observer's "Request control" shows a
banner on every page and Approve and Deny on the controller's; Deny leaves
the roles, Approve hands control. The banner is checked in a screenshot.
Skipped only when chromium is not installed."""
import os
import unittest

import harness
from test_web import CHROMIUM, DIST, build_web
from test_web_features import run_driver


@unittest.skipUnless(os.access(CHROMIUM, os.X_OK),
                     "chromium is not installed (%s): apt-get install chromium" % CHROMIUM)
class PageControlApproval(unittest.TestCase):

    def setUp(self):
        build_web()
        self.stack = harness.Stack(gateway_args=["--static-dir", DIST]).start()
        self.addCleanup(harness.stop_stack, self.stack)

    def test_request_banner_deny_and_approve(self):
        sid = self.stack.create_session(cols=100, rows=30, control_policy="approve")
        shots = os.path.join(self.stack.dir, "shots")
        os.mkdir(shots)
        env = dict(os.environ,
                   PTG_WEB_BASE="http://127.0.0.1:%d" % self.stack.port,
                   PTG_WEB_INSTANCE=self.stack.instance, PTG_WEB_SESSION=sid,
                   PTG_WEB_TOKEN=self.stack.token(sub="alice", session_id=sid, scope="pty:control"),
                   PTG_WEB_ASKER_TOKEN=self.stack.token(sub="bob", session_id=sid, scope="pty:control"),
                   PTG_WEB_SHOTS=shots, PTG_CHROMIUM=CHROMIUM)
        run_driver(self, "approve.mjs", env)
        with open(os.path.join(shots, "approve-prompt.png"), "rb") as f:
            self.assertEqual(f.read(8), b"\x89PNG\r\n\x1a\n")


if __name__ == "__main__":
    harness.main()
