"""Clients that do not wait: input sent right behind pty.join_session is
applied after the join (the sidecar takes link messages in order), and a
client that vanishes before its join is answered does not keep its slot.
The frames of each case leave in one TCP write, so the gateway reads them
together, before the sidecar can have answered the join."""

import harness
from harness import E2ETestCase


class OneWrite:
    """Collects what a RawWs sends and writes it all at once."""

    def __init__(self, raw):
        self.raw, self.real, self.parts = raw, raw.sock, []

    def sendall(self, data):
        self.parts.append(data)

    def __enter__(self):
        self.raw.sock = self
        return self

    def __exit__(self, *exc):
        self.raw.sock = self.real
        self.real.sendall(b"".join(self.parts))


class JoinPipelining(E2ETestCase):
    SIDECAR_ARGS = ("--max-controllers", "1")

    async def test_input_right_behind_the_join_is_applied(self):
        sid = self.stack.create_session()
        c = self.raw(sid, sub="eager", scope="pty:control")
        with OneWrite(c):
            await c.join("controller")
            await c.type("echo eager-$((6*7))\n")
        ra = await c.wait_for("pty.session_frame", "RoleAssigned")
        self.assertEqual(ra["payload"]["role"], "controller")
        await c.wait_output("eager-42", timeout=5)
        self.assertEqual([f for f in c.frames if f["op"] == "Error"], [], "nothing refused")

    async def test_a_client_gone_mid_join_frees_its_slot(self):
        sid = self.stack.create_session()
        for i in range(3):
            gone = self.raw(sid, sub="gone-%d" % i, scope="pty:control")
            with OneWrite(gone):
                await gone.join("controller")
                gone.send_close(1000)
            gone.close()
        # Their slots are free once the gateway has seen every close (and
        # told the sidecar, before anything the keeper sends).
        await self.in_thread(self.stack.wait_connections, 0)
        keeper = await self.connect(sid, sub="keeper")
        ra, mc, _ = await keeper.join_fresh("controller")
        self.assertEqual(ra["payload"]["role"], "controller",
                         "the single controller slot is free again: %s" % ra["payload"])
        self.assertEqual([m["label"] for m in mc["payload"]["controllers"]], ["keeper"])


if __name__ == "__main__":
    harness.main()
