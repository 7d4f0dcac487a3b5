"""`ptygate attach` in a real terminal emulator (tmux) across a gateway
restart: the reconnect resumes with replay_from, and its join
Keyframe repaints the screen without scrolling it into the scrollback, so
no line of the history appears twice."""
import collections
import os
import re
import shutil
import time
import unittest

import harness

TIMEOUT = 30.0


@unittest.skipUnless(shutil.which("tmux"), "tmux is not installed")
class ReconnectScrollback(unittest.TestCase):

    def setUp(self):
        self.cli = harness.cli_binary()
        if not self.cli:
            self.skipTest("ptygate CLI not built")
        self.stack = harness.Stack().start()
        self.addCleanup(harness.stop_stack, self.stack)
        self.tmux = harness.Tmux(self.stack.dir)
        self.addCleanup(self.tmux.stop)

    def text(self, history=False):
        return self.tmux("capture-pane", "-p", "-t", "t", *(["-S", "-"] if history else []))

    def wait_for(self, test, what, timeout=TIMEOUT):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if test(self.text()):
                return
            time.sleep(0.1)
        raise AssertionError("%s never came; screen:\n%s\n%s"
                             % (what, self.text(), self.stack.logs()))

    def wait_screen(self, pattern, timeout=TIMEOUT):
        rx = re.compile(pattern, re.M)
        self.wait_for(rx.search, repr(pattern), timeout)

    def test_reconnect_leaves_no_line_twice_in_the_history(self):
        sid = self.stack.create_session(cols=100, rows=30)
        token_file = os.path.join(self.stack.dir, "token")
        with open(token_file, "w") as f:
            f.write(self.stack.token(sub="alice", session_id=sid))
        url = "ws://127.0.0.1:%d/agents/%s/sessions/%s/attach" % (
            self.stack.port, self.stack.instance, sid)
        self.tmux("new-session", "-d", "-s", "t", "-x", "100", "-y", "30",
                  "%s attach --url %s --token-file %s; sleep 60"
                  % (os.path.abspath(self.cli), url, token_file))
        self.tmux("set-option", "-g", "status", "off")
        self.wait_screen(r"^\$")
        self.tmux("send-keys", "-t", "t", "seq -f 'L%03g' 1 100", "Enter")
        self.wait_screen(r"^L100\n\$")

        self.stack.gateway.kill()
        self.stack.gateway.proc.wait(10)
        self.wait_screen(r"reconnecting in")
        self.stack.start_gateway()
        self.wait_for(lambda t: "reconnect" not in t and re.search(r"^L100$", t, re.M),
                      "the repaint after the reconnect", timeout=60)
        self.tmux("send-keys", "-t", "t", "echo after-$((2+3))", "Enter")
        self.wait_screen(r"^after-5$")

        history = self.text(history=True).split("\n")
        numbered = collections.Counter(l for l in history if re.fullmatch(r"L\d{3}", l))
        twice = sorted(l for l, n in numbered.items() if n > 1)
        self.assertEqual(twice, [], "lines twice in the history:\n" + "\n".join(history))
        self.assertEqual(len(numbered), 100, "\n".join(history))
        self.assertEqual(sum(1 for l in history if "reconnect" in l), 0,
                         "the notices scrolled into the history:\n" + "\n".join(history))


if __name__ == "__main__":
    harness.main()
