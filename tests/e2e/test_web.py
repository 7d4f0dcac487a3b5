"""The browser terminal: the gateway serves the built page (web/dist, from
scripts/build-web.sh) with its headers, and a real headless chromium,
driven by web/test/browser.mjs (playwright-core), types into a real
session, watches as an observer, and lives through a gateway kill and
restart. Skipped only when chromium is not installed."""
import os
import shutil
import subprocess
import time
import unittest

import harness

CHROMIUM = os.environ.get("PTG_CHROMIUM", "/usr/bin/chromium")
WEB = os.path.join(harness.REPO, "web")
DIST = os.environ.get("PTG_WEB_DIR") or os.path.join(WEB, "dist")
DRIVER_TIMEOUT = 240


_built = []


def build_web():
    """web/dist from the current sources and web/node_modules, by the same
    script as the test and run commands (npm ci from the committed
    lockfile, skipped when node_modules matches it). PTG_WEB_DIR names a
    directory built already."""
    if _built or os.environ.get("PTG_WEB_DIR"):
        return
    subprocess.run([os.path.join(harness.REPO, "scripts", "build-web.sh")], check=True,
                   timeout=600, stdout=subprocess.DEVNULL)
    _built.append(True)


class WebFiles(unittest.TestCase):
    """What the gateway sends for the page's files."""

    @classmethod
    def setUpClass(cls):
        build_web()
        cls.stack = harness.Stack(gateway_args=["--static-dir", DIST]).start()

    @classmethod
    def tearDownClass(cls):
        harness.stop_stack(cls.stack)

    def assert_page(self, r):
        self.assertEqual(r.status, 200, r)
        self.assertEqual(r.header("Content-Type"), "text/html; charset=utf-8")
        self.assertEqual(r.header("Cache-Control"), "no-cache")
        csp = r.header("Content-Security-Policy") or ""
        for part in ("default-src 'none'", "script-src 'self'", "connect-src 'self'",
                     "frame-ancestors 'none'"):
            self.assertIn(part, csp)
        self.assertNotIn("unsafe-eval", csp)
        self.assertNotIn("'unsafe-inline'", csp.split("script-src")[1].split(";")[0])
        self.assertEqual(r.header("X-Content-Type-Options"), "nosniff")
        self.assertNotIn(b"<script>", r.body, "no inline script")

    def test_root_and_session_page(self):
        self.assert_page(self.stack.http("GET", "/"))
        sid = self.stack.create_session()
        self.assert_page(self.stack.http("GET", "/agents/%s/sessions/%s/" % (self.stack.instance, sid)))
        # Without the slash it is still the REST resource, behind a token.
        r = self.stack.http("GET", "/agents/%s/sessions/%s" % (self.stack.instance, sid))
        self.assertEqual(r.status, 401)
        self.assertEqual(r.header("Cache-Control"), "no-store")

    def test_hashed_files_are_immutable_with_their_types(self):
        types = {".js": "text/javascript; charset=utf-8", ".css": "text/css; charset=utf-8"}
        names = [n for n in os.listdir(DIST) if n != "index.html" and not n.endswith(".txt")]
        self.assertGreaterEqual(len(names), 5, names)
        page = self.stack.http("GET", "/").body.decode()
        for name in names:
            self.assertIn("/" + name, page, "index.html names every built file")
            r = self.stack.http("GET", "/" + name)
            self.assertEqual(r.status, 200, name)
            self.assertEqual(r.header("Cache-Control"), "public, max-age=31536000, immutable", name)
            self.assertEqual(r.header("Content-Type"), types[os.path.splitext(name)[1]], name)
            with open(os.path.join(DIST, name), "rb") as f:
                self.assertEqual(r.body, f.read())

    def test_unknown_files_and_hidden_paths(self):
        self.assertEqual(self.stack.http("GET", "/nope.js").status, 404)
        self.assertEqual(self.stack.http("GET", "/.lock-installed").status, 404)
        self.assertEqual(self.stack.http("GET", "/%2e%2e/CMakeLists.txt").status, 400)


class PageProtocol(unittest.TestCase):
    """node's test runner on the page's pure protocol module."""

    def test_protocol_module(self):
        node = shutil.which("node")
        self.assertIsNotNone(node, "node is needed for the web page's tests")
        r = subprocess.run([node, "--test", os.path.join(WEB, "test", "protocol.test.mjs")],
                           capture_output=True, text=True, timeout=120)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)


@unittest.skipUnless(os.access(CHROMIUM, os.X_OK),
                     "chromium is not installed (%s): apt-get install chromium" % CHROMIUM)
class Browser(unittest.TestCase):
    """A real headless chromium against a real gateway and sidecar."""

    def setUp(self):
        build_web()
        self.stack = harness.Stack(gateway_args=["--static-dir", DIST]).start()
        self.addCleanup(harness.stop_stack, self.stack)

    def test_type_observe_and_survive_a_gateway_restart(self):
        sid = self.stack.create_session(cols=80, rows=24)
        flag = os.path.join(self.stack.dir, "gateway-down")
        shots = os.path.join(self.stack.dir, "shots")
        os.mkdir(shots)
        env = dict(os.environ,
                   PTG_WEB_BASE="http://127.0.0.1:%d" % self.stack.port,
                   PTG_WEB_INSTANCE=self.stack.instance, PTG_WEB_SESSION=sid,
                   PTG_WEB_TOKEN=self.stack.token(sub="alice", session_id=sid, scope="pty:control"),
                   PTG_WEB_OBSERVER_TOKEN=self.stack.token(sub="bob", session_id=sid,
                                                           scope="pty:observe"),
                   PTG_WEB_FLAG=flag, PTG_WEB_SHOTS=shots, PTG_CHROMIUM=CHROMIUM)
        node = shutil.which("node")
        self.assertIsNotNone(node, "node is needed to drive the browser")
        proc = subprocess.Popen([node, os.path.join(WEB, "test", "browser.mjs")], cwd=WEB, env=env,
                                stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        transcript = []
        deadline = time.monotonic() + DRIVER_TIMEOUT
        try:
            for line in proc.stdout:
                transcript.append(line.rstrip())
                harness.note(line.rstrip())
                if line.startswith("@@ "):
                    self.step(line[3:].strip(), flag)
                    proc.stdin.write("ok\n")
                    proc.stdin.flush()
                if time.monotonic() > deadline:
                    self.fail("the browser driver ran over %d s" % DRIVER_TIMEOUT)
            rc = proc.wait(timeout=30)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
        self.assertEqual(rc, 0, "browser driver failed:\n%s\n%s"
                         % ("\n".join(transcript[-30:]), self.stack.logs()))
        self.assertIn("browser: PASS", transcript)

    def step(self, name, flag):
        if name == "kill-gateway":
            self.stack.gateway.kill()
            self.stack.gateway.proc.wait(10)
            open(flag, "w").close()  # the session prints its queries now
        elif name == "start-gateway":
            self.stack.start_gateway()
        else:
            self.fail("unknown step %r" % name)


if __name__ == "__main__":
    harness.main()
