"""How a token reaches the gateway: the browser's `bearer.<token>`
subprotocol offer (docs/protocol.md, "Opening a connection"), and tokens minted by `ptygate token mint`."""
import base64
import json
import os
import shutil
import subprocess
import tempfile
import unittest

import harness
from harness import E2ETestCase, RawWs, SUBPROTOCOL, b64url


class BearerSubprotocol(E2ETestCase):

    async def test_bearer_offer_is_accepted_and_only_pty_ws_echoed(self):
        sid = self.stack.create_session()
        token = self.stack.token(sub="browser", session_id=sid)
        c = await harness.Client.connect(self.stack, sid, token, auth="subprotocol")
        self.clients.append(c)
        self.assertEqual(c.ws.subprotocol, SUBPROTOCOL)
        await c.expect_hello(sid)
        ra, _, _ = await c.join_fresh("controller")
        self.assertEqual(ra["payload"]["role"], "controller")

        # The exact header, as a browser would see it.
        offer = "%s, bearer.%s" % (SUBPROTOCOL, b64url(token.encode()))
        result, sock, _ = RawWs.handshake(self.stack.port, self.stack.attach_path(sid), protocols=offer)
        self.assertEqual(result.status, 101, result)
        sock.close()
        self.assertEqual(result.header("Sec-WebSocket-Protocol"), SUBPROTOCOL)

    async def test_bad_bearer_offer_is_401(self):
        sid = self.stack.create_session()
        forged = self.stack.token(sub="browser", session_id=sid)[:-4] + "AAAA"
        offer = "%s, bearer.%s" % (SUBPROTOCOL, b64url(forged.encode()))
        result, _, _ = RawWs.handshake(self.stack.port, self.stack.attach_path(sid), protocols=offer)
        self.assertEqual(result.status, 401, result)


class CliMintedToken(E2ETestCase):

    def mint_with_cli(self, cli, sid):
        """Runs `ptygate token mint` with the flags its --help lists."""
        help_text = subprocess.run([cli, "token", "mint", "--help"], capture_output=True,
                                   text=True, timeout=10)
        text = help_text.stdout + help_text.stderr
        args = [cli, "token", "mint"]
        wanted = [("--hs256-secret-file", self.stack.secret_file), ("--sub", "cli-user"),
                  ("--instance", self.stack.instance), ("--instance-id", self.stack.instance),
                  ("--session", sid), ("--session-id", sid), ("--scope", "pty:control"),
                  ("--ttl", "300")]
        for flag, value in wanted:
            if flag + " " in text or flag + "=" in text or flag + "\n" in text:
                args += [flag, value]
        out = subprocess.run(args, capture_output=True, text=True, timeout=10)
        self.assertEqual(out.returncode, 0, "%s\n%s\n--help:\n%s" % (args, out.stderr, text))
        return out.stdout.strip().split()[-1]

    async def test_cli_token_attaches(self):
        cli = harness.cli_binary()
        if cli is None:
            self.skipTest("ptygate CLI not built (PTG_CLI)")
        sid = self.stack.create_session()
        token = self.mint_with_cli(cli, sid)
        self.assertEqual(token.count("."), 2, token)
        c = await harness.Client.connect(self.stack, sid, token)
        self.clients.append(c)
        await c.expect_hello(sid)
        ra, _, _ = await c.join_fresh("controller")
        self.assertEqual(ra["payload"]["role"], "controller")


class CliEd25519Token(E2ETestCase):
    """EdDSA end to end: `ptygate token keygen`, the gateway given the public
    key, `ptygate token mint --ed25519-key` for the token."""

    @classmethod
    def setUpClass(cls):
        cls.cli = harness.cli_binary()
        if cls.cli is None:
            raise unittest.SkipTest("ptygate CLI not built (PTG_CLI)")
        cls.keydir = tempfile.mkdtemp(prefix="ptg-e2e-keys-")
        cls.private = os.path.join(cls.keydir, "ed25519.pem")
        cls.public = os.path.join(cls.keydir, "ed25519.pub.pem")
        out = subprocess.run([cls.cli, "token", "keygen", "--out-private", cls.private,
                              "--out-public", cls.public], capture_output=True, text=True, timeout=10)
        if out.returncode != 0:
            raise AssertionError("token keygen failed: %s" % out.stderr)
        cls.GATEWAY_ARGS = ("--ed25519-public-key", cls.public)
        super().setUpClass()

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.keydir, ignore_errors=True)
        super().tearDownClass()

    def mint(self, *extra):
        out = subprocess.run([self.cli, "token", "mint", "--ed25519-key", self.private,
                              "--sub", "ed-user", "--instance", self.stack.instance,
                              "--scope", "pty:control", "--ttl", "5m", *extra],
                             capture_output=True, text=True, timeout=10)
        self.assertEqual(out.returncode, 0, out.stderr)
        return out.stdout.strip()

    async def test_eddsa_token_attaches(self):
        sid = self.stack.create_session()
        token = self.mint("--session", sid)
        header = json.loads(base64.urlsafe_b64decode(token.split(".")[0] + "=="))
        self.assertEqual(header["alg"], "EdDSA")
        c = await harness.Client.connect(self.stack, sid, token)
        self.clients.append(c)
        await c.expect_hello(sid)
        ra, _, _ = await c.join_fresh("controller")
        self.assertEqual(ra["payload"]["role"], "controller")

    async def test_eddsa_token_for_another_session_is_403(self):
        sid = self.stack.create_session()
        other = self.stack.create_session()
        token = self.mint("--session", other)
        result, _, _ = RawWs.handshake(self.stack.port, self.stack.attach_path(sid),
                                       {"Authorization": "Bearer " + token})
        self.assertEqual(result.status, 403, result)


if __name__ == "__main__":
    harness.main()
