"""The sidecar's log lines about a session name it as a field:
`session=ID` in the context of a text line, a "session" key in a
--log-format json line, never only in the message. A session's lifecycle
(started, attach, role, leave, ending, closed) is checked in both formats,
and every line that mentions the session carries the field."""
import asyncio
import json
import re
import time

from harness import E2ETestCase

TIMEOUT = 30
LIFECYCLE = ("started pid", "audit: attach", "audit: leave", "ending:", "closed:")
# Two members leave: the observer, and the controller after Closed (its
# leave is logged once its own close reaches the sidecar, which may come
# after every other line on a loaded machine).
LEAVES = 2


class TextLogs(E2ETestCase):
    SIDECAR_ARGS = ("--kill-grace-ms", 500)

    def field_of(self, line):
        """The session field of a text line: "[... session=ID ...]"."""
        m = re.match(r"\S+ \S+ \S+ \[([^\]]*)\] ", line)
        if not m:
            return None
        words = dict(w.split("=", 1) for w in m.group(1).split() if "=" in w)
        return words.get("session")

    def lines(self):
        with open(self.stack.sidecar.log_path, errors="replace") as f:
            return [l.rstrip("\n") for l in f if l.strip() and not l.startswith("===")]

    async def session_lifecycle(self):
        sid, ctl = await self.session_with("controller", sub="alice")
        obs = await self.connect(sid, sub="bob", scope="pty:observe")
        await obs.join_fresh("observer")
        await obs.close()
        await ctl.run("echo logged-$((2+3))", "logged-5")
        r = self.stack.delete_session(sid)
        self.assertEqual(r.status, 200, r)
        await ctl.wait_for("pty.session_frame", "Closed", timeout=TIMEOUT)
        await ctl.close()
        return sid

    async def wait_lines(self, sid):
        """The session's lines once its whole lifecycle is logged, both
        leaves included; a line still missing at the deadline fails."""
        deadline = time.monotonic() + TIMEOUT
        while True:
            mine = [l for l in self.lines() if self.field_of(l) == sid]
            if (all(any(m in l for l in mine) for m in LIFECYCLE)
                    and sum("audit: leave" in l for l in mine) >= LEAVES):
                return mine
            self.assertLess(time.monotonic(), deadline,
                            "lifecycle lines missing from:\n" + "\n".join(mine))
            await asyncio.sleep(0.05)

    async def test_a_sessions_lines_carry_its_id_as_a_field(self):
        sid = await self.session_lifecycle()
        mine = await self.wait_lines(sid)
        self.assertGreaterEqual(sum("audit: leave" in l for l in mine), LEAVES, mine)
        # No line names the session in its text without the field.
        for l in self.lines():
            if sid in l:
                self.assertEqual(self.field_of(l), sid, l)


class JsonLogs(TextLogs):
    SIDECAR_ARGS = ("--kill-grace-ms", 500, "--log-format", "json")

    def field_of(self, line):
        try:
            doc = json.loads(line)
        except ValueError:
            return None
        self.assertNotIn("session=", doc.get("ctx", ""), line)
        return doc.get("session")

    def lines(self):
        out = []
        for l in super().lines():
            if l.startswith("{"):
                out.append(l)
            else:
                self.assertNotIn("session", l)  # every sidecar line is JSON
        return out

    async def wait_lines(self, sid):
        mine = await super().wait_lines(sid)
        for l in mine:
            doc = json.loads(l)
            self.assertEqual(doc["session"], sid)
        return mine


if __name__ == "__main__":
    import unittest
    unittest.main()
