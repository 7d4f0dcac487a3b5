"""A three-member etcd cluster on loopback ports for the fleet registry's
tests: each member a process of Debian's etcd in a private temp dir,
started on free ports, waited for until the cluster answers, stopped (or
killed) by PID and started again on its data. Skips a test with a clear
message when etcd is not installed. Its JSON API helpers read the keys
the gateways write (base64 keys and values, as etcd's v3 gateway has
them)."""
import base64
import json
import os
import shutil
import signal
import ssl
import subprocess
import tempfile
import time
import unittest
import urllib.request

from harness import Daemon, free_port

ETCD = shutil.which("etcd") or "/usr/bin/etcd"


# A failure guard, not a measurement (a loaded two-core machine, ASan).
WAIT_BOUND = 30.0


def wait_until(predicate, what, timeout=WAIT_BOUND, logs=lambda: ""):
    """predicate's first true value, polled every 50 ms; an AssertionError
    naming what (and logs()) when timeout passes first."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.05)
    raise AssertionError("%s within %.0f s\n%s" % (what, timeout, logs()))


def b64(s):
    return base64.b64encode(s.encode()).decode()


def prefix_end(prefix):
    b = bytearray(prefix.encode())
    b[-1] += 1
    return bytes(b).decode()


def make_tls(d):
    """A CA, a server certificate for 127.0.0.1 and a client certificate
    (ECDSA P-256, a day long) in d, with openssl: {name: path}."""
    def run(*args):
        subprocess.run(["openssl", *args], check=True, cwd=d, timeout=60,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

    ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]
    run("req", "-x509", *ec, "-keyout", "ca.key", "-out", "ca.pem", "-days", "1",
        "-subj", "/CN=ptygate-test-ca")
    # etcd's own JSON gateway reaches its gRPC side with the server
    # certificate: it must be good for client authentication too.
    for name, usage in (("server", "serverAuth,clientAuth"), ("client", "clientAuth")):
        with open(os.path.join(d, name + ".ext"), "w") as f:
            f.write("subjectAltName=IP:127.0.0.1\nextendedKeyUsage=%s\n" % usage)
        run("req", *ec, "-keyout", name + ".key", "-out", name + ".csr", "-subj", "/CN=" + name)
        run("x509", "-req", "-in", name + ".csr", "-CA", "ca.pem", "-CAkey", "ca.key",
            "-CAcreateserial", "-out", name + ".pem", "-days", "1", "-extfile", name + ".ext")
    return {n: os.path.join(d, n) for n in ("ca.pem", "server.pem", "server.key",
                                            "client.pem", "client.key")}


class EtcdCluster:
    def __init__(self, members=3, tls=False):
        """tls: clients must speak TLS with a client certificate the
        cluster's own CA signed (self.tls names the files)."""
        if not os.access(ETCD, os.X_OK):
            raise unittest.SkipTest("etcd is not installed (Debian's etcd-server): "
                                    "the fleet registry's tests need it")
        self.dir = tempfile.mkdtemp(prefix="ptg-etcd-")
        self.tls = make_tls(self.dir) if tls else None
        self.scheme = "https" if tls else "http"
        tls_args = ["--cert-file", self.tls["server.pem"], "--key-file", self.tls["server.key"],
                    "--trusted-ca-file", self.tls["ca.pem"],
                    "--client-cert-auth"] if tls else []
        self.names = ["m%d" % i for i in range(members)]
        self.client = [free_port() for _ in self.names]
        self.peer = [free_port() for _ in self.names]
        cluster = ",".join("%s=http://127.0.0.1:%d" % (n, p)
                           for n, p in zip(self.names, self.peer))
        token = "ptg-" + os.path.basename(self.dir)
        self.members = []
        for i, name in enumerate(self.names):
            self.members.append(Daemon("etcd-" + name, [
                ETCD, "--name", name, "--data-dir", os.path.join(self.dir, name),
                "--listen-client-urls", self.url(i), "--advertise-client-urls", self.url(i),
                "--listen-peer-urls", "http://127.0.0.1:%d" % self.peer[i],
                "--initial-advertise-peer-urls", "http://127.0.0.1:%d" % self.peer[i],
                "--initial-cluster", cluster, "--initial-cluster-token", token,
                "--initial-cluster-state", "new", "--log-level", "warn", *tls_args], self.dir))

    def url(self, i):
        return "%s://127.0.0.1:%d" % (self.scheme, self.client[i])

    def endpoints(self):
        return ",".join(self.url(i) for i in range(len(self.names)))

    def start(self, timeout=60.0):
        for m in self.members:
            m.start()
        self.wait_healthy(timeout)
        return self

    def start_member(self, i):
        self.members[i].start()

    def kill_member(self, i):
        self.members[i].kill(signal.SIGKILL)

    def stop_all(self):
        self.stop()

    def alive_urls(self):
        return [self.url(i) for i, m in enumerate(self.members) if m.alive()]

    def wait_healthy(self, timeout=60.0):
        """Until a write goes through (a leader is elected)."""
        deadline = time.monotonic() + timeout
        last = None
        while time.monotonic() < deadline:
            for url in self.alive_urls():
                try:
                    self.call("/v3/kv/put", {"key": b64("/health-probe"), "value": ""}, url)
                    return
                except OSError as e:
                    last = e
            time.sleep(0.1)
        raise AssertionError("etcd cluster not healthy in %.0f s (last: %r)\n%s"
                             % (timeout, last, self.logs()))

    def enable_auth(self, user, password):
        """A root user with the root role, then authentication on (etcdctl,
        Debian's etcd-client)."""
        etcdctl = shutil.which("etcdctl")
        if not etcdctl:
            raise unittest.SkipTest("etcdctl is not installed (Debian's etcd-client)")
        env = dict(os.environ, ETCDCTL_API="3")
        for args in (["user", "add", "%s:%s" % (user, password)],
                     ["user", "grant-role", user, "root"], ["auth", "enable"]):
            subprocess.run([etcdctl, "--endpoints", self.endpoints(), *args], env=env,
                           check=True, stdout=subprocess.DEVNULL, timeout=30)

    def token(self, auth):
        return self.call("/v3/auth/authenticate",
                         {"name": auth[0], "password": auth[1]})["token"]

    def call(self, path, body, url=None, timeout=5, token=None):
        urls = [url] if url else self.alive_urls()
        last = None
        headers = {"Content-Type": "application/json"}
        if token:
            headers["Authorization"] = token
        for u in urls:
            req = urllib.request.Request(u + path, data=json.dumps(body).encode(),
                                         headers=headers)
            ctx = None
            if self.tls:
                ctx = ssl.create_default_context(cafile=self.tls["ca.pem"])
                ctx.load_cert_chain(self.tls["client.pem"], self.tls["client.key"])
            try:
                with urllib.request.urlopen(req, timeout=timeout, context=ctx) as r:
                    return json.loads(r.read())
            except OSError as e:
                last = e
        raise last or OSError("no etcd member is running")

    def get_prefix(self, prefix, auth=None):
        """{key: (value as JSON or text, lease)} of the keys under prefix;
        auth: (user, password) when authentication is on."""
        out = {}
        reply = self.call("/v3/kv/range", {"key": b64(prefix),
                                            "range_end": b64(prefix_end(prefix))},
                          token=self.token(auth) if auth else None)
        for kv in reply.get("kvs", []):
            value = base64.b64decode(kv.get("value", "")).decode()
            try:
                value = json.loads(value)
            except ValueError:
                pass
            out[base64.b64decode(kv["key"]).decode()] = (value, int(kv.get("lease", 0)))
        return out

    def put(self, key, value, lease=0):
        body = {"key": b64(key), "value": b64(value)}
        if lease:
            body["lease"] = str(lease)
        self.call("/v3/kv/put", body)

    def grant(self, ttl):
        return int(self.call("/v3/lease/grant", {"TTL": str(ttl)})["ID"])

    def logs(self):
        return "\n".join("--- %s\n%s" % (m.name, m.log_tail(15)) for m in self.members)

    def stop(self):
        """SIGTERM to each member still running, a bounded wait, then
        SIGKILL (etcd's exit status after SIGTERM is the signal's)."""
        for m in self.members:
            if not m.alive():
                continue
            m.expected_exit = True
            m.proc.send_signal(signal.SIGTERM)
            try:
                m.proc.wait(20)
            except subprocess.TimeoutExpired:
                m.proc.kill()
                m.proc.wait(5)
        return []

    def cleanup(self):
        if os.environ.get("PTG_E2E_KEEP"):
            return
        shutil.rmtree(self.dir, ignore_errors=True)
