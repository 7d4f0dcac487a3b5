"""The browser page behind real nginx, as deployed: the shipped
deploy/nginx/ptygate-fleet.conf (with this test's addresses and a
self-signed certificate, as tests/e2e/test_fleet_proxy.py runs it), which
sends every path to the fleet's gateways, and a location derived from it
that serves the gateway under a path prefix (/tools/ptygate/). A
real headless chromium (web/test/proxy.mjs) loads the session page
through each, every file coming back 200, attaches over wss:// and types
into a real session; under the prefix it also lists the sessions from the
picker and follows the link. The page was blank behind the fleet config
when it named its files from "/"."""
import os
import re
import unittest

import harness
import test_fleet_proxy as fleet
from test_web import CHROMIUM, DIST, build_web
from test_web_features import run_driver

PREFIX = "/tools/ptygate/"


def prefix_location(conf, port):
    """A location serving one gateway under PREFIX, with the fleet
    location's own proxy settings (upgrade, headers, timeouts)."""
    m = re.search(r"\n( +proxy_http_version .*?proxy_buffering off;\n)", conf, flags=re.S)
    if not m:
        raise AssertionError("no proxy settings in " + fleet.FLEET_CONF)
    return ("    location %s {\n        proxy_pass http://127.0.0.1:%d/;\n%s    }\n\n"
            % (PREFIX, port, m.group(1)))


@unittest.skipUnless(os.access(CHROMIUM, os.X_OK),
                     "chromium is not installed (%s): apt-get install chromium" % CHROMIUM)
class PageBehindNginx(unittest.TestCase):

    def setUp(self):
        build_web()
        self.stack = harness.Stack(gateway_args=["--static-dir", DIST,
                                                 "--trusted-proxy", "127.0.0.1"]).start()
        self.addCleanup(harness.stop_stack, self.stack)
        self.proxy = fleet.Proxy(self.stack.dir, [(self.stack.instance, self.stack.port)])
        with open(self.proxy.conf, encoding="utf-8") as f:
            conf = f.read()
        conf, n = re.subn(r"(\n    location / \{)",
                          lambda m: "\n" + prefix_location(conf, self.stack.port) + m.group(1)[1:],
                          conf, count=1)
        self.assertEqual(n, 1, "no catch-all location in the fleet config")
        with open(self.proxy.conf, "w", encoding="utf-8") as f:
            f.write(conf)
        self.proxy.start()
        self.addCleanup(self.proxy.stop)

    def test_fleet_location_and_path_prefix(self):
        sid = self.stack.create_session(cols=100, rows=30)
        shots = os.path.join(self.stack.dir, "shots")
        os.mkdir(shots)
        base = "https://127.0.0.1:%d" % self.proxy.port
        env = dict(os.environ,
                   PTG_WEB_FLEET_PAGE="%s/agents/%s/sessions/%s/" % (base, self.stack.instance, sid),
                   PTG_WEB_PREFIX_ROOT=base + PREFIX, PTG_WEB_SESSION=sid,
                   PTG_WEB_TOKEN=self.stack.token(sub="alice", scope="pty:control sessions"),
                   PTG_WEB_SHOTS=shots, PTG_CHROMIUM=CHROMIUM)
        try:
            run_driver(self, "proxy.mjs", env)
        except AssertionError as e:
            raise AssertionError("%s\nnginx: %s\n%s" % (e, self.proxy.log(), self.stack.logs()))
        for name in ("fleet.png", "prefix.png"):
            with open(os.path.join(shots, name), "rb") as f:
                self.assertEqual(f.read(8), b"\x89PNG\r\n\x1a\n", name)


if __name__ == "__main__":
    harness.main()
