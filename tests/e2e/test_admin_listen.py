"""--admin-listen puts /healthz, /readyz, /metrics and the AgentCard on
their own address, and off the public one, while attach and REST stay
public: production keeps operator routes off the public port."""
import http.client
import json
import time
import unittest

import harness
from harness import FrameValidator, Stack


class AdminStack(Stack):
    def __init__(self):
        self.admin_port = harness.free_port()
        super().__init__(gateway_args=["--admin-listen", "127.0.0.1:%d" % self.admin_port])

    def admin(self, path):
        conn = http.client.HTTPConnection("127.0.0.1", self.admin_port, timeout=5)
        try:
            conn.request("GET", path)
            r = conn.getresponse()
            return r.status, r.read()
        finally:
            conn.close()

    def wait_ready(self, timeout=15.0):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                if self.admin("/readyz")[0] == 200:
                    return
            except OSError:
                pass
            time.sleep(0.05)
        raise AssertionError("gateway not ready on its admin port:\n" + self.gateway.log_tail())


class AdminListen(unittest.TestCase):

    @classmethod
    def setUpClass(cls):
        FrameValidator.get()
        cls.stack = AdminStack().start()

    @classmethod
    def tearDownClass(cls):
        harness.stop_stack(cls.stack)

    def test_operator_routes_only_on_the_admin_address(self):
        card = "/agents/%s/.well-known/agent-card.json" % self.stack.instance
        for path in ("/healthz", "/readyz", "/metrics", card):
            status, body = self.stack.admin(path)
            self.assertEqual(status, 200, (path, body))
            self.assertEqual(self.stack.http("GET", path).status, 404, path)
        status, body = self.stack.admin("/metrics")
        self.assertIn(b"ptygate_link_up{instance=\"%s\"} 1" % self.stack.instance.encode(), body)
        status, body = self.stack.admin(card)
        self.assertIn("pty-extensions/v1", json.dumps(json.loads(body)))

    def test_sessions_stay_on_the_public_address(self):
        sid = self.stack.create_session()
        self.assertEqual(self.stack.get_session(sid)["session_id"], sid)
        status, _ = self.stack.admin("/agents/%s/sessions/%s" % (self.stack.instance, sid))
        self.assertEqual(status, 404)


if __name__ == "__main__":
    unittest.main(verbosity=2)
