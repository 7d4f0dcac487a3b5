"""ptygate-sidecar --config FILE: the file's keys are the long options,
read before the command line, which wins over them."""
import json
import os

from harness import E2ETestCase, Stack

CONFIG = """# the sidecar's config file
max-sessions = 1
log-format = "json"
log-level = error
"""


class SidecarConfigFile(E2ETestCase):
    # The file says log-level error; the command line's debug wins.
    SIDECAR_ARGS = ("--config", "{dir}/sidecar.conf", "--log-level", "debug")

    @classmethod
    def make_stack(cls):
        stack = Stack(cls.SIDECAR_ARGS, cls.GATEWAY_ARGS)
        with open(os.path.join(stack.dir, "sidecar.conf"), "w") as f:
            f.write(CONFIG)
        return stack

    def test_file_keys_apply(self):
        """max-sessions = 1 from the file: the second session is refused."""
        self.stack.create_session()
        r = self.stack.http("POST", "/agents/%s/sessions" % self.stack.instance,
                            {"command": ["/bin/sh"], "cols": 80, "rows": 24},
                            token=self.stack.token(sub="e2e-admin", scope="sessions"))
        self.assertNotEqual(r.status, 201, "a second session past max-sessions = 1")

    def test_command_line_wins(self):
        """log-format json from the file, log-level debug from the command
        line over the file's error: debug lines, each a JSON object."""
        with open(self.stack.sidecar.log_path) as f:
            lines = [line for line in f.read().splitlines()
                     if line.strip() and not line.startswith("=== ")]  # the harness's
        self.assertTrue(lines, "the sidecar logged nothing at debug")
        levels = {json.loads(line)["level"] for line in lines}
        self.assertTrue(levels & {"debug", "info"}, levels)
