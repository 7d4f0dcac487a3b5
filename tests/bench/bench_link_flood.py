#!/usr/bin/python3
"""bench_link_flood: 1,000 fake sidecars dialling a gateway's --link-listen
at once, one process holding every link.

A real sidecar dialled in as inst-dial; a real client attached to one of
its sessions types a marker and waits for its echo, over and over. Each
run starts a fresh gateway and sidecar and is a pair: the echo alone,
then the echo while the flood connects (every fake presents a valid
credential of its own instance and answers nothing). Reported per run and
as the median and range over the runs: the time until all N are
registered (from the first connect to ptygate_link_registrations_total +
N), the gateway's RSS per registered instance (VmRSS once all are
registered less VmRSS before the flood, in that run's fresh gateway:
memory freed by an earlier flood and reused would read as 0), its CPU
time per registered instance (utime + stime over the same span, the whole
process and its loop's thread alone), the most registered in one loop
turn, and the echo's p50, p99 (nearest rank: the second worst of 100) and
worst with and without the flood.

The fake sidecars' process runs at nice 19: on a 2-core machine it would
otherwise take a core's share from the gateway and the sidecar, and the
echo's delay would measure the flood's own Python, not the gateway.

With PTG_BENCH_PIN=1, the flood's process is pinned to CPU 0 and the
gateway (every thread), the sidecar (and the shell it starts) and this
process (the echo's client) to CPU 1: on a loaded 2-core machine that
keeps the flood's Python off the core the echo's path runs on, so what
the echo still loses is the gateway's own cost of the flood.

With a BEFORE gateway binary, each round runs it right after
$PTG_GATEWAY (the same sidecar and CLI), so that the two builds meet the
same load on a shared machine, and both are reported.

Usage: PTG_SIDECAR=... PTG_GATEWAY=... PTG_CLI=... tests/bench/bench_link_flood.py
       [N] [ROUNDS] [BEFORE_GATEWAY]
"""
import asyncio
import json
import math
import multiprocessing
import os
import socket
import statistics
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "e2e"))
import harness  # noqa: E402
from cryptography.hazmat.primitives import serialization  # noqa: E402


def credentials(key_path, n):
    with open(key_path, "rb") as f:
        key = serialization.load_pem_private_key(f.read(), password=None)
    now, out = int(time.time()), []
    head = harness.b64url(json.dumps({"alg": "EdDSA", "typ": "JWT", "kid": "k1"}).encode())
    for i in range(n):
        claims = {"aud": "ptygate-link", "sub": "fake-%d" % i, "instance_id": "fake-%d" % i,
                  "iat": now, "exp": now + 3600}
        si = head + "." + harness.b64url(json.dumps(claims).encode())
        out.append(harness.link_credential(si + "." + harness.b64url(key.sign(si.encode()))))
    return out


PIN = os.environ.get("PTG_BENCH_PIN") == "1"
FLOOD_CPU, ECHO_CPU = {0}, {1}


def pin_process(pid, cpus):
    """Every thread of pid (a thread's affinity is its own)."""
    for tid in os.listdir("/proc/%d/task" % pid):
        os.sched_setaffinity(int(tid), cpus)


def flood(path, openings, ready, go, done):
    """Child process: connects every link at once, holds them until done."""
    os.nice(19)
    if PIN:
        os.sched_setaffinity(0, FLOOD_CPU)
    ready.set()
    go.wait()
    socks = []
    for o in openings:
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.connect(path)
        s.sendall(o)
        socks.append(s)
    done.wait()
    for s in socks:
        s.close()


async def echoes(client, count, tag):
    times = []
    for i in range(count):
        marker = "%s%d" % (tag, i)
        since = len(client.output)
        t0 = time.monotonic()
        await client.type("echo %s-$((1))\n" % marker)
        await client.wait_output("%s-1" % marker, since=since)
        times.append((time.monotonic() - t0) * 1000)
    return times


def pct(v, p):
    """The nearest-rank percentile: p99 of 100 is the second worst."""
    v = sorted(v)
    return v[max(0, min(len(v) - 1, math.ceil(len(v) * p) - 1))]


def wait_registered(st, want, timeout=120):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if st.metrics()["ptygate_link_registrations_total"] >= want:
            return time.monotonic()
        time.sleep(0.02)
    raise AssertionError("not all registered:\n" + st.gateway.log_tail())


def cpu_s(path):
    """utime + stime of a /proc stat file (a process or one of its threads)."""
    with open(path) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def spread(v):
    return "%.2f (%.2f-%.2f)" % (statistics.median(v), min(v), max(v))


async def one_run(n, r, res, gateway_bin):
    """One fresh gateway and sidecar: the echo alone, then during a flood."""
    st = harness.DialStack(gateway_args=["--max-pending-links", str(n + 64), "--max-instances",
                                         str(n + 64), "--link-grace", "0",
                                         "--log-level", "warn"])
    st.gateway_bin = gateway_bin
    st.start()
    try:
        if PIN:
            for pid in (st.gateway.pid, st.sidecar.pid, os.getpid()):
                pin_process(pid, ECHO_CPU)
        openings = credentials(st.link_key, n)
        sid = st.create_session()
        c = await harness.Client.connect(st, sid, st.token(session_id=sid, scope="pty:control"))
        await c.expect_hello(sid)
        await c.join_fresh("controller")
        await echoes(c, 20, "warm")
        alone = await echoes(c, 100, "a%d_" % r)
        rss0 = st.gateway.rss_kib()
        gw = st.gateway.pid
        loop_stat, all_stat = "/proc/%d/task/%d/stat" % (gw, gw), "/proc/%d/stat" % gw
        cpu0 = cpu_s(loop_stat), cpu_s(all_stat)
        base = st.metrics()["ptygate_link_registrations_total"]
        # Spawned, not forked: a forked child shares this process's pages,
        # and the copies made as both write to them (some tens of ms) fell
        # on the first echo of the flood.
        ctx = multiprocessing.get_context("spawn")
        ready, go, done = ctx.Event(), ctx.Event(), ctx.Event()
        p = ctx.Process(target=flood, args=(st.link_socks[0], openings, ready, go, done))
        p.start()
        if not await asyncio.get_running_loop().run_in_executor(None, ready.wait, 120):
            raise AssertionError("the flood's process did not start")
        t0 = time.monotonic()
        go.set()
        during = await echoes(c, 100, "f%d_" % r)
        t1 = await asyncio.get_running_loop().run_in_executor(None, wait_registered, st, base + n)
        res["register_s"].append(t1 - t0)
        res["rss_kib_per"].append((st.gateway.rss_kib() - rss0) / n)
        res["loop_us_per"].append((cpu_s(loop_stat) - cpu0[0]) / n * 1e6)
        res["all_us_per"].append((cpu_s(all_stat) - cpu0[1]) / n * 1e6)
        res["turn_max"].append(st.metrics().get("ptygate_link_openings_turn_max", -1))
        done.set()
        p.join()
        for k, v in (("alone", alone), ("flood", during)):
            res[k + "_p50"].append(pct(v, 0.5))
            res[k + "_p99"].append(pct(v, 0.99))
            res[k + "_max"].append(max(v))
        print("%s run %d: registered %d in %.3f s, rss %.1f KiB each, CPU %.0f us each "
              "(loop %.0f), at most %d registered a turn, echo p99 alone %.2f ms, flood %.2f ms (max %.2f, %.2f)"
              % (res["name"], r, n, res["register_s"][-1], res["rss_kib_per"][-1],
                 res["all_us_per"][-1], res["loop_us_per"][-1], res["turn_max"][-1],
                 res["alone_p99"][-1], res["flood_p99"][-1], res["alone_max"][-1],
                 res["flood_max"][-1]), flush=True)
        await c.close()
    finally:
        st.stop()
        st.cleanup()


def results(name):
    return {"name": name, "alone_p50": [], "alone_p99": [], "flood_p50": [], "flood_p99": [],
            "alone_max": [], "flood_max": [], "loop_us_per": [], "all_us_per": [],
            "register_s": [], "rss_kib_per": [], "turn_max": []}


async def main():
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 1000
    runs = int(sys.argv[2]) if len(sys.argv) > 2 else 5
    builds = [(results("this"), harness.find_binary("PTG_GATEWAY", "ptygate-gateway"))]
    if len(sys.argv) > 3:
        builds.append((results("before"), os.path.abspath(sys.argv[3])))
    for r in range(runs):
        for res, gateway_bin in builds:
            await one_run(n, r, res, gateway_bin)
    for res, gateway_bin in builds:
        print("%s (%s): median (range) of %d runs, fakes at nice 19%s: %d links registered in "
              "%s s; gateway RSS %s KiB and CPU %s us (its loop's thread: %s) per registered "
              "instance; at most %s registered a turn; "
              "echo p50 %s ms alone, %s ms during the flood; p99 %s ms alone, %s ms during the "
              "flood; max %s ms alone, %s ms during the flood"
              % (res["name"], gateway_bin, runs,
                 ", flood pinned to CPU 0, gateway, sidecar and echo client to CPU 1"
                 if PIN else "", n, spread(res["register_s"]),
                 spread(res["rss_kib_per"]), spread(res["all_us_per"]),
                 spread(res["loop_us_per"]), spread(res["turn_max"]),
                 spread(res["alone_p50"]), spread(res["flood_p50"]), spread(res["alone_p99"]),
                 spread(res["flood_p99"]), spread(res["alone_max"]),
                 spread(res["flood_max"])), flush=True)


if __name__ == "__main__":
    asyncio.run(main())
