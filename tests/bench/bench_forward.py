#!/usr/bin/env python3
"""What forwarding costs an attach: keystroke-to-echo p50/p99 and output
throughput through a gateway that relays to the instance's owner, against
the owner directly. Two gateways on a real three-member etcd cluster
(tests/e2e/etcd_cluster.py), each with its own sidecar; the benchmarked
instance is the owner's. Each round measures both doors, in alternating
order (paired); the report is the median of the rounds, the range, and
the ratio forwarded/direct.

    PTG_SIDECAR=build/ptygate-sidecar PTG_GATEWAY=build/ptygate-gateway \\
      /usr/bin/python3 tests/bench/bench_forward.py --rounds 5

bench_client is looked up beside the gateway (BUILD/tests/bench)."""
import argparse
import os
import secrets
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "e2e"))
import harness  # noqa: E402
from etcd_cluster import EtcdCluster  # noqa: E402

ENV = {"PATH": "/usr/bin:/bin", "TERM": "xterm-256color", "LC_ALL": "C"}
MARK = "printf '\\n%s\\n' PTG-BENCH-END"
LOAD = ["--max-conns-per-ip", "100000", "--max-ops-per-sec", "100000", "--log-level", "warn"]


def note(text):
    sys.stderr.write("[bench_forward %s] %s\n" % (time.strftime("%H:%M:%S"), text))
    sys.stderr.flush()


def client_binary():
    gw = harness.find_binary("PTG_GATEWAY", "ptygate-gateway")
    path = os.path.join(os.path.dirname(gw), "tests", "bench", "bench_client")
    if not os.access(path, os.X_OK):
        raise SystemExit("no bench_client at %s (build the tests)" % path)
    return path


class Bench:
    def __init__(self, args):
        self.args = args
        self.client = client_binary()
        self.samples = {}

    def start(self):
        tempfile.tempdir = tempfile.mkdtemp(prefix="ptgbench-fwd-")
        self.cluster = EtcdCluster()
        self.cluster.start()
        secret = os.path.join(tempfile.tempdir, "fleet.secret")
        with open(secret, "w") as f:
            f.write(secrets.token_hex(32))
        self.stacks = []
        for gid, inst in (("gw-owner", "bench"), ("gw-door", "other")):
            st = harness.Stack(instance=inst, gateway_args=[
                "--registry", "etcd:" + self.cluster.endpoints(), "--registry-prefix",
                "/bench-fwd/", "--gateway-id", gid, "--fleet-secret-file", secret, *LOAD],
                sidecar_args=["--log-level", "warn"])
            self.stacks.append(st.start())
        self.owner, self.door = self.stacks
        deadline = time.monotonic() + 60
        while self.door.http("GET", "/readyz").json()["registry"].get("routes", 0) < 2:
            if time.monotonic() > deadline:
                raise SystemExit("the routes did not reach the forwarding gateway")
            time.sleep(0.1)
        self.token = self.owner.token(sub="bench", scope="pty:control sessions", ttl=6 * 3600)

    def stop(self):
        for st in getattr(self, "stacks", []):
            st.stop()
            st.cleanup()
        if getattr(self, "cluster", None):
            self.cluster.stop()
            self.cluster.cleanup()

    def run_client(self, port, *argv):
        cmd = [self.client, "--gateway", "127.0.0.1:%d" % port, "--instance", "bench",
               "--token", self.token] + [str(a) for a in argv]
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=1800)
        out = {}
        for line in proc.stdout.splitlines():
            parts = line.split()
            if len(parts) == 3 and parts[0] == "RESULT":
                out[parts[1]] = float(parts[2])
        if proc.returncode != 0:
            note("bench_client %s exited %d: %s" % (argv[0], proc.returncode,
                                                    proc.stderr.strip()[-400:]))
        return out

    def session(self, script):
        return self.owner.create_session(command=["/bin/sh", "-c", script], env=ENV)

    def measure(self, door, port):
        sid = self.session("stty -echo -icanon min 1; dd bs=1 count=1 >/dev/null 2>&1; "
                           "printf PTG-READY; exec cat")
        res = self.run_client(port, "echo", sid, self.args.echo_samples)
        self.owner.delete_session(sid)
        path = os.path.join(tempfile.tempdir, "longline.out")
        if not os.path.exists(path):
            subprocess.run(["/bin/sh", "-c", "head -c %dM /dev/zero | tr '\\0' a > %s"
                            % (self.args.mib, path)], check=True)
        sid = self.session("stty -echo; dd bs=1 count=1 >/dev/null 2>&1; cat %s; %s"
                           % (path, MARK))
        res.update(self.run_client(port, "throughput", sid))
        self.owner.delete_session(sid)
        for k in ("echo.us.p50", "echo.us.p99", "throughput.mb_s"):
            if k in res:
                self.samples.setdefault((door, k), []).append(res[k])

    def run(self):
        doors = [("direct", self.owner.port), ("forwarded", self.door.port)]
        for i in range(self.args.rounds):
            for door, port in (doors if i % 2 == 0 else doors[::-1]):
                self.measure(door, port)
            note("round %d done" % (i + 1))

    def report(self):
        print("| measure | direct (median, range) | forwarded (median, range) | ratio |")
        print("|---|---|---|---|")
        for k, unit in (("echo.us.p50", "us"), ("echo.us.p99", "us"),
                        ("throughput.mb_s", "MB/s")):
            d, f = self.samples.get(("direct", k), []), self.samples.get(("forwarded", k), [])
            if not d or not f:
                continue
            md, mf = statistics.median(d), statistics.median(f)
            print("| %s (%s) | %.0f (%.0f-%.0f) | %.0f (%.0f-%.0f) | %.2f |" % (
                k, unit, md, min(d), max(d), mf, min(f), max(f), mf / md if md else 0))
        print("\n%d rounds, %d echo samples each, %d MiB of output; door metrics: %s" % (
            self.args.rounds, self.args.echo_samples, self.args.mib,
            {k: v for k, v in self.door.metrics().items()
             if k.startswith(("ptygate_relay", "ptygate_forward"))}))


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--echo-samples", type=int, default=400)
    p.add_argument("--mib", type=int, default=32)
    args = p.parse_args()
    b = Bench(args)
    try:
        b.start()
        b.run()
        b.report()
    finally:
        b.stop()


if __name__ == "__main__":
    main()
