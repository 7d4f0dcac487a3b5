"""The Debian packages (cpack -G DEB): builds them from the build tree into
a temporary directory, extracts each with dpkg-deb -x into a temporary
root (nothing is installed on this machine) and checks their files,
modes, control files, dependencies, units and binaries: each unit passes
`systemd-analyze verify` and stays under its `systemd-analyze security`
exposure bound, and both units' commands run from that root as their
units would run them (user, capability bounding set, no new privileges,
umask, state directory, credentials: `setpriv`, no systemd needed): they
start, the gateway serves a session of the sidecar, and that session
cannot read the sidecar's state key or state.

Environment (tests/CMake via the top-level CMakeLists.txt):
PTG_BUILD_DIR, PTG_SOURCE_DIR, PTG_VERSION."""
import gzip
import json
import os
import pwd
import re
import shlex
import shutil
import socket
import ssl
import stat
import subprocess
import sys
import tempfile
import time
import unittest
import http.client

BUILD = os.environ["PTG_BUILD_DIR"]
SOURCE = os.environ["PTG_SOURCE_DIR"]
VERSION = os.environ["PTG_VERSION"]
# `systemd-analyze security` exposure (0 to 10) each unit must stay under.
EXPOSURE_MAX = {"ptygate-sidecar.service": 5.0, "ptygate-gateway.service": 3.0}
WEB_BUILT = os.path.exists(os.path.join(SOURCE, "web/dist/index.html"))

# path -> mode, for each package; directories end with "/".
SIDECAR_FILES = {
    "usr/bin/ptygate-sidecar": 0o755,
    "usr/share/man/man8/ptygate-sidecar.8.gz": 0o644,
    "usr/share/man/man5/ptygate-sidecar.conf.5.gz": 0o644,
    "usr/lib/systemd/system/ptygate-sidecar.service": 0o644,
    "etc/ptygate/sidecar.conf": 0o644,
    "var/lib/ptygate/": 0o700,
}
GATEWAY_FILES = {
    "usr/bin/ptygate-gateway": 0o755,
    "usr/bin/ptygate": 0o755,
    "usr/share/man/man8/ptygate-gateway.8.gz": 0o644,
    "usr/share/man/man5/ptygate-gateway.conf.5.gz": 0o644,
    "usr/share/man/man1/ptygate.1.gz": 0o644,
    "usr/lib/systemd/system/ptygate-gateway.service": 0o644,
    "etc/ptygate/gateway.conf": 0o644,
    "etc/ptygate/instances": 0o644,
    "usr/share/ptygate/grafana/ptygate-dashboard.json": 0o644,
}
if WEB_BUILT:
    GATEWAY_FILES["usr/share/ptygate/web/index.html"] = 0o644


# A guard against a hung command, not a speed check: cpack strips and
# compresses the ASan build's large binaries, which took over 120 s beside
# a CPU hog and other builds.
GUARD_S = 600


def run(*cmd, **kw):
    return subprocess.run(cmd, check=True, capture_output=True, text=True,
                          timeout=GUARD_S, **kw).stdout


def exposure(unit_path):
    """The overall exposure `systemd-analyze security` gives the unit file."""
    res = subprocess.run(["systemd-analyze", "security", "--offline=yes", "--no-pager",
                          unit_path], capture_output=True, text=True, timeout=GUARD_S)
    m = re.search(r"Overall exposure level for \S+: (\d+\.\d+)", res.stdout)
    assert m, res.stdout + res.stderr
    print("%s: exposure %s" % (os.path.basename(unit_path), m.group(1)))
    return float(m.group(1))


def service_settings(text):
    """The [Service] section as {key: [values]} (a key may repeat)."""
    out, section = {}, None
    for line in text.splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        if line.startswith("["):
            section = line
        elif section == "[Service]" and "=" in line:
            key, value = line.split("=", 1)
            out.setdefault(key, []).append(value)
    return out


def as_unit(svc, argv, uid=None):
    """argv run as the unit's settings would run it: its user (uid; None:
    root), its capability bounding set, no new privileges, its umask."""
    setpriv = ["setpriv", "--inh-caps=-all"]
    if "CapabilityBoundingSet" in svc:  # an allow list ("": none)
        caps = " ".join(svc["CapabilityBoundingSet"]).split()
        assert not any(c.startswith("~") for c in caps), caps
        setpriv.append("--bounding-set=-all" + "".join(",+" + c.lower()[4:] for c in caps))
    if uid is not None:
        setpriv += ["--reuid=%d" % uid, "--regid=%d" % uid, "--clear-groups"]
    if svc.get("NoNewPrivileges") == ["yes"]:
        setpriv.append("--no-new-privs")
    umask = svc.get("UMask", ["0022"])[-1]
    return setpriv + ["--", "/bin/sh", "-c", 'umask %s && exec "$@"' % umask, "sh", *argv]


def stand_in(user):
    """The passwd entry of user, or of nobody where this machine has no
    such user (the sandbox image's agent)."""
    try:
        return pwd.getpwnam(user)
    except KeyError:
        return pwd.getpwnam("nobody")


def in_root(root, argv):
    """ExecStart's words with the package's paths moved into root."""
    return [root + a if re.match(r"/(usr|etc|var|run)/", a) else a for a in argv]


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def https(port, method, path, token=None, body=None):
    """One request to the gateway's TLS listener (its self-signed test
    certificate is not verified); returns the status and the body."""
    ctx = ssl.create_default_context()
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    conn = http.client.HTTPSConnection("127.0.0.1", port, timeout=10, context=ctx)
    try:
        headers = {"Authorization": "Bearer " + token} if token else {}
        data = None
        if body is not None:
            data = json.dumps(body).encode()
            headers["Content-Type"] = "application/json"
        conn.request(method, path, body=data, headers=headers)
        r = conn.getresponse()
        return r.status, r.read().decode(errors="replace")
    finally:
        conn.close()


class Packages(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="ptg-pkg-")
        # -B: the packages and CPack's staging go to the temp dir, not the
        # build tree (and two test runs cannot collide).
        run("cpack", "-G", "DEB", "--config",
            os.path.join(BUILD, "CPackConfig.cmake"), "-B", cls.tmp)
        cls.debs = {}
        for name in ("ptygate-sidecar", "ptygate-gateway"):
            found = [f for f in os.listdir(cls.tmp)
                     if re.fullmatch(rf"{name}_{re.escape(VERSION)}_\w+\.deb", f)]
            assert len(found) == 1, (name, os.listdir(cls.tmp))
            cls.debs[name] = os.path.join(cls.tmp, found[0])

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def extract(self, name):
        root = tempfile.mkdtemp(prefix="root-", dir=self.tmp)
        run("dpkg-deb", "-x", self.debs[name], root)
        return root

    def control(self, name):
        ctl = tempfile.mkdtemp(prefix="ctl-", dir=self.tmp)
        run("dpkg-deb", "-e", self.debs[name], ctl)
        return ctl

    def field(self, name, key):
        return run("dpkg-deb", "-f", self.debs[name], key).strip()

    def check_files_modes(self, root, files):
        for path, mode in files.items():
            full = os.path.join(root, path)
            self.assertTrue(os.path.lexists(full), f"missing {path}")
            st = os.lstat(full)
            self.assertEqual(stat.S_ISDIR(st.st_mode), path.endswith("/"), path)
            self.assertEqual(stat.S_IMODE(st.st_mode), mode,
                             f"{path}: mode {stat.S_IMODE(st.st_mode):o}")

    def check_only(self, name, files):
        """The package holds these files and no other file."""
        out = run("dpkg-deb", "-c", self.debs[name])
        got = set()
        for line in out.splitlines():
            path = line.split()[-1].lstrip("./")
            if not line.startswith("d"):
                got.add(path)
        want = {p for p in files if not p.endswith("/")}
        if WEB_BUILT:  # the page's hashed assets, beside index.html
            got = {p for p in got if not p.startswith("usr/share/ptygate/web/")}
            want = {p for p in want if not p.startswith("usr/share/ptygate/web/")}
        self.assertEqual(got, want)

    def check_version(self, root, binary):
        # The binaries link system libraries only: no LD_LIBRARY_PATH.
        env = dict(os.environ)
        env.pop("LD_LIBRARY_PATH", None)
        out = run(os.path.join(root, "usr/bin", binary), "--version", env=env)
        self.assertEqual(out.strip(), f"{binary} {VERSION}")

    def check_unit(self, root, unit, binary):
        path = os.path.join(root, "usr/lib/systemd/system", unit)
        with open(path) as f:
            text = f.read()
        execs = re.findall(r"^ExecStart=(\S+)", text, re.M)
        self.assertEqual(execs, [f"/usr/bin/{binary}"])
        if shutil.which("systemd-analyze") is None:
            print("systemd-analyze not found: units not verified")
            return text
        # Verify a copy whose ExecStart names the extracted binary: verify
        # checks that the command exists, and the root is not installed.
        copy_dir = tempfile.mkdtemp(prefix="units-", dir=self.tmp)
        with open(os.path.join(copy_dir, unit), "w") as f:
            f.write(text.replace("ExecStart=/", f"ExecStart={root}/", 1))
        res = subprocess.run(["systemd-analyze", "verify", "--man=no",
                              os.path.join(copy_dir, unit)],
                             capture_output=True, text=True, timeout=GUARD_S)
        self.assertEqual(res.returncode, 0, res.stdout + res.stderr)
        self.assertLess(exposure(os.path.join(copy_dir, unit)), EXPOSURE_MAX[unit])
        return text

    def check_scripts(self, ctl, scripts):
        for s in scripts:
            full = os.path.join(ctl, s)
            self.assertEqual(stat.S_IMODE(os.stat(full).st_mode), 0o755, s)
            run("sh", "-n", full)

    def test_daemon_man_pages(self):
        """Both daemons ship NAME(8) and NAME.conf(5), made from their option
        tables, and the gateway package the CLI's ptygate(1): groff renders
        them without a warning, and each names an option it is about."""
        for name, option, pages in (
                ("ptygate-sidecar", "max\\-sessions", ("man8/ptygate-sidecar.8.gz",
                                                      "man5/ptygate-sidecar.conf.5.gz")),
                ("ptygate-gateway", "max\\-conns", ("man8/ptygate-gateway.8.gz",
                                                   "man5/ptygate-gateway.conf.5.gz")),
                ("ptygate-gateway", "replay\\-from", ("man1/ptygate.1.gz",))):
            root = self.extract(name)
            for page in pages:
                with gzip.open(os.path.join(root, "usr/share/man", page), "rt") as f:
                    text = f.read()
                self.assertIn(option, text, page)
                res = subprocess.run(["groff", "-man", "-ww", "-z", "-Tutf8"], input=text,
                                     capture_output=True, text=True, timeout=GUARD_S)
                self.assertEqual((res.returncode, res.stderr), (0, ""), page)

    def test_sidecar(self):
        name = "ptygate-sidecar"
        self.assertEqual(self.field(name, "Package"), name)
        self.assertEqual(self.field(name, "Version"), VERSION)
        deps = self.field(name, "Depends")
        # libsodium seals the state at rest (frame log, records, screens).
        for dep in ("adduser", "libc6", "libvterm0", "libjansson4",
                    "libprotobuf-c1", "libsodium23"):
            self.assertRegex(deps, rf"(^|, ){re.escape(dep)}\b", deps)
        for gw_only in ("libmicrohttpd", "libgnutls", "libcurl", "-dev"):
            self.assertNotIn(gw_only, deps)
        root = self.extract(name)
        self.check_files_modes(root, SIDECAR_FILES)
        self.check_only(name, SIDECAR_FILES)
        self.check_version(root, "ptygate-sidecar")
        unit = self.check_unit(root, "ptygate-sidecar.service", "ptygate-sidecar")
        self.assertIn("--state-dir /var/lib/ptygate/state ", unit)
        self.assertIn("--state-key-file /var/lib/ptygate/state.key ", unit)
        self.assertIn("--session-user agent", unit)
        self.assertNotRegex(unit, r"(?m)^User=")  # root, to switch to agent
        ctl = self.control(name)
        self.check_scripts(ctl, ("postinst", "prerm", "postrm"))
        with open(os.path.join(ctl, "postinst")) as f:
            self.assertIn("adduser --system", f.read())
        with open(os.path.join(ctl, "conffiles")) as f:
            self.assertEqual(f.read().split(), ["/etc/ptygate/sidecar.conf"])
        # The shipped config is the example in deploy/, byte for byte.
        with open(os.path.join(root, "etc/ptygate/sidecar.conf"), "rb") as a, \
                open(os.path.join(SOURCE, "deploy/config/sidecar.conf"), "rb") as b:
            self.assertEqual(a.read(), b.read())

    def test_sidecar_dial_dropin(self):
        """deploy/systemd's dial-out drop-in on the packaged
        sidecar unit: systemd-analyze verify reads it (a broken copy of it
        fails, so the drop-in directory is really read) and accepts its
        ExecStart; the command dials and keeps the unit's state and user."""
        root = self.extract("ptygate-sidecar")
        unit = "ptygate-sidecar.service"
        with open(os.path.join(root, "usr/lib/systemd/system", unit)) as f:
            text = f.read()
        with open(os.path.join(SOURCE, "deploy/systemd", unit + ".d",
                               "dial.conf.example")) as f:
            dropin = f.read()
        execs = re.findall(r"^ExecStart=(.*)$", dropin, re.M)
        self.assertEqual(execs[0], "", "the unit's command is cleared first")
        self.assertEqual(len(execs), 2, execs)
        argv = shlex.split(execs[1])
        self.assertEqual(argv[0], "/usr/bin/ptygate-sidecar")
        self.assertNotIn("--listen", argv)
        for opt, value in (("--dial", "vsock:2:7001"),
                           ("--instance-token-file", "/etc/ptygate/instance.token"),
                           ("--state-dir", "/var/lib/ptygate/state"),
                           ("--state-key-file", "/var/lib/ptygate/state.key"),
                           ("--session-user", "agent")):
            self.assertEqual(argv[argv.index(opt) + 1], value, opt)
        self.assertRegex(text, r"(?m)^RestrictAddressFamilies=.*\bAF_VSOCK\b")
        if shutil.which("systemd-analyze") is None:
            print("systemd-analyze not found: the drop-in not verified")
            return

        def verify(dropin_text):
            d = tempfile.mkdtemp(prefix="dropin-", dir=self.tmp)
            os.mkdir(os.path.join(d, unit + ".d"))
            with open(os.path.join(d, unit), "w") as f:
                f.write(text.replace("ExecStart=/", f"ExecStart={root}/", 1))
            with open(os.path.join(d, unit + ".d", "dial.conf"), "w") as f:
                f.write(dropin_text)
            return subprocess.run(["systemd-analyze", "verify", "--man=no",
                                   os.path.join(d, unit)],
                                  capture_output=True, text=True, timeout=GUARD_S), d

        res, d = verify(dropin.replace("ExecStart=/", f"ExecStart={root}/"))
        self.assertEqual(res.returncode, 0, res.stdout + res.stderr)
        self.assertLess(exposure(os.path.join(d, unit)), EXPOSURE_MAX[unit])
        # The same drop-in naming a binary that is not there: verify must
        # now fail, which it can only do by reading the drop-in.
        res, _ = verify(dropin.replace("ExecStart=/", f"ExecStart={root}/missing/"))
        self.assertNotEqual(res.returncode, 0, "the drop-in was not read")

    def test_gateway(self):
        name = "ptygate-gateway"
        self.assertEqual(self.field(name, "Package"), name)
        deps = self.field(name, "Depends")
        for dep in ("libc6", "libmicrohttpd12", "libsodium23", "libgnutls30",
                    "libwslay1", "libjansson4", "libcurl4", "libnettle8"):
            self.assertRegex(deps, rf"(^|, ){re.escape(dep)}\b", deps)
        self.assertNotIn("-dev", deps)
        root = self.extract(name)
        self.check_files_modes(root, GATEWAY_FILES)
        self.check_only(name, GATEWAY_FILES)
        self.check_version(root, "ptygate-gateway")
        self.check_version(root, "ptygate")
        unit = self.check_unit(root, "ptygate-gateway.service", "ptygate-gateway")
        self.assertEqual("--static-dir /usr/share/ptygate/web" in unit, WEB_BUILT)
        ctl = self.control(name)
        self.check_scripts(ctl, ("postinst", "prerm", "postrm"))
        with open(os.path.join(ctl, "conffiles")) as f:
            conffiles = f.read().split()
        self.assertEqual(conffiles, ["/etc/ptygate/gateway.conf",
                                     "/etc/ptygate/instances"])
        # The shipped config is the example in deploy/, byte for byte.
        for c in conffiles:
            with open(root + c, "rb") as a, \
                    open(os.path.join(SOURCE, "deploy/config",
                                      os.path.basename(c)), "rb") as b:
                self.assertEqual(a.read(), b.read(), c)
        # So is the Grafana dashboard.
        with open(root + "/usr/share/ptygate/grafana/ptygate-dashboard.json", "rb") as a, \
                open(os.path.join(SOURCE, "deploy/grafana/ptygate-dashboard.json"), "rb") as b:
            self.assertEqual(a.read(), b.read())

    def test_units_run_as_their_units(self):
        """Both packages in one root, each unit's ExecStart run as the
        unit runs it; a session the gateway creates cannot read the
        sidecar's key or state. The link is a unix socket, not the unit's
        vsock (never bound on this machine)."""
        if os.geteuid() != 0:
            self.skipTest("needs root, as the sidecar's unit")
        root = tempfile.mkdtemp(prefix="units-root-", dir=self.tmp)
        for d in (self.tmp, root):  # as "/" is to the gateway's user
            os.chmod(d, 0o755)
        for name in self.debs:
            run("dpkg-deb", "-x", self.debs[name], root)
        procs = []
        try:
            sock, session_uid, key, state = self.start_sidecar(root, procs)
            port, secret, instance = self.start_gateway(root, sock, procs)
            self.check_session_cannot_read_state(root, port, secret, instance,
                                                 session_uid, key, state, procs)
        finally:
            for p in procs:
                p.terminate()
            for p in procs:
                try:
                    p.wait(timeout=15)
                except subprocess.TimeoutExpired:
                    p.kill()
                    p.wait()

    def unit_of(self, root, unit):
        with open(os.path.join(root, "usr/lib/systemd/system", unit)) as f:
            return service_settings(f.read())

    def start_sidecar(self, root, procs):
        svc = self.unit_of(root, "ptygate-sidecar.service")
        argv = in_root(root, shlex.split(svc["ExecStart"][0]))
        user = svc.get("User", [None])[0]
        uid = None if user is None else stand_in(user).pw_uid
        # StateDirectory= and ConfigurationDirectory=, as systemd makes them
        # before the start: the state dir the unit's user's, the other root's.
        for key, base, owner in (("StateDirectory", "var/lib", uid or 0),
                                 ("ConfigurationDirectory", "etc", 0)):
            if key in svc:
                path = os.path.join(root, base, svc[key][0])
                os.makedirs(path, exist_ok=True)
                os.chown(path, owner, owner)
                os.chmod(path, int(svc.get(key + "Mode", ["0755"])[0], 8))
        os.makedirs(os.path.join(root, "run"), exist_ok=True)
        sock = os.path.join(root, "run/sidecar.sock")
        argv[argv.index("--listen") + 1] = "unix:" + sock
        session_uid = uid or 0
        if "--session-user" in argv:
            i = argv.index("--session-user") + 1
            argv[i] = stand_in(argv[i]).pw_name
            session_uid = pwd.getpwnam(argv[i]).pw_uid
        with open(os.path.join(self.tmp, "sidecar.log"), "w") as log:
            procs.append(subprocess.Popen(as_unit(svc, argv, uid=uid), stdout=log,
                                          stderr=log))
        deadline = time.monotonic() + 30
        while not os.path.exists(sock):
            self.assertIsNone(procs[-1].poll(), self.log("sidecar.log"))
            self.assertLess(time.monotonic(), deadline, self.log("sidecar.log"))
            time.sleep(0.05)
        # The key and the state: created on this first start, the sidecar's.
        key = argv[argv.index("--state-key-file") + 1]
        state = argv[argv.index("--state-dir") + 1]
        for path, mode in ((key, 0o600), (state, 0o700)):
            st = os.stat(path)
            self.assertEqual((st.st_uid, stat.S_IMODE(st.st_mode)), (uid or 0, mode), path)
        return sock, session_uid, key, state

    def log(self, name):
        with open(os.path.join(self.tmp, name)) as f:
            return f.read()[-3000:]

    def start_gateway(self, root, sock, procs):
        svc = self.unit_of(root, "ptygate-gateway.service")
        self.assertEqual(svc["DynamicUser"], ["yes"])
        uid = 61999  # in DynamicUser's range, 61184 to 65519
        self.assertRaises(KeyError, pwd.getpwuid, uid)
        etc = os.path.join(root, "etc/ptygate")
        os.makedirs(os.path.join(etc, "tls"), exist_ok=True)
        run("openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt",
            "ec_paramgen_curve:prime256v1", "-nodes", "-days", "1", "-subj", "/CN=localhost",
            "-keyout", os.path.join(etc, "tls/privkey.pem"),
            "-out", os.path.join(etc, "tls/fullchain.pem"))
        os.chmod(os.path.join(etc, "tls/privkey.pem"), 0o600)
        # LoadCredential=: systemd copies the root-only key for the user.
        name, source = svc["LoadCredential"][0].split(":", 1)
        creds = os.path.join(root, "run/credentials/ptygate-gateway.service")
        os.makedirs(creds)
        shutil.copy(root + source, os.path.join(creds, name))
        for path, mode in ((creds, 0o500), (os.path.join(creds, name), 0o400)):
            os.chown(path, uid, uid)
            os.chmod(path, mode)
        secret = os.urandom(32).hex().encode()
        secret_file = os.path.join(etc, "hs256.secret")
        with open(secret_file, "wb") as f:
            f.write(secret)
        os.chown(secret_file, uid, uid)
        os.chmod(secret_file, 0o600)
        # The link's socket is the sidecar's (0600): handed to the gateway's
        # user (the units' link is vsock, which no file mode guards).
        os.chown(sock, uid, uid)
        instance = socket.gethostname()  # the sidecar's default --instance-id
        port = free_port()
        with open(os.path.join(etc, "gateway.conf"), "w") as f:
            f.write("listen = 127.0.0.1:%d\n" % port
                    + "tls-cert = %s/tls/fullchain.pem\n" % etc
                    + "tls-key = %s/%s\n" % (creds, name)
                    + "hs256-secret-file = %s\n" % secret_file
                    + "instance = %s=unix:%s\n" % (instance, sock))
        argv = in_root(root, shlex.split(svc["ExecStart"][0]))
        with open(os.path.join(self.tmp, "gateway.log"), "w") as log:
            procs.append(subprocess.Popen(as_unit(svc, argv, uid=uid), stdout=log,
                                          stderr=log))
        deadline = time.monotonic() + 30
        while True:
            self.assertIsNone(procs[-1].poll(), self.log("gateway.log"))
            try:
                if https(port, "GET", "/readyz")[0] == 200:
                    return port, secret, instance
            except OSError:
                pass
            self.assertLess(time.monotonic(), deadline, self.log("gateway.log"))
            time.sleep(0.1)

    def check_session_cannot_read_state(self, root, port, secret, instance, session_uid,
                                        key, state, procs):
        out = os.path.join(root, "probe")
        os.mkdir(out)
        os.chmod(out, 0o777)
        script = ("id -u > {o}/uid; cat {k} > {o}/key 2> {o}/key.err; "
                  "echo $? > {o}/key.rc; ls {s} > {o}/ls 2>&1; echo $? > {o}/ls.rc; "
                  "touch {o}/done; sleep 600").format(o=out, k=key, s=state)
        sys.path.insert(0, os.path.join(SOURCE, "tests/e2e"))
        import harness  # mint_token: the end-to-end suite's HS256 tokens
        token = harness.mint_token(secret, "pkg-test", instance, scope="sessions")
        status, body = https(port, "POST", "/agents/%s/sessions" % instance, token,
                             {"command": ["/bin/sh", "-c", script], "cols": 80, "rows": 24})
        self.assertEqual(status, 201, body + self.log("sidecar.log") + self.log("gateway.log"))
        deadline = time.monotonic() + 30
        while not os.path.exists(os.path.join(out, "done")):
            self.assertLess(time.monotonic(), deadline, self.log("sidecar.log"))
            time.sleep(0.05)

        def read(name):
            with open(os.path.join(out, name)) as f:
                return f.read().strip()
        self.assertEqual(read("uid"), str(session_uid))
        self.assertNotEqual(read("key.rc"), "0")
        self.assertEqual(read("key"), "")
        self.assertIn("Permission denied", read("key.err"))
        self.assertNotEqual(read("ls.rc"), "0")
        # The gateway lists the session: the whole chain serves.
        status, body = https(port, "GET", "/agents/%s/sessions" % instance, token)
        self.assertEqual(status, 200, body)
        self.assertEqual(len(json.loads(body)["sessions"]), 1)
        for p in procs:
            self.assertIsNone(p.poll())

    def test_unit_gets_static_dir_when_page_installed(self):
        """cmake/InstallUnit.cmake adds --static-dir only if the page is
        in the install (web/dist built); checked whether or not it is."""
        for with_page in (False, True):
            destdir = tempfile.mkdtemp(prefix="destdir-", dir=self.tmp)
            if with_page:
                os.makedirs(os.path.join(destdir, "usr/share/ptygate/web"))
                open(os.path.join(destdir, "usr/share/ptygate/web/index.html"),
                     "w").close()
            run("cmake",
                f"-DUNIT_SRC={SOURCE}/deploy/systemd/ptygate-gateway.service",
                "-DUNIT_NAME=ptygate-gateway.service", "-DPREFIX=/usr",
                "-DBINDIR=bin", "-DWEBDIR=share/ptygate/web",
                "-P", os.path.join(SOURCE, "cmake/InstallUnit.cmake"),
                env=dict(os.environ, DESTDIR=destdir))
            with open(os.path.join(
                    destdir, "usr/lib/systemd/system/ptygate-gateway.service")) as f:
                execs = re.findall(r"^ExecStart=(.*)$", f.read(), re.M)
            want = "/usr/bin/ptygate-gateway --config /etc/ptygate/gateway.conf"
            if with_page:
                want += " --static-dir /usr/share/ptygate/web"
            self.assertEqual(execs, [want])


if __name__ == "__main__":
    unittest.main()
