"""The Debian packages (cpack -G DEB): builds them from the build tree into
a temporary directory, extracts each with dpkg-deb -x into a temporary
root (nothing is installed on this machine) and checks their files,
modes, control files, dependencies, units and binaries.

Environment (tests/CMake via the top-level CMakeLists.txt):
PTG_BUILD_DIR, PTG_SOURCE_DIR, PTG_VERSION, PTG_HAVE_MAN (1 or 0)."""
import os
import re
import shutil
import stat
import subprocess
import tempfile
import unittest

BUILD = os.environ["PTG_BUILD_DIR"]
SOURCE = os.environ["PTG_SOURCE_DIR"]
VERSION = os.environ["PTG_VERSION"]
HAVE_MAN = os.environ.get("PTG_HAVE_MAN") == "1"
WEB_BUILT = os.path.exists(os.path.join(SOURCE, "web/dist/index.html"))

# path -> mode, for each package; directories end with "/".
SIDECAR_FILES = {
    "usr/bin/ptygate-sidecar": 0o755,
    "usr/lib/systemd/system/ptygate-sidecar.service": 0o644,
    "var/lib/ptygate/": 0o755,
}
GATEWAY_FILES = {
    "usr/bin/ptygate-gateway": 0o755,
    "usr/bin/ptygate": 0o755,
    "usr/lib/systemd/system/ptygate-gateway.service": 0o644,
    "etc/ptygate/gateway.conf": 0o644,
    "etc/ptygate/instances": 0o644,
}
if HAVE_MAN:
    SIDECAR_FILES["usr/share/man/man1/ptygate-sidecar.1.gz"] = 0o644
    GATEWAY_FILES["usr/share/man/man1/ptygate-gateway.1.gz"] = 0o644
    GATEWAY_FILES["usr/share/man/man1/ptygate.1.gz"] = 0o644
if WEB_BUILT:
    GATEWAY_FILES["usr/share/ptygate/web/index.html"] = 0o644


def run(*cmd, **kw):
    return subprocess.run(cmd, check=True, capture_output=True, text=True,
                          timeout=120, **kw).stdout


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
                             capture_output=True, text=True, timeout=60)
        self.assertEqual(res.returncode, 0, res.stdout + res.stderr)
        return text

    def check_scripts(self, ctl, scripts):
        for s in scripts:
            full = os.path.join(ctl, s)
            self.assertEqual(stat.S_IMODE(os.stat(full).st_mode), 0o755, s)
            run("sh", "-n", full)

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
        self.assertIn("--state-dir /var/lib/ptygate", unit)
        ctl = self.control(name)
        self.check_scripts(ctl, ("postinst", "prerm", "postrm"))
        with open(os.path.join(ctl, "postinst")) as f:
            self.assertIn("adduser --system", f.read())
        self.assertFalse(os.path.exists(os.path.join(ctl, "conffiles")))

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
