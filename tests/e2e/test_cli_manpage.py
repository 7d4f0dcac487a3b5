"""ptygate(1), as `ptygate --help-man` makes it: man renders it without a
warning, and it names every command and every option each command's
--help lists (the unit test test_cli_manpage checks the parsers' own
tables)."""
import os
import re
import shutil
import subprocess
import tempfile
import unittest

import harness

TIMEOUT = 60
# Each command's --help, and the section of the page about it.
HELPS = (
    (["token", "keygen"], "ptygate token keygen"),
    (["token", "mint"], "ptygate token mint"),
    (["sessions"], "ptygate sessions"),
    (["attach"], "ptygate attach"),
    (["run"], "ptygate run"),
    (["completion"], "ptygate completion"),
)


class CliManPage(unittest.TestCase):

    @classmethod
    def setUpClass(cls):
        cls.cli = harness.cli_binary()
        if not cls.cli:
            raise unittest.SkipTest("ptygate CLI not built")
        p = subprocess.run([cls.cli, "--help-man"], capture_output=True, text=True,
                           timeout=TIMEOUT)
        assert p.returncode == 0, p.stderr
        cls.roff = p.stdout
        cls.dir = tempfile.mkdtemp(prefix="ptg-man-")
        cls.path = os.path.join(cls.dir, "ptygate.1")
        with open(cls.path, "w") as f:
            f.write(cls.roff)

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.dir, ignore_errors=True)

    def render(self):
        if not shutil.which("man"):
            self.skipTest("man is not installed (scripts/install-deps.sh: man-db)")
        p = subprocess.run(["man", "--warnings", "-l", self.path], capture_output=True,
                           text=True, timeout=TIMEOUT,
                           env=dict(os.environ, MANWIDTH="80", MANPAGER="cat",
                                    PAGER="cat", LC_ALL="C.UTF-8"))
        return p

    def test_renders_without_warnings(self):
        p = self.render()
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(p.stderr, "")
        self.assertIn("EXIT STATUS", p.stdout)

    def section(self, title):
        """The roff of the page's subsection title, up to the next one."""
        start = self.roff.index('.SS "%s"' % title)
        end = re.search(r"(?m)^\.S[SH] ", self.roff[start + 4:])
        return self.roff[start:start + 4 + end.start()] if end else self.roff[start:]

    @staticmethod
    def help_options(text):
        """The long options of a --help's usage lines and option lines
        ("  --cols N, --rows N  the size": the part before the description's
        gap of two spaces)."""
        found = set()
        for line in text.splitlines():
            m = re.match(r"^(?:Usage: |\s+ptygate |\s+(?=-\S))(.*?)(\s{2,}|$)", line)
            if m:
                found.update(re.findall(r"--[a-z][a-z0-9-]*", m.group(1)))
        return found

    def test_every_option_of_every_help(self):
        for args, title in HELPS:
            with self.subTest(command=title):
                p = subprocess.run([self.cli, *args, "--help"], capture_output=True,
                                   text=True, timeout=TIMEOUT)
                self.assertEqual(p.returncode, 0, p.stderr)
                options = self.help_options(p.stdout)
                self.assertTrue(options or title == "ptygate completion", p.stdout)
                text = self.section(title)
                for opt in sorted(options):
                    want = "\\fB" + opt.replace("-", "\\-") + "\\fR"
                    self.assertIn(want, text, "%s: %s" % (title, opt))

    def test_every_command(self):
        p = subprocess.run([self.cli, "--help"], capture_output=True, text=True,
                           timeout=TIMEOUT)
        commands = re.findall(r"(?m)^  ([a-z]+(?: [a-z]+)?)  ", p.stdout)
        self.assertIn("run", commands)
        for c in commands:
            self.assertIn('.SS "ptygate %s' % c, self.roff)


if __name__ == "__main__":
    unittest.main()
