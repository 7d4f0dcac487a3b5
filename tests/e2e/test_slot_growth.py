"""Connection slots survive the growth of their table.

The gateway counts connections per principal and per instance in one
growable table. Thirty principals on one instance fill it to its first
capacity; a new principal on another instance then adds two entries at
once, and the table grows between them. The gateway must neither touch
freed memory (ASan aborts it) nor lose that principal's count (it would
then answer 429 to the principal forever)."""

import harness
from harness import E2ETestCase, RawWs


class SlotTableGrowth(E2ETestCase):
    # A second instance whose sidecar never exists: its upgrades are
    # refused with 503 after the slot was taken and given back.
    # Every client here comes from 127.0.0.1: lift the per-address cap.
    GATEWAY_ARGS = ("--instance", "inst-none=unix:{dir}/nobody.sock",
                    "--max-conns-per-ip", "100000")

    async def test_new_principal_on_other_instance_after_thirty(self):
        sid = self.stack.create_session()
        for i in range(30):
            await self.connect(sid, sub="p%02d" % i, scope="pty:observe")

        token = self.stack.token(sub="newcomer", instance_id="inst-none", scope="pty:observe")
        path = self.stack.attach_path("00000000-0000-7000-8000-000000000000", "inst-none")
        for _ in range(3):
            r, sock, _ = RawWs.handshake(self.stack.port, path,
                                         {"Authorization": "Bearer " + token})
            self.assertIsNone(sock)
            self.assertEqual(r.status, 503, r)
        self.assertTrue(self.stack.gateway.alive(), self.stack.gateway.log_tail())

        # The newcomer holds nothing, so it may attach where the link is up.
        c = await self.connect(sid, sub="newcomer", scope="pty:observe")
        await c.join("observer")
        await c.expect_frame("pty.session_frame", "RoleAssigned")
        # And its count returns to zero: the limit (16 per principal) holds
        # exactly, neither more nor less.
        await c.close()
        self.clients.remove(c)
        await self.in_thread(self.stack.wait_connections, 30)
        held = [await self.connect(sid, sub="newcomer", scope="pty:observe") for _ in range(16)]
        self.assertEqual(len(held), 16)
        r, sock, _ = RawWs.handshake(self.stack.port, self.stack.attach_path(sid),
                                     {"Authorization": "Bearer " + self.stack.token(
                                         sub="newcomer", session_id=sid, scope="pty:observe")})
        self.assertIsNone(sock)
        self.assertEqual(r.status, 429, r)


if __name__ == "__main__":
    harness.main()
