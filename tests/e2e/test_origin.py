"""Browser upgrades and the Origin header: without
--allowed-origin, a request carrying an Origin must be same-origin (its
host and port those of the Host header or --public-url); with a list, only
its members. Refusals are 403 PERMISSION_DENIED with a JSON body, before
the token is even looked at. A request with no Origin (the CLI, a server)
is not affected."""
import json
import unittest

import harness
from harness import RawWs


def upgrade(stack, sid, origin=None, host=None, token=None):
    """A raw attach upgrade; returns (status, body)."""
    token = token or stack.token(sub="o", session_id=sid, scope="pty:observe")
    headers = {"Authorization": "Bearer " + token}
    if origin:
        headers["Origin"] = origin
    r, sock, _ = RawWs.handshake(stack.port, stack.attach_path(sid), headers, host=host)
    if sock:
        sock.close()
    return r.status, r.body


class OriginCase(harness.E2ETestCase):
    SHARED_SESSION = True

    def assert_refused(self, status, body):
        self.assertEqual(status, 403, body)
        doc = json.loads(body)
        self.assertEqual(doc["code"], "PERMISSION_DENIED", doc)
        self.assertIn("rigin", doc["message"])


class SameOriginByDefault(OriginCase):
    GATEWAY_ARGS = ("--public-url", "https://term.example")

    def test_no_origin_is_not_a_browser_and_passes(self):
        self.assertEqual(upgrade(self.stack, self.sid)[0], 101)

    def test_same_origin_by_host_passes(self):
        origin = "http://127.0.0.1:%d" % self.stack.port
        self.assertEqual(upgrade(self.stack, self.sid, origin)[0], 101)

    def test_same_origin_by_public_url_passes(self):
        self.assertEqual(upgrade(self.stack, self.sid, "https://term.example")[0], 101)
        self.assertEqual(upgrade(self.stack, self.sid, "https://term.example:443")[0], 101)

    def test_cross_origin_is_refused_before_the_token(self):
        self.assert_refused(*upgrade(self.stack, self.sid, "https://evil.example"))
        self.assert_refused(*upgrade(self.stack, self.sid, "http://127.0.0.1:1"))
        self.assert_refused(*upgrade(self.stack, self.sid, "null"))
        self.assert_refused(*upgrade(self.stack, self.sid, "https://evil.example", token="bogus"))


class AllowList(OriginCase):
    GATEWAY_ARGS = ("--allowed-origin", "https://app.example", "--allowed-origin", "http://localhost:3000")

    def test_listed_origins_pass(self):
        self.assertEqual(upgrade(self.stack, self.sid, "https://app.example")[0], 101)
        self.assertEqual(upgrade(self.stack, self.sid, "http://LOCALHOST:3000")[0], 101)
        self.assertEqual(upgrade(self.stack, self.sid)[0], 101)

    def test_others_are_refused_even_the_same_origin(self):
        self.assert_refused(*upgrade(self.stack, self.sid, "https://app.example.evil"))
        self.assert_refused(*upgrade(self.stack, self.sid, "http://127.0.0.1:%d" % self.stack.port))

    def test_a_bad_allowed_origin_is_a_usage_error(self):
        import subprocess
        p = subprocess.run([self.stack.gateway_bin, "--allowed-origin", "https://a.example/path"],
                           capture_output=True, timeout=10)
        self.assertEqual(p.returncode, 2)
        self.assertIn(b"--allowed-origin", p.stderr)


if __name__ == "__main__":
    unittest.main(verbosity=2)
