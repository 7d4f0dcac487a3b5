#!/usr/bin/env python3
"""bench_durable: the cost of durable history, in one invocation.

1. Throughput: bench_sidecar (PTY to link, hex-dump lines) against a
   sidecar without --state-dir and one per --fsync policy, the runs
   alternating so each policy run is paired with the no-state run before
   it: MB/s and frames/s to the link, MB/s written to disk, and the
   paired ratio to no state dir (median and range).
2. Replay from disk (a 1000-frame and a 100 MiB history) and restart time
   (100 sessions on disk; 100 MiB of history), through the gateway with a
   real WebSocket client: tests/e2e/test_durable.py's Measure cases, run
   --repeat times.

    tests/bench/bench_durable.py [--build DIR] [--mib M] [--pairs N]
                                 [--repeat N] [--only throughput,replay]
                                 [--before OTHER_BUILD_DIR]

--before compares the default policy of two builds, interleaved.

Never fails on the numbers; not part of ctest. Builds nothing: build
first (cmake --build DIR --target ptygate-sidecar ptygate-gateway ptygate
bench_sidecar).
"""
import argparse
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
POLICIES = ("interval:100ms", "never", "every-frame")
RUN = re.compile(r"run \d+: plain ([\d.]+) MB/s, sidecar ([\d.]+) MB/s, ratio [\d.]+ "
                 r"\((\d+) bytes in (\d+) Output frames")


def wrapper(tmp, sidecar, policy):
    """A script that runs the sidecar with the state flags added (bench_sidecar
    starts the sidecar itself, with its own arguments)."""
    path = os.path.join(tmp, "sidecar-%s" % (policy or "none").replace(":", "-"))
    extra = ""
    if policy:
        state = os.path.join(tmp, "state-%s" % policy.replace(":", "-"))
        extra = ('--state-dir %s --state-key-file %s/bench.key --fsync %s '
                 '--replay-bytes 1073741824' % (state, tmp, policy))
    with open(path, "w") as f:
        f.write("#!/bin/sh\nrm -rf %s/state-*/* 2>/dev/null\nexec %s \"$@\" %s\n"
                % (tmp, sidecar, extra))
    os.chmod(path, 0o755)
    return path


def disk_bytes(tmp):
    total = 0
    for root, _, files in os.walk(tmp):
        if "/state-" in root + "/":
            total += sum(os.path.getsize(os.path.join(root, f)) for f in files
                         if f.endswith(".seg"))
    return total


def one_run(bench, side, mib, tmp):
    """One bench_sidecar run (one timed pass): (MB/s, frames/s, bytes)."""
    out = subprocess.run([bench, side, str(mib), "1"], capture_output=True, text=True,
                         timeout=600).stdout
    m = RUN.search(out)
    if not m:
        sys.exit("bench_sidecar gave no result:\n" + out)
    mbs, got, frames = float(m.group(2)), int(m.group(3)), int(m.group(4))
    secs = got / mbs / 1e6
    return mbs, frames / secs, disk_bytes(tmp) / secs / 1e6


def spread(v, fmt="%.2f"):
    v = sorted(v)
    return (fmt + " (" + fmt + "-" + fmt + ")") % (statistics.median(v), v[0], v[-1])


def throughput(args, build):
    bench = os.path.join(build, "tests", "bench", "bench_sidecar")
    sidecar = os.path.join(build, "ptygate-sidecar")
    tmp = tempfile.mkdtemp(prefix="ptg-bench-durable-")
    try:
        plain = wrapper(tmp, sidecar, None)
        rows = {}
        for policy in POLICIES:
            side = wrapper(tmp, sidecar, policy)
            r = rows.setdefault(policy, {"ratio": [], "mbs": [], "fps": [], "disk": [],
                                         "base": []})
            for _ in range(args.pairs):
                base, _, _ = one_run(bench, plain, args.mib, tmp)
                mbs, fps, disk = one_run(bench, side, args.mib, tmp)
                r["base"].append(base)
                r["mbs"].append(mbs)
                r["fps"].append(fps)
                r["disk"].append(disk)
                r["ratio"].append(mbs / base)
                print("  %-15s %.1f MB/s (no state dir just before: %.1f MB/s), ratio %.2f"
                      % (policy, mbs, base, mbs / base), flush=True)
        print("\nthroughput, PTY to link, %d MiB of hex-dump lines, %d pairs per policy "
              "(median (range)):" % (args.mib, args.pairs))
        for policy in POLICIES:
            r = rows[policy]
            print("  --fsync %-15s %s MB/s, %s frames/s, %s MB/s to disk; no state dir "
                  "%s MB/s; ratio to no state dir %s" % (
                      policy, spread(r["mbs"], "%.1f"), spread(r["fps"], "%.0f"),
                      spread(r["disk"], "%.1f"),
                      spread(r["base"], "%.1f"), spread(r["ratio"])))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def compare(args, build):
    """--before DIR: the default policy of two builds, interleaved. Each
    round: no state dir, the other build, this build, no state dir; both
    ratios are to the mean of the round's two no-state runs, so drift in
    the machine's load hits both builds alike."""
    tmp = tempfile.mkdtemp(prefix="ptg-bench-durable-")
    policy = "interval:100ms"
    try:
        bench = os.path.join(build, "tests", "bench", "bench_sidecar")
        plain = wrapper(tmp, os.path.join(build, "ptygate-sidecar"), None)
        sides = {}
        for name, b in (("before", os.path.abspath(args.before)), ("after", build)):
            os.makedirs(os.path.join(tmp, name), exist_ok=True)
            sides[name] = wrapper(os.path.join(tmp, name), os.path.join(b, "ptygate-sidecar"),
                                  policy)
        ratios = {"before": [], "after": []}
        for i in range(args.pairs):
            base1, _, _ = one_run(bench, plain, args.mib, tmp)
            got = {name: one_run(bench, sides[name], args.mib, tmp)[0]
                   for name in ("before", "after")}
            base2, _, _ = one_run(bench, plain, args.mib, tmp)
            base = (base1 + base2) / 2
            for name in ratios:
                ratios[name].append(got[name] / base)
            print("  round %d: no state dir %.1f/%.1f MB/s, before %.1f MB/s (%.2f), "
                  "after %.1f MB/s (%.2f)" % (i + 1, base1, base2, got["before"],
                                               got["before"] / base, got["after"],
                                               got["after"] / base), flush=True)
        print("\n--fsync %s, ratio to no state dir, %d rounds (median (range)): before %s, "
              "after %s" % (policy, args.pairs, spread(ratios["before"]),
                            spread(ratios["after"])))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def replay_and_restart(args, build):
    env = dict(os.environ, PTG_MEASURE="1", PYTHONDONTWRITEBYTECODE="1",
               PTG_SIDECAR=os.path.join(build, "ptygate-sidecar"),
               PTG_GATEWAY=os.path.join(build, "ptygate-gateway"),
               PTG_CLI=os.path.join(build, "ptygate"))
    notes = {}
    for i in range(args.repeat):
        # The system Python, as CTest runs the e2e tests (python3-websockets).
        p = subprocess.run(["/usr/bin/python3", "-m", "unittest", "test_durable.Measure"],
                           cwd=os.path.join(REPO, "tests", "e2e"), env=env,
                           capture_output=True, text=True, timeout=1200)
        for line in p.stderr.splitlines():
            m = re.search(r"\[e2e\] (.*)", line)
            if m:
                print("  run %d: %s" % (i + 1, m.group(1)), flush=True)
                key = re.sub(r"[\d.]+ ?(ms|bytes|frames)", "", m.group(1))
                notes.setdefault(key, []).append(m.group(1))
        if p.returncode:
            print(p.stderr[-3000:])
    speeds = {}
    for key, lines in notes.items():
        for line in lines:
            d = re.search(r"replay from disk, ([^:]+):.*replayed (\d+) frames \((\d+) bytes\) "
                          r"from disk in (\d+) ms", line)
            r = re.search(r"(restart with .*): ready in (\d+) ms", line)
            c = re.search(r"replay from disk, ([^:]+): the client had it all in (\d+) ms", line)
            if c:
                speeds.setdefault("replay %s, until the client has it all" % c.group(1),
                                  []).append((int(c.group(2)), None))
            if d:
                ms = max(int(d.group(4)), 1)
                speeds.setdefault("replay %s from disk" % d.group(1),
                                  []).append((ms, int(d.group(3)) / ms / 1e3))
            if r:
                speeds.setdefault(r.group(1), []).append((int(r.group(2)), None))
    print("\nreplay and restart, %d runs (median (range)):" % args.repeat)
    for what, v in speeds.items():
        ms = [x[0] for x in v]
        mbs = [x[1] for x in v if x[1] is not None]
        print("  %s: %s ms%s" % (what, spread(ms, "%.0f"),
                                 ", %s MB/s" % spread(mbs, "%.0f") if mbs else ""))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--build", default=os.path.join(REPO, "build"))
    ap.add_argument("--mib", type=int, default=128)
    ap.add_argument("--pairs", type=int, default=3)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--only", default="throughput,replay")
    ap.add_argument("--before", help="another build to compare with (the default policy)")
    args = ap.parse_args()
    build = os.path.abspath(args.build)
    only = args.only.split(",")
    if args.before:
        compare(args, build)
        return
    if "throughput" in only:
        throughput(args, build)
    if "replay" in only:
        replay_and_restart(args, build)


if __name__ == "__main__":
    main()
