#!/usr/bin/python3
"""hops.py: where one keystroke's echo spends its time, hop by hop.

Runs run.py's echo twice, with bench_hops (a preloaded library that
timestamps every read, write and wait) in every process: through
ptygate (load client -> gateway -> sidecar -> PTY and back) and through
the two-hop reference (load client -> nginx -> the one-hop reference ->
PTY and back). Then it follows each keystroke from process to process
and prints, per segment, the median and 90th percentile of both paths
side by side: each daemon's own work, and each hand-over (the sender's
system call, the receiver's wake-up and read). A hand-over between two
processes is timed apart for the cases where the receiver woke on the
sender's CPU and on the other one, with how often each happened.

The library costs each call two clock reads, so the echo is slower
than in run.py; compare the two columns, not the totals with run.py's.
Pinned to one CPU (`taskset -c 0 tests/bench/hops.py`), no two
processes overlap and no wake-up crosses CPUs: the difference that is
left is the processes' own work.

Usage: tests/bench/hops.py [--samples N] [--link unix|tcp]
Environment: as run.py (PTG_SIDECAR, PTG_GATEWAY, PTG_BENCH_BIN).
"""
import argparse
import bisect
import collections
import glob
import os
import shutil
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import run  # noqa: E402

# The numbers bench_hops.c writes for each kind of call.
READS = {1, 3, 5, 7, 10}    # read, readv, recv, recvmsg, recvfrom
WRITES = {2, 4, 6, 8, 11}   # write, writev, send, sendmsg, sendto
# How far past a point the next event of a process is looked for.
LOOKAHEAD = 400

SEGMENTS = [
    ("client -> front: send, wake-up, read", "hop"),
    ("front: its work on the keystroke", "work"),
    ("front -> back: send, wake-up, read", "hop"),
    ("back: its work on the keystroke", "work"),
    ("PTY and cat: write to read", "pty"),
    ("  the back's write to cat's read", "sub"),
    ("  cat's read to its write", "sub"),
    ("  cat's write to the back's read", "sub"),
    ("back: its work on the echo", "work"),
    ("back -> front: send, wake-up, read", "hop"),
    ("front: its work on the echo", "work"),
    ("front -> client: send, wake-up, read", "hop"),
]


class Trace:
    """One process's records, ordered by when each call returned:
    (returned, entered, tid, call, fd, result, cpu)."""

    def __init__(self, path):
        with open(path) as f:
            self.exe = f.readline()[2:].strip()
            rows = (tuple(int(x) for x in line.split()[:7]) for line in f)
            self.ev = sorted((r[1], r[0]) + r[2:] for r in rows)

    def after(self, t, pred, by_start=False):
        """The first record that returned (or, by_start, was entered)
        after t and matches pred."""
        i = bisect.bisect_left(self.ev, (t,))
        for e in self.ev[i:i + LOOKAHEAD]:
            if (e[1] if by_start else e[0]) > t and pred(e):
                return e
        return None


def reads(fd):
    return lambda e: e[3] in READS and e[5] > 0 and e[4] == fd


def writes(fd):
    return lambda e: e[3] in WRITES and e[5] > 0 and e[4] == fd


def any_read(e):
    return e[3] in READS and e[5] > 0


def any_write(e):
    return e[3] in WRITES and e[5] > 0


def mode(values):
    values = [v for v in values if v is not None]
    return collections.Counter(values).most_common(1)[0][0] if values else None


def follow(client, front, back, program):
    """Each keystroke's path: the points between the segments (ns), and
    for each hand-over whether its two ends ran on one CPU."""
    sends = [e for e in client.ev if any_write(e)]
    cfd = mode(e[4] for e in sends)
    sample = sends[len(sends) // 4:len(sends) // 4 + 300]

    def fd_of(trace, t, pred, by_start=False):
        e = trace.after(t, pred, by_start) if t else None
        return e[4] if e else None
    front_client = mode(fd_of(front, s[0], any_read) for s in sample)
    front_back = mode(fd_of(front, s[0], any_write, True) for s in sample)
    firsts = [front.after(s[0], any_write, True) for s in sample]
    back_front = mode(fd_of(back, f and f[1], any_read) for f in firsts)
    back_pty = mode(fd_of(back, f and f[1], any_write, True) for f in firsts)
    # After the front's read of the keystroke, each step: the process, what
    # it does, and from when it is looked for. A write is looked for from
    # the end of the step before (by when it was entered); a read of what
    # another process wrote, from that write's entry; the read of the PTY,
    # from the end of the write to it.
    steps = [(front, writes(front_back), "write"), (back, reads(back_front), "other"),
             (back, writes(back_pty), "write"), (back, reads(back_pty), "own"),
             (back, writes(back_front), "write"), (front, reads(front_back), "other"),
             (front, writes(front_client), "write"), (client, reads(cfd), "other")]
    paths, done = [], 0
    for s in sends:
        if s[0] <= done:
            continue
        f_in = front.after(s[0], reads(front_client))
        if not f_in:
            continue
        # Where the keystroke's last piece was entered: the client's last
        # send entered before the front's read returned (a WebSocket
        # client may send a frame in pieces, and a send may return after
        # the reader has the bytes).
        i = bisect.bisect_left(sends, s)
        t0 = max(e[1] for e in sends[i:i + 8] if e[1] < f_in[0])
        ends = [f_in]
        for trace, pred, since in steps:
            prev = ends[-1]
            e = trace.after(prev[1] if since == "other" else prev[0], pred, since == "write")
            if e is None:
                break
            ends.append(e)
        if len(ends) != len(steps) + 1:
            continue
        done = ends[-1][0]
        # A segment ends where the next begins: a read where it returned,
        # a write where it was entered.
        points = [t0] + [e[1] if e[3] in WRITES else e[0] for e in ends]
        if points != sorted(points):
            continue
        same = {0: s[6] == ends[0][6], 2: ends[1][6] == ends[2][6],
                6: ends[5][6] == ends[6][6], 8: ends[7][6] == ends[8][6]}
        paths.append((points, same, inside_pty(program, ends[3], ends[4])))
    return paths


def inside_pty(program, write, read):
    """The program's read and write between the back's write to the PTY
    and its read of the echo: three points, or None."""
    if not program:
        return None
    r = program.after(write[1], any_read)
    w = r and program.after(r[0], any_write, True)
    if not w or not write[1] < r[0] <= w[1] < read[0]:
        return None
    return [write[1], r[0], w[1], read[0]]


def summarize(paths):
    """segment -> (p50, p90, keystrokes) in us; for a hand-over also split
    by where the receiver woke."""
    out = {}
    main = [(name, kind) for name, kind in SEGMENTS if kind != "sub"]
    for i, (name, kind) in enumerate(main):
        out[name] = stats([p[i + 1] - p[i] for p, _, _ in paths])
        if kind == "hop":
            for where, want in (("on the sender's CPU", True), ("on the other CPU", False)):
                out[name + " | " + where] = stats(
                    [p[i + 1] - p[i] for p, same, _ in paths if same[i] == want])
    subs = [name for name, kind in SEGMENTS if kind == "sub"]
    for j, name in enumerate(subs):
        out[name] = stats([q[j + 1] - q[j] for _, _, q in paths if q])
    out["total"] = stats([p[-1] - p[0] for p, _, _ in paths])
    return out


def stats(ns):
    us = [v / 1000 for v in ns]
    if not us:
        return None, None, 0
    return run.pctl(us, 50), run.pctl(us, 90), len(us)


def cell(v, n_all):
    p50, p90, n = v
    if p50 is None:
        return "-"
    share = "" if n == n_all else " (%d%%)" % round(100.0 * n / n_all)
    return "%.1f / %.1f%s" % (p50, p90, share)


def table(ours, ref, n_ours, n_ref):
    lines = ["| segment: p50 / p90 (us) (share of keystrokes) | ptygate: client, gateway, "
             "sidecar | reference: client, nginx, one-hop reference |", "|---|---|---|"]
    for name, kind in SEGMENTS + [("total", "")]:
        lines.append("| %s | %s | %s |" % (name, cell(ours[name], n_ours), cell(ref[name], n_ref)))
        if kind == "hop":
            for where in ("on the sender's CPU", "on the other CPU"):
                key = name + " | " + where
                lines.append("|   woke %s | %s | %s |" % (where, cell(ours[key], n_ours),
                                                          cell(ref[key], n_ref)))
    lines.append("| keystrokes followed | %d | %d |" % (n_ours, n_ref))
    return "\n".join(lines)


def traces(directory):
    by_pid = {}
    for path in glob.glob(os.path.join(directory, "hops.*")):
        by_pid[int(path.rsplit(".", 1)[1])] = Trace(path)
    return by_pid


def program_during(programs, client):
    """The session's program (cat) that ran while the client typed."""
    lo, hi = client.ev[0][0], client.ev[-1][0]
    busy = [(sum(1 for e in t.ev if lo <= e[0] <= hi), t) for t in programs]
    busy = [b for b in busy if b[0]]
    return max(busy, key=lambda b: b[0])[1] if busy else None


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--samples", type=int, default=5000)
    ap.add_argument("--link", choices=("unix", "tcp"), default="unix")
    ap.add_argument("--keep", action="store_true",
                    help="leave the processes' records (hops.PID) and print where")
    args = ap.parse_args()
    lib = os.path.join(run.BIN, "libbench_hops.so")
    if not os.path.exists(lib):
        sys.exit("hops.py: %s is missing (cmake --build build-release)" % lib)
    hops_dir = tempfile.mkdtemp(prefix="ptghops-")
    # Every process started from here on records: the daemons, nginx, the
    # reference, the load clients (and the sessions' programs).
    os.environ.update(LD_PRELOAD=lib, PTG_HOPS_DIR=hops_dir)
    run.ENV.update(LD_PRELOAD=lib, PTG_HOPS_DIR=hops_dir)
    if "ASAN_OPTIONS" in os.environ:  # the reference of a sanitized build
        run.ENV["ASAN_OPTIONS"] = os.environ["ASAN_OPTIONS"]
    suite = run.Suite(argparse.Namespace(link=args.link, durable=False, pair="", verbose=False))
    try:
        try:
            suite.start()
            gateway, sidecar = suite.stack.gateway.pid, suite.stack.sidecar.pid
            sid = suite.session(run.ECHO_SCRIPT)
            ours = suite.client_results(suite.client_start("echo", sid, args.samples),
                                        ("echo",))
            # Hung up now (the records' writing is quicker than the
            # sidecar's SIGKILL that follows), not at the sidecar's stop.
            suite.drop(sid)
            ref = (suite.onehop(run.ECHO_SCRIPT, "onehop-echo", args.samples, nginx=True)
                   if run.harness.nginx_binary() else None)
        finally:
            suite.stop()  # the daemons write their records as they exit
        by_pid = traces(hops_dir)
    finally:
        if args.keep:
            print("the records: %s" % hops_dir)
        else:
            shutil.rmtree(hops_dir, ignore_errors=True)
    clients = sorted((t for t in by_pid.values() if t.exe.endswith("/bench_client")),
                     key=lambda t: t.ev[0][0] if t.ev else 0)
    if not ours or not ref or len(clients) < 2:
        sys.exit("hops.py: the echo did not run through both paths (is nginx installed?)")
    nginx = max((t for t in by_pid.values() if t.exe.endswith("/nginx")), key=lambda t: len(t.ev))
    onehop = next(t for t in by_pid.values() if t.exe.endswith("/bench_onehop"))
    programs = [t for t in by_pid.values() if t.exe.endswith("/cat") and t.ev]
    ours_paths = follow(clients[0], by_pid[gateway], by_pid[sidecar],
                        program_during(programs, clients[0]))
    ref_paths = follow(clients[1], nginx, onehop, program_during(programs, clients[1]))
    print("\necho p50 without the library's timestamps is in run.py; with them: "
          "ptygate %.1f us, the reference %.1f us (%d keystrokes each, %d cores, %s link)\n"
          % (ours["echo.us.p50"], ref["onehop.echo.us.p50"], args.samples, os.cpu_count(),
             args.link))
    print(table(summarize(ours_paths), summarize(ref_paths), len(ours_paths), len(ref_paths)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
