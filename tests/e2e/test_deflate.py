"""permessage-deflate (RFC 7692) with python websockets' own offer: the
gateway agrees it (no context takeover either way), a deflating client
sees byte for byte the output a plain client sees, in fewer bytes at its
socket; its compressed input reaches the PTY; --no-deflate turns it off."""
import asyncio
import base64
import json
import os
import shutil
import unittest

import harness
from harness import E2ETestCase

NODE_WS = "/usr/share/nodejs/ws"  # Debian's node-ws

# ls -lR-like lines: what a terminal streams most. Written to a file first
# and then cat, so the PTY is read in its large chunks whatever the load,
# as a real listing is: a printf per line on an idle machine could make a
# frame per line, where deflate without context takeover gains least.
LISTING = ("f=$(mktemp); for i in $(seq 1 3000); do printf -- '-rw-r--r-- 1 root root %6d "
           "Jan  1 12:00 /usr/share/doc/pkg-%d/file-%d.txt\\n' $((i * 37)) $((i % 97)) $i; "
           "done >$f; cat $f; rm -f $f; echo done-$((6*7))")


def listing_output(b):
    """From the command's echo to the marker: the prompt before it may
    have reached a client in its join's Keyframe or as Output, depending
    on when the shell printed it."""
    start = b.find(b"f=$(mktemp)")
    return b[start:b.find(b"done-42", start)] if start >= 0 else b""


def count_wire(client):
    """Counts the bytes the client's socket delivers (before inflation)."""
    ws = client.ws
    counted = [0]
    inner = ws.data_received

    def data_received(data):
        counted[0] += len(data)
        inner(data)

    ws.data_received = data_received
    return counted


def agreed(client):
    return client.ws.response_headers.get("Sec-WebSocket-Extensions")


class Deflate(E2ETestCase):

    async def test_output_identical_and_smaller(self):
        sid, ctl = await self.session_with("controller", sub="alice")
        plain = await self.connect(sid, sub="bob", scope="pty:observe")
        packed = await self.connect(sid, sub="carol", scope="pty:observe", compression="deflate")
        self.assertIsNone(agreed(plain))
        self.assertEqual(agreed(packed), "permessage-deflate; server_no_context_takeover; "
                                         "client_no_context_takeover")
        await plain.join_fresh("observer")
        await packed.join_fresh("observer")
        wire_plain, wire_packed = count_wire(plain), count_wire(packed)
        m_plain, m_packed = len(plain.output), len(packed.output)
        await ctl.run(LISTING, "done-42", timeout=120)
        await plain.wait_output("done-42", since=m_plain, timeout=120)
        await packed.wait_output("done-42", since=m_packed, timeout=120)
        out_plain = listing_output(bytes(plain.output[m_plain:]))
        out_packed = listing_output(bytes(packed.output[m_packed:]))
        self.assertGreater(len(out_plain), 150000)
        self.assertIn(b"pkg-90/file-3000.txt", out_plain)
        self.assertEqual(out_packed, out_plain, "the same bytes either way")
        ratio = wire_packed[0] / wire_plain[0]
        print("deflate: %d wire bytes vs %d plain (%.3f); %.3f wire bytes per output byte"
              % (wire_packed[0], wire_plain[0], ratio, wire_packed[0] / len(out_plain)))
        self.assertLess(ratio, 0.6, "compressed output takes fewer bytes at the socket")

    async def test_compressed_input_and_controller(self):
        sid = self.stack.create_session()
        c = await self.connect(sid, sub="alice", compression="deflate")
        self.assertIsNotNone(agreed(c))
        await c.join_fresh("controller")
        # websockets compresses what it sends: a long line, then a command.
        await c.run("echo " + "x" * 2000 + " | wc -c", "2001")
        await c.run("echo in-$((40+2))", "in-42")


    @unittest.skipUnless(shutil.which("node") and os.path.isdir(NODE_WS), "node and node-ws")
    async def test_node_ws_observer(self):
        """Node's ws agrees deflate by default and reads the plain
        controller's output, byte for byte, in fewer bytes."""
        sid, ctl = await self.session_with("controller", sub="alice")
        url = "ws://127.0.0.1:%d%s" % (self.stack.port, self.stack.attach_path(sid))
        tok = self.stack.token(sub="dave", session_id=sid, scope="pty:observe")
        script = os.path.join(os.path.dirname(os.path.abspath(__file__)), "deflate_node_client.mjs")
        node = await asyncio.create_subprocess_exec(
            "node", script, url, tok, "done-42", stdout=asyncio.subprocess.PIPE, limit=64 << 20)
        try:
            self.assertEqual(await asyncio.wait_for(node.stdout.readline(), 60), b"READY\n")
            mark = len(ctl.output)
            wire_plain = count_wire(ctl)
            await ctl.run(LISTING, "done-42", timeout=120)
            res = json.loads(await asyncio.wait_for(node.stdout.readline(), 120))
        finally:
            if node.returncode is None:
                node.kill()
            await node.wait()
        self.assertEqual(res["extensions"], "permessage-deflate")
        got = listing_output(base64.b64decode(res["output"]))
        self.assertGreater(len(got), 150000)
        self.assertIn(b"pkg-90/file-3000.txt", got)
        self.assertEqual(got, listing_output(bytes(ctl.output[mark:])))
        self.assertLess(res["wire"], wire_plain[0] / 2)


    async def test_cli_attach_inflates(self):
        """The CLI offers permessage-deflate; a piped attach reads a long
        listing through it whole."""
        cli = harness.cli_binary()
        if not cli:
            self.skipTest("ptygate CLI not built")
        sid = self.stack.create_session(cols=100, rows=30)
        env = dict(os.environ, PTYGATE_TOKEN=self.stack.token(sub="erin", session_id=sid),
                   PTYGATE_GATEWAY="http://127.0.0.1:%d" % self.stack.port,
                   PTYGATE_INSTANCE=self.stack.instance)
        p = await asyncio.create_subprocess_exec(
            cli, "attach", "--session", sid, stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE, env=env)
        out, err = await asyncio.wait_for(p.communicate((LISTING + "\n").encode()), 120)
        self.assertEqual(p.returncode, 0, err)
        self.assertIn(b"pkg-90/file-3000.txt", out)
        self.assertIn(b"done-42", out)
        # The whole log: a tail of it may have scrolled past the line.
        self.assertIn("upgraded (permessage-deflate)", self.stack.gateway.log_text())


class DeflateOff(E2ETestCase):
    GATEWAY_ARGS = ("--no-deflate",)

    async def test_not_agreed(self):
        sid = self.stack.create_session()
        c = await self.connect(sid, sub="alice", compression="deflate")
        self.assertIsNone(agreed(c))
        await c.join_fresh("controller")
        await c.run("echo off-$((40+2))", "off-42")


if __name__ == "__main__":
    harness.main()
