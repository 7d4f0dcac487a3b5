"""The CLI as people use it, against real daemons, with pipes:
options after the operands, `sessions get` showing the command and `sessions
kill` the state after the kill, a piped `attach` that never resizes the
session and says how it ended, `run -q`, and the shell completion script."""
import os
import shutil
import subprocess
import tempfile
import unittest

import harness

TIMEOUT = 60


class CliUx(unittest.TestCase):

    def setUp(self):
        self.cli = harness.cli_binary()
        if not self.cli:
            self.skipTest("ptygate CLI not built")
        self.stack = harness.Stack().start()
        self.addCleanup(harness.stop_stack, self.stack)

    def env(self, token):
        return dict(os.environ, PTYGATE_TOKEN=token,
                    PTYGATE_GATEWAY="http://127.0.0.1:%d" % self.stack.port,
                    PTYGATE_INSTANCE=self.stack.instance)

    def run_cli(self, args, token, stdin=b""):
        p = subprocess.run([self.cli, *args], input=stdin, capture_output=True,
                           env=self.env(token), timeout=TIMEOUT)
        return p.returncode, p.stdout.decode(), p.stderr.decode()

    def admin(self):
        return self.stack.token(sub="e2e-admin", scope="sessions")

    def test_options_after_the_session_id(self):
        sid = self.stack.create_session()
        rc, out, err = self.run_cli(["sessions", "get", sid, "-o", "json"], self.admin())
        self.assertEqual(rc, 0, err)
        self.assertIn('"session_id": "%s"' % sid, out)
        rc, out, err = self.run_cli(["sessions", "get", sid, "--output=json", "-q"],
                                    self.admin())
        self.assertEqual(rc, 0, err)
        self.assertIn('"state": "running"', out)
        # "--" ends the options: what follows is an operand, "-o" too.
        rc, _, err = self.run_cli(["sessions", "get", "--", "-o"], self.admin())
        self.assertEqual(rc, 1, err)  # a session named "-o" is not found
        self.assertNotIn("unknown option", err)
        rc, _, err = self.run_cli(["sessions", "get", sid, "extra"], self.admin())
        self.assertEqual(rc, 2)
        self.assertIn("unexpected argument 'extra'", err)

    def test_get_prints_the_command_quoted(self):
        sid = self.stack.create_session(command=["/bin/sh", "-c", "echo 'a b'; sleep 300"])
        rc, out, err = self.run_cli(["sessions", "get", sid], self.admin())
        self.assertEqual(rc, 0, err)
        self.assertIn("command: /bin/sh -c 'echo '\\''a b'\\''; sleep 300'\n", out)

    def test_kill_prints_the_state_after_the_kill(self):
        sid = self.stack.create_session()
        rc, out, err = self.run_cli(["sessions", "kill", sid], self.admin())
        self.assertEqual(rc, 0, err)
        self.assertIn("state: exited\n", out)
        self.assertNotIn("state: running", out)
        self.assertEqual(self.stack.get_session(sid)["state"], "exited")

    def attach_args(self, sid):
        return ["attach", "--session", sid]

    def test_piped_attach_keeps_the_size_and_says_it_detached(self):
        sid = self.stack.create_session(cols=100, rows=30)
        token = self.stack.token(sub="alice", session_id=sid)
        rc, out, err = self.run_cli(self.attach_args(sid), token,
                                    stdin=b"echo piped-$((40+2))\n")
        self.assertEqual(rc, 0, err)
        self.assertIn("piped-42", out)
        self.assertEqual(err.strip().splitlines()[-1],
                         "ptygate: input ended; detached, the session keeps running", err)
        self.assertNotIn("session_closed", err)
        doc = self.stack.get_session(sid)
        self.assertEqual((doc["cols"], doc["rows"], doc["state"]), (100, 30, "running"), doc)

    def test_piped_attach_reports_the_end_of_the_session(self):
        sid = self.stack.create_session(cols=100, rows=30)
        token = self.stack.token(sub="alice", session_id=sid)
        rc, out, err = self.run_cli(self.attach_args(sid), token, stdin=b"exit 7\n")
        self.assertEqual(rc, 7, err)
        self.assertIn("ptygate: session ended: exit code 7", err)
        self.assertNotIn("detached", err)
        doc = self.stack.get_session(sid)
        self.assertEqual((doc["cols"], doc["rows"]), (100, 30), doc)

    def test_run_quiet_keeps_stderr_for_the_task(self):
        sid = self.stack.create_session()
        token = self.stack.token(sub="runner", session_id=sid, scope="tasks")
        cmd = ["run", "--session", sid, "--", "sh", "-c", "echo out; echo err >&2"]
        rc, out, err = self.run_cli(cmd, token)
        self.assertEqual(rc, 0, err)
        self.assertIn("TASK_STATE_COMPLETED", err)
        rc, out, err = self.run_cli(cmd[:1] + ["-q"] + cmd[1:], token)
        self.assertEqual((rc, out, err), (0, "out\n", "err\n"))
        # A failure still says so with -q.
        rc, out, err = self.run_cli(["run", "-q", "--session", sid, "--", "exit 3"], token)
        self.assertEqual((rc, out), (3, ""))
        self.assertNotIn("TASK_STATE_WORKING", err)


class Completion(unittest.TestCase):

    def setUp(self):
        self.cli = harness.cli_binary()
        if not self.cli:
            self.skipTest("ptygate CLI not built")

    def script(self, shell):
        p = subprocess.run([self.cli, "completion", shell], capture_output=True,
                           timeout=TIMEOUT, check=True)
        return p.stdout.decode()

    def complete(self, words):
        """Sources the bash script and completes the last of words."""
        d = tempfile.mkdtemp(prefix="ptg-compl-")
        self.addCleanup(shutil.rmtree, d, ignore_errors=True)
        path = os.path.join(d, "ptygate.bash")
        with open(path, "w") as f:
            f.write(self.script("bash"))
        os.symlink(os.path.abspath(self.cli), os.path.join(d, "ptygate"))
        prog = ("source %s; complete -p ptygate; COMP_WORDS=(%s); COMP_CWORD=%d; _ptygate; "
                "printf '%%s\\n' \"${COMPREPLY[@]}\"" % (
                    path, " ".join("'%s'" % w for w in words), len(words) - 1))
        p = subprocess.run(["bash", "--norc", "--noprofile", "-c", prog], capture_output=True,
                           text=True, timeout=TIMEOUT,
                           env=dict(os.environ, PATH=d + ":" + os.environ["PATH"]))
        self.assertEqual(p.returncode, 0, p.stderr)
        lines = p.stdout.splitlines()
        self.assertEqual(lines[0], "complete -o default -F _ptygate ptygate")
        return sorted(lines[1:])

    def test_bash_completes_commands_verbs_options_and_values(self):
        self.assertEqual(self.complete(["ptygate", "se"]), ["sessions"])
        self.assertEqual(self.complete(["ptygate", "sessions", "k"]), ["kill"])
        self.assertEqual(self.complete(["ptygate", "sessions", "get", "ID", "--out"]),
                         ["--output"])
        self.assertEqual(self.complete(["ptygate", "sessions", "get", "-o", ""]),
                         ["json", "text"])
        self.assertEqual(self.complete(["ptygate", "sessions", "create", "--control-policy", ""]),
                         ["approve", "open", "owner_only"])
        self.assertEqual(self.complete(["ptygate", "attach", "--obs"]), ["--observer"])
        self.assertEqual(self.complete(["ptygate", "run", "-"]).count("-q"), 1)
        self.assertEqual(self.complete(["ptygate", "token", "mint", "--sc"]), ["--scope"])
        self.assertEqual(self.complete(["ptygate", "completion", ""]), ["bash", "zsh"])

    @unittest.skipUnless(shutil.which("zsh"), "zsh is not installed")
    def test_zsh_script_parses(self):
        d = tempfile.mkdtemp(prefix="ptg-compl-")
        self.addCleanup(shutil.rmtree, d, ignore_errors=True)
        path = os.path.join(d, "_ptygate")
        with open(path, "w") as f:
            f.write(self.script("zsh"))
        p = subprocess.run(["zsh", "-n", path], capture_output=True, text=True, timeout=TIMEOUT)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertTrue(self.script("zsh").startswith("#compdef ptygate\n"))

    def test_unknown_shell_is_a_usage_error(self):
        p = subprocess.run([self.cli, "completion", "fish"], capture_output=True, timeout=TIMEOUT)
        self.assertEqual(p.returncode, 2)


if __name__ == "__main__":
    harness.main()
