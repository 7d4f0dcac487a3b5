"""tests/bench/hops.py (the echo hop by hop) follows keystrokes through
the real daemons, and through nginx in front of the one-hop reference,
with bench_hops preloaded into every process. A tool like that rots
quietly: a daemon that moves to another system call, or a step the walk
no longer finds, leaves it printing dashes. Here every segment of both
paths must have figures, and nearly every keystroke must be followed."""
import os
import re
import subprocess
import sys
import unittest

import harness

HERE = os.path.dirname(os.path.abspath(__file__))
HOPS = os.path.join(HERE, "..", "bench", "hops.py")
SAMPLES = 300
TIMEOUT = 300
# The rows hops.py prints that every followed keystroke passes through.
SEGMENTS = ("client -> front", "front: its work on the keystroke", "front -> back",
            "back: its work on the keystroke", "PTY and cat", "the back's write to cat's read",
            "cat's read to its write", "cat's write to the back's read",
            "back: its work on the echo", "back -> front", "front: its work on the echo",
            "front -> client", "total")


def row(out, name):
    """The two figure cells of the table row that starts with name."""
    for line in out.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) == 3 and cells[0].startswith(name):
            return cells[1], cells[2]
    return None


class HopsTool(unittest.TestCase):

    def test_both_paths_followed_segment_by_segment(self):
        if not harness.nginx_binary():
            self.skipTest("nginx is not installed (scripts/install-deps.sh installs it)")
        bench = os.environ.get("PTG_BENCH_BIN", "")
        if not os.path.exists(os.path.join(bench, "libbench_hops.so")):
            self.skipTest("no libbench_hops.so in PTG_BENCH_BIN (%r)" % bench)
        env = dict(os.environ)
        # In the ASan build the daemons load the preloaded library ahead
        # of the sanitizer's runtime; that order is allowed here.
        env["ASAN_OPTIONS"] = "detect_leaks=1:abort_on_error=1:verify_asan_link_order=0"
        r = subprocess.run([sys.executable, HOPS, "--samples", str(SAMPLES)], env=env,
                           capture_output=True, text=True, timeout=TIMEOUT)
        self.assertEqual(r.returncode, 0, r.stdout[-1500:] + r.stderr[-1500:])
        harness.note(r.stdout.strip().splitlines()[0] if r.stdout.strip() else "")
        followed = row(r.stdout, "keystrokes followed")
        self.assertIsNotNone(followed, r.stdout)
        for n in followed:
            self.assertGreaterEqual(int(n), SAMPLES * 9 // 10, r.stdout)
        figures = re.compile(r"^\d+\.\d / \d+\.\d")
        for name in SEGMENTS:
            cells = row(r.stdout, name)
            self.assertIsNotNone(cells, "no row %r in\n%s" % (name, r.stdout))
            for cell in cells:
                self.assertRegex(cell, figures, "row %r in\n%s" % (name, r.stdout))


if __name__ == "__main__":
    harness.main()
