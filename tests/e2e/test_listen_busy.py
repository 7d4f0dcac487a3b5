"""A busy port fails the start. The listener sets no SO_REUSEPORT: with
it a second gateway on the same port starts "fine" and the kernel splits
connections between the two (random 401s and 404s). The start fails with exit status 1 and a message naming the address, for both
--listen and --admin-listen, and the first gateway keeps serving."""
import os
import socket
import subprocess
import unittest

import harness
from harness import Stack


class BusyPort(unittest.TestCase):

    @classmethod
    def setUpClass(cls):
        cls.stack = Stack().start()

    @classmethod
    def tearDownClass(cls):
        harness.stop_stack(cls.stack)

    def second_gateway(self, *args):
        """Runs another gateway for the same instance; returns (status, stderr)."""
        s = self.stack
        argv = [s.gateway_bin, "--instance", "%s=unix:%s" % (s.instance, s.socket_path),
                "--hs256-secret-file", s.secret_file, *args]
        try:
            p = subprocess.run(argv, stdin=subprocess.DEVNULL, capture_output=True,
                               timeout=8, env=dict(os.environ))
        except subprocess.TimeoutExpired as e:
            # It started and served: the bug. (run() has killed it.)
            raise AssertionError("a second gateway started on a busy port: %r" % e.stderr)
        return p.returncode, p.stderr.decode("utf-8", "replace")

    def assert_refused(self, flag, addr, status, err):
        self.assertEqual(status, 1, err)
        self.assertIn(flag, err)
        self.assertIn(addr, err)
        self.assertIn("Address already in use", err)
        self.assertEqual(self.stack.http("GET", "/readyz").status, 200)

    def test_listen_on_a_busy_port_fails_the_start(self):
        addr = "127.0.0.1:%d" % self.stack.port
        status, err = self.second_gateway("--listen", addr)
        self.assert_refused("--listen", addr, status, err)

    def test_admin_listen_on_a_busy_port_fails_the_start(self):
        addr = "127.0.0.1:%d" % self.stack.port
        status, err = self.second_gateway("--listen", "127.0.0.1:0", "--admin-listen", addr)
        self.assert_refused("--admin-listen", addr, status, err)

    def test_a_port_held_with_so_reuseport_is_busy_too(self):
        with socket.socket() as holder:
            holder.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
            holder.bind(("127.0.0.1", 0))
            holder.listen(1)
            addr = "127.0.0.1:%d" % holder.getsockname()[1]
            status, err = self.second_gateway("--listen", addr)
            self.assert_refused("--listen", addr, status, err)


if __name__ == "__main__":
    unittest.main(verbosity=2)
