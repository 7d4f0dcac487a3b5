"""Registered instances across restarts, with real daemons in
dial-out mode: the gateway SIGKILLed and restarted (the sidecar dials
again, a client's replay_from loses and repeats nothing); the sidecar
SIGKILLed and restarted within --link-grace with --state-dir (the same
instance and sessions carry on); the instance removed once the grace
passes; one sidecar dialling two gateways (membership enforced once, by
the sidecar)."""
import asyncio
import re
import signal
import time

import harness
from harness import DialStack, E2ETestCase, note

TICKS = 10
TICKER = "(i=1; while [ $i -le %d ]; do echo tick-$i; i=$((i+1)); sleep 0.3; done) &" % TICKS


class DialCase(E2ETestCase):
    SIDECAR_ARGS = ()
    GATEWAY_ARGS = ()
    GATEWAYS = 1

    @classmethod
    def make_stack(cls):
        return DialStack(cls.SIDECAR_ARGS, cls.GATEWAY_ARGS, gateways=cls.GATEWAYS)

    def wait_until(self, predicate, what, timeout=30):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if predicate():
                return
            time.sleep(0.05)
        self.fail("%s within %d s\n%s" % (what, timeout, self.stack.logs()))

    async def reconnect(self, sid, sub="bob", scope="pty:observe", timeout=30):
        deadline = time.monotonic() + timeout
        while True:
            try:
                return await self.connect(sid, sub=sub, scope=scope)
            except Exception:
                if time.monotonic() > deadline:
                    raise
                await asyncio.sleep(0.2)

    async def lost(self, client, timeout=15):
        """What a client of a lost sidecar gets today: an Error or a
        goodbye, then the close (1011)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                await client.recv(1)
            except asyncio.TimeoutError:
                continue
            except Exception:  # the close, as harness.Closed or websockets'
                return
        self.fail("the client was not closed when its sidecar died")

    def check_no_gap(self, client, last):
        seqs = sorted(f["sequence"] for f in client.frames if f["op"] == "pty.session_frame")
        self.assertEqual(len(seqs), len(set(seqs)), "no frame twice")
        self.assertEqual(seqs, list(range(last + 1, seqs[-1] + 1)),
                         "every sequence after %d arrived" % last)


class GatewaySigkill(DialCase):

    async def test_sidecar_dials_again_and_replay_loses_nothing(self):
        sid, alice = await self.session_with("controller", sub="alice")
        await alice.run("echo before-$((1+1))", "before-2")
        await alice.type(TICKER + "\n")
        await alice.wait_output("tick-2", timeout=10)
        last = alice.last_sequence()

        self.stack.gateway.kill()
        await alice.expect_close(None, timeout=10, allow=("Output", "MembershipChanged", "Keyframe"))
        t0 = time.monotonic()
        self.stack.start_gateway()  # same port and link socket; waits for readyz 200
        note("gateway restart to instance up again: %.0f ms" % ((time.monotonic() - t0) * 1000))

        back = await self.reconnect(sid, sub="alice", scope="pty:control")
        self.assertGreater(back.hello["payload"]["session"]["current_sequence"], last)
        await back.join("controller", replay_from=last)
        await back.expect_frame("pty.session_frame", "RoleAssigned")
        await back.wait_output("tick-%d" % TICKS, timeout=15)
        await back.quiet(0.4)
        self.check_no_gap(back, last)
        ticks = re.findall(rb"tick-(\d+)", bytes(back.output))
        self.assertEqual(len(ticks), len(set(ticks)), "no line twice")


class SidecarSigkillWithinGrace(DialCase):
    SIDECAR_ARGS = ("--state-dir", "{dir}/state", "--state-key-file", "{dir}/state.key")
    GATEWAY_ARGS = ("--link-grace", "120")

    async def test_same_instance_and_sessions(self):
        st = self.stack
        sid, alice = await self.session_with("controller", sub="alice")
        await alice.run("echo kept-$((3+4))", "kept-7")
        last = alice.last_sequence()

        st.sidecar.kill(signal.SIGKILL)
        await self.lost(alice)
        self.wait_until(lambda: st.readyz().get("inst-dial") == "down",
                        "the instance kept, down, during the grace")
        st.start_sidecar()
        self.wait_until(lambda: st.readyz().get("inst-dial") == "up", "the instance back")
        self.assertEqual(st.metrics()["ptygate_registered_instances_removed_total"], 0)
        self.assertEqual(st.get_session(sid)["session_id"], sid, "the same session")

        back = await self.reconnect(sid)
        self.assertGreater(back.hello["payload"]["session"]["current_sequence"], last)
        await back.join("observer", replay_from=last - 1)
        await back.expect_frame("pty.session_frame", "RoleAssigned")


class GraceRemoval(DialCase):
    GATEWAY_ARGS = ("--link-grace", "1")

    async def test_instance_removed_after_the_grace(self):
        st = self.stack
        sid, alice = await self.session_with("controller", sub="alice")
        st.sidecar.kill(signal.SIGKILL)
        await self.lost(alice)
        self.wait_until(lambda: "inst-dial" not in st.readyz(), "the instance removed")
        m = st.metrics()
        self.assertEqual(m["ptygate_registered_instances_removed_total"], 1)
        self.assertEqual(m['ptygate_instances{kind="registered"}'], 0)
        r = st.http("GET", "/agents/inst-dial/sessions",
                    token=st.token(sub="e2e-admin", scope="sessions"))
        self.assertEqual(r.status, 404, r)
        self.assertIn("--link-grace over: instance inst-dial removed",
                      st.gateway.log_tail(200))
        # The sidecar dials again later: the instance comes back.
        st.start_sidecar()
        self.wait_until(lambda: st.readyz().get("inst-dial") == "up", "the instance back")


class TwoGateways(DialCase):
    GATEWAYS = 2
    SIDECAR_ARGS = ("--max-controllers", "1")

    async def connect_on(self, gw, sid, sub, scope):
        saved = self.stack.port
        self.stack.port = gw.port
        try:
            return await self.connect(sid, sub=sub, scope=scope)
        finally:
            self.stack.port = saved

    async def test_one_sidecar_dials_both(self):
        st = self.stack
        g0, g1 = st.gateways
        self.wait_until(lambda: st.readyz(g1).get("inst-dial") == "up", "linked to both")
        sid, alice = await self.session_with("controller", sub="alice")
        bob = await self.connect_on(g1, sid, "bob", "pty:control")
        await bob.join("controller")
        ra = await bob.expect_frame("pty.session_frame", "RoleAssigned")
        self.assertEqual(ra["payload"]["role"], "observer",
                         "one controller across both gateways: the sidecar enforces it once")
        await alice.run("echo both-$((4+4))", "both-8")
        await bob.wait_output("both-8", timeout=10)


if __name__ == "__main__":
    harness.main()
