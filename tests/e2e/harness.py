"""End-to-end harness for ptygate: real daemons, real WebSocket clients.

What it gives a test:
- Stack: a ptygate-sidecar on a private unix socket and a ptygate-gateway
  on a free loopback port, in a private temp dir, with an HS256 secret;
  stopped with SIGTERM, a bounded wait, then SIGKILL, by PID only.
- mint_token(): HS256 JWTs minted here, so tests do not depend on the CLI.
- REST helpers (docs/protocol.md, "Around the WebSocket": create, get, list, delete sessions).
- Client: a `websockets` connection that validates EVERY received frame
  against the published JSON Schemas plus the rules of docs/protocol.md the
  schemas cannot express, records the frames, and offers bounded waits.
- RawWs: a hand-written WebSocket client over a plain socket, for what a
  library will not do: refuse to answer pings, stop reading, send binary or
  oversized frames, and read HTTP refusals with their bodies.

Only the standard library, python3-websockets 10.4 and python3-jsonschema.
Binaries come from $PTG_SIDECAR, $PTG_GATEWAY and $PTG_CLI (CTest sets
them); the schemas from $PTG_SCHEMA_DIR or tests/schemas (copies of
../shared/spec/schemas beside the repository, checked against it when it
is there).
"""
import asyncio
import base64
import glob
import hashlib
import hmac
import http.client
import json
import os
import re
import select
import secrets
import shutil
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import time
import unittest
import urllib.parse

import jsonschema
import websockets
from jsonschema import Draft202012Validator, RefResolver

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SUBPROTOCOL = "pty-ws.v1"
BINDING_URI = "https://agentic-sandbox.aiwg.io/bindings/pty-ws/v1"
EXTENSION_URI = "https://agentic-sandbox.aiwg.io/extensions/pty-extensions/v1"
A2A_OPERATIONS = ["SendMessage", "SendStreamingMessage", "GetTask",
                  "ListTasks", "CancelTask", "SubscribeToTask"]
SESSION_HOST = {
    "supported_backends": ["native"], "default_backend": "native",
    "supported_classes": ["direct"], "default_class": "direct",
    "observe_supported": True, "drive_supported": True,
    "reattach_supported": True,
}
# The Error table (docs/protocol.md, "Errors and closing"): code -> (A2A type, key, value); None: a2a_error is null.
A2A_ERRORS = {
    "TASK_NOT_FOUND": ("TaskNotFound", "code", -32001),
    "TASK_NOT_CANCELABLE": ("TaskNotCancelable", "code", -32002),
    "INVALID_REQUEST": ("InvalidRequest", "code", -32600),
    "UNSUPPORTED_OPERATION": ("UnsupportedOperation", "code", -32004),
    "UNAUTHENTICATED": ("Unauthenticated", "http_status", 401),
    "PERMISSION_DENIED": ("PermissionDenied", "http_status", 403),
    "RATE_LIMITED": ("RateLimited", "http_status", 429),
    "INTERNAL": ("Internal", "code", -32603),
    "REPLAY_OUT_OF_RANGE": None,
}
# The frames that carry no sequence (docs/protocol.md, "Sequences,
# replay and keyframes").
UNSEQUENCED_OPS = ("Error", "pong", "binding_goodbye", "TaskStatusUpdate")
UUID7 = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$")
TS_MILLIS = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$")
DATE_TIME = re.compile(
    r"^\d{4}-\d{2}-\d{2}[Tt]\d{2}:\d{2}:\d{2}(\.\d+)?([Zz]|[+-]\d{2}:\d{2})$")
ANSI = re.compile(rb"\x1b(\[[0-9;?<=>!\"' ]*[@-~]|\][^\x07\x1b]*(\x07|\x1b\\)|[()*+][0-9A-Za-z]|[@-Z\\-_]|[0-9=<>])")

# How long a test waits for what must come (a frame, an output, a close):
# a deadline for a failure, never a measurement, so generous that a
# loaded two-core machine running the sanitizer build cannot reach it.
DEFAULT_TIMEOUT = 20.0
# How long a test waits for what a daemon writes or counts after an action
# (a log line, a /metrics counter): a bound for a failure, likewise.
WAIT_BOUND = 60.0
PROMPT = "$ "  # the PS1 of create_session's shells


# ---------------------------------------------------------------- utilities

def b64url(data):
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def b64(data):
    if isinstance(data, str):
        data = data.encode()
    return base64.b64encode(data).decode("ascii")


def uuid7():
    """A lower-case UUIDv7 (RFC 9562): 48-bit ms time, version, variant."""
    ms = int(time.time() * 1000)
    rand = int.from_bytes(os.urandom(10), "big")
    value = (ms << 80) | (0x7 << 76) | ((rand >> 66) & 0xFFF) << 64
    value |= (0b10 << 62) | (rand & ((1 << 62) - 1))
    h = "%032x" % value
    return "%s-%s-%s-%s-%s" % (h[:8], h[8:12], h[12:16], h[16:20], h[20:])


def now_ts():
    t = time.time()
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(t)) + ".%03dZ" % (int(t * 1000) % 1000)


async def poll_until(predicate, what, timeout=WAIT_BOUND, logs=lambda: ""):
    """predicate's first true value, polled every 50 ms without blocking
    the event loop; an AssertionError naming what (and logs()) when timeout
    passes first. A log line or a counter read once right after an action
    races the daemon that writes it: wait for exactly what is asserted."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError("%s within %.0f s\n%s" % (what, timeout, logs()))
        await asyncio.sleep(0.05)


def screen_text(raw):
    """The printable text of terminal output or a snapshot, escapes removed."""
    return ANSI.sub(b"", raw).decode("utf-8", "replace")


def note(text):
    """A measurement worth seeing in the test log (stderr)."""
    sys.stderr.write("  [e2e] %s\n" % text)


def nginx_binary():
    """Debian's nginx (scripts/install-deps.sh installs nginx-light), or None."""
    path = shutil.which("nginx") or "/usr/sbin/nginx"
    return path if os.access(path, os.X_OK) else None


class NginxProcess:
    """A real nginx for a test or a benchmark: Debian's binary, one worker,
    daemon off, its config, temp paths and logs in a private dir; stopped
    with SIGQUIT (then SIGKILL after a bounded wait)."""

    def __init__(self, workdir, port):
        self.dir, self.port, self.proc = workdir, port, None
        os.makedirs(os.path.join(workdir, "logs"), exist_ok=True)
        self.conf = os.path.join(workdir, "nginx.conf")

    def write_config(self, http_lines, access_log=False):
        """nginx.conf: the main context around http_lines (the body of the
        http block), every path in the private dir."""
        d = self.dir
        lines = ["user root;" if os.geteuid() == 0 else "",
                 "worker_processes 1;", "pid %s/nginx.pid;" % d,
                 "error_log %s/logs/error.log warn;" % d,
                 "events { worker_connections 256; }",
                 "http {",
                 "  access_log %s;" % ("%s/logs/access.log" % d if access_log else "off"),
                 "  client_body_temp_path %s/body; proxy_temp_path %s/proxy;" % (d, d),
                 "  fastcgi_temp_path %s/fcgi; uwsgi_temp_path %s/uwsgi; scgi_temp_path %s/scgi;"
                 % (d, d, d)] + list(http_lines) + ["}", ""]
        with open(self.conf, "w", encoding="utf-8") as f:
            f.write("\n".join(lines))

    def start(self, answers, timeout=10):
        """Starts nginx and waits until answers() is true (an OSError from
        it means not yet); raises AssertionError with nginx's log if it
        exits or does not answer in time."""
        binary = nginx_binary()
        if not binary:
            raise AssertionError("nginx is not installed "
                                 "(scripts/install-deps.sh installs nginx-light)")
        with open(os.path.join(self.dir, "logs", "stderr"), "w") as err:
            self.proc = subprocess.Popen([binary, "-p", self.dir, "-c", self.conf,
                                          "-g", "daemon off;"], stdout=subprocess.DEVNULL,
                                         stderr=err)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise AssertionError("nginx exited: " + self.log())
            try:
                if answers():
                    return
            except OSError:
                pass
            time.sleep(0.05)
        raise AssertionError("nginx did not answer in %d s: %s" % (timeout, self.log()))

    def stop(self):
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGQUIT)
            try:
                self.proc.wait(5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(5)

    def log(self):
        text = ""
        for name in ("stderr", "error.log"):
            path = os.path.join(self.dir, "logs", name)
            if os.path.exists(path):
                with open(path, encoding="utf-8", errors="replace") as f:
                    text += f.read()[-2000:]
        return text or "(no log)"


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def is_sanitized(path):
    """True when the binary was built with AddressSanitizer (slower, more RSS)."""
    try:
        with open(path, "rb") as f:
            return b"__asan_init" in f.read()
    except OSError:
        return False


def find_binary(env, name):
    path = os.environ.get(env)
    if path:
        if not os.access(path, os.X_OK):
            # Named but missing (CTest sets it): a broken build, not a skip.
            raise RuntimeError("%s=%s is not an executable" % (env, path))
        return path
    found = [p for p in glob.glob(os.path.join(REPO, "build*", name)) if os.access(p, os.X_OK)]
    if not found:
        raise unittest.SkipTest("%s not set and no build*/%s in %s" % (env, name, REPO))
    return max(found, key=os.path.getmtime)


def child_pids(pid):
    """The pids of pid's children (its main thread's), [] when gone."""
    try:
        with open("/proc/%d/task/%d/children" % (pid, pid)) as f:
            return [int(k) for k in f.read().split()]
    except OSError:
        return []


class Tmux:
    """A private tmux server for a test: its socket in directory (a
    stack's own, removed with it; tmux -L would leave the socket file in
    /tmp/tmux-UID), no configuration file read."""

    def __init__(self, directory):
        self.sock = os.path.join(directory, "tmux.sock")

    def __call__(self, *args):
        """Runs a tmux command; its output, or CalledProcessError."""
        return subprocess.run(["tmux", "-S", self.sock, "-f", "/dev/null", *args],
                              capture_output=True, text=True, timeout=10, check=True).stdout

    def stop(self):
        """Ends the server, if it runs (for addCleanup)."""
        subprocess.run(["tmux", "-S", self.sock, "kill-server"], capture_output=True,
                       timeout=10)


def cli_binary():
    """The ptygate CLI, or None when it is not built."""
    try:
        return find_binary("PTG_CLI", "ptygate")
    except unittest.SkipTest:
        return None


def mint_token(secret, sub, instance_id, session_id=None, scope="pty:control",
               ttl=300, exp=None, iat=None, extra=None, header=None):
    """An HS256 JWT signed with the secret file's bytes."""
    now = int(time.time())
    claims = {"sub": sub, "iat": now if iat is None else iat,
              "exp": now + ttl if exp is None else exp,
              "instance_id": instance_id, "scope": scope}
    if session_id is not None:
        claims["session_id"] = session_id
    claims.update(extra or {})
    head = header or {"alg": "HS256", "typ": "JWT"}
    signing_input = b64url(json.dumps(head).encode()) + "." + b64url(json.dumps(claims).encode())
    sig = hmac.new(secret, signing_input.encode(), hashlib.sha256).digest()
    return signing_input + "." + b64url(sig)


# ---------------------------------------------------------------- schemas

def load_json(path):
    with open(path, encoding="utf-8") as f:
        return json.load(f)


class FrameValidator:
    """Checks a server frame against the envelope schema, a session frame's
    payload against the extension's SessionFramePayload, and the protocol's
    rules the schemas leave out (ts with milliseconds, ids, sequence presence,
    a2a_error, Keyframe anchor, strict base64)."""

    ENVELOPE = "pty-ws-v1.frames.schema.json"
    EXTENSION = "pty-extensions-v1.frames.schema.json"
    _instance = None

    @classmethod
    def get(cls):
        if cls._instance is None:
            cls._instance = cls()
        return cls._instance

    @staticmethod
    def _check_not_drifted(paths):
        """The repository's copies must match the shared spec when it is
        beside the repository (a clean clone in CI may not have it)."""
        shared = os.path.join(REPO, "..", "shared", "spec", "schemas")
        for p in paths:
            original = os.path.join(shared, os.path.basename(p))
            if os.path.isfile(original) and load_json(original) != load_json(p):
                raise AssertionError("%s differs from %s: update tests/schemas" % (p, original))

    def __init__(self):
        d = os.environ.get("PTG_SCHEMA_DIR") or os.path.join(REPO, "tests", "schemas")
        paths = [os.path.join(d, n) for n in (self.ENVELOPE, self.EXTENSION)]
        missing = [p for p in paths if not os.path.isfile(p)]
        if missing:
            raise AssertionError("JSON Schemas not found: %s (set PTG_SCHEMA_DIR)" % ", ".join(missing))
        self._check_not_drifted(paths)
        env, ext = [load_json(p) for p in paths]
        store = {env["$id"]: env, ext["$id"]: ext}
        checker = jsonschema.FormatChecker()
        checker.checks("date-time")(lambda v: not isinstance(v, str) or bool(DATE_TIME.match(v)))
        checker.checks("uri")(lambda v: not isinstance(v, str) or bool(urllib.parse.urlsplit(v).scheme))
        resolver = RefResolver.from_schema(env, store=store)
        self.envelope = Draft202012Validator(env, resolver=resolver, format_checker=checker)
        self.kinds = {}
        for kind in ("Output", "Resize", "RoleAssigned", "MembershipChanged",
                     "Keyframe", "Closed", "Error"):
            self.kinds[kind] = Draft202012Validator(
                {"$ref": ext["$id"] + "#/$defs/%sFrame" % kind},
                resolver=RefResolver.from_schema(ext, store=store), format_checker=checker)
        self.session_frame = Draft202012Validator(
            {"$ref": ext["$id"] + "#/$defs/SessionFramePayload"},
            resolver=RefResolver.from_schema(ext, store=store), format_checker=checker)

    def errors(self, frame, client_ids=()):
        """Every problem with one server frame, as readable strings."""
        if not isinstance(frame, dict):
            return ["frame is not a JSON object"]
        out = self._schema_errors(frame)
        out += self._spec_errors(frame, client_ids)
        return out

    def _schema_errors(self, frame):
        checked = frame
        payload = frame.get("payload")
        # The protocol says a2a_error is null for REPLAY_OUT_OF_RANGE while the
        # published envelope schema types it "object": the one tolerated
        # conflict between the two; everything else of the frame is checked.
        if (frame.get("op") == "Error" and isinstance(payload, dict)
                and payload.get("code") == "REPLAY_OUT_OF_RANGE" and payload.get("a2a_error", 0) is None):
            checked = dict(frame, payload={k: v for k, v in payload.items() if k != "a2a_error"})
        out = ["schema %s: %s" % ("/".join(map(str, e.absolute_path)) or "/", e.message)
               for e in self.envelope.iter_errors(checked)]
        if frame.get("op") == "pty.session_frame":
            if not self.session_frame.is_valid(payload):
                kind = payload.get("kind") if isinstance(payload, dict) else None
                detail = self.kinds.get(kind)
                msgs = [e.message for e in detail.iter_errors(payload)] if detail else ["unknown kind %r" % kind]
                out += ["SessionFramePayload: %s" % m for m in msgs]
        return out

    def _spec_errors(self, frame, client_ids):
        out = []
        op, payload = frame.get("op"), frame.get("payload")
        if not TS_MILLIS.match(str(frame.get("ts"))):
            out.append("frames: ts %r is not RFC 3339 UTC with milliseconds" % frame.get("ts"))
        fid = frame.get("id")
        if fid not in client_ids and not UUID7.match(str(fid)):
            out.append("frames: server-initiated id %r is not a lower-case UUIDv7" % fid)
        has_seq = "sequence" in frame
        if op == "binding_hello" and frame.get("sequence") != 0:
            out.append("sequences: binding_hello sequence must be 0")
        if op == "pty.session_frame" and not has_seq:
            out.append("sequences: pty.session_frame without sequence")
        if (op in UNSEQUENCED_OPS or str(op).endswith((".Response", ".Accepted"))) and has_seq:
            out.append("sequences: %s must not carry a sequence" % op)
        if op == "Error" and isinstance(payload, dict):
            out += self._a2a_errors(payload)
        if op == "pty.session_frame" and isinstance(payload, dict):
            out += self._payload_errors(frame, payload)
        return out

    @staticmethod
    def _a2a_errors(payload):
        code = payload.get("code")
        if code not in A2A_ERRORS:
            return []
        row, a2a = A2A_ERRORS[code], payload.get("a2a_error", "<absent>")
        if row is None:
            return [] if a2a is None else ["errors: a2a_error must be null for %s" % code]
        if not isinstance(a2a, dict) or a2a.get("type") != row[0] or a2a.get(row[1]) != row[2]:
            return ["errors: a2a_error for %s should be {type: %s, %s: %s}, got %r"
                    % (code, row[0], row[1], row[2], a2a)]
        if "retryable" not in payload:
            return ["errors: Error without retryable"]
        return []

    @staticmethod
    def _payload_errors(frame, payload):
        kind = payload.get("kind")
        out = []
        if kind == "Keyframe" and payload.get("anchor_sequence") != frame.get("sequence"):
            out.append("sequences: Keyframe anchor_sequence %r != its sequence %r"
                       % (payload.get("anchor_sequence"), frame.get("sequence")))
        for field in ("data", "snapshot"):
            if kind in ("Output", "Keyframe") and field in payload:
                try:
                    base64.b64decode(payload[field], validate=True)
                except ValueError:
                    out.append("session frames: %s.%s is not strict base64" % (kind, field))
        return out


# ---------------------------------------------------------------- daemons

class Daemon:
    """One child process, its output in a log file, stopped by PID only."""

    def __init__(self, name, argv, workdir):
        self.name, self.argv = name, argv
        self.log_path = os.path.join(workdir, "%s.log" % name)
        self.proc = None
        self.expected_exit = False

    def start(self):
        env = dict(os.environ)
        env.setdefault("ASAN_OPTIONS", "detect_leaks=1:abort_on_error=1")
        log = open(self.log_path, "ab")
        log.write(("\n=== %s\n" % " ".join(self.argv)).encode())
        log.flush()
        self.proc = subprocess.Popen(self.argv, stdin=subprocess.DEVNULL, stdout=log,
                                     stderr=subprocess.STDOUT, env=env)
        log.close()
        self.expected_exit = False

    @property
    def pid(self):
        return self.proc.pid

    def alive(self):
        return self.proc is not None and self.proc.poll() is None

    def kill(self, sig=signal.SIGKILL):
        """Sends sig now (a deliberate crash): the exit is not a failure."""
        self.expected_exit = True
        self.proc.send_signal(sig)
        self.proc.wait(10)

    def stop(self, timeout=30.0):
        """SIGTERM, bounded wait, then SIGKILL. Returns a problem or None."""
        if self.proc is None:
            return None
        if self.proc.poll() is not None:
            if self.expected_exit:
                return None
            return "%s exited on its own with status %s" % (self.name, self.proc.returncode)
        self.proc.send_signal(signal.SIGTERM)
        try:
            rc = self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(5)
            return "%s ignored SIGTERM for %.0f s (SIGKILLed)" % (self.name, timeout)
        if rc != 0:
            return "%s exited with status %s after SIGTERM" % (self.name, rc)
        return None

    def log_text(self):
        """The whole log, as text ("" before it exists)."""
        try:
            with open(self.log_path, "rb") as f:
                return f.read().decode("utf-8", "replace")
        except OSError:
            return ""

    def log_tail(self, n=40):
        try:
            with open(self.log_path, "rb") as f:
                lines = f.read().decode("utf-8", "replace").splitlines()
        except OSError:
            return ""
        return "\n".join(lines[-n:])

    def rss_kib(self):
        with open("/proc/%d/status" % self.pid) as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
        return 0


class HttpResult:
    def __init__(self, status, headers, body):
        self.status, self.headers, self.body = status, headers, body

    def json(self):
        return json.loads(self.body.decode("utf-8"))

    def header(self, name):
        for k, v in self.headers:
            if k.lower() == name.lower():
                return v
        return None

    def __repr__(self):
        return "HTTP %d %s" % (self.status, self.body[:300])


class Stack:
    """A sidecar and a gateway for one instance, in a private temp dir."""

    def __init__(self, sidecar_args=(), gateway_args=(), instance="inst-e2e", link="unix"):
        """link: "unix" (a socket file) or "tcp" (loopback, a free port)."""
        self.instance = instance
        self.sidecar_bin = find_binary("PTG_SIDECAR", "ptygate-sidecar")
        self.gateway_bin = find_binary("PTG_GATEWAY", "ptygate-gateway")
        self.sanitized = is_sanitized(self.gateway_bin) or is_sanitized(self.sidecar_bin)
        self.dir = tempfile.mkdtemp(prefix="ptg-e2e-")
        self.socket_path = os.path.join(self.dir, "sidecar.sock")
        self.secret = secrets.token_hex(32).encode()
        self.secret_file = os.path.join(self.dir, "hs256.secret")
        with open(self.secret_file, "wb") as f:
            f.write(self.secret)
        os.chmod(self.secret_file, 0o600)
        self.port = free_port()
        # "{dir}" in an argument names this stack's private directory.
        sidecar_args = [str(a).replace("{dir}", self.dir) for a in sidecar_args]
        gateway_args = [str(a).replace("{dir}", self.dir) for a in gateway_args]
        self.link_port = free_port() if link == "tcp" else None
        self.link_addr = ("tcp:127.0.0.1:%d" % self.link_port if self.link_port
                          else "unix:" + self.socket_path)
        self.sidecar = Daemon("sidecar", [
            self.sidecar_bin, "--listen", self.link_addr,
            "--instance-id", instance, *map(str, sidecar_args)], self.dir)
        self.gateway = Daemon("gateway", [
            self.gateway_bin, "--listen", "127.0.0.1:%d" % self.port,
            "--instance", "%s=%s" % (instance, self.link_addr),
            "--hs256-secret-file", self.secret_file, *map(str, gateway_args)], self.dir)
        self.problems = []

    def start(self):
        self.sidecar.start()
        deadline = time.monotonic() + 30
        while not self.link_listening():
            if not self.sidecar.alive():
                raise AssertionError("sidecar exited at start:\n" + self.sidecar.log_tail())
            if time.monotonic() > deadline:
                raise AssertionError("sidecar link not listening:\n" + self.sidecar.log_tail())
            time.sleep(0.02)
        self.start_gateway()
        return self

    def link_listening(self):
        if not self.link_port:
            return os.path.exists(self.socket_path)
        try:
            socket.create_connection(("127.0.0.1", self.link_port), timeout=1).close()
            return True
        except OSError:
            return False

    def start_gateway(self):
        self.gateway.start()
        self.wait_ready()

    def wait_ready(self, timeout=30.0):
        deadline = time.monotonic() + timeout
        last = None
        while time.monotonic() < deadline:
            if not self.gateway.alive():
                raise AssertionError("gateway exited at start (status %s):\n%s"
                                     % (self.gateway.proc.returncode, self.gateway.log_tail()))
            try:
                last = self.http("GET", "/readyz", timeout=1)
                if last.status == 200:
                    return
            except OSError as e:
                last = e
            time.sleep(0.05)
        raise AssertionError("gateway not ready in %.0f s (last: %r):\n%s"
                             % (timeout, last, self.gateway.log_tail()))

    def stop(self):
        """Stops both daemons; returns the problems seen (unexpected exits)."""
        for d in (self.gateway, self.sidecar):
            p = d.stop()
            if p:
                self.problems.append(p + "\n" + d.log_tail(30))
        return self.problems

    def cleanup(self, keep=False):
        if keep or os.environ.get("PTG_E2E_KEEP"):
            sys.stderr.write("e2e: kept %s\n" % self.dir)
            return
        shutil.rmtree(self.dir, ignore_errors=True)

    def logs(self):
        return "\n".join("--- %s (%s)\n%s" % (d.name, d.log_path, d.log_tail())
                         for d in (self.sidecar, self.gateway))

    # -- tokens and HTTP

    def token(self, sub="alice", session_id=None, scope="pty:control sessions tasks", **kw):
        kw.setdefault("instance_id", self.instance)
        return mint_token(self.secret, sub, session_id=session_id, scope=scope, **kw)

    def http(self, method, path, body=None, token=None, headers=None, timeout=10):
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=timeout)
        try:
            hdrs = dict(headers or {})
            if token:
                hdrs["Authorization"] = "Bearer " + token
            data = None
            if body is not None:
                data = json.dumps(body).encode()
                hdrs["Content-Type"] = "application/json"
            conn.request(method, path, body=data, headers=hdrs)
            r = conn.getresponse()
            return HttpResult(r.status, r.getheaders(), r.read())
        finally:
            conn.close()

    def create_session(self, command=None, env=None, cols=120, rows=30,
                       policy="keep_running", ps1="$ ", token=None, **extra):
        """POST a session running /bin/sh (PS1 predictable); returns its id."""
        body = {"command": command or ["/bin/sh"],
                "env": env or {"PS1": ps1, "PATH": "/usr/bin:/bin", "TERM": "xterm-256color", "LC_ALL": "C"},
                "cols": cols, "rows": rows, "policy": policy}
        body.update(extra)
        r = self.http("POST", "/agents/%s/sessions" % self.instance, body,
                      token=token or self.token(sub="e2e-admin", scope="sessions"))
        if r.status != 201:
            raise AssertionError("session create: %r\n%s" % (r, self.logs()))
        doc = r.json()
        if not UUID7.match(doc.get("session_id", "")):
            raise AssertionError("session id %r is not a UUIDv7" % doc.get("session_id"))
        return doc["session_id"]

    def get_session(self, sid):
        r = self.http("GET", "/agents/%s/sessions/%s" % (self.instance, sid),
                      token=self.token(sub="e2e-admin", scope="sessions"))
        if r.status != 200:
            raise AssertionError("session get: %r" % r)
        return r.json()

    def delete_session(self, sid):
        return self.http("DELETE", "/agents/%s/sessions/%s" % (self.instance, sid),
                         token=self.token(sub="e2e-admin", scope="sessions"))

    def attach_path(self, sid, instance=None):
        return "/agents/%s/sessions/%s/attach" % (instance or self.instance, sid)

    def metrics(self):
        """GET /metrics as {name{labels}: value}."""
        r = self.http("GET", "/metrics")
        if r.status != 200:
            raise AssertionError("/metrics: %r" % r)
        out = {}
        for line in r.body.decode().splitlines():
            if line and not line.startswith("#"):
                key, _, value = line.rpartition(" ")
                try:
                    out[key] = float(value)
                except ValueError:
                    pass
        return out

    def connections(self):
        """Client connections the gateway holds, in every role (pending
        too), from /metrics."""
        m = self.metrics()
        return sum(v for k, v in m.items() if k.startswith("ptygate_connections{"))

    def wait_connections(self, n, timeout=DEFAULT_TIMEOUT):
        """Waits until the gateway holds n client connections: a closed
        client's slot and membership are given back once it has seen the
        close, which a loaded machine may take long to do."""
        deadline = time.monotonic() + timeout
        while True:
            held = self.connections()
            if held == n:
                return
            if time.monotonic() > deadline:
                raise AssertionError("the gateway holds %d connections, not %d, after %.0f s"
                                     % (held, n, timeout))
            time.sleep(0.02)

    async def client(self, sid, sub="alice", scope="pty:control", token=None, **kw):
        """A connected Client with binding_hello already checked and read."""
        c = await Client.connect(self, sid, token or self.token(sub=sub, session_id=sid, scope=scope), **kw)
        await c.expect_hello(sid)
        return c


# ---------------------------------------------------------------- clients

class Closed(Exception):
    """The server closed the connection (code None: no close frame)."""

    def __init__(self, code, reason=""):
        super().__init__("connection closed: code=%s reason=%r" % (code, reason))
        self.code, self.reason = code, reason


class FrameStream:
    """What both clients share: validation, recording, bounded waits and
    the joined output text. Subclasses provide _recv_text(timeout)."""

    def __init__(self, label):
        self.label = label
        self.frames = []
        self.sent_ids = set()
        self.output = bytearray()  # every Output's bytes, in arrival order
        self.client_id = None
        self.closed = None

    def _accept(self, text):
        try:
            frame = json.loads(text)
        except ValueError as e:
            raise AssertionError("%s: server sent non-JSON text %r: %s" % (self.label, text[:200], e))
        problems = FrameValidator.get().errors(frame, self.sent_ids)
        if problems:
            raise AssertionError("%s: invalid server frame:\n  %s\n  frame: %s"
                                 % (self.label, "\n  ".join(problems), json.dumps(frame)[:600]))
        self.frames.append(frame)
        p = frame.get("payload") or {}
        if frame["op"] == "pty.session_frame" and p.get("kind") == "Output":
            self.output += base64.b64decode(p["data"])
        if frame["op"] == "pty.session_frame" and p.get("kind") == "RoleAssigned":
            self.client_id = p["client_id"]
        return frame

    def envelope(self, op, payload=None, **fields):
        frame = {"op": op, "id": fields.pop("id", None) or uuid7(), "ts": now_ts(),
                 "payload": {} if payload is None else payload}
        frame.update(fields)
        self.sent_ids.add(frame["id"])
        return frame

    async def recv(self, timeout=DEFAULT_TIMEOUT):
        """The next frame, validated; raises Closed or asyncio.TimeoutError."""
        return self._accept(await self._recv_text(timeout))

    async def recv_until(self, predicate, timeout=DEFAULT_TIMEOUT, what="a matching frame"):
        """Frames until predicate(frame); returns (frame, every frame seen)."""
        deadline = time.monotonic() + timeout
        seen = []
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                raise AssertionError("%s: no %s within %.1f s; saw %s"
                                     % (self.label, what, timeout, summarize(seen)))
            try:
                frame = await self.recv(left)
            except asyncio.TimeoutError:
                continue
            except Closed as e:
                raise AssertionError("%s: closed (%s) waiting for %s; saw %s"
                                     % (self.label, e.code, what, summarize(seen)))
            seen.append(frame)
            if predicate(frame):
                return frame, seen

    async def wait_for(self, op, kind=None, timeout=DEFAULT_TIMEOUT, where=None):
        """Skips frames until one with op (and payload kind); returns it."""
        frame, _ = await self.recv_until(lambda f: matches(f, op, kind) and (where is None or where(f)),
                                         timeout, what=describe(op, kind))
        return frame

    async def expect_frame(self, op, kind=None, timeout=DEFAULT_TIMEOUT):
        """The very next frame must be op (and kind); returns it."""
        try:
            frame = await self.recv(timeout)
        except asyncio.TimeoutError:
            raise AssertionError("%s: expected %s, got nothing in %.1f s"
                                 % (self.label, describe(op, kind), timeout))
        except Closed as e:
            raise AssertionError("%s: expected %s, connection closed (%s)"
                                 % (self.label, describe(op, kind), e.code))
        if not matches(frame, op, kind):
            raise AssertionError("%s: expected %s, got %s" % (self.label, describe(op, kind), summarize([frame])))
        return frame

    async def expect_hello(self, sid):
        hello = await self.expect_frame("binding_hello")
        p = hello["payload"]
        assert p["binding_uri"] == BINDING_URI, p
        assert p["binding_version"] == "1.0.0", p
        assert sorted(p["supported_operations"]) == sorted(A2A_OPERATIONS), p["supported_operations"]
        assert p.get("activated_extensions") == [], p
        assert p["session"]["session_id"] == sid, p
        assert p["session_host"] == SESSION_HOST, p["session_host"]
        self.hello = hello
        return hello

    async def expect_error(self, code, echo_id=None, timeout=DEFAULT_TIMEOUT, skip_output=True):
        """The next non-Output frame must be Error code (echoing echo_id)."""
        frame, _ = await self.recv_until(
            lambda f: not (skip_output and matches(f, "pty.session_frame", "Output")),
            timeout, what="Error %s" % code)
        assert frame["op"] == "Error", "%s: expected Error %s, got %s" % (self.label, code, summarize([frame]))
        assert frame["payload"]["code"] == code, "%s: expected %s, got %s" % (
            self.label, code, frame["payload"])
        if echo_id is not None:
            assert frame["id"] == echo_id, "Error id %r does not echo %r" % (frame["id"], echo_id)
        return frame

    async def expect_close(self, code, timeout=DEFAULT_TIMEOUT, allow=("Output",)):
        """Reads until the close; only frames whose kind (or op) is in allow
        may come first."""
        deadline = time.monotonic() + timeout
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                raise AssertionError("%s: no close %s within %.1f s" % (self.label, code, timeout))
            try:
                frame = await self.recv(left)
            except asyncio.TimeoutError:
                continue
            except Closed as e:
                assert e.code == code, "%s: close code %s, expected %s (reason %r)" % (
                    self.label, e.code, code, e.reason)
                return e
            kind = (frame.get("payload") or {}).get("kind") or frame.get("op")
            assert kind in allow, "%s: unexpected %s before close %s" % (self.label, summarize([frame]), code)

    async def wait_output(self, text, since=0, timeout=DEFAULT_TIMEOUT):
        """Reads until the output after offset since contains text."""
        needle = text.encode() if isinstance(text, str) else text
        scanned = [since]

        def found(_frame=None):
            # Scans only what arrived since the last look: floods stay linear.
            hit = self.output.find(needle, scanned[0]) >= 0
            scanned[0] = max(since, len(self.output) - len(needle) + 1)
            return hit

        if not found():
            await self.recv_until(found, timeout, what="output %r" % text)

    async def quiet(self, seconds):
        """Frames that arrive within seconds (for asserting nothing happens)."""
        got = []
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            try:
                got.append(await self.recv(max(0.01, deadline - time.monotonic())))
            except asyncio.TimeoutError:
                break
        return got

    async def catch_up(self, sequence, timeout=DEFAULT_TIMEOUT):
        """Reads until a frame numbered at least sequence has been seen."""
        if self.last_sequence() < sequence:
            await self.recv_until(lambda f: self.last_sequence() >= sequence, timeout,
                                  what="sequence %d" % sequence)

    def last_sequence(self):
        return max((f["sequence"] for f in self.frames if f["op"] == "pty.session_frame"), default=0)

    # -- the client verbs

    async def send(self, op, payload=None, **fields):
        frame = self.envelope(op, payload, **fields)
        await self.send_text(json.dumps(frame))
        return frame["id"]

    async def join(self, role="controller", cols=None, rows=None, label=None,
                   replay_from=None, extensions=True, service_parameters=None, **fields):
        payload = {"role": role, "client_label": label or self.label}
        if cols is not None:
            payload.update(cols=cols, rows=rows)
        if extensions:
            fields["extensions"] = [EXTENSION_URI]
        if replay_from is not None:
            fields["replay_from"] = replay_from
        if service_parameters is not None:
            fields["service_parameters"] = service_parameters
        return await self.send("pty.join_session", payload, **fields)

    async def join_fresh(self, role="controller", **kw):
        """Join without replay: RoleAssigned, MembershipChanged, Keyframe."""
        await self.join(role, **kw)
        ra = await self.expect_frame("pty.session_frame", "RoleAssigned")
        mc = await self.wait_for("pty.session_frame", "MembershipChanged")
        kf = await self.wait_for("pty.session_frame", "Keyframe")
        return ra, mc, kf

    async def type(self, text):
        return await self.send("pty.session_input", {"data": b64(text)})

    async def run(self, command, marker, timeout=DEFAULT_TIMEOUT, prompt=PROMPT):
        """Types a command line and waits for marker in its output, then for
        the shell's prompt after it: the session is idle again on return."""
        mark = len(self.output)
        await self.type(command + "\n")
        await self.wait_output(marker, since=mark, timeout=timeout)
        if prompt:
            end = self.output.find(marker.encode(), mark) + len(marker)
            await self.wait_output(prompt, since=end, timeout=timeout)


def count_members(value):
    """A session's controllers/observers from GET: a list or a number."""
    return len(value) if isinstance(value, list) else int(value)


def matches(frame, op, kind=None):
    return frame.get("op") == op and (kind is None or (frame.get("payload") or {}).get("kind") == kind)


def describe(op, kind):
    return op + ("/" + kind if kind else "")


def summarize(frames, limit=12):
    parts = []
    for f in frames[-limit:]:
        p = f.get("payload") or {}
        what = f.get("op")
        if p.get("kind"):
            what += "/" + p["kind"]
        if f.get("op") == "Error" or p.get("kind") == "Error":
            what += "(%s)" % p.get("code")
        parts.append("%s#%s" % (what, f.get("sequence", "-")))
    more = "" if len(frames) <= limit else "... %d more, last: " % (len(frames) - limit)
    return "[" + more + ", ".join(parts) + "]"


class Client(FrameStream):
    """A websockets (asyncio) client on the attach URL."""

    def __init__(self, ws, label):
        super().__init__(label)
        self.ws = ws

    @classmethod
    async def connect(cls, stack, sid, token, auth="header", subprotocols=None,
                      label="alice@laptop", instance=None, open_timeout=DEFAULT_TIMEOUT,
                      compression=None):
        """compression="deflate" offers permessage-deflate (websockets'
        default offer); None, the default, offers no extension."""
        headers = {}
        protos = list(subprotocols or [SUBPROTOCOL])
        if auth == "header":
            headers["Authorization"] = "Bearer " + token
        elif auth == "subprotocol":
            protos.append("bearer." + b64url(token.encode()))
        uri = "ws://127.0.0.1:%d%s" % (stack.port, stack.attach_path(sid, instance))
        ws = await websockets.connect(uri, subprotocols=protos, extra_headers=headers,
                                      compression=compression, ping_interval=None, max_size=16 << 20,
                                      max_queue=None, open_timeout=open_timeout, close_timeout=2)
        return cls(ws, label)

    async def _recv_text(self, timeout):
        if self.closed:
            raise self.closed
        try:
            msg = await asyncio.wait_for(self.ws.recv(), timeout)
        except websockets.ConnectionClosed as e:
            code = e.rcvd.code if e.rcvd else None
            self.closed = Closed(code, e.rcvd.reason if e.rcvd else "")
            raise self.closed
        if isinstance(msg, bytes):
            raise AssertionError("%s: server sent a binary frame (text frames only)" % self.label)
        return msg

    async def send_text(self, text):
        await self.ws.send(text)

    async def send_bytes(self, data):
        await self.ws.send(data)

    async def close(self):
        try:
            await asyncio.wait_for(self.ws.close(), 1)
        except Exception:
            pass


class RawWs(FrameStream):
    """A WebSocket client over a plain blocking socket: it answers pings only
    when told to, and reads only when asked."""

    def __init__(self, sock, leftover, label):
        super().__init__(label)
        self.sock, self.buf = sock, leftover
        self.answer_pings = True
        self.response = None

    @staticmethod
    def handshake(port, path, headers=None, protocols=SUBPROTOCOL, rcvbuf=None, timeout=DEFAULT_TIMEOUT,
                  source=None, host=None, sock=None):
        """Sends an upgrade (from the loopback address source, with the Host
        header host when given; over sock when given, connected already,
        a TLS one say); returns (HttpResult, socket or None, leftover), or
        (None, None, b"") when the gateway closed the connection without an
        answer (refused at accept)."""
        if sock is None:
            sock = socket.socket()
            if rcvbuf:
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)
            sock.settimeout(timeout)
            if source:
                sock.bind((source, 0))
            sock.connect(("127.0.0.1", port))
        lines = ["GET %s HTTP/1.1" % path, "Host: " + (host or "127.0.0.1:%d" % port),
                 "Upgrade: websocket", "Connection: Upgrade", "Sec-WebSocket-Version: 13",
                 "Sec-WebSocket-Key: " + base64.b64encode(os.urandom(16)).decode()]
        if protocols:
            lines.append("Sec-WebSocket-Protocol: " + protocols)
        lines += ["%s: %s" % kv for kv in (headers or {}).items()]
        data = b""
        try:
            sock.sendall(("\r\n".join(lines) + "\r\n\r\n").encode())
            while b"\r\n\r\n" not in data:
                chunk = sock.recv(65536)
                if not chunk:
                    break
                data += chunk
        except (ConnectionResetError, BrokenPipeError):
            pass
        if not data:
            sock.close()
            return None, None, b""
        head, _, rest = data.partition(b"\r\n\r\n")
        status_line, *header_lines = head.decode("latin-1").split("\r\n")
        status = int(status_line.split()[1])
        hdrs = [tuple(x.strip() for x in h.split(":", 1)) for h in header_lines if ":" in h]
        result = HttpResult(status, hdrs, b"")
        if status == 101:
            return result, sock, rest
        length = int(result.header("Content-Length") or 0)
        while len(rest) < length:
            chunk = sock.recv(65536)
            if not chunk:
                break
            rest += chunk
        result.body = rest
        sock.close()
        return result, None, b""

    @classmethod
    def connect(cls, stack, sid, token, label="raw", rcvbuf=None):
        result, sock, rest = cls.handshake(stack.port, stack.attach_path(sid),
                                           {"Authorization": "Bearer " + token}, rcvbuf=rcvbuf)
        if sock is None:
            raise AssertionError("raw upgrade refused: %r" % result)
        assert result.header("Sec-WebSocket-Protocol") == SUBPROTOCOL, result.headers
        raw = cls(sock, rest, label)
        raw.response = result
        return raw

    def send_frame(self, opcode, payload, fin=True):
        head = bytes([(0x80 if fin else 0) | opcode])
        n = len(payload)
        if n < 126:
            head += bytes([0x80 | n])
        elif n < 65536:
            head += bytes([0x80 | 126]) + struct.pack(">H", n)
        else:
            head += bytes([0x80 | 127]) + struct.pack(">Q", n)
        mask = os.urandom(4)
        masked = bytes(b ^ mask[i % 4] for i, b in enumerate(payload)) if n < 4096 else _mask(payload, mask)
        self.sock.sendall(head + mask + masked)

    async def send_text(self, text):
        self.send_frame(0x1, text.encode())

    def _need(self, n, deadline):
        while len(self.buf) < n:
            left = deadline - time.monotonic()
            if left <= 0:
                raise asyncio.TimeoutError()
            self.sock.settimeout(left)
            try:
                chunk = self.sock.recv(1 << 20)
            except socket.timeout:
                raise asyncio.TimeoutError()
            except OSError:
                chunk = b""
            if not chunk:
                self.closed = Closed(None)
                raise self.closed
            self.buf += chunk

    def read_frame(self, timeout):
        """One WebSocket frame: (fin, opcode, payload)."""
        deadline = time.monotonic() + timeout
        self._need(2, deadline)
        b0, b1 = self.buf[0], self.buf[1]
        n, off = b1 & 0x7F, 2
        if n == 126:
            self._need(4, deadline)
            n, off = struct.unpack(">H", self.buf[2:4])[0], 4
        elif n == 127:
            self._need(10, deadline)
            n, off = struct.unpack(">Q", self.buf[2:10])[0], 10
        if b1 & 0x80:
            raise AssertionError("%s: server frame is masked" % self.label)
        self._need(off + n, deadline)
        payload, self.buf = self.buf[off:off + n], self.buf[off + n:]
        return bool(b0 & 0x80), b0 & 0x0F, payload

    async def _recv_text(self, timeout):
        if self.closed:
            raise self.closed
        deadline = time.monotonic() + timeout
        parts = []
        while True:
            fin, opcode, payload = self.read_frame(max(0.0, deadline - time.monotonic()))
            if opcode == 0x9:
                if self.answer_pings:
                    self.send_frame(0xA, payload)
                continue
            if opcode == 0xA:
                continue
            if opcode == 0x8:
                code = struct.unpack(">H", payload[:2])[0] if len(payload) >= 2 else None
                self.closed = Closed(code, payload[2:].decode("utf-8", "replace"))
                raise self.closed
            if opcode == 0x2:
                raise AssertionError("%s: server sent a binary frame" % self.label)
            parts.append(payload)
            if fin:
                return b"".join(parts).decode("utf-8")

    def send_close(self, code=1000):
        self.send_frame(0x8, struct.pack(">H", code))

    def wait_eof(self, timeout):
        """True when the server closes the TCP connection within timeout."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            self.sock.settimeout(max(0.01, deadline - time.monotonic()))
            try:
                if not self.sock.recv(65536):
                    return True
            except socket.timeout:
                return False
            except ConnectionError:
                return True
        return False

    def close(self):
        try:
            self.sock.close()
        except OSError:
            pass


def _mask(payload, mask):
    n = len(payload)
    key = int.from_bytes((mask * (n // 4 + 1))[:n], "big")
    return (int.from_bytes(payload, "big") ^ key).to_bytes(n, "big")


class DialStack(Stack):
    """Dial-out mode: a gateway with --link-listen and --link-key
    and no instance configured, and a sidecar with --dial and an instance
    credential minted by the CLI. Its extra gateways (add_gateway) listen
    for the same sidecar; the sidecar dials every one."""

    LINK_KID = "k1"

    def __init__(self, sidecar_args=(), gateway_args=(), instance="inst-dial", gateways=1,
                 ttl="1h"):
        super().__init__(instance=instance)
        self.cli = cli_binary()
        if not self.cli:
            raise unittest.SkipTest("the ptygate CLI is not built")
        self.link_key = os.path.join(self.dir, "link.key")
        self.link_pub = os.path.join(self.dir, "link.pub")
        self.token_file = os.path.join(self.dir, "instance.token")
        subprocess.run([self.cli, "token", "keygen", "--out-private", self.link_key,
                        "--out-public", self.link_pub], check=True, capture_output=True)
        self.write_credential(self.mint_credential(ttl=ttl))
        self.gateways, self.link_socks = [], []
        for i in range(gateways):
            self.add_gateway(gateway_args, first=(i == 0))
        sidecar_args = [str(a).replace("{dir}", self.dir) for a in sidecar_args]
        self.sidecar = Daemon("sidecar", [
            self.sidecar_bin, "--instance-token-file", self.token_file,
            *sum((["--dial", "unix:" + s] for s in self.link_socks), []),
            *map(str, sidecar_args)], self.dir)
        self.sidecar_started = None

    def add_gateway(self, gateway_args, first=False):
        n = len(self.gateways)
        sock = os.path.join(self.dir, "links%d.sock" % n)
        port = self.port if first else free_port()
        gateway_args = [str(a).replace("{dir}", self.dir) for a in gateway_args]
        d = Daemon("gateway" if first else "gateway%d" % n, [
            self.gateway_bin, "--listen", "127.0.0.1:%d" % port,
            "--link-listen", "unix:" + sock,
            "--link-key", "%s=%s" % (self.LINK_KID, self.link_pub),
            "--hs256-secret-file", self.secret_file, *gateway_args], self.dir)
        d.port = port
        self.gateways.append(d)
        self.link_socks.append(sock)
        if first:
            self.gateway = d
        return d

    def mint_credential(self, instance=None, ttl="1h", key=None, kid=None, audience="ptygate-link"):
        r = subprocess.run([self.cli, "token", "mint", "--audience", audience,
                            "--instance", instance or self.instance,
                            "--ed25519-key", key or self.link_key,
                            "--kid", kid or self.LINK_KID, "--ttl", ttl],
                           check=True, capture_output=True, text=True)
        return r.stdout.strip()

    def write_credential(self, token):
        """Replaces the credential file atomically, as a platform renews it."""
        tmp = self.token_file + ".tmp"
        with open(tmp, "w") as f:
            f.write(token + "\n")
        os.chmod(tmp, 0o600)
        os.replace(tmp, self.token_file)

    def start(self):
        for i, d in enumerate(self.gateways):
            d.start()
            self.wait_listening(self.link_socks[i], d)
        self.start_sidecar()
        self.wait_ready()
        return self

    def start_sidecar(self):
        self.sidecar_started = time.monotonic()
        self.sidecar.start()

    def start_gateway(self):
        self.gateway.start()
        self.wait_listening(self.link_socks[0], self.gateway)
        self.wait_ready()

    @staticmethod
    def wait_listening(path, daemon, timeout=30.0):
        deadline = time.monotonic() + timeout
        while not os.path.exists(path):
            if not daemon.alive():
                raise AssertionError("%s exited at start:\n%s" % (daemon.name, daemon.log_tail()))
            if time.monotonic() > deadline:
                raise AssertionError("%s: no link socket:\n%s" % (daemon.name, daemon.log_tail()))
            time.sleep(0.02)

    def http_on(self, gw, method, path, **kw):
        saved = self.port
        self.port = gw.port
        try:
            return self.http(method, path, **kw)
        finally:
            self.port = saved

    def readyz(self, gw=None):
        r = self.http_on(gw or self.gateway, "GET", "/readyz")
        return r.json().get("instances", {})

    def refusals(self, reason):
        return self.metrics().get('ptygate_link_refusals_total{reason="%s"}' % reason, 0)

    def link_fd(self, index=0):
        """A raw connection to a link listener, as a fake sidecar opens one."""
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.settimeout(DEFAULT_TIMEOUT)
        s.connect(self.link_socks[index])
        return s

    def stop(self):
        for d in self.gateways + [self.sidecar]:
            p = d.stop()
            if p:
                self.problems.append(p + "\n" + d.log_tail(30))
        return self.problems

    def logs(self):
        return "\n".join("--- %s (%s)\n%s" % (d.name, d.log_path, d.log_tail())
                         for d in [self.sidecar] + self.gateways)


def _varint(n):
    out = b""
    while True:
        b = n & 0x7F
        n >>= 7
        out += bytes([b | (0x80 if n else 0)])
        if not n:
            return out


def _pb_bytes(field, data):
    """One length-delimited protobuf field, by hand (no generated code)."""
    return _varint(field << 3 | 2) + _varint(len(data)) + data


def link_message(field, payload):
    """One framed LinkMessage holding the sub-message bytes payload in field."""
    body = _pb_bytes(field, payload)
    return struct.pack(">I", len(body)) + body


def link_credential(token):
    """The framed LinkCredential {token} a sidecar opens its link with."""
    return link_message(30, _pb_bytes(1, token.encode() if isinstance(token, str) else token))


def read_link_refused(sock, timeout=DEFAULT_TIMEOUT):
    """Reads until EOF; returns the reason of the LinkRefused the gateway
    sent first (or None when it sent none)."""
    sock.settimeout(timeout)
    data = b""
    while True:
        chunk = sock.recv(4096)
        if not chunk:
            break
        data += chunk
    if len(data) < 4:
        return None
    body = data[4:4 + struct.unpack(">I", data[:4])[0]]
    # LinkMessage field 31 (0xfa 0x01), length, then LinkRefused field 1.
    if body[:2] != b"\xfa\x01":
        return None
    inner = body[3:]
    return inner[2:2 + inner[1]].decode()


class FileStack:
    """A gateway with --instances-file and an extra sidecar it may name."""

    def __init__(self, initial):
        self.holder = Stack()
        self.file = os.path.join(self.holder.dir, "instances")
        self.extra_sock = os.path.join(self.holder.dir, "extra.sock")
        self.write(initial.format(sock=self.extra_sock))
        self.stack = Stack(gateway_args=["--instances-file", self.file])
        self.extra = Daemon("sidecar-extra", [self.stack.sidecar_bin, "--listen",
                                              "unix:" + self.extra_sock, "--instance-id",
                                              "inst-extra"], self.stack.dir)

    def start(self):
        self.extra.start()
        deadline = time.monotonic() + 30
        while not os.path.exists(self.extra_sock) and time.monotonic() < deadline:
            time.sleep(0.02)
        self.stack.start()

    def stop(self):
        problems = self.stack.stop()
        p = self.extra.stop()
        if p:
            problems.append(p)
        self.stack.cleanup(keep=bool(problems))
        self.holder.cleanup()
        return problems

    def write(self, text):
        tmp = self.file + ".tmp"
        with open(tmp, "w", encoding="utf-8") as f:
            f.write(text)
        os.replace(tmp, self.file)

    def reload(self, text):
        self.write(text.format(sock=self.extra_sock))
        os.kill(self.stack.gateway.pid, signal.SIGHUP)

    def ready(self):
        return self.stack.http("GET", "/readyz").json().get("instances", {})

    def wait_for(self, predicate, what, timeout=10):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if predicate():
                return
            time.sleep(0.05)
        raise AssertionError("%s within %d s; readyz: %s\n%s"
                             % (what, timeout, self.ready(), self.stack.logs()))


# ---------------------------------------------------------------- test base


def pty_read(fd, want, timeout):
    """Reads the pty fd until want (bytes) comes (True), or with want None
    until it is quiet for 0.3 s; at most timeout seconds."""
    end, quiet = time.monotonic() + timeout, time.monotonic() + 0.3
    while time.monotonic() < min(end, quiet if want is None else end):
        r, _, _ = select.select([fd], [], [], 0.05)
        if not r:
            continue
        try:
            got = os.read(fd, 65536)
        except OSError:
            return False
        if want is not None and want in got:
            return True
        quiet = time.monotonic() + 0.3
    return False

def stop_stack(stack):
    """The end of a class's Stack: stopped, its directory removed, or kept
    and an AssertionError raised when a daemon exited badly."""
    problems = stack.stop()
    stack.cleanup(keep=bool(problems))
    if problems:
        raise AssertionError("daemon problems:\n" + "\n".join(problems))


class E2ETestCase(unittest.IsolatedAsyncioTestCase):
    """Starts a Stack per class (override SIDECAR_ARGS / GATEWAY_ARGS), stops
    it at the end, and fails when a daemon exited badly. With
    SHARED_SESSION, cls.sid is one session created for the whole class.
    Clients opened with self.connect() are closed after each test."""

    SIDECAR_ARGS = ()
    GATEWAY_ARGS = ()
    SHARED_SESSION = False
    stack = None
    sid = None

    @classmethod
    def setUpClass(cls):
        FrameValidator.get()  # a missing schema fails loudly, before any daemon
        cls.stack = cls.make_stack()
        try:
            cls.stack.start()
            if cls.SHARED_SESSION:
                cls.sid = cls.stack.create_session()
        except BaseException:
            cls.stack.stop()
            sys.stderr.write(cls.stack.logs() + "\n")
            cls.stack.cleanup()
            raise

    @classmethod
    def tearDownClass(cls):
        stop_stack(cls.stack)

    @classmethod
    def make_stack(cls):
        """The class's Stack, not started (DialStack for dial-out mode)."""
        return Stack(cls.SIDECAR_ARGS, cls.GATEWAY_ARGS)

    def setUp(self):
        self.clients = []
        self.addCleanup(self._dump_logs_on_failure)

    async def asyncSetUp(self):
        # RawWs reads block the loop on purpose; do not warn about it.
        asyncio.get_running_loop().slow_callback_duration = 30

    async def asyncTearDown(self):
        for c in self.clients:
            if isinstance(c, Client):
                await c.close()
            else:
                c.close()

    def _dump_logs_on_failure(self):
        outcome = getattr(self, "_outcome", None)
        if outcome is not None and not getattr(outcome, "success", True):
            sys.stderr.write("\n=== daemon logs for %s\n%s\n" % (self.id(), self.stack.logs()))

    async def connect(self, sid, sub="alice", scope="pty:control", label=None, **kw):
        c = await self.stack.client(sid, sub=sub, scope=scope, label=label or sub, **kw)
        self.clients.append(c)
        return c

    def raw(self, sid, sub="raw", scope="pty:observe", rcvbuf=None):
        r = RawWs.connect(self.stack, sid, self.stack.token(sub=sub, session_id=sid, scope=scope),
                          label=sub, rcvbuf=rcvbuf)
        self.clients.append(r)
        return r

    async def session_with(self, role="controller", sub="alice", **create):
        """A new session and a client joined to it (fresh flow)."""
        sid = self.stack.create_session(**create)
        c = await self.connect(sid, sub=sub, scope="pty:control" if role == "controller" else "pty:observe")
        await c.join_fresh(role)
        return sid, c

    async def in_thread(self, fn, *args):
        return await asyncio.get_running_loop().run_in_executor(None, fn, *args)


def main():
    unittest.main(verbosity=2)
