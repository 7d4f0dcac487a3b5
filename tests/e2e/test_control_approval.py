"""Control approval (docs/protocol.md, "Control approval"): a session
created with control_policy "approve" holds an observer's ask for control
until a controller approves or denies it; everyone who activated the
extension sees who asked (ptygate.control_requests); a request lapses
after --control-seconds; with no controller left the oldest asker takes
over. Clients without the extension see only the binding's frames, and an open
session (the default) behaves as docs/protocol.md, "Roles", says."""

import os
import subprocess

import harness
from harness import E2ETestCase

CONTROL_URI = "urn:ptygate:extensions:control-approval:v1"
NOTICE = "ptygate.control_requests"


def role_of(frame):
    return frame["payload"]["role"]


async def join_with_control(client, role, label):
    """A join activating both extensions; returns the RoleAssigned."""
    await client.send("pty.join_session", {"role": role, "client_label": label},
                      extensions=[harness.EXTENSION_URI, CONTROL_URI])
    ra = await client.expect_frame("pty.session_frame", "RoleAssigned")
    await client.wait_for("pty.session_frame", "Keyframe")
    return ra


async def refused(client, code, request_id):
    """The Error answering request_id, whatever frames come before it."""
    e = await client.wait_for("Error", where=lambda f: f["id"] == request_id)
    assert e["payload"]["code"] == code, "%s: %r" % (client.label, e)
    return e


def event_is(kind, client_id):
    return lambda f: (f["payload"].get("event") or {}).get("kind") == kind and \
        f["payload"]["event"]["client_id"] == client_id


class ControlApproval(E2ETestCase):
    SIDECAR_ARGS = ("--control-seconds", 3600)

    async def two(self, sid):
        """alice controls, bob watches; both with the extension."""
        alice = await self.connect(sid, sub="alice")
        ra = await join_with_control(alice, "controller", "alice")
        self.assertEqual(role_of(ra), "controller")
        first = await alice.wait_for(NOTICE)
        self.assertEqual(first["payload"]["policy"], "approve")
        self.assertEqual(first["payload"]["pending"], [])
        self.assertNotIn("event", first["payload"])
        bob = await self.connect(sid, sub="bob")
        ra = await join_with_control(bob, "observer", "bob")
        await bob.wait_for(NOTICE)
        return alice, bob, ra["payload"]["client_id"]

    async def ask(self, alice, bob, bob_id, others=()):
        await bob.send("pty.request_role", {"role": "controller"})
        ra = await bob.wait_for("pty.session_frame", "RoleAssigned")
        self.assertEqual(role_of(ra), "observer")
        self.assertIs(ra["payload"]["downgraded"], True)
        self.assertIn("approval", ra["payload"]["reason"])
        for who in (alice, bob) + tuple(others):
            n = await who.wait_for(NOTICE, where=event_is("requested", bob_id))
            self.assertEqual([p["client_id"] for p in n["payload"]["pending"]], [bob_id])
            self.assertEqual(n["payload"]["pending"][0]["label"], "bob")
            self.assertEqual(n["payload"]["event"]["label"], "bob")
            self.assertRegex(n["payload"]["pending"][0]["expires_at"], r"Z$")

    async def test_approve_hands_control(self):
        sid = self.stack.create_session(control_policy="approve")
        self.assertEqual(self.stack.get_session(sid)["control_policy"], "approve")
        alice, bob, bob_id = await self.two(sid)
        carol = await self.connect(sid, sub="carol", scope="pty:observe")
        await carol.join_fresh("observer")  # no control extension
        await self.ask(alice, bob, bob_id)

        decision = await alice.send("ptygate.decide_control", {"client_id": bob_id, "approve": True})
        answer = await alice.wait_for("ptygate.control_decided")
        self.assertEqual(answer["id"], decision)
        self.assertEqual(answer["payload"], {"client_id": bob_id, "approve": True})
        ra = await bob.wait_for("pty.session_frame", "RoleAssigned")
        self.assertEqual(role_of(ra), "controller")
        self.assertNotIn("downgraded", ra["payload"])
        mc = await carol.wait_for("pty.session_frame", "MembershipChanged",
                                  where=lambda f: len(f["payload"]["controllers"]) == 2)
        self.assertEqual([c["label"] for c in mc["payload"]["controllers"]], ["alice", "bob"])
        n = await bob.wait_for(NOTICE, where=event_is("approved", bob_id))
        self.assertEqual(n["payload"]["pending"], [])
        self.assertEqual(n["payload"]["event"]["by"]["label"], "alice")
        await bob.run("echo bob-$((6*7))", "bob-42")
        self.assertFalse([f for f in carol.frames if f["op"].startswith("ptygate.")],
                         "a client without the extension sees only the binding's frames")

    async def test_deny_leaves_roles_unchanged(self):
        sid = self.stack.create_session(control_policy="approve")
        alice, bob, bob_id = await self.two(sid)
        await self.ask(alice, bob, bob_id)
        await alice.send("ptygate.decide_control", {"client_id": bob_id, "approve": False})
        await alice.wait_for("ptygate.control_decided")
        ra = await bob.wait_for("pty.session_frame", "RoleAssigned")
        self.assertEqual(role_of(ra), "observer")
        self.assertIn("denied", ra["payload"]["reason"])
        n = await bob.wait_for(NOTICE, where=event_is("denied", bob_id))
        self.assertEqual(n["payload"]["event"]["by"]["label"], "alice")
        typed = await bob.type("true\n")
        await refused(bob, "PERMISSION_DENIED", typed)
        info = self.stack.get_session(sid)
        self.assertEqual([c["label"] for c in info["controllers"]], ["alice"])
        # Nothing waits any more: a second answer is refused.
        again = await alice.send("ptygate.decide_control", {"client_id": bob_id, "approve": True})
        await refused(alice, "INVALID_REQUEST", again)

    async def test_only_a_controller_decides_and_only_with_the_extension(self):
        sid = self.stack.create_session(control_policy="approve")
        alice, bob, bob_id = await self.two(sid)
        await self.ask(alice, bob, bob_id)
        mine = await bob.send("ptygate.decide_control", {"client_id": bob_id, "approve": True})
        await refused(bob, "PERMISSION_DENIED", mine)
        dave = await self.connect(sid, sub="dave")
        await dave.join_fresh("controller")  # plain binding client: waits too
        ra = dave.frames[[f["payload"].get("kind") for f in dave.frames].index("RoleAssigned")]
        self.assertEqual(role_of(ra), "observer")
        plain = await dave.send("ptygate.decide_control", {"client_id": bob_id, "approve": True})
        await refused(dave, "UNSUPPORTED_OPERATION", plain)
        bad = await alice.send("ptygate.decide_control", {"client_id": bob_id, "approve": "yes"})
        await refused(alice, "INVALID_REQUEST", bad)

    async def test_join_as_controller_asks_and_leaving_withdraws(self):
        sid = self.stack.create_session(control_policy="approve")
        alice, bob, _ = await self.two(sid)
        erin = await self.connect(sid, sub="erin")
        ra = await join_with_control(erin, "controller", "erin")
        self.assertEqual(role_of(ra), "observer")
        self.assertIn("approval", ra["payload"]["reason"])
        erin_id = ra["payload"]["client_id"]
        n = await alice.wait_for(NOTICE, where=event_is("requested", erin_id))
        self.assertEqual([p["label"] for p in n["payload"]["pending"]], ["erin"])
        await erin.send("pty.leave_session", {})
        await erin.wait_for("binding_goodbye")
        n = await alice.wait_for(NOTICE, where=event_is("withdrawn", erin_id))
        self.assertEqual(n["payload"]["pending"], [])

    async def test_last_controller_leaving_hands_over_to_the_oldest_asker(self):
        sid = self.stack.create_session(control_policy="approve")
        alice, bob, bob_id = await self.two(sid)
        await self.ask(alice, bob, bob_id)
        await alice.send("pty.leave_session", {})
        await alice.wait_for("binding_goodbye")
        ra = await bob.wait_for("pty.session_frame", "RoleAssigned")
        self.assertEqual(role_of(ra), "controller")
        n = await bob.wait_for(NOTICE, where=event_is("approved", bob_id))
        self.assertNotIn("by", n["payload"]["event"])
        await bob.run("echo took-$((6*7))", "took-42")

    async def test_at_most_eight_wait(self):
        sid = self.stack.create_session(control_policy="approve")
        alice, _, _ = await self.two(sid)  # bob does not ask
        askers = []
        for i in range(9):
            c = await self.connect(sid, sub="asker%d" % i)
            await join_with_control(c, "observer", "asker%d" % i)
            await c.send("pty.request_role", {"role": "controller"})
            ra = await c.wait_for("pty.session_frame", "RoleAssigned",
                                  where=lambda f: f["payload"].get("downgraded"))
            askers.append(ra["payload"]["reason"])
        self.assertEqual(askers[:8], ["waiting for a controller's approval"] * 8)
        self.assertIn("too many control requests", askers[8])
        n = await alice.wait_for(NOTICE, where=lambda f: len(f["payload"]["pending"]) == 8)
        self.assertEqual([p["label"] for p in n["payload"]["pending"]],
                         ["asker%d" % i for i in range(8)])

    async def test_open_session_is_spec_5_1(self):
        sid = self.stack.create_session()
        self.assertEqual(self.stack.get_session(sid)["control_policy"], "open")
        alice = await self.connect(sid, sub="alice")
        await join_with_control(alice, "controller", "alice")
        bob = await self.connect(sid, sub="bob")
        await join_with_control(bob, "observer", "bob")
        await bob.send("pty.request_role", {"role": "controller"})
        ra = await bob.wait_for("pty.session_frame", "RoleAssigned")
        self.assertEqual(role_of(ra), "controller")
        self.assertFalse([f for f in alice.frames + bob.frames if f["op"] == NOTICE])
        mine = await alice.send("ptygate.decide_control", {"client_id": "c-0", "approve": True})
        await refused(alice, "INVALID_REQUEST", mine)

    def test_cli_creates_with_a_control_policy(self):
        cli = harness.cli_binary()
        if not cli:
            self.skipTest("ptygate CLI not built")
        token_file = os.path.join(self.stack.dir, "sessions-token")
        with open(token_file, "w") as f:
            f.write(self.stack.token(sub="e2e-admin", scope="sessions"))
        target = ["--gateway", "http://127.0.0.1:%d" % self.stack.port,
                  "--instance", self.stack.instance, "--token-file", token_file]
        run = lambda *args: subprocess.run([cli, "sessions", *args], capture_output=True,
                                           text=True, timeout=60)
        made = run("create", *target, "--control-policy", "approve", "-q", "--", "/bin/sh")
        self.assertEqual(made.returncode, 0, made.stderr)
        sid = made.stdout.strip()
        self.assertEqual(self.stack.get_session(sid)["control_policy"], "approve")
        shown = run("get", sid, *target)
        self.assertIn("control_policy: approve", shown.stdout.splitlines())
        bad = run("create", *target, "--control-policy", "owner")
        self.assertEqual(bad.returncode, 2, bad.stderr)
        self.assertIn("--control-policy", bad.stderr)

    def test_rest_refuses_an_unknown_policy(self):
        r = self.stack.http("POST", "/agents/%s/sessions" % self.stack.instance,
                            {"control_policy": "owner"},
                            token=self.stack.token(sub="e2e-admin", scope="sessions"))
        self.assertEqual(r.status, 400, r)
        self.assertIn("control_policy", r.json()["message"])


class OwnerOnly(E2ETestCase):

    async def test_only_the_creator_controls(self):
        sid = self.stack.create_session(control_policy="owner_only",
                                        token=self.stack.token(sub="alice", scope="sessions"))
        info = self.stack.get_session(sid)
        self.assertEqual((info["control_policy"], info["owner"]), ("owner_only", "alice"))
        alice = await self.connect(sid, sub="alice")
        ra, _, _ = await alice.join_fresh("controller")
        self.assertEqual(role_of(ra), "controller")
        bob = await self.connect(sid, sub="bob")
        ra, _, _ = await bob.join_fresh("controller")
        self.assertEqual(role_of(ra), "observer")
        self.assertIn("owner", ra["payload"]["reason"])
        await alice.send("pty.leave_session", {})
        await alice.wait_for("binding_goodbye")
        await bob.send("pty.request_role", {"role": "controller"})
        ra = await bob.wait_for("pty.session_frame", "RoleAssigned")
        self.assertEqual(role_of(ra), "observer")
        self.assertIs(ra["payload"]["downgraded"], True)
        self.assertIn("owner", ra["payload"]["reason"])
        typed = await bob.type("true\n")
        await refused(bob, "PERMISSION_DENIED", typed)
        again = await self.connect(sid, sub="alice", label="alice-again")
        ra, _, _ = await again.join_fresh("controller")
        self.assertEqual(role_of(ra), "controller", "the owner controls from any connection")


class ControlExpiry(E2ETestCase):
    SIDECAR_ARGS = ("--control-seconds", 1)

    async def test_a_request_lapses(self):
        sid = self.stack.create_session(control_policy="approve")
        alice = await self.connect(sid, sub="alice")
        await join_with_control(alice, "controller", "alice")
        bob = await self.connect(sid, sub="bob")
        bob_id = (await join_with_control(bob, "observer", "bob"))["payload"]["client_id"]
        await bob.send("pty.request_role", {"role": "controller"})
        await alice.wait_for(NOTICE, where=event_is("requested", bob_id))
        n = await alice.wait_for(NOTICE, where=event_is("expired", bob_id))
        self.assertEqual(n["payload"]["pending"], [])
        ra = await bob.wait_for("pty.session_frame", "RoleAssigned",
                                where=lambda f: "answered" in f["payload"].get("reason", ""))
        self.assertEqual(role_of(ra), "observer")
        late = await alice.send("ptygate.decide_control", {"client_id": bob_id, "approve": True})
        await refused(alice, "INVALID_REQUEST", late)


if __name__ == "__main__":
    harness.main()
