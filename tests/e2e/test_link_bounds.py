"""The bounds of a gateway's --link-listen: credentials checked
off the loop, on a thread at a lower CPU priority, and registered at most
a few per loop turn however many arrive at once (a flood of connecting
sidecars must not delay everything else); the link keys that thread uses
follow a SIGHUP; --max-instances and
--max-pending-links refusals, and the watchdog that closes a link whose
credential expired and was not renewed within --link-renew-grace. Each
refusal is answered LinkRefused with its reason, logged with the peer and
counted in ptygate_link_refusals_total{reason}. Every wait is on an event
(a counter, a log line, an EOF) with a generous deadline, never a sleep."""
import os
import shutil
import signal
import socket
import subprocess
import time

import harness
from harness import DialStack, E2ETestCase


class LinkCase(E2ETestCase):
    GATEWAY_ARGS = ()

    @classmethod
    def make_stack(cls):
        return DialStack((), cls.GATEWAY_ARGS)

    def wait_until(self, predicate, what, timeout=30):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if predicate():
                return
            time.sleep(0.05)
        self.fail("%s within %d s\n%s" % (what, timeout, self.stack.logs()))

    def gateway_log_lines(self, text):
        with open(self.stack.gateway.log_path, encoding="utf-8", errors="replace") as f:
            return [line for line in f if text in line]

    def assert_refused(self, sock, reason, before):
        """sock is answered LinkRefused {reason} and closed; the counter
        moves by one and a log line names the peer and the reason."""
        got = harness.read_link_refused(sock, timeout=30)
        self.assertEqual(got, reason, self.stack.logs())
        self.wait_until(lambda: self.stack.refusals(reason) == before + 1,
                        "ptygate_link_refusals_total{reason=%s} counted" % reason)
        lines = self.gateway_log_lines("refused: " + reason)
        self.assertTrue(lines and "link from unix:" in lines[-1] and " pid " in lines[-1],
                        "a log line with the peer and the reason: %r" % lines[-1:])


class OpeningsPerTurn(LinkCase):
    """Many complete credentials ready in one turn: they are checked a few
    per turn (ptygate_link_openings_turn_max stays at the bound), and all
    of them register in the end."""

    N = 100
    BOUND = 8  # OPENINGS_PER_TURN in gateway/linklisten.c

    def test_credentials_checked_a_few_per_turn(self):
        st = self.stack
        openings = [harness.link_credential(st.mint_credential(instance="flood-%d" % i))
                    for i in range(self.N)]
        regs = st.metrics()["ptygate_link_registrations_total"]
        links = []
        # Stopped, the gateway cannot take the links as they come: all of
        # them are queued (the listen backlog is 128) with their bytes
        # sent, and its next turns find every one ready at once.
        os.kill(st.gateway.pid, signal.SIGSTOP)
        try:
            for o in openings:
                s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
                s.settimeout(30)
                s.connect(st.link_socks[0])
                s.sendall(o)
                links.append(s)
        finally:
            os.kill(st.gateway.pid, signal.SIGCONT)
        try:
            self.wait_until(lambda: st.metrics()["ptygate_link_registrations_total"]
                            == regs + self.N, "all %d flood links registered" % self.N)
            most = st.metrics()["ptygate_link_openings_turn_max"]
            harness.note("most credentials checked in one turn: %d" % most)
            self.assertGreaterEqual(most, 1)
            self.assertLessEqual(most, self.BOUND, "checks per loop turn are bounded")
            self.assertEqual(st.readyz()["inst-dial"], "up", "the real link was left alone")
        finally:
            for s in links:
                s.close()


def task_stat(pid, tid):
    """(comm, nice) of one thread, from /proc/PID/task/TID/stat."""
    with open("/proc/%d/task/%d/stat" % (pid, tid)) as f:
        text = f.read()
    comm = text[text.index("(") + 1:text.rindex(")")]
    fields = text[text.rindex(")") + 2:].split()
    return comm, int(fields[16])  # field 19 of proc(5), counted from state


class CheckedOffTheLoop(LinkCase):
    """The credentials' Ed25519 checks run on a thread of their own whose
    nice value is 10 above the loop's (capped at 19): during a flood of
    connecting sidecars they take the CPU only after the clients' work."""

    NICE = 10  # LINKVERIFY_NICE in gateway/linkverify.h

    def test_checks_on_a_nicer_thread(self):
        st = self.stack
        pid = st.gateway.pid
        threads = {tid: task_stat(pid, tid)
                   for tid in map(int, os.listdir("/proc/%d/task" % pid))}
        checkers = [stat for stat in threads.values() if stat[0] == "ptg-linkverify"]
        self.assertEqual(len(checkers), 1, "one checking thread: %r" % threads)
        loop_nice = threads[pid][1]
        self.assertEqual(checkers[0][1], min(19, loop_nice + self.NICE),
                         "the checks run below the loop's priority")
        # and they are the ones that admit a link
        regs = st.metrics()["ptygate_link_registrations_total"]
        s = st.link_fd()
        try:
            s.sendall(harness.link_credential(st.mint_credential(instance="checked-1")))
            self.wait_until(lambda: st.metrics()["ptygate_link_registrations_total"]
                            == regs + 1, "checked-1 registered")
        finally:
            s.close()


class LinkKeyRotation(LinkCase):
    """A key replaced on disk and a SIGHUP: the checking thread uses the new
    key (same kid, new material), and the old key's credentials are refused."""

    def test_sighup_replaces_the_checks_key(self):
        st = self.stack
        new_key, new_pub = (os.path.join(st.dir, n) for n in ("link2.key", "link2.pub"))
        subprocess.run([st.cli, "token", "keygen", "--out-private", new_key,
                        "--out-public", new_pub], check=True, capture_output=True)
        old = harness.link_credential(st.mint_credential(instance="rot-old"))
        new = harness.link_credential(st.mint_credential(instance="rot-new", key=new_key))
        # a check made with the old key first, so the thread holds its copy
        s = st.link_fd()
        s.sendall(old)
        self.wait_until(lambda: "rot-old" in st.readyz(), "rot-old registered")
        s.close()
        shutil.copy(new_pub, st.link_pub)
        reloads = len(self.gateway_log_lines("SIGHUP: 1 link keys"))
        os.kill(st.gateway.pid, signal.SIGHUP)
        self.wait_until(lambda: len(self.gateway_log_lines("SIGHUP: 1 link keys")) > reloads,
                        "the link keys reloaded")
        s = st.link_fd()
        try:
            s.sendall(new)
            self.wait_until(lambda: "rot-new" in st.readyz(), "rot-new registered")
        finally:
            s.close()
        before = st.refusals("bad_signature")
        s = st.link_fd()
        try:
            s.sendall(harness.link_credential(st.mint_credential(instance="rot-old2")))
            self.assert_refused(s, "bad_signature", before)
        finally:
            s.close()


class MaxInstances(LinkCase):
    # inst-dial (the real sidecar) is one; one more fits.
    GATEWAY_ARGS = ("--max-instances", "2", "--link-grace", "600")

    def test_past_max_instances_refused(self):
        st = self.stack
        self.wait_until(lambda: st.readyz().get("inst-dial") == "up", "inst-dial up")
        first = st.link_fd()
        first.sendall(harness.link_credential(st.mint_credential(instance="inst-two")))
        try:
            self.wait_until(lambda: "inst-two" in st.readyz(), "inst-two registered")
            m = st.metrics()
            self.assertEqual(m['ptygate_instances{kind="registered"}'], 2)
            before = st.refusals("max_instances")
            s = st.link_fd()
            try:
                s.sendall(harness.link_credential(st.mint_credential(instance="inst-three")))
                self.assert_refused(s, "max_instances", before)
            finally:
                s.close()
            self.assertNotIn("inst-three", st.readyz())
            self.assertEqual(st.metrics()['ptygate_instances{kind="registered"}'], 2)
            # A known instance's new link is no new instance: still taken.
            regs = st.metrics()["ptygate_link_registrations_total"]
            again = st.link_fd()
            again.sendall(harness.link_credential(st.mint_credential(instance="inst-two")))
            try:
                self.wait_until(lambda: st.metrics()["ptygate_link_registrations_total"]
                                == regs + 1, "inst-two's new link registered")
            finally:
                again.close()
        finally:
            first.close()


class MaxPendingLinks(LinkCase):
    # The two silent links stay pending for the whole test.
    GATEWAY_ARGS = ("--max-pending-links", "2", "--link-auth-timeout", "120")

    def test_past_max_pending_links_refused(self):
        st = self.stack
        silent = []
        try:
            for i in range(2):
                silent.append(st.link_fd())
                self.wait_until(lambda: st.metrics()["ptygate_links_pending"] == i + 1,
                                "silent link %d pending" % i)
            before = st.refusals("pending_full")
            s = st.link_fd()
            try:
                self.assert_refused(s, "pending_full", before)
            finally:
                s.close()
            self.assertEqual(st.metrics()["ptygate_links_pending"], 2)
            # A place freed is a place taken: the next link waits again.
            silent.pop().close()
            self.wait_until(lambda: st.metrics()["ptygate_links_pending"] == 1,
                            "the closed link no longer pending")
            regs = st.metrics()["ptygate_link_registrations_total"]
            ok = st.link_fd()
            ok.sendall(harness.link_credential(st.mint_credential(instance="inst-late")))
            try:
                self.wait_until(lambda: st.metrics()["ptygate_link_registrations_total"]
                                == regs + 1, "a link taken once a place was free")
            finally:
                ok.close()
        finally:
            for s in silent:
                s.close()


class RenewGrace(LinkCase):
    GATEWAY_ARGS = ("--link-renew-grace", "1")

    def test_expired_unrenewed_link_closed(self):
        """A link whose credential (3 s) expires is closed by the watchdog
        one grace second later, logged and counted as lapsed."""
        st = self.stack
        before = st.refusals("lapsed")
        s = st.link_fd()
        try:
            s.sendall(harness.link_credential(st.mint_credential(instance="inst-short",
                                                                 ttl="3s")))
            self.wait_until(lambda: "inst-short" in st.readyz(),
                            "inst-short registered")
            s.settimeout(60)
            while s.recv(65536):  # the gateway's Hello, then its close
                pass
            self.wait_until(lambda: st.refusals("lapsed") == before + 1,
                            'ptygate_link_refusals_total{reason="lapsed"} counted')
            lines = self.gateway_log_lines("closing the link: its credential expired")
            self.assertTrue(lines and "inst-short" in lines[-1] and "(lapsed)" in lines[-1],
                            "the watchdog's log line names the instance: %r" % lines[-1:])
            self.assertEqual(st.readyz().get("inst-dial"), "up",
                             "the real link, renewed by nobody but valid, is left alone")
        finally:
            s.close()


if __name__ == "__main__":
    harness.main()
