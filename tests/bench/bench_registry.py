#!/usr/bin/env python3
"""The fleet registry's costs, measured on a real three-member etcd cluster
on loopback: N instances (default 1000) configured over three gateways,
and a fourth gateway that only watches.

Reports: the time from the gateways' start to every instance key in etcd
and to the watcher's cache holding them all; etcd requests per instance
(etcd's own grpc_server_handled_total, summed over the members, by
method); the watcher's memory per routed instance (its RSS after the
routes arrive less before, and what its cache accounts for).

  PTG_GATEWAY=build-release/ptygate-gateway python3 tests/bench/bench_registry.py [N]
"""
import os
import re
import secrets
import shutil
import sys
import tempfile
import time
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "e2e"))
from etcd_cluster import EtcdCluster  # noqa: E402
from harness import Daemon, find_binary, free_port  # noqa: E402


def metrics(port):
    """The gateway's /metrics as {name: value}; {} until it answers."""
    try:
        with urllib.request.urlopen("http://127.0.0.1:%d/metrics" % port, timeout=10) as r:
            text = r.read().decode()
    except OSError:
        return {}
    out = {}
    for line in text.splitlines():
        if line and not line.startswith("#"):
            k, _, v = line.rpartition(" ")
            out[k] = float(v)
    return out


def etcd_requests(cluster):
    """{method: requests handled} summed over the running members."""
    total = {}
    for url in cluster.alive_urls():
        with urllib.request.urlopen(url + "/metrics", timeout=10) as r:
            for line in r.read().decode().splitlines():
                m = re.match(r'grpc_server_handled_total\{.*grpc_method="(\w+)".*\} (\S+)', line)
                if m:
                    total[m.group(1)] = total.get(m.group(1), 0) + float(m.group(2))
    return total


def rss_kib(pid):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


def wait(pred, what, timeout=300):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if pred():
            return time.monotonic()
        time.sleep(0.02)
    raise SystemExit("bench_registry: %s not reached in %d s" % (what, timeout))


def gateway(gw_bin, d, gid, ids, cluster, prefix):
    port = free_port()
    path = os.path.join(d, gid + ".instances")
    with open(path, "w") as f:
        for i in ids:
            f.write("%s unix:%s/none-%s.sock\n" % (i, d, i))
    daemon = Daemon(gid, [gw_bin, "--listen", "127.0.0.1:%d" % port, "--instances-file", path,
                          "--hs256-secret-file", os.path.join(d, "secret"),
                          "--registry", "etcd:" + cluster.endpoints(),
                          "--registry-prefix", prefix, "--gateway-id", gid,
                          "--log-level", "warn"], d)
    return daemon, port


def main():
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 1000
    gw_bin = find_binary("PTG_GATEWAY", "ptygate-gateway")
    d = tempfile.mkdtemp(prefix="ptg-bench-registry-")
    with open(os.path.join(d, "secret"), "w") as f:
        f.write(secrets.token_hex(32))
    cluster = EtcdCluster().start()
    daemons = []
    prefix = "/bench/"
    try:
        watcher, wport = gateway(gw_bin, d, "watcher", ["w-0"], cluster, prefix)
        daemons.append(watcher)
        watcher.start()
        wait(lambda: metrics(wport).get("ptygate_registry_routes") == 1, "watcher in sync")
        time.sleep(1)
        rss0 = rss_kib(watcher.pid)
        before = etcd_requests(cluster)

        ids = ["inst-%05d" % i for i in range(n)]
        gws = [gateway(gw_bin, d, "gw-%d" % k, ids[k::3], cluster, prefix) for k in range(3)]
        t0 = time.monotonic()
        for daemon, _ in gws:
            daemons.append(daemon)
            daemon.start()
        t_keys = wait(lambda: len(cluster.get_prefix(prefix + "instances/")) == n + 1,
                      "every instance key")
        t_cache = wait(lambda: metrics(wport).get("ptygate_registry_routes") == n + 1,
                       "the watcher's cache")
        after = etcd_requests(cluster)
        time.sleep(1)
        rss1 = rss_kib(watcher.pid)
        m = metrics(wport)
        delta = {k: after.get(k, 0) - before.get(k, 0) for k in after}
        print("instances: %d over 3 gateways (+1 watcher's own)" % n)
        print("all keys in etcd: %.2f s after the gateways' start" % (t_keys - t0))
        print("watcher's cache holds them all: %.2f s" % (t_cache - t0))
        print("etcd requests in that time: %s" % ", ".join(
            "%s %d" % (k, v) for k, v in sorted(delta.items()) if v))
        print("etcd Txn per instance: %.2f" % (delta.get("Txn", 0) / n))
        print("watcher RSS: %d KiB -> %d KiB: %.0f bytes per routed instance"
              % (rss0, rss1, (rss1 - rss0) * 1024.0 / n))
        print("watcher's cache accounts %.0f bytes per route"
              % (m["ptygate_registry_cache_bytes"] / m["ptygate_registry_routes"]))
    finally:
        for daemon in daemons:
            daemon.stop()
        cluster.stop()
        cluster.cleanup()
        shutil.rmtree(d, ignore_errors=True)


if __name__ == "__main__":
    main()
