"""A SIGTERM that comes as soon as a daemon listens (a service manager
stopping what it just started, a test that waited for the port) is an
orderly stop: exit status 0, not the default action's kill. Each daemon
takes its signals before it opens a listener.

strace holds the daemon in its first listen() for a few seconds (a delay
injected on the call's entry), so the signal lands inside the window
deterministically, on any machine: the code before the fix, which took
its signals after listening, died of it in every run."""
import os
import platform
import signal
import shutil
import subprocess
import time
import unittest

import harness

HOLD_US = 2000000  # how long strace keeps the daemon inside listen()
TIMEOUT = 30
LISTEN_NR = {"x86_64": 50, "aarch64": 201}  # __NR_listen


def child_running(pid, binary):
    """The child of pid that runs binary (strace's tracee), or 0. strace
    forks short-lived children of its own first, to test what ptrace
    can do: only the one running the daemon's binary counts."""
    for kid in harness.child_pids(pid):
        try:
            if os.readlink("/proc/%d/exe" % kid) == os.path.realpath(binary):
                return kid
        except OSError:
            pass
    return 0


def in_syscall(pid, nr):
    """True while a thread of pid is stopped in system call nr
    (/proc/PID/task/TID/syscall)."""
    try:
        tids = os.listdir("/proc/%d/task" % pid)
    except OSError:
        return False
    for tid in tids:
        try:
            with open("/proc/%d/task/%s/syscall" % (pid, tid)) as f:
                if f.read().split()[0] == str(nr):
                    return True
        except (OSError, IndexError):
            pass
    return False


def status(pid):
    """What /proc says of pid, for a failure's message."""
    try:
        with open("/proc/%d/status" % pid) as f:
            return " ".join(line.strip() for line in f if line.startswith(("State", "Threads")))
    except OSError:
        return "gone"


def strace_works():
    """strace is installed and may trace here (ptrace allowed)."""
    if not shutil.which("strace"):
        return False
    return subprocess.run(["strace", "-qq", "-o", "/dev/null", "true"],
                          capture_output=True, timeout=TIMEOUT).returncode == 0


@unittest.skipUnless(strace_works(), "strace is not installed or may not trace here "
                     "(scripts/install-deps.sh installs it)")
@unittest.skipUnless(platform.machine() in LISTEN_NR,
                     "listen()'s system call number is known for x86_64 and aarch64 only")
class StopAtStart(unittest.TestCase):

    def setUp(self):
        self.stack = harness.Stack()
        self.addCleanup(self.stack.cleanup)

    def stop_while_listening(self, argv):
        """Runs argv under strace, held in its first listen(); sends the
        daemon SIGTERM there; returns its exit status and output."""
        nr = LISTEN_NR[platform.machine()]
        log = os.path.join(self.stack.dir, "held.log")
        # LeakSanitizer stops the world with ptrace, which strace holds.
        env = dict(os.environ, ASAN_OPTIONS="detect_leaks=0")
        with open(log, "wb") as out:
            tracer = subprocess.Popen(
                ["strace", "-qq", "-o", "/dev/null", "-e", "trace=listen",
                 "-e", "inject=listen:delay_enter=%d:when=1" % HOLD_US] + argv,
                stdout=out, stderr=subprocess.STDOUT, env=env)
        try:
            deadline = time.monotonic() + TIMEOUT
            daemon = 0
            while time.monotonic() < deadline and tracer.poll() is None:
                daemon = child_running(tracer.pid, argv[0])
                if daemon and in_syscall(daemon, nr):
                    break
                time.sleep(0.01)
            if not (daemon and in_syscall(daemon, nr)):
                with open(log, errors="replace") as f:
                    self.fail("the daemon (pid %d: %s; strace %s) was not seen in "
                              "listen() in %d s: %s" % (daemon, status(daemon),
                                                         tracer.poll(), TIMEOUT, f.read()))
            os.kill(daemon, signal.SIGTERM)
            rc = tracer.wait(timeout=TIMEOUT)
        finally:
            if tracer.poll() is None:
                # strace killed leaves its tracee running: the daemon
                # goes first, by its pid.
                left = child_running(tracer.pid, argv[0])
                if left:
                    os.kill(left, signal.SIGKILL)
                tracer.kill()
                tracer.wait()
        with open(log, errors="replace") as f:
            return rc, f.read()

    def test_sidecar(self):
        rc, out = self.stop_while_listening(self.stack.sidecar.argv)
        self.assertEqual(rc, 0, out)
        self.assertIn("shutting down", out)

    def test_gateway(self):
        rc, out = self.stop_while_listening(self.stack.gateway.argv)
        self.assertEqual(rc, 0, out)


if __name__ == "__main__":
    unittest.main()
