"""Sidecars that dial in: a gateway with --link-listen and no
instance configured; a real sidecar started with --dial and an instance
credential becomes attachable, and everything an attach does (join,
replay, tasks) works over its link. Every refused opening (wrong
signature, expired, unknown kid, a client token, nothing sent, garbage, a
configured id, flapping) is answered LinkRefused with its reason, logged
with the peer and counted in ptygate_link_refusals_total; a credential
renewed on disk reaches the live link."""
import json
import os
import time

import harness
import test_tasks
from harness import DialStack, E2ETestCase, note

try:
    from cryptography.hazmat.primitives import serialization
except ImportError:  # the expired case needs it; the others do not
    serialization = None


def ed25519_jwt(key_path, claims, kid):
    """An EdDSA JWT signed with the PEM private key at key_path, with any
    claims (an expired one, which the CLI will not mint)."""
    with open(key_path, "rb") as f:
        key = serialization.load_pem_private_key(f.read(), password=None)
    head = {"alg": "EdDSA", "typ": "JWT", "kid": kid}
    signing_input = (harness.b64url(json.dumps(head).encode()) + "."
                     + harness.b64url(json.dumps(claims).encode()))
    return signing_input + "." + harness.b64url(key.sign(signing_input.encode()))


class DialCase(E2ETestCase):
    SIDECAR_ARGS = ()
    GATEWAY_ARGS = ("--link-auth-timeout", "2", "--instance", "inst-static=unix:{dir}/none.sock")

    @classmethod
    def make_stack(cls):
        return DialStack(cls.SIDECAR_ARGS, cls.GATEWAY_ARGS)

    def wait_until(self, predicate, what, timeout=20):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if predicate():
                return
            time.sleep(0.05)
        self.fail("%s within %d s\n%s" % (what, timeout, self.stack.logs()))


class LinkListen(DialCase, test_tasks.TaskCase):

    async def test_attachable_join_replay_task(self):
        st = self.stack
        took = time.monotonic() - st.sidecar_started
        note("sidecar start to attachable (readyz up): %.0f ms" % (took * 1000))
        self.assertLess(took, 30, "a generous bound; the measured time is reported")
        ready = st.readyz()
        self.assertEqual((ready["inst-dial"], ready["inst-static"]), ("up", "down"), ready)
        m = st.metrics()
        self.assertEqual(m['ptygate_instances{kind="registered"}'], 1)
        self.assertEqual(m['ptygate_link_up{instance="inst-dial"}'], 1)
        card = st.http("GET", "/agents/inst-dial/.well-known/agent-card.json")
        self.assertEqual(card.status, 200, card)

        sid, alice = await self.session_with("controller", sub="alice")
        await alice.run("echo dial-$((20+1))", "dial-21")
        last = alice.last_sequence()
        await alice.run("echo after-$((1+1))", "after-2")
        bob = await self.connect(sid, sub="bob", scope="pty:observe")
        await bob.join("observer", replay_from=last)
        await bob.wait_output("after-2", timeout=10)

        tsid, c = await self.task_client()
        task = await self.send_message(c, "echo task-$((2+3))", tsid)
        done = await self.wait_done(c, task["id"], tsid)
        self.assertEqual(done["status"]["state"], "TASK_STATE_COMPLETED", done)
        self.assertIn("task-5", test_tasks.artifact_text(done, "stdout"))

    def refused(self, opening, reason, send_nothing=False):
        """Opens a link, sends opening, and checks the refusal: LinkRefused
        with reason, the counter, and a log line with the peer and reason."""
        before = self.stack.refusals(reason)
        s = self.stack.link_fd()
        try:
            if not send_nothing:
                s.sendall(opening)
            got = harness.read_link_refused(s)
        finally:
            s.close()
        self.assertEqual(got, reason, self.stack.logs())
        self.wait_until(lambda: self.stack.refusals(reason) == before + 1,
                        "ptygate_link_refusals_total{reason=%s} counted" % reason)
        with open(self.stack.gateway.log_path, encoding="utf-8", errors="replace") as f:
            lines = [l for l in f if "refused: " + reason in l]
        self.assertTrue(lines and "link from unix:" in lines[-1] and " pid " in lines[-1],
                        "a log line with the peer and the reason: %r" % lines[-1:])

    def test_refusals(self):
        st = self.stack
        other_key = os.path.join(st.dir, "other.key")
        harness.subprocess.run([st.cli, "token", "keygen", "--out-private", other_key,
                                "--out-public", other_key + ".pub"], check=True,
                               capture_output=True)
        self.refused(harness.link_credential(st.mint_credential(key=other_key)),
                     "bad_signature")
        self.refused(harness.link_credential(st.mint_credential(kid="k9")), "unknown_kid")
        client = harness.subprocess.run(
            [st.cli, "token", "mint", "--ed25519-key", st.link_key, "--kid", "k1",
             "--sub", "alice", "--instance", "inst-dial"],
            check=True, capture_output=True, text=True).stdout.strip()
        self.refused(harness.link_credential(client), "wrong_audience")
        self.refused(b"\x00\x00\x00\x05garbagegarbage", "garbage")
        self.refused(b"\xff\xff\xff\xff", "garbage")
        self.refused(None, "timeout", send_nothing=True)
        self.refused(harness.link_credential(st.mint_credential(instance="inst-static")),
                     "static")
        if serialization:
            now = int(time.time())
            expired = ed25519_jwt(st.link_key, {"aud": "ptygate-link", "sub": "inst-dial",
                                                "instance_id": "inst-dial",
                                                "iat": now - 7200, "exp": now - 3600}, "k1")
            self.refused(harness.link_credential(expired), "expired")
        self.assertEqual(st.readyz()["inst-dial"], "up", "the real link was left alone")

    def test_flapping_is_refused(self):
        """A fake sidecar holding a valid credential for its own id keeps
        replacing its link: past 5 replacements in 10 s the next is refused."""
        st = self.stack
        opening = harness.link_credential(st.mint_credential(instance="inst-flap"))
        links = []
        try:
            regs = st.metrics()["ptygate_link_registrations_total"]
            for i in range(6):  # the first link, then 5 replacements, in order
                s = st.link_fd()
                s.sendall(opening)
                links.append(s)
                self.wait_until(lambda: st.metrics()["ptygate_link_registrations_total"]
                                == regs + i + 1, "link %d of inst-flap taken" % i)
            before = st.refusals("flapping")
            self.refused(opening, "flapping")
            self.assertEqual(st.refusals("flapping"), before + 1)
            m = st.metrics()
            self.assertGreaterEqual(m["ptygate_link_replacements_total"], 5)
        finally:
            for s in links:
                s.close()

    def test_renewed_credential_reaches_the_live_link(self):
        st = self.stack
        before = st.metrics()["ptygate_link_renewals_total"]
        st.write_credential(st.mint_credential(ttl="2h"))
        self.wait_until(lambda: st.metrics()["ptygate_link_renewals_total"] > before,
                        "the renewal counted")
        with open(st.gateway.log_path, encoding="utf-8", errors="replace") as f:
            self.assertIn("credential renewed", f.read())
        self.assertEqual(st.readyz()["inst-dial"], "up")


if __name__ == "__main__":
    harness.main()
