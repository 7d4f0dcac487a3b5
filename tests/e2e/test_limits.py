"""Text limits are counted as the protocol counts them, in characters, by every
program on the way: a label of 128 non-ASCII characters (more than 128
bytes of UTF-8) that the gateway accepts reaches the sidecar whole,
on session create (label) and on join (client_label),
and the CLI's attach --label takes it too."""
import os
import socket
import subprocess
import unittest

import harness
from harness import E2ETestCase

# 128 characters of two bytes each in UTF-8: 256 bytes.
WIDE_LABEL = "\u00e9" * 128


class LabelLimits(E2ETestCase):
    async def test_session_label_of_128_wide_characters_is_kept(self):
        sid = self.stack.create_session(label=WIDE_LABEL)
        self.assertEqual(self.stack.get_session(sid).get("label"), WIDE_LABEL)

    async def test_session_label_over_128_characters_is_refused(self):
        r = self.stack.http("POST", "/agents/%s/sessions" % self.stack.instance,
                            {"command": ["/bin/sh"], "label": WIDE_LABEL + "x"},
                            token=self.stack.token(sub="ops", scope="sessions"))
        self.assertEqual(r.status, 400, r)

    async def test_client_label_of_128_wide_characters_is_kept(self):
        sid = self.stack.create_session()
        c = await self.connect(sid, sub="alice", scope="pty:control")
        await c.join("controller", label=WIDE_LABEL)
        await c.expect_frame("pty.session_frame", "RoleAssigned")
        mc = await c.wait_for("pty.session_frame", "MembershipChanged")
        self.assertEqual([m["label"] for m in mc["payload"]["controllers"]], [WIDE_LABEL])


class ContentLength(E2ETestCase):
    """A declared request body length is decimal digits within the body cap
    (64 KiB): anything else is refused before a byte of the body is read."""

    def post_status(self, length):
        path = "/agents/%s/sessions" % self.stack.instance
        head = ("POST %s HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\n"
                "Content-Type: application/json\r\nContent-Length: %s\r\n"
                "Connection: close\r\n\r\n"
                % (path, self.stack.token(sub="ops", scope="sessions"), length))
        with socket.create_connection(("127.0.0.1", self.stack.port), timeout=5) as s:
            s.sendall(head.encode())
            answer = s.recv(4096)
        return int(answer.split(b" ", 2)[1]) if answer.startswith(b"HTTP/1.1 ") else None

    async def test_malformed_lengths_are_400(self):
        for length in ("12abc", "-1", "", "0x10", "+5", "1 2"):
            with self.subTest(length=length):
                self.assertEqual(await self.in_thread(self.post_status, length), 400)

    async def test_lengths_past_the_cap_are_413(self):
        for length in ("65537", "99999999999999999999999", "18446744073709551616"):
            with self.subTest(length=length):
                self.assertEqual(await self.in_thread(self.post_status, length), 413)


class CliLabelLimit(unittest.TestCase):
    def attach_status(self, label):
        """ptygate attach's exit status with this --label, toward a port
        nobody listens on: 2 is a usage error, 1 the refused connection."""
        cli = harness.cli_binary()
        if not cli:
            self.skipTest("the CLI is not built")
        env = dict(os.environ, PTYGATE_TOKEN="a.b.c")
        r = subprocess.run([cli, "attach", "--url",
                            "ws://127.0.0.1:1/agents/i/sessions/s/attach", "--label", label],
                           env=env, stdin=subprocess.DEVNULL, capture_output=True, timeout=30)
        return r.returncode, r.stderr.decode(errors="replace")

    def test_label_of_128_wide_characters_passes_the_option_check(self):
        status, err = self.attach_status(WIDE_LABEL)
        self.assertEqual(status, 1, err)
        self.assertNotIn("--label", err)

    def test_label_over_128_characters_is_a_usage_error(self):
        status, err = self.attach_status(WIDE_LABEL + "x")
        self.assertEqual(status, 2, err)
        self.assertIn("--label", err)


if __name__ == "__main__":
    harness.main()
