#!/usr/bin/python3
"""A fake pty-ws/v1 server for testing `ptygate attach` without a gateway.

It speaks the server side of docs/protocol.md for one session, scripted:
binding_hello, then after the client's pty.join_session: RoleAssigned,
MembershipChanged, a Keyframe, and Output frames that include a stale one
(sequence below the Keyframe's anchor) and a duplicate, which the client
must drop. Input is echoed back as Output ("<" + bytes + ">"), resizes are
answered with a Resize broadcast, pty.leave_session with MembershipChanged,
binding_goodbye {reason: session_closed} and close 1000.

Every client frame is checked against the contract (envelope fields, no
sequence, the join first with the extension URI, payload bounds) and
written as one JSON line to --log, so a test can assert what the client
sent. The server exits after --connections connections (default 1) with
status 0 when every check passed, 1 otherwise. The port it listens on is
printed as "PORT <n>" on stdout.

Scenarios (--scenario):
  basic         the flow above (default)
  downgrade     RoleAssigned grants observer with downgraded: true
  session-end   after the Keyframe: Output, Closed, binding_goodbye, close 1000
  errors        an Error op and a session Error frame after the Keyframe
  refuse        HTTP 403 PERMISSION_DENIED at upgrade
  no-protocol   accepts the upgrade without echoing the subprotocol
  bad-accept    answers 101 with a wrong Sec-WebSocket-Accept (raw socket)
  vanish        drops the TCP connection after the Keyframe, without a close
  deaf          ignores pty.leave_session (the client must close by itself)
"""
import argparse
import asyncio
import base64
import http
import json
import re
import sys
import uuid
from datetime import datetime, timezone

import websockets

EXT_URI = "https://agentic-sandbox.aiwg.io/extensions/pty-extensions/v1"
BINDING_URI = "https://agentic-sandbox.aiwg.io/bindings/pty-ws/v1"
SNAPSHOT = b"\x1bc" + b"\x1b[1;1HKEYFRAME-SCREEN"

failures = []


def fail(msg):
    failures.append(msg)
    print("FAIL " + msg, file=sys.stderr, flush=True)


def ts():
    now = datetime.now(timezone.utc)
    return now.strftime("%Y-%m-%dT%H:%M:%S.") + "%03dZ" % (now.microsecond // 1000)


def b64(data):
    return base64.b64encode(data).decode()


class Session:
    """One connection's script; seq is the session's frame counter."""

    def __init__(self, ws, args, log):
        self.ws, self.args, self.log = ws, args, log
        self.seq = 0
        self.joined = False
        self.role = "controller"

    def next_seq(self):
        self.seq += 1
        return self.seq

    async def send(self, op, payload, seq=None, req_id=None):
        env = {"op": op, "id": req_id or str(uuid.uuid4()), "ts": ts(), "payload": payload}
        if seq is not None:
            env["sequence"] = seq
        await self.ws.send(json.dumps(env))

    async def frame(self, payload, seq=None):
        await self.send("pty.session_frame", payload, self.next_seq() if seq is None else seq)

    async def hello(self):
        await self.send("binding_hello", {
            "binding_uri": BINDING_URI, "binding_version": "1.0.0",
            "supported_operations": ["SendMessage", "SendStreamingMessage", "GetTask",
                                     "ListTasks", "CancelTask", "SubscribeToTask"],
            "activated_extensions": [],
            "session": {"session_id": self.args.session, "current_sequence": 0},
            "session_host": {"supported_backends": ["native"], "default_backend": "native",
                             "supported_classes": ["direct"], "default_class": "direct",
                             "observe_supported": True, "drive_supported": True,
                             "reattach_supported": True}}, seq=0)

    def check_envelope(self, env):
        for key in ("op", "id", "ts", "payload"):
            if key not in env:
                fail("client frame without %s: %r" % (key, env))
        if "sequence" in env:
            fail("client frame sets sequence: %r" % env)
        if not isinstance(env.get("id"), str) or not 1 <= len(env["id"]) <= 128:
            fail("bad id: %r" % env.get("id"))
        if not re.match(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$", env.get("ts", "")):
            fail("bad ts: %r" % env.get("ts"))
        if not isinstance(env.get("payload"), dict):
            fail("payload is not an object: %r" % env)

    def check_join(self, env):
        p = env["payload"]
        if env.get("extensions") != [EXT_URI]:
            fail("join does not activate the extension: %r" % env.get("extensions"))
        if p.get("role") not in ("controller", "observer"):
            fail("bad role %r" % p.get("role"))
        for k in ("cols", "rows"):
            if not isinstance(p.get(k), int) or not 1 <= p[k] <= 1024:
                fail("bad %s %r" % (k, p.get(k)))
        label = p.get("client_label")
        if label is not None and (not isinstance(label, str) or len(label) > 128):
            fail("bad client_label %r" % label)
        if "replay_from" in env and not isinstance(env["replay_from"], int):
            fail("bad replay_from %r" % env["replay_from"])

    async def after_join(self, env):
        sc = self.args.scenario
        if env["payload"].get("role") == "observer" or sc == "downgrade":
            self.role = "observer"
        role = {"kind": "RoleAssigned", "role": self.role, "client_id": "c-fake01"}
        if sc == "downgrade":
            role.update(downgraded=True, reason="controllers full")
        await self.frame(role)
        await self.frame({"kind": "MembershipChanged",
                          "controllers": [{"client_id": "c-fake01", "label": "x"}]
                          if self.role == "controller" else [],
                          "observers": [{"client_id": "c-fake01", "label": "x"}]
                          if self.role == "observer" else []})
        anchor = self.next_seq()
        await self.frame({"kind": "Keyframe", "snapshot": b64(SNAPSHOT),
                          "snapshot_format": "vt100-screen-state-v1",
                          "snapshot_cols": env["payload"].get("cols", 80),
                          "snapshot_rows": env["payload"].get("rows", 24),
                          "anchor_sequence": anchor}, seq=anchor)
        # Stale (below the anchor), then live, then a duplicate of it.
        await self.frame({"kind": "Output", "stream": "stdout", "data": b64(b"STALE")},
                         seq=anchor - 1)
        live = self.next_seq()
        await self.frame({"kind": "Output", "stream": "stdout", "data": b64(b"|LIVE1")},
                         seq=live)
        await self.frame({"kind": "Output", "stream": "stdout", "data": b64(b"|DUP")},
                         seq=live)
        await self.frame({"kind": "Output", "stream": "stdout", "data": b64(b"|LIVE2")})
        await self.scenario_tail()

    async def scenario_tail(self):
        sc = self.args.scenario
        if sc == "errors":
            await self.send("Error", {"code": "INVALID_REQUEST", "message": "fake\x1b[31m error",
                                      "a2a_error": None, "retryable": False})
            await self.frame({"kind": "Error", "code": "PTY_OUTPUT_LAGGED",
                              "message": "fell behind"})
        elif sc == "session-end":
            await self.frame({"kind": "Output", "stream": "stdout", "data": b64(b"|BYE")})
            await self.frame({"kind": "Closed", "exit_code": 3, "reason": "normal"})
            await self.send("binding_goodbye", {"reason": "session_closed"})
            await self.ws.close(1000)
        elif sc == "vanish":
            self.ws.transport.abort()

    async def on_frame(self, env):
        op, p = env.get("op"), env.get("payload", {})
        if not self.joined:
            if op != "pty.join_session":
                fail("first client frame is %r, not pty.join_session" % op)
                return
            self.joined = True
            self.check_join(env)
            await self.after_join(env)
        elif op == "pty.join_session":
            fail("second pty.join_session")
        elif op == "pty.session_input":
            data = base64.b64decode(p.get("data", ""), validate=True)
            if len(data) > 64 * 1024:
                fail("input over 64 KiB decoded: %d" % len(data))
            if self.role != "controller":
                fail("input from an observer")
            await self.frame({"kind": "Output", "stream": "stdout",
                              "data": b64(b"<" + data + b">")})
        elif op == "pty.session_resize":
            await self.frame({"kind": "Resize", "cols": p["cols"], "rows": p["rows"]})
        elif op == "pty.leave_session" and self.args.scenario == "deaf":
            pass
        elif op == "pty.leave_session":
            await self.frame({"kind": "MembershipChanged", "controllers": [], "observers": []})
            await self.send("binding_goodbye", {"reason": "session_closed"})
            await self.ws.close(1000)
        else:
            fail("unexpected op %r" % op)

    async def run(self):
        await self.hello()
        async for msg in self.ws:
            if not isinstance(msg, str):
                fail("binary frame from the client")
                continue
            env = json.loads(msg)
            self.log.write(json.dumps(env) + "\n")
            self.log.flush()
            self.check_envelope(env)
            await self.on_frame(env)


def make_process_request(args, refused):
    """refused() is called for every upgrade answered with an HTTP error."""
    async def process_request(path, headers):
        want = "/agents/%s/sessions/%s/attach" % (args.instance, args.session)
        if path != want:
            refused()
            fail("path %r, want %r" % (path, want))
            return (http.HTTPStatus(404), [("Content-Type", "application/json")],
                    b'{"code":"NOT_FOUND","message":"no such session"}')
        if headers.get("Authorization") != "Bearer " + args.token:
            refused()
            return (http.HTTPStatus(401), [("Content-Type", "application/json"),
                          ("WWW-Authenticate", "Bearer")],
                    b'{"code":"UNAUTHENTICATED","message":"bad token"}')
        if "pty-ws.v1" not in headers.get("Sec-WebSocket-Protocol", ""):
            fail("pty-ws.v1 not offered")
        if args.scenario == "refuse":
            refused()
            return (http.HTTPStatus(403), [("Content-Type", "application/json")],
                    b'{"code":"PERMISSION_DENIED","message":"token not valid for this session"}')
        return None
    return process_request


async def bad_accept_server(args, done):
    async def handle(reader, writer):
        await reader.readuntil(b"\r\n\r\n")
        writer.write(b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\n"
                     b"Connection: Upgrade\r\nSec-WebSocket-Accept: AAAAAAAAAAAAAAAAAAAAAAAAAAA=\r\n"
                     b"Sec-WebSocket-Protocol: pty-ws.v1\r\n\r\n")
        await writer.drain()
        await asyncio.sleep(0.5)
        writer.close()
        done.set_result(None)
    return await asyncio.start_server(handle, "127.0.0.1", args.port)


async def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--port", type=int, default=0)
    ap.add_argument("--instance", default="inst-42")
    ap.add_argument("--session", default="s-1")
    ap.add_argument("--token", default="tok.en.sig")
    ap.add_argument("--scenario", default="basic")
    ap.add_argument("--log", default="/dev/null")
    ap.add_argument("--connections", type=int, default=1)
    args = ap.parse_args()
    log = open(args.log, "w")
    loop = asyncio.get_running_loop()
    done = loop.create_future()
    served = 0

    def count():
        nonlocal served
        served += 1
        if served >= args.connections and not done.done():
            # Let the last answer reach the client before shutting down.
            loop.call_later(0.3, lambda: done.done() or done.set_result(None))

    async def handler(ws, path=None):
        try:
            await Session(ws, args, log).run()
        except websockets.ConnectionClosed:
            pass
        finally:
            count()

    if args.scenario == "bad-accept":
        server = await bad_accept_server(args, done)
    else:
        protocols = [] if args.scenario == "no-protocol" else ["pty-ws.v1"]
        server = await websockets.serve(handler, "127.0.0.1", args.port,
                                        subprotocols=protocols or None,
                                        process_request=make_process_request(args, count),
                                        ping_interval=None)
    print("PORT %d" % server.sockets[0].getsockname()[1], flush=True)
    await done
    server.close()
    await server.wait_closed()
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    asyncio.run(main())
