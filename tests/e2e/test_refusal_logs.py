"""Refusals an operator looks for: a 401, a 403 and a 429 each log one
line with the client's address and the reason, in the text format and
in --log-format json (there as an object with the address in "addr"),
REST and attach alike; a token in the query never reaches the log."""
import json
import time
import unittest

from harness import E2ETestCase

DEADLINE = 60.0


class RefusalLogs:
    """Mixed into a test case per format; log_lines() yields the parsed lines."""

    def sessions_path(self):
        return "/agents/%s/sessions" % self.stack.instance

    def refusals(self):
        with open(self.stack.gateway.log_path, "rb") as f:
            text = f.read().decode("utf-8", "replace")
        return [line for line in text.splitlines() if "refused 4" in line]

    def wait_refusal(self, status, reason):
        """The line for status with reason, waited for (60 s bound)."""
        deadline = time.monotonic() + DEADLINE
        while True:
            for line in self.refusals():
                rec = self.parse(line)
                if rec and rec["status"] == status and reason in rec["reason"]:
                    return rec
            if time.monotonic() > deadline:
                self.fail("no %d line with %r in:\n%s"
                          % (status, reason, "\n".join(self.refusals())))
            time.sleep(0.1)

    def test_401_logged(self):
        r = self.stack.http("GET", self.sessions_path() + "?access_token=SECRETTOKEN")
        self.assertEqual(r.status, 401)
        rec = self.wait_refusal(401, "an Authorization: Bearer token is required")
        self.assertEqual(rec["addr"], "127.0.0.1")
        self.assertIn("GET " + self.sessions_path(), rec["reason"])
        self.assertNotIn("SECRETTOKEN", "\n".join(self.refusals()))

    def test_401_bad_token_logged(self):
        r = self.stack.http("GET", self.sessions_path(), token="not.a.jwt")
        self.assertEqual(r.status, 401)
        rec = self.wait_refusal(401, "UNAUTHENTICATED")
        self.assertEqual(rec["addr"], "127.0.0.1")

    def test_403_logged(self):
        tok = self.stack.token(sub="nobody", scope="tasks")
        r = self.stack.http("GET", self.sessions_path(), token=tok)
        self.assertEqual(r.status, 403)
        rec = self.wait_refusal(403, "the token lacks scope 'sessions'")
        self.assertEqual(rec["addr"], "127.0.0.1")

    def test_403_attach_logged(self):
        tok = self.stack.token(sub="elsewhere", instance_id="other-instance")
        r = self.stack.http("GET", self.sessions_path() + "/s1/attach", token=tok, headers={
            "Upgrade": "websocket", "Connection": "Upgrade", "Sec-WebSocket-Version": "13",
            "Sec-WebSocket-Key": "dGhlIHNhbXBsZSBub25jZQ==",
            "Sec-WebSocket-Protocol": "pty-ws.v1"})
        self.assertEqual(r.status, 403)
        rec = self.wait_refusal(403, "not valid for this instance or session")
        self.assertEqual(rec["addr"], "127.0.0.1")

    def test_429_logged(self):
        tok = self.stack.token(sub="eager", scope="sessions")
        # --rest-rate 1: a burst of two, then 429 (asked until one comes,
        # so a slow machine's refill cannot make the test pass vacuously).
        statuses = []
        for _ in range(50):
            statuses.append(self.stack.http("GET", self.sessions_path(), token=tok).status)
            if statuses[-1] == 429:
                break
        self.assertEqual(statuses[-1], 429, statuses)
        rec = self.wait_refusal(429, "too many requests")
        self.assertEqual(rec["addr"], "127.0.0.1")
        self.assertIn("RATE_LIMITED", rec["reason"])


class TextFormat(RefusalLogs, E2ETestCase):
    GATEWAY_ARGS = ("--rest-rate", "1")

    @staticmethod
    def parse(line):
        # TS WARN ptygate-gateway [http addr=ADDR] refused STATUS CODE: METHOD PATH: REASON
        head, sep, rest = line.partition("[http addr=")
        if not sep or " WARN " not in head:
            return None
        addr, _, msg = rest.partition("] ")
        status = int(msg.split()[1])
        return {"status": status, "addr": addr, "reason": msg}


class JsonFormat(RefusalLogs, E2ETestCase):
    GATEWAY_ARGS = ("--rest-rate", "1", "--log-format", "json")

    def parse(self, line):
        rec = json.loads(line)  # every line is JSON, the refusals too
        self.assertEqual(rec["level"], "warn")
        self.assertEqual(rec["ident"], "ptygate-gateway")
        self.assertEqual(rec["ctx"], "http")
        return {"status": int(rec["msg"].split()[1]), "addr": rec["addr"],
                "reason": rec["msg"]}

    async def test_connection_fields(self):
        """An attached connection's lines carry its context as fields."""
        sid = self.stack.create_session()
        c = await self.stack.client(sid, sub="carol")
        await c.close()
        deadline = time.monotonic() + DEADLINE
        while True:
            with open(self.stack.gateway.log_path, "rb") as f:
                recs = [json.loads(line) for line in f.read().decode("utf-8").splitlines()
                        if line.startswith("{")]
            recs = [r for r in recs if r.get("session") == sid and r.get("conn")]
            if recs:
                break
            if time.monotonic() > deadline:
                self.fail("no line with session %s" % sid)
            time.sleep(0.1)
        self.assertEqual(recs[0]["instance"], self.stack.instance)
        self.assertEqual(recs[0]["principal"], "carol")
        self.assertNotIn("ctx", recs[0])

    def test_every_line_is_json(self):
        self.stack.http("GET", self.sessions_path())
        self.wait_refusal(401, "UNAUTHENTICATED")
        with open(self.stack.gateway.log_path, "rb") as f:
            lines = f.read().decode("utf-8").splitlines()
        lines = [line for line in lines if line and not line.startswith("=== ")]
        self.assertTrue(lines)
        for line in lines:
            rec = json.loads(line)
            for key in ("ts", "level", "ident", "msg"):
                self.assertIn(key, rec, line)


if __name__ == "__main__":
    unittest.main()
