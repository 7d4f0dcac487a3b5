#!/usr/bin/python3
"""run.py: the benchmark suite, one invocation, one table.

Starts a real ptygate-sidecar (unix link, or loopback TCP with --link
tcp) and ptygate-gateway (loopback) with the e2e harness, runs every
benchmark RUNS times with its baseline paired in the same run (baseline
and ptygate back to back, the order alternating), and prints one
Markdown table: the median of the runs, the min-max range, the
baseline's median and the median of the per-run ratios. The load
client is bench_client (C, epoll, wslay, jansson, shared/b64.c); the
generators are bench_gen and coreutils. Echo's
two-hop anchor is the one-hop reference (bench_onehop) behind Debian's
nginx, run with a private config on loopback (skipped when nginx is not
installed).

Benchmarks are measurements, not tests: the exit status is 0 whatever the
numbers are (non-zero only when the suite itself could not run).

Usage: tests/bench/run.py [--runs N] [--mib M] [--only a,b,...] [--link tcp] [--quick]
Environment: PTG_SIDECAR, PTG_GATEWAY (default: build-release), PTG_BENCH_BIN
(the directory of bench_client and bench_gen). With PTG_BASE_SIDECAR and
PTG_BASE_GATEWAY (an older build, say) a second stack runs those, and the
attach and keyframe benchmarks run on both in every run, the order
alternating: the baseline column is then that build.
"""
import argparse
import asyncio
import json
import os
import pty
import re
import resource
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(HERE, "..", "e2e"))
os.environ.setdefault("PTG_SIDECAR", os.path.join(REPO, "build-release", "ptygate-sidecar"))
os.environ.setdefault("PTG_GATEWAY", os.path.join(REPO, "build-release", "ptygate-gateway"))
os.environ.setdefault("PTG_CLI", os.path.join(REPO, "build-release", "ptygate"))
import harness  # noqa: E402

BIN = os.environ.get("PTG_BENCH_BIN") or os.path.join(REPO, "build-release", "tests", "bench")
CLIENT = os.path.join(BIN, "bench_client")
ONEHOP = os.path.join(BIN, "bench_onehop")
GEN = os.path.join(BIN, "bench_gen")
MARK = "printf '\\n%s\\n' PTG-BENCH-END"
# The end marker inside a title sequence: in the output, not on the screen.
TITLE_MARK = "printf '\\033]2;%s\\007' PTG-BENCH-END"
ENV = {"PATH": "/usr/bin:/bin", "TERM": "xterm-256color", "LC_ALL": "C"}
# The echo's program: one byte starts it (the terminal set up by then),
# then cat echoes every keystroke.
ECHO_SCRIPT = ("stty -echo -icanon min 1; dd bs=1 count=1 >/dev/null 2>&1; "
               "printf PTG-READY; exec cat")
# Observers per load-client process in the fan-out benchmark.
FANOUT_PER_PROCESS = 250
# The fan-out size that also runs with permessage-deflate (when listed).
FANOUT_DEFLATE = 100
# The paced stream that size also watches, plain and with deflate: a busy
# program's steady output (bytes a second) that every observer can take,
# where a flood outruns the load client and each observer skips most
# frames.
FANOUT_PACED_RATE = 1000000
# The controller's keystrokes beside it: one every this many ms.
PACED_ECHO_GAP_MS = 10


def fanout_prefix(n, deflate=False, paced=False):
    """Where a fan-out's results go: fanout100., fanout0. (the controller
    alone), fanoutdeflate100. (every client offering permessage-deflate),
    fanoutpaced100. and fanoutpaceddeflate100. (the paced stream)."""
    return "fanout%s%s%d." % ("paced" if paced else "", "deflate" if deflate else "", n)


# The "sessions" benchmark: a fan-out of this many observers beside this
# many joined connections on other sessions.
SESSIONS_OBSERVERS, SESSIONS_IDLE, SESSIONS_ECHO_SAMPLES = 10, 2000, 5000
# Echo samples beside another session's flood (each waits behind it).
FLOOD_ECHO_SAMPLES = 3000
# Keystrokes typed into `ptygate attach` in a terminal, one every
# CLI_ECHO_GAP_S (a fast typist, not a flood).
CLI_ECHO_SAMPLES, CLI_ECHO_GAP_S = 300, 0.005
ALL = ["attach", "echo", "throughput", "fanout", "sessions", "memory", "joins", "replay", "keyframe",
       "deflate"]
# The deflate benchmark's outputs, each cut to this size: an ls -lR of the
# system, a build's log and a TUI's full-screen redraws (bench_gen).
DEFLATE_BYTES = 1 << 20
DEFLATE_WORKLOADS = (("lslr", "`ls -lR`"), ("buildlog", "a build log"),
                     ("tui", "a full-screen TUI redraw loop"))
# The benchmarks a PTG_BASE_* build is paired with.
PAIRED = ["attach", "keyframe"]
# The Keyframe screens, 200x60: name, what the table calls it, the command
# that draws it (GEN is bench_gen).
KF_SCREENS = [
    ("colour", "colour per cell (256-colour fg)", "{gen} colour 200 60"),
    ("fgbg", "fg+bg colour per cell", "{gen} fgbg 200 60"),
    ("hexdump", "hex dump text", "head -c 20000 /dev/urandom | od -An -tx1 -v"),
    ("tui", "TUI redraw", "{gen} tui 200000 200 60"),
    ("empty", "empty screen", "true"),
]


def pctl(values, p):
    """The p-th percentile (nearest rank) of values."""
    v = sorted(values)
    return v[max(0, (len(v) * p + 99) // 100 - 1)]


def first_screen(sock, stack, sid, token):
    """Over a connected socket (plain or TLS): the upgrade, binding_hello,
    an observer's join, until its Keyframe; fails on anything else."""
    result, sock, rest = harness.RawWs.handshake(stack.port, stack.attach_path(sid),
                                                 {"Authorization": "Bearer " + token},
                                                 sock=sock)
    if sock is None:
        raise RuntimeError("upgrade refused: %r" % (result,))
    ws = harness.RawWs(sock, rest, "attach")

    def until(pred):
        while True:
            _, opcode, payload = ws.read_frame(10)
            if opcode == 0x1 and pred(json.loads(payload)):
                return

    until(lambda f: f["op"] == "binding_hello")
    join = ws.envelope("pty.join_session", {"role": "observer", "client_label": "bench"},
                       extensions=[harness.EXTENSION_URI])
    ws.send_frame(0x1, json.dumps(join).encode())
    until(lambda f: f["op"] == "pty.session_frame" and f["payload"].get("kind") == "Keyframe")


def note(text):
    sys.stderr.write("[bench %s] %s\n" % (time.strftime("%H:%M:%S"), text))
    sys.stderr.flush()


class Nginx:
    """A real nginx as a WebSocket reverse proxy on loopback in front of
    127.0.0.1:upstream, the way a web terminal is deployed (harness's
    NginxProcess: Debian's binary, a private config and prefix in a
    temporary directory, one worker, daemon off)."""

    def __init__(self, upstream):
        self.dir = tempfile.mkdtemp(prefix="nginx-")
        self.port = harness.free_port()
        self.nginx = harness.NginxProcess(self.dir, self.port)
        self.nginx.write_config([
            "  server {",
            "    listen 127.0.0.1:%d;" % self.port,
            "    tcp_nodelay on;",
            "    location / {",
            "      proxy_pass http://127.0.0.1:%d;" % upstream,
            "      proxy_http_version 1.1;",
            "      proxy_set_header Upgrade $http_upgrade;",
            "      proxy_set_header Connection \"upgrade\";",
            "      proxy_set_header Host $host;",
            "      proxy_buffering off;",
            "      proxy_read_timeout 3600s;",
            "      proxy_send_timeout 3600s;",
            "    }",
            "  }"])

    def listening(self):
        socket.create_connection(("127.0.0.1", self.port), timeout=1).close()
        return True

    def start(self):
        try:
            self.nginx.start(self.listening)
        except AssertionError as e:
            raise RuntimeError(str(e))
        return self

    def worker_pid(self):
        """The worker's pid (the master's one child), 0 when unknown."""
        return (harness.child_pids(self.nginx.proc.pid) or [0])[0]

    def stop(self):
        self.nginx.stop()
        shutil.rmtree(self.dir, ignore_errors=True)


class Suite:
    def __init__(self, args):
        self.args = args
        self.samples = {}  # name -> [per-run values]
        self.stack = None
        self.stacks = []  # (record prefix, stack, token): ptygate, then the base build
        self.prefix = ""  # what record() puts before names: "base." on the base build
        self.tls = None  # the stack speaking TLS (tls_stack), once a CLI echo needs it
        self.cli_turn = 0

    # -- plumbing

    def record(self, name, value):
        self.samples.setdefault(self.prefix + name, []).append(value)

    def start(self):
        # A private parent directory: other test runs on a shared machine
        # sweep /tmp/ptg-e2e-* and must not take this suite's files.
        tempfile.tempdir = tempfile.mkdtemp(prefix="ptgbench-")
        soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
        resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))  # inherited by the daemons
        self.stacks.append(("",) + self.start_stack())
        if os.environ.get("PTG_BASE_SIDECAR") and os.environ.get("PTG_BASE_GATEWAY"):
            mine = os.environ["PTG_SIDECAR"], os.environ["PTG_GATEWAY"]
            os.environ["PTG_SIDECAR"] = os.environ["PTG_BASE_SIDECAR"]
            os.environ["PTG_GATEWAY"] = os.environ["PTG_BASE_GATEWAY"]
            try:
                self.stacks.append(("base.",) + self.start_stack())
            finally:
                os.environ["PTG_SIDECAR"], os.environ["PTG_GATEWAY"] = mine
        self.use(self.stacks[0])

    def use(self, entry):
        self.prefix, self.stack, self.token = entry

    def start_stack(self):
        durable = ["--state-dir", "{dir}/state", "--state-key-file", "{dir}/state.key"]
        stack = harness.Stack(
            sidecar_args=["--max-observers", "1100", "--max-sessions", "2000",
                          "--log-level", "warn"] + (durable if self.args.durable else []),
            gateway_args=["--max-conns", "20000", "--max-conns-per-instance", "20000",
                          "--max-conns-per-principal", "20000",
                          # every load connection comes from loopback, and
                          # the echo benchmark types faster than a person
                          "--max-conns-per-ip", "100000", "--max-ops-per-sec", "100000",
                          "--log-level", "warn"],
            instance="bench", link=self.args.link).start()
        return stack, stack.token(sub="bench", scope="pty:control sessions tasks", ttl=6 * 3600)

    def stop(self):
        for stack in [st for _, st, _ in self.stacks] + ([self.tls] if self.tls else []):
            for p in stack.stop():
                note("daemon problem: " + p)
            stack.cleanup()
        if self.stacks:
            shutil.rmtree(tempfile.tempdir, ignore_errors=True)

    def run(self, bench, i):
        """One run of bench; a paired one on every stack, the order
        alternating from run to run."""
        order = self.stacks if bench in self.args.pair.split(",") else self.stacks[:1]
        for entry in (order if i % 2 == 0 else order[::-1]):
            self.use(entry)
            try:
                getattr(self, "run_" + bench)(i)
            finally:
                self.use(self.stacks[0])

    def session(self, script, cols=120, rows=30):
        return self.stack.create_session(command=["/bin/sh", "-c", script], env=ENV,
                                         cols=cols, rows=rows)

    def drop(self, sid):
        try:
            self.stack.delete_session(sid)
        except OSError:
            pass

    def settle(self, sid, least, timeout=120):
        """Waits until the session's sequence is >= least and stops moving."""
        deadline, last, still = time.monotonic() + timeout, -1, 0
        while time.monotonic() < deadline:
            seq = self.stack.get_session(sid)["current_sequence"]
            still = still + 1 if seq == last else 0
            if seq >= least and still >= 3:
                return seq
            last = seq
            time.sleep(0.2)
        raise RuntimeError("session %s did not settle (sequence %s)" % (sid, last))

    def client_start(self, *argv, nice=0, env=None):
        cmd = (["nice", "-n", str(nice)] if nice else []) + [CLIENT, "--gateway", "127.0.0.1:%d" % self.stack.port, "--instance", "bench",
               "--token", self.token, "--gateway-pid", str(self.stack.gateway.pid),
               "--sidecar-pid", str(self.stack.sidecar.pid)] + [str(a) for a in argv]
        full = dict(os.environ, **env) if env else None
        return subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                env=full)

    def client_results(self, proc, argv, timeout=1800, label=None):
        try:
            stdout, stderr = proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            stdout, stderr = proc.communicate()
        if stderr.strip():
            note("bench_client %s: %s" % (argv[0], stderr.strip()[-600:]))
        out = {}
        for line in stdout.splitlines():
            parts = line.split()
            if len(parts) == 3 and parts[0] == "RESULT":
                out[parts[1]] = float(parts[2])
        if proc.returncode != 0:
            note("bench_client %s exited %d" % (argv[0], proc.returncode))
        if self.args.verbose:
            # The base build's results say so (and --from-log leaves them out).
            note("%s%s: %s" % ("(base build) " if self.prefix else "", label or argv[0],
                               " ".join("%s=%g" % kv for kv in sorted(out.items()))))
        return out

    def client(self, *argv, timeout=1800):
        return self.client_results(self.client_start(*argv), argv, timeout)

    def onehop(self, script, *argv, nginx=False):
        """Runs the load client against the one-hop reference (bench_onehop:
        a ttyd-like web terminal in one process) serving `sh -c script`;
        with nginx, through a real nginx proxying WebSocket to it (two
        hops, as a deployed web terminal has)."""
        server = subprocess.Popen([ONEHOP, "/bin/sh", "-c", script], env=ENV,
                                  stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        proxy = None
        try:
            port = int(server.stdout.readline().split()[1])
            if nginx:
                proxy = Nginx(port).start()
                port = proxy.port
            # Each process's CPU: the reference as the "gateway", nginx's
            # worker (its master's one child) as the "sidecar".
            cmd = [CLIENT, "--gateway", "127.0.0.1:%d" % port,
                   "--gateway-pid", str(server.pid)]
            if nginx:
                cmd += ["--sidecar-pid", str(proxy.worker_pid())]
            cmd += [str(a) for a in argv]
            proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            res = self.client_results(proc, argv, label=("nginx-" + argv[0]) if nginx else None)
            if nginx and not res:
                note("through nginx: " + proxy.log())
            return res
        finally:
            if proxy:
                proxy.stop()
            server.stdin.close()  # its end of input ends it
            try:
                server.wait(timeout=10)
            except subprocess.TimeoutExpired:
                server.kill()
                server.wait()

    def keep(self, prefix, res, keys):
        for k in keys:
            if k in res:
                self.record(prefix + k, res[k])

    # -- the benchmarks, one run each

    def run_attach(self, i):
        sid = self.session("exec cat")
        res = self.client("attach", sid, self.args.attach_samples)
        self.keep("attach.", res, [k for k in res])
        self.drop(sid)
        order = [False, True] if i % 2 == 0 else [True, False]
        for tls in order:
            self.attach_first_screen(tls, self.args.attach_samples)

    def attach_first_screen(self, tls, n):
        """A remote user's first screen: from the TCP connect (and, over
        wss://, the TLS handshake) through the upgrade and the join to the
        Keyframe, one connection a sample, with the same Python client over
        ws:// and over wss:// (a gateway speaking TLS itself), so the pair
        isolates what TLS adds."""
        stack = self.tls_stack() if tls else self.stack
        sid = stack.create_session(command=["/bin/sh", "-c", "exec cat"], env=ENV)
        token = stack.token(sub="bench", session_id=sid)
        ctx = stack.context() if tls else None
        total, hand = [], []
        try:
            for _ in range(n):
                t0 = time.monotonic()
                sock = socket.create_connection(("127.0.0.1", stack.port), timeout=10)
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
                if ctx:
                    sock = ctx.wrap_socket(sock, server_hostname="127.0.0.1")
                hand.append((time.monotonic() - t0) * 1e3)
                first_screen(sock, stack, sid, token)
                total.append((time.monotonic() - t0) * 1e3)
                sock.close()
        finally:
            stack.delete_session(sid)
        prefix = "tls." if tls else "py."
        res = {"attach.first_screen_ms.p50": statistics.median(total),
               "attach.first_screen_ms.p99": pctl(total, 99),
               "attach.connect_ms.p50": statistics.median(hand)}
        if self.args.verbose:
            note("%s: %s" % ("tls-attach-first-screen" if tls else "attach-first-screen",
                             " ".join("%s=%g" % kv for kv in sorted(res.items()))))
        self.keep(prefix, res, list(res))

    def run_echo(self, i):
        n = self.args.echo_samples
        order = [self.echo_gateway, self.echo_baselines]
        for f in (order if i % 2 == 0 else order[::-1]):
            f(n, i)
        self.echo_beside_flood(min(n, FLOOD_ECHO_SAMPLES))
        self.echo_cli(CLI_ECHO_SAMPLES if n >= CLI_ECHO_SAMPLES else n)

    def echo_cli(self, n):
        """Keystrokes typed into the command-line client, `ptygate attach`,
        running in a terminal (a pty this suite holds), each timed from the
        write of the key to its echo on the client's screen: the latency a
        person at the CLI feels, the client's own terminal and socket
        included. Over ws://, and over wss:// to a gateway speaking TLS
        itself (--tls-cert), in alternating order."""
        order = [self.echo_cli_plain, self.echo_cli_tls]
        for f in (order if self.cli_turn % 2 == 0 else order[::-1]):
            f(n)
        self.cli_turn += 1

    def echo_cli_plain(self, n):
        sid = self.session("stty -echo -icanon min 1; exec cat")
        try:
            self.cli_keys(n, "", ["--gateway", "http://127.0.0.1:%d" % self.stack.port,
                                  "--instance", "bench", sid], self.token)
        finally:
            self.drop(sid)

    def echo_cli_tls(self, n):
        stack = self.tls_stack()
        sid = stack.create_session(command=["/bin/sh", "-c", "stty -echo -icanon min 1; exec cat"],
                                   env=ENV)
        try:
            self.cli_keys(n, "tls.", ["--gateway", "https://127.0.0.1:%d" % stack.port,
                                      "--ca-file", stack.cert_a[0], "--instance", stack.instance,
                                      sid], stack.token(sub="bench", session_id=sid))
        finally:
            stack.delete_session(sid)

    def tls_stack(self):
        """A stack whose gateway speaks TLS itself, for the CLI's echo over
        wss:// (the e2e suite's, with a certificate openssl makes)."""
        if not self.tls:
            import test_tls  # noqa: E402 (tests/e2e, on the path)
            self.tls = test_tls.TlsStack(extra_args=["--max-ops-per-sec", 100000,
                                                     "--log-level", "warn"]).start()
        return self.tls

    def cli_keys(self, n, prefix, args, token):
        env = dict(ENV, PTYGATE_TOKEN=token)
        pid, fd = pty.fork()
        if pid == 0:
            cli = os.environ["PTG_CLI"]
            os.execve(cli, [cli, "attach"] + args, env)
        lat = []
        try:
            harness.pty_read(fd, None, 10)  # the join's screen, until quiet
            for k in range(n):
                key = bytes([ord("g") + k % 20])
                t0 = time.monotonic()
                os.write(fd, key)
                if not harness.pty_read(fd, key, 5):
                    break
                lat.append((time.monotonic() - t0) * 1e6)
                time.sleep(CLI_ECHO_GAP_S)
            os.write(fd, b"\x1d")  # Ctrl-]: detach
            harness.pty_read(fd, None, 2)
        finally:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            os.waitpid(pid, 0)
            os.close(fd)
        if len(lat) == n:
            lat.sort()
            res = {"cliecho.us.p50": lat[n // 2], "cliecho.us.p99": pctl(lat, 99)}
            if self.args.verbose:
                note("%scli-echo: " % prefix + " ".join("%s=%g" % kv for kv in sorted(res.items())))
            self.keep(prefix, res, list(res))
        else:
            note("ptygate attach%s: %d of %d keystrokes echoed"
                 % (" over wss://" if prefix else "", len(lat), n))

    def echo_gateway(self, n, i):
        """The echo, then the same with permessage-deflate agreed (the order
        alternating by run): compression must not cost a keystroke."""
        for deflate in ((False, True) if i % 2 == 0 else (True, False)):
            sid = self.session("stty -echo -icanon min 1; dd bs=1 count=1 >/dev/null 2>&1; "
                               "printf PTG-READY; exec cat")
            env = {"PTG_BENCH_DEFLATE": "1"} if deflate else None
            res = self.client_results(self.client_start("echo", sid, n, env=env), ("echo",),
                                      label="deflate-echo" if deflate else None)
            self.keep("deflate." if deflate else "", res,
                      ["echo.us.p50", "echo.us.p99", "echo.us.max", "echo.us.over10ms",
                       "echo.gateway_cpu_us", "echo.sidecar_cpu_us", "echo.daemons_cpu_us"])
            self.drop(sid)

    def echo_beside_flood(self, n):
        """A lone keystroke's echo while another session of the same
        sidecar floods hex-dump lines to its own reader: what sessions share
        (the sidecar's loop, its link to the gateway, the cores) costs the
        keystroke. Paired with this run's echo alone."""
        fsid = self.session("stty -echo; dd bs=1 count=1 >/dev/null 2>&1; "
                            "while :; do cat %s; done" % self.hexdump_file())
        reader = self.client_start("throughput", fsid)
        try:
            time.sleep(1)  # the flood is under way
            sid = self.session("stty -echo -icanon min 1; dd bs=1 count=1 >/dev/null 2>&1; "
                               "printf PTG-READY; exec cat")
            # Labelled apart in --verbose logs, so --from-log keeps it out of
            # the echo alone.
            res = self.client_results(self.client_start("echo", sid, n), ("echo",),
                                      label="flood-echo")
            self.keep("flood.", res, ["echo.us.p50", "echo.us.p99", "echo.us.max"])
            self.drop(sid)
        finally:
            reader.kill()
            reader.wait()
            self.drop(fsid)

    def echo_baselines(self, n, i):
        res = self.client("pty-echo", n)
        res.update(self.client("tcp-echo", n))
        res.update(self.onehop(ECHO_SCRIPT, "onehop-echo", n))
        self.keep("", res, ["ptyecho.us.p50", "ptyecho.us.p99", "ptyecho.us.over10ms",
                            "tcpecho.us.p50", "tcpecho.us.p99", "tcpecho.us.over10ms",
                            "onehop.echo.us.p50", "onehop.echo.us.p99",
                            "onehop.echo.us.over10ms"])
        # The two-hop anchor: the one-hop reference behind nginx.
        if harness.nginx_binary():
            self.keep("nginx.", self.onehop(ECHO_SCRIPT, "onehop-echo", n, nginx=True),
                      ["onehop.echo.us.p50", "onehop.echo.us.p99", "onehop.echo.us.max",
                       "onehop.echo.us.over10ms", "onehop.echo.daemons_cpu_us"])
        elif not getattr(self, "_nginx_noted", False):
            self._nginx_noted = True
            note("nginx is not installed: the echo anchor \"one-hop reference behind nginx\" "
                 "is skipped (scripts/install-deps.sh installs nginx-light)")

    def generators(self):
        """The throughput workloads, each written once to a file and sent by
        `cat`, so neither side measures the speed of od or /dev/urandom."""
        if not hasattr(self, "_gens"):
            m, d = self.args.mib, self.stack.dir
            make = [
                ("longline", "head -c %dM /dev/zero | tr '\\0' a" % m),
                ("hexdump", "head -c %d /dev/urandom | od -An -tx1 -v" % ((m << 20) * 16 // 49)),
                ("tui", "%s tui %d 120 30" % (GEN, m << 20)),
                ("random", "head -c %dM /dev/urandom" % m),
            ]
            self._gens = []
            for name, cmd in make:
                path = os.path.join(d, "%s.out" % name)
                subprocess.run(["/bin/sh", "-c", "%s > %s" % (cmd, path)], check=True)
                self._gens.append((name, "cat %s" % path))
        return self._gens

    def run_throughput(self, i):
        for name, gen in self.generators():
            steps = [lambda: self.keep("tp.%s.plain." % name,
                                       self.client("plain-throughput", gen), ["plain.mb_s"]),
                     lambda: self.tp_gateway(name, gen),
                     lambda: self.tp_onehop(name, gen)]
            for f in steps[i % 3:] + steps[:i % 3]:
                f()

    def tp_gateway(self, name, gen):
        sid = self.session("stty -echo; dd bs=1 count=1 >/dev/null 2>&1; %s; %s" % (gen, MARK))
        res = self.client("throughput", sid)
        self.keep("tp.%s." % name, res, ["throughput.mb_s", "throughput.sidecar_cpu_pct",
                                        "throughput.gateway_cpu_pct", "throughput.client_cpu_pct", "throughput.seq_errors",
                                        "throughput.lagged"])
        self.drop(sid)

    def tp_onehop(self, name, gen):
        res = self.onehop("stty -echo; dd bs=1 count=1 >/dev/null 2>&1; %s; %s" % (gen, MARK),
                          "onehop-throughput")
        self.keep("tp.%s." % name, res, ["onehop.throughput.mb_s",
                                        "onehop.throughput.gateway_cpu_pct",
                                        "onehop.throughput.client_cpu_pct"])

    def hexdump_file(self):
        """A megabyte of hex-dump lines, which the looping floods cat."""
        path = os.path.join(self.stack.dir, "fanout.out")
        if not os.path.exists(path):
            subprocess.run(["/bin/sh", "-c", "head -c 1000000 /dev/urandom | od -An -tx1 -v > %s"
                            % path], check=True)
        return path

    def run_fanout(self, i):
        """Each N of the fan-out list, the same flood with no observers (the
        controller alone: the baseline of its echo) and the deflate
        observers' N (every client offering permessage-deflate: the
        baseline is the plain N), then that N again, plain and deflate,
        watching a paced stream (FANOUT_PACED_RATE); in one order on even
        runs and the reverse on odd ones."""
        path = self.hexdump_file()
        steps = [(0, False, False)] + [(n, False, False) for n in self.args.fanout]
        d = self.args.fanout_deflate
        if d:
            steps += [(d, True, False), (d, False, True), (d, True, True)]
        if self.args.fanout_paced_only:
            steps = [s for s in steps if s[2]]
        for n, deflate, paced in (steps if i % 2 == 0 else steps[::-1]):
            # Paced for the whole window, with room for the joins before it.
            seconds = 3 + n // 100 + self.args.fanout_seconds + 15
            writer = ("%s paced %s %d %d" % (GEN, path, FANOUT_PACED_RATE, seconds) if paced
                      else "while :; do cat %s; done" % path)
            sid = self.session("stty -echo -icanon min 1; dd bs=1 count=1 >/dev/null 2>&1; "
                               "(%s) & exec cat" % writer)
            self.fanout_run(sid, n, deflate=deflate, paced=paced)
            self.drop(sid)

    def fanout_run(self, sid, n, prefix=None, deflate=False, paced=False):
        """The observers in processes of at most FANOUT_PER_PROCESS each and
        the controller in its own, so the controller's echo is not the
        load client's backlog; all measure one window, agreed on by the
        wall clock after time to join. n may be 0: the controller alone.
        With deflate every client offers permessage-deflate."""
        window = self.args.fanout_seconds
        start = time.time() + 3 + n / 100.0
        shares = [FANOUT_PER_PROCESS] * (n // FANOUT_PER_PROCESS)
        if n % FANOUT_PER_PROCESS:
            shares.append(n % FANOUT_PER_PROCESS)
        env = dict({"PTG_BENCH_DEFLATE": "1"} if deflate else {},
                   # beside a paced stream the controller types as a person would
                   **({"PTG_BENCH_ECHO_GAP_MS": str(PACED_ECHO_GAP_MS)} if paced else {}))
        procs = [(self.client_start("fanout-observers", sid, k, "%.3f" % start, window,
                                    nice=self.args.nice_observers, env=env),
                  ("fanout-observers",)) for k in shares]
        procs.append((self.client_start("fanout-echo", sid, "%.3f" % start, window, env=env),
                      ("fanout-echo",)))
        results = [self.client_results(p, argv, timeout=600) for p, argv in procs]
        obs, ctl = results[:-1], results[-1]
        total = lambda k: sum(r.get(k, 0) for r in obs)
        wire, out = total("fanout.wire_bytes"), total("fanout.output_bytes")
        res = {"fanout.processes": len(obs), "fanout.joined": total("fanout.joined"),
               "fanout.dead": total("fanout.dead"), "fanout.lagged": total("fanout.lagged"),
               "fanout.aggregate_mb_s": wire / window / 1e6,
               "fanout.output_mb_s": out / window / 1e6,
               "fanout.deflated_msgs": total("fanout.deflated_msgs"),
               # messages each observer got a second: what the kernel's part scales with
               "fanout.msgs_per_s": total("fanout.msgs") / max(n, 1) / window,
               "fanout.seq_errors": total("fanout.seq_errors") +
               ctl.get("fanout.controller_seq_errors", 0)}
        if deflate:
            res["fanout.deflate"] = 1
        if paced:
            res["fanout.paced"] = 1
        if wire and "fanout.gateway_cpu_s" in ctl:
            res["fanout.gateway_cpu_ms_per_mib"] = 1e3 * ctl["fanout.gateway_cpu_s"] / (wire / (1 << 20))
        if out and "fanout.gateway_cpu_s" in ctl:
            # Per MiB of terminal output delivered (the same measure with and
            # without deflate: compressed wire bytes would flatter neither).
            res["fanout.gateway_cpu_ms_per_output_mib"] = (1e3 * ctl["fanout.gateway_cpu_s"]
                                                           / (out / (1 << 20)))
        if out:
            res["fanout.wire_per_output_byte"] = wire / out
        for k in ("session_mb_s", "controller_lagged", "echo_samples", "echo_lost",
                  "echo_us.p50", "echo_us.p99", "echo_us.max", "echo_us.over10ms"):
            if "fanout." + k in ctl:
                res["fanout." + k] = ctl["fanout." + k]
        if self.args.verbose:
            mode = "sessions-" + prefix.split(".")[1] if prefix else "fanout"
            note("%s: fanout.observers=%d %s" % (mode, n, " ".join("%s=%g" % kv for kv in sorted(res.items()))))
        self.keep(prefix or fanout_prefix(n, deflate, paced), res, list(res))

    def run_sessions(self, i):
        """A fan-out of SESSIONS_OBSERVERS beside SESSIONS_IDLE joined
        connections on other sessions of the instance, paired with the same
        fan-out alone: what a frame costs the gateway as other sessions'
        connections grow (a frame must not look at every attachment of the
        instance)."""
        path = self.hexdump_file()
        per = 32
        idle = self.memory_sessions((SESSIONS_IDLE + per - 1) // per)
        order = [False, True] if i % 2 == 0 else [True, False]
        for crowded in order:
            sid = self.session("stty -echo -icanon min 1; dd bs=1 count=1 >/dev/null 2>&1; "
                               "(while :; do cat %s; done) & exec cat" % path)
            hold = None
            if crowded:
                hold_s = 3 + SESSIONS_OBSERVERS / 100.0 + self.args.fanout_seconds + 30
                hold = self.client_start("hold", SESSIONS_IDLE, per, int(hold_s), *idle)
                line = hold.stdout.readline()  # "RESULT hold.joined N" once joined
                if "hold.joined" not in line:
                    note("sessions: the idle connections did not join: %r" % line)
            prefix = "sessions.crowded." if crowded else "sessions.alone."
            self.fanout_run(sid, SESSIONS_OBSERVERS, prefix=prefix)
            self.drop(sid)  # its loop would go on loading the machine
            # A lone keystroke's echo beside them: a small frame shows the
            # per-frame cost best.
            esid = self.session("stty -echo -icanon min 1; dd bs=1 count=1 >/dev/null 2>&1; "
                                "printf PTG-READY; exec cat")
            self.keep(prefix, self.client("echo", esid, SESSIONS_ECHO_SAMPLES),
                      ["echo.us.p50", "echo.us.p99"])
            self.drop(esid)
            if hold:
                self.client_results(hold, ("hold",), timeout=120)

    def run_memory(self, i):
        per = 32  # the default max_observers: joins stay O(per^2) per session
        for n in self.args.memory:
            sids = self.memory_sessions((n + per - 1) // per)
            # A fresh gateway: memory freed by earlier benchmarks would hide
            # what the connections cost.
            self.restart_gateway()
            res = self.client("memory", n, per, *sids)
            crashed = not self.stack.gateway.alive()
            self.record("memory%d.crashed" % n, 1 if crashed else 0)
            if crashed:
                note("the gateway died with %d connections (status %s)"
                     % (n, self.stack.gateway.proc.returncode))
            else:
                self.keep("memory%d." % n, res, [k for k in res])
        self.restart_gateway()

    def deflate_command(self, workload):
        if workload == "lslr":
            return "ls -lR /usr 2>/dev/null | head -c %d" % DEFLATE_BYTES
        if workload == "buildlog":
            return "%s buildlog %d" % (GEN, DEFLATE_BYTES)
        return "%s tui %d 120 30" % (GEN, DEFLATE_BYTES)

    def run_deflate(self, i):
        """Each workload's output to two observers of one session, one plain
        and one that agreed permessage-deflate (python websockets, its
        default offer), joined in alternating order: wire bytes counted at
        each socket, per byte of output."""
        for workload, _ in DEFLATE_WORKLOADS:
            sid = self.session("stty -echo -icanon min 1; dd bs=1 count=1 >/dev/null 2>&1; "
                               "%s; %s; exec cat" % (self.deflate_command(workload), MARK),
                               cols=120, rows=30)
            try:
                res = asyncio.run(self.deflate_pair(sid, i % 2 == 1))
            finally:
                self.drop(sid)
            if self.args.verbose:
                note("deflate %s: " % workload
                     + " ".join("%s=%g" % kv for kv in sorted(res.items())))
            self.keep("deflate.%s." % workload, res, [k for k in res])

    async def deflate_pair(self, sid, deflate_first):
        kinds = ["deflate", None] if deflate_first else [None, "deflate"]
        clients, wire = {}, {}
        for kind in kinds:
            c = await self.stack.client(sid, sub="bench-%s" % (kind or "plain"), token=self.token,
                                        compression=kind)
            await c.join_fresh("controller" if not clients else "observer")
            clients[kind or "plain"] = c
            wire[kind or "plain"] = [0]
            inner = c.ws.data_received

            def counted(data, n=wire[kind or "plain"], inner=inner):
                n[0] += len(data)
                inner(data)
            c.ws.data_received = counted
        res = {}
        try:
            marks = {k: len(c.output) for k, c in clients.items()}
            fmarks = {k: len(c.frames) for k, c in clients.items()}
            await clients[kinds[0] or "plain"].type("go")
            for k, c in clients.items():
                await c.wait_output("PTG-BENCH-END", since=marks[k], timeout=300)
                out = c.output.find(b"PTG-BENCH-END", marks[k]) - marks[k]
                res["%s.wire_per_output_byte" % k] = wire[k][0] / out
                res["%s.output_bytes" % k] = out
                res["%s.output_frame_kib" % k] = out / 1024 / max(1, sum(
                    1 for f in c.frames[fmarks[k]:]
                    if (f.get("payload") or {}).get("kind") == "Output"))
                res["%s.lagged" % k] = sum(1 for f in c.frames if f.get("op") == "Error"
                                           or (f.get("payload") or {}).get("code") == "PTY_OUTPUT_LAGGED")
        finally:
            for c in clients.values():
                await c.close()
        return res

    def restart_gateway(self):
        self.stack.gateway.expected_exit = True  # a crash is a result here, not a problem
        self.stack.gateway.stop()
        self.stack.start_gateway()

    def memory_sessions(self, count):
        """count idle sessions on the stack in use, made once per stack (a
        paired run's base stack has a sidecar of its own)."""
        if not hasattr(self, "_idle"):
            self._idle = {}
        idle = self._idle.setdefault(self.prefix, [])
        while len(idle) < count:
            idle.append(self.session("exec sleep 86400"))
        return idle[:count]

    def run_joins(self, i):
        sid = self.session("exec cat")
        res = self.client("joins", sid, self.args.joins)
        self.keep("joins.", res, [k for k in res])
        self.drop(sid)

    def run_replay(self, i):
        sid = self.session("stty -echo -icanon min 1; dd bs=1 count=1 >/dev/null 2>&1; %s lines 1200 300; %s; exec cat"
                           % (GEN, TITLE_MARK))
        res = self.client("replay", sid, self.args.replay_samples, 1000)
        self.keep("", res, [k for k in res])
        self.drop(sid)

    def run_keyframe(self, i):
        for name, _, cmd in KF_SCREENS:
            cmd = cmd.format(gen=GEN)
            sid = self.session("stty -echo -icanon min 1; dd bs=1 count=1 >/dev/null 2>&1; %s; %s; exec cat"
                               % (cmd, TITLE_MARK), cols=200, rows=60)
            res = self.client("keyframe", sid, self.args.keyframe_samples)
            self.keep("kf.%s." % name, res, [k for k in res])
            self.drop(sid)

    # -- the table

    def stat(self, name):
        v = self.samples.get(name)
        if not v:
            return None
        return statistics.median(v), min(v), max(v)

    def ratio(self, num, den):
        a, b = self.samples.get(num, []), self.samples.get(den, [])
        r = [x / y for x, y in zip(a, b) if y]
        return statistics.median(r) if r else None

    @staticmethod
    def fmt(v, digits):
        if v is None:
            return "-"
        return ("%%.%df" % digits) % v

    def cell(self, name, digits=1):
        s = self.stat(name)
        if s is None:
            return "-"
        return "%s (%s-%s)" % (self.fmt(s[0], digits), self.fmt(s[1], digits), self.fmt(s[2], digits))

    def table(self):
        rows = []

        def row(what, name, base=None, digits=1, ratio=None, base_cell=None):
            if self.stat(name) is None:
                return
            if base is None and ("base." + name) in self.samples:
                base = "base." + name  # the PTG_BASE_* build
            r = self.ratio(name, base) if base else None
            rows.append("| %s | %s | %s | %s |" % (
                what, self.cell(name, digits),
                base_cell or (self.cell(base, digits) if base else "-"),
                ratio or (self.fmt(r, 2) + "x" if r is not None else "-")))

        for k, label in (("upgrade_to_101_ms", "upgrade -> 101"),
                         ("101_to_hello_ms", "101 -> binding_hello"),
                         ("join_to_keyframe_ms", "join -> Keyframe")):
            for p in ("p50", "p99"):
                row("attach: %s, %s (ms)" % (label, p), "attach.attach.%s.%s" % (k, p), digits=2)
        for p in ("p50", "p99"):
            row("attach over wss:// (the gateway's own TLS): connect -> first screen "
                "(Keyframe), %s (ms); baseline the same Python client over ws://" % p,
                "tls.attach.first_screen_ms.%s" % p, "py.attach.first_screen_ms.%s" % p, digits=2)
        row("  of which the TCP connect and the TLS handshake, p50 (ms); baseline the TCP "
            "connect", "tls.attach.connect_ms.p50", "py.attach.connect_ms.p50", digits=2)
        for p in ("p50", "p99", "max"):
            row("echo `cat`, keystroke -> echo, %s (us); baseline plain PTY" % p,
                "echo.us.%s" % p, "ptyecho.us.%s" % p if p != "max" else None)
        for p in ("p50", "p99", "max"):
            if "base.echo.us." + p in self.samples:
                row("echo %s vs the base build (PTG_BASE_*) (us)" % p, "echo.us." + p,
                    "base.echo.us." + p)
        for p in ("p50", "p99"):
            row("echo %s vs loopback TCP round trip (us)" % p, "echo.us.%s" % p,
                "tcpecho.us.%s" % p)
        for p in ("p50", "p99"):
            row("echo %s vs the one-hop reference (us)" % p, "echo.us.%s" % p,
                "onehop.echo.us.%s" % p)
        row("echo samples over 10 ms (of %d)" % self.args.echo_samples, "echo.us.over10ms",
            "ptyecho.us.over10ms", digits=0, ratio="-")
        for p in ("p50", "p99"):
            row("echo %s with permessage-deflate agreed (us); baseline plain (target: "
                "unchanged, 1.0x)" % p, "deflate.echo.us.%s" % p, "echo.us.%s" % p)
        for p in ("p50", "p99"):
            row("echo %s through `ptygate attach` in a terminal, a key every %d ms (us); "
                "baseline the C load client" % (p, CLI_ECHO_GAP_S * 1000),
                "cliecho.us.%s" % p, "echo.us.%s" % p)
        for p in ("p50", "p99"):
            row("echo %s through `ptygate attach` over wss:// (the gateway's own TLS, "
                "--tls-cert) (us); baseline over ws://" % p,
                "tls.cliecho.us.%s" % p, "cliecho.us.%s" % p)
        if self.stat("nginx.onehop.echo.us.p50"):
            for p in ("p50", "p99", "max"):
                row("echo %s vs the one-hop reference behind nginx (us)" % p, "echo.us.%s" % p,
                    "nginx.onehop.echo.us.%s" % p)
            row("echo samples over 10 ms (of %d) vs the one-hop reference behind nginx"
                % self.args.echo_samples, "echo.us.over10ms", "nginx.onehop.echo.us.over10ms",
                digits=0)
            row("  CPU per keystroke of the two daemons, the gateway and the sidecar (us); "
                "baseline nginx's worker and the one-hop reference",
                "echo.daemons_cpu_us", "nginx.onehop.echo.daemons_cpu_us", digits=0)
            row("    of which the gateway's (us)", "echo.gateway_cpu_us", digits=0)
        elif self.stat("echo.us.p50") and not self.args.from_log:
            rows.append("| echo vs the one-hop reference behind nginx | - | %s | - |"
                        % ("skipped: nginx is not installed (scripts/install-deps.sh installs "
                           "nginx-light)" if not harness.nginx_binary() else
                           "no results: see the notes above"))
        for p in ("p50", "p99", "max"):
            row("echo %s beside a flood in another session (us, %d samples); baseline alone"
                % (p, min(self.args.echo_samples, FLOOD_ECHO_SAMPLES)),
                "flood.echo.us.%s" % p, "echo.us.%s" % p)
        for p in ("p50", "p99", "max"):
            if "base.flood.echo.us." + p in self.samples:
                row("echo %s beside a flood in another session vs the base build (PTG_BASE_*) (us)"
                    % p, "flood.echo.us." + p, "base.flood.echo.us." + p)
        for name in ("longline", "hexdump", "tui", "random"):
            row("throughput %s, %d MiB (MB/s); baseline plain forkpty loop" % (name, self.args.mib),
                "tp.%s.throughput.mb_s" % name, "tp.%s.plain.plain.mb_s" % name)
            if "base.tp.%s.throughput.mb_s" % name in self.samples:
                row("throughput %s (MB/s) vs the base build (PTG_BASE_*)" % name,
                    "tp.%s.throughput.mb_s" % name, "base.tp.%s.throughput.mb_s" % name)
            row("throughput %s (MB/s) vs the one-hop reference" % name,
                "tp.%s.throughput.mb_s" % name, "tp.%s.onehop.throughput.mb_s" % name)
            row("  one-hop reference CPU %% during %s" % name,
                "tp.%s.onehop.throughput.gateway_cpu_pct" % name, digits=0)
            row("  sidecar CPU %% during %s" % name, "tp.%s.throughput.sidecar_cpu_pct" % name, digits=0)
            row("  gateway CPU %% during %s" % name, "tp.%s.throughput.gateway_cpu_pct" % name, digits=0)
            row("  load client CPU %% during %s" % name, "tp.%s.throughput.client_cpu_pct" % name, digits=0)
            row("  PTY_OUTPUT_LAGGED during %s (client too slow)" % name, "tp.%s.throughput.lagged" % name, digits=0)
        for n in self.args.fanout:
            p = "fanout%d.fanout." % n
            row("fan-out %d observers, %d s window: aggregate delivered (MB/s)" % (n, self.args.fanout_seconds), p + "aggregate_mb_s", digits=0)
            row("  observers whose join was answered (of %d)" % n, p + "joined", digits=0)
            row("  load-client processes of observers (the controller has its own)", p + "processes", digits=0)
            row("  observers closed by the gateway before the end", p + "dead", digits=0)
            row("  session output rate, as the controller received it (MB/s)", p + "session_mb_s")
            row("  gateway CPU per delivered MiB (ms)", p + "gateway_cpu_ms_per_mib", digits=2)
            row("  controller echo samples while streaming", p + "echo_samples", digits=0)
            row("  controller echo p50 while streaming (us)", p + "echo_us.p50", digits=0)
            row("  controller echo p99 while streaming (us)", p + "echo_us.p99", digits=0)
            row("  frames out of order (all observers)", p + "seq_errors", digits=0)
            row("  PTY_OUTPUT_LAGGED to observers (sum)", p + "lagged", digits=0)
            row("  PTY_OUTPUT_LAGGED to the controller (echo samples lost)", p + "controller_lagged", digits=0)
        for n in self.args.fanout:
            for p in ("p50", "p99"):
                row("controller echo %s with %d observers (us); baseline the same flood with no "
                    "observers (target at most 1.5x)" % (p, n),
                    fanout_prefix(n) + "fanout.echo_us." + p,
                    fanout_prefix(0) + "fanout.echo_us." + p, digits=0)
        for n in [0] + self.args.fanout:
            if "base." + fanout_prefix(n) + "fanout.echo_us.p99" in self.samples:
                row("controller echo p99 with %d observers vs the base build (PTG_BASE_*) (us)" % n,
                    fanout_prefix(n) + "fanout.echo_us.p99",
                    "base." + fanout_prefix(n) + "fanout.echo_us.p99", digits=0)
        row("  session output rate with no observers, as the controller received it (MB/s)",
            fanout_prefix(0) + "fanout.session_mb_s")
        d = self.args.fanout_deflate
        if d:
            plain, defl = fanout_prefix(d) + "fanout.", fanout_prefix(d, True) + "fanout."
            row("gateway CPU per delivered MiB of terminal output with %d observers (ms), "
                "deflate; baseline plain (target at most 1.2x)" % d,
                defl + "gateway_cpu_ms_per_output_mib", plain + "gateway_cpu_ms_per_output_mib",
                digits=2)
            row("  wire bytes per output byte with %d observers, deflate; baseline plain" % d,
                defl + "wire_per_output_byte", plain + "wire_per_output_byte", digits=3)
            row("  terminal output delivered to the %d observers (MB/s), deflate; baseline plain"
                % d, defl + "output_mb_s", plain + "output_mb_s")
            row("  messages that came compressed to the observers (sum), deflate; baseline plain",
                defl + "deflated_msgs", plain + "deflated_msgs", digits=0, ratio="-")
            row("  controller echo p99 with %d observers (us), deflate; baseline plain" % d,
                defl + "echo_us.p99", plain + "echo_us.p99", digits=0)
            row("  PTY_OUTPUT_LAGGED to the observers, deflate; baseline plain",
                defl + "lagged", plain + "lagged", digits=0, ratio="-")
            plain = fanout_prefix(d, paced=True) + "fanout."
            defl = fanout_prefix(d, True, True) + "fanout."
            row("gateway CPU per delivered MiB of terminal output with %d observers of a paced "
                "stream (%.1f MB/s), deflate; baseline plain (target at most 1.2x)"
                % (d, FANOUT_PACED_RATE / 1e6), defl + "gateway_cpu_ms_per_output_mib",
                plain + "gateway_cpu_ms_per_output_mib", digits=2)
            row("  wire bytes per output byte, paced, deflate; baseline plain",
                defl + "wire_per_output_byte", plain + "wire_per_output_byte", digits=3)
            row("  terminal output delivered to the %d observers (MB/s), paced, deflate; "
                "baseline plain" % d, defl + "output_mb_s", plain + "output_mb_s")
            row("  messages to each observer a second, paced, deflate; baseline plain",
                defl + "msgs_per_s", plain + "msgs_per_s", digits=0)
            row("  controller echo p99 (us), paced, deflate; baseline plain",
                defl + "echo_us.p99", plain + "echo_us.p99", digits=0)
            row("  PTY_OUTPUT_LAGGED to the observers, paced, deflate; baseline plain",
                defl + "lagged", plain + "lagged", digits=0, ratio="-")
        for what, key in (("aggregate delivered (MB/s)", "aggregate_mb_s"),
                          ("gateway CPU per delivered MiB (ms)", "gateway_cpu_ms_per_mib")):
            row("fan-out %d observers beside %d connections on other sessions: %s; baseline "
                "the same fan-out alone" % (SESSIONS_OBSERVERS, SESSIONS_IDLE, what),
                "sessions.crowded.fanout." + key, "sessions.alone.fanout." + key, digits=2)
        for p in ("p50", "p99"):
            row("echo %s beside %d connections on other sessions (us); baseline alone"
                % (p, SESSIONS_IDLE), "sessions.crowded.echo.us." + p,
                "sessions.alone.echo.us." + p)
        for workload, what in DEFLATE_WORKLOADS:
            p = "deflate.%s." % workload
            row("bytes on the wire per byte of %s output (%d KiB), permessage-deflate; "
                "baseline plain, same session" % (what, DEFLATE_BYTES >> 10),
                p + "deflate.wire_per_output_byte", p + "plain.wire_per_output_byte", digits=3)
            row("  PTY_OUTPUT_LAGGED to the deflate / plain observer",
                p + "deflate.lagged", p + "plain.lagged", digits=0, ratio="-")
        for n in self.args.memory:
            row("gateway RSS per idle attached connection, %d conns (KiB)" % n,
                "memory%d.memory.kib_per_conn" % n)
            c = self.samples.get("memory%d.crashed" % n, [])
            if any(c):
                rows.append("| gateway with %d attached connections | **crashed (SIGSEGV) in %d of %d runs** | - | - |"
                            % (n, sum(c), len(c)))
        row("%d joins at once, to the last Keyframe (ms)" % self.args.joins, "joins.joins.all_ms", digits=0)
        row("  joins answered with a Keyframe (of %d; the rest: INTERNAL, the link request timed out)"
            % self.args.joins, "joins.joins.completed", digits=0)
        row("  bytes sent to the joiners (MiB)", "joins.joins.wire_mib")
        for p in ("p50", "p99"):
            row("replay_from 1,000 frames back -> Keyframe, %s (ms)" % p,
                "replay.join_to_keyframe_ms.%s" % p, digits=2)
        for name, what, _ in KF_SCREENS:
            for p in ("p50", "p99", "max"):
                row("join -> Keyframe, 200x60, %s, %s of %d (ms)"
                    % (what, p, self.args.keyframe_samples),
                    "kf.%s.keyframe.join_to_keyframe_ms.%s" % (name, p), digits=2)
            row("  the first of them, which has libvterm parse the screen's output (ms)",
                "kf.%s.keyframe.first_join_ms" % name, digits=2)
            row("  Keyframe snapshot bytes (%s)" % what, "kf.%s.keyframe.bytes" % name, digits=0)
            row("  Keyframe snapshot bytes per cell (%s)" % what,
                "kf.%s.keyframe.bytes_per_cell" % name, digits=2)
            row("  Keyframe WebSocket message bytes per cell (%s)" % what,
                "kf.%s.keyframe.wire_bytes_per_cell" % name, digits=2)
        head = ["| what | ptygate: median (min-max) | baseline: median (min-max) | ratio (median of pairs) |",
                "|---|---|---|---|"]
        return "\n".join(head + rows)


def replay_log(suite, path):
    """Rebuilds the samples from a --verbose log (its order gives each
    result its workload), so a table can be printed for an invocation that
    was interrupted or to re-render one."""
    tp_names = ["longline", "hexdump", "tui", "random"]
    kf_names = [k[0] for k in KF_SCREENS]
    tp = {}  # mode -> workloads seen: each gives one line per mode, in any order
    kf = 0
    sessions = None  # the "sessions" benchmark whose echo comes next
    pat = re.compile(r"^\[bench [0-9:]+\] ([a-z.-]+): (.*)$")
    for line in open(path, encoding="utf-8", errors="replace"):
        died = re.search(r"the gateway died with (\d+) connections", line)
        if died:
            suite.record("memory%s.crashed" % died.group(1), 1)
            continue
        m = pat.match(line.strip())
        if not m or "=" not in m.group(2):
            continue
        mode = m.group(1)
        res = {k: float(v) for k, v in (kv.split("=", 1) for kv in m.group(2).split())}
        if mode in ("plain-throughput", "throughput", "onehop-throughput"):
            name = tp_names[tp.get(mode, 0) % 4]
            suite.keep("tp.%s.%s" % (name, "plain." if mode[0] == "p" else ""), res, list(res))
            tp[mode] = tp.get(mode, 0) + 1
        elif mode in ("fanout-observers", "fanout-echo", "hold"):
            continue  # one process's share: the "fanout" line sums them
        elif mode in ("sessions-alone", "sessions-crowded"):
            sessions = "sessions.%s." % mode.split("-")[1]
            suite.keep(sessions, res, list(res))
        elif mode == "echo" and sessions:
            suite.keep(sessions, res, list(res))  # the echo beside that fan-out
            sessions = None
        elif mode == "fanout":
            suite.keep(fanout_prefix(int(res["fanout.observers"]), res.get("fanout.deflate"),
                                     res.get("fanout.paced")), res, list(res))
        elif mode == "memory":
            n = int(res["memory.connections"])
            if res.get("memory.gateway_rss_kib", 0) > 0:
                suite.keep("memory%d." % n, res, list(res))
                suite.record("memory%d.crashed" % n, 0)
        elif mode == "keyframe":
            suite.keep("kf.%s." % kf_names[kf % len(kf_names)], res, list(res))
            kf += 1
        elif mode == "flood-echo":
            suite.keep("flood.", res, list(res))  # the echo beside another session's flood
        elif mode == "deflate-echo":
            suite.keep("deflate.", res, list(res))  # the echo with permessage-deflate agreed
        elif mode.startswith("nginx-"):
            suite.keep("nginx.", res, list(res))  # the one-hop reference behind nginx
        elif mode in ("attach", "joins"):
            suite.keep(mode + ".", res, list(res))
        elif mode == "attach-first-screen":
            suite.keep("py.", res, list(res))  # the Python client's first screen over ws://
        elif mode in ("tls-attach-first-screen", "tls.cli-echo"):
            suite.keep("tls.", res, list(res))  # over wss://
        else:
            suite.keep("", res, list(res))


def main():
    # SIGTERM ends the suite like Ctrl-C: the daemons are stopped.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--mib", type=int, default=64, help="throughput workload size")
    ap.add_argument("--only", default=",".join(ALL))
    ap.add_argument("--pair", default=",".join(PAIRED),
                    help="benchmarks run on the PTG_BASE_* build too, paired run by run")
    ap.add_argument("--durable", action="store_true",
                    help="the sidecars keep durable history (--state-dir, default --fsync)")
    ap.add_argument("--link", choices=("unix", "tcp"), default="unix",
                    help="the sidecar's link: a unix socket, or loopback TCP (as a sidecar "
                    "that registers by dialling has)")
    ap.add_argument("--verbose", action="store_true", help="every run's raw results on stderr")
    ap.add_argument("--observers", default=None, help="fan-out sizes, e.g. 100,1000")
    ap.add_argument("--conns", default=None, help="connection counts, e.g. 1000,10000")
    ap.add_argument("--nice-observers", type=int, default=0, metavar="N",
                    help="run the fan-out's observer load clients under nice -n N: they "
                    "stand for browsers on other machines, and on a small box they "
                    "otherwise take the CPU from the gateway they measure")
    ap.add_argument("--fanout-paced-only", action="store_true",
                    help="the fan-out's paced steps alone (plain and deflate), to measure "
                    "what compressing a paced stream costs in less time")
    ap.add_argument("--from-log", help="print the table of a --verbose log instead of running")
    ap.add_argument("--quick", action="store_true", help="small sizes, to check the suite runs")
    args = ap.parse_args()
    args.attach_samples, args.echo_samples, args.replay_samples = 20, 10000, 20
    args.keyframe_samples, args.joins, args.fanout_seconds = 100, 1000, 10
    args.fanout, args.memory = [100, 1000], [1000, 4000, 10000]
    if args.quick:
        args.runs, args.mib, args.attach_samples, args.echo_samples = 1, 4, 3, 500
        args.replay_samples, args.keyframe_samples, args.joins = 3, 5, 50
        args.fanout, args.memory, args.fanout_seconds = [10], [100], 3
    if args.observers:
        args.fanout = [int(x) for x in args.observers.split(",") if int(x) > 0]
    # The fan-out run again with every client offering permessage-deflate:
    # 100 observers, or the first size when 100 is not in the list.
    args.fanout_deflate = (FANOUT_DEFLATE if FANOUT_DEFLATE in args.fanout
                           else (args.fanout or [0])[0])
    if args.conns:
        args.memory = [int(x) for x in args.conns.split(",")]
    only = [b for b in args.only.split(",") if b]
    suite = Suite(args)
    if args.from_log:
        args.runs = 0
        replay_log(suite, args.from_log)
        print(suite.table())
        return 0
    suite.start()
    t0 = time.monotonic()
    try:
        for i in range(args.runs):
            for b in only:
                note("run %d/%d: %s" % (i + 1, args.runs, b))
                try:
                    suite.run(b, i)
                except Exception as e:  # one broken benchmark must not end the suite
                    note("%s failed in run %d: %s" % (b, i + 1, str(e)[:500]))
    finally:
        suite.stop()
    load = open("/proc/loadavg").read().split()[:3]
    print("\n%d paired runs, %.0f s, load average %s, %d cores, %s link; ttyd is not in Debian 12: "
          "the one-hop reference (bench_onehop, its design and framing) stands in.\n"
          % (args.runs, time.monotonic() - t0, " ".join(load), os.cpu_count(), args.link))
    print(suite.table())
    return 0


if __name__ == "__main__":
    sys.exit(main())
