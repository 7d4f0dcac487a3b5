"""Per-session PTY byte counts: a session's REST object carries
output_bytes (what its program wrote to the PTY) and input_bytes (what the
PTY took from its controllers), and /metrics the instance's totals
(ptygate_sidecar_pty_bytes_total, ptygate_sidecar_pty_input_bytes_total;
per instance, no per-session label). The program prints a known number of
bytes after reading a known number, on a raw terminal without echo, so
both counts are exact; with --state-dir they survive a sidecar restart."""
import asyncio
import os
import time

import harness
from harness import E2ETestCase

TIMEOUT = 30
INPUT = 5000
OUTPUT = 100000
# "R" once the terminal is raw and silent, then INPUT bytes read, then
# OUTPUT bytes of "x" and "D": OUTPUT + 2 bytes written in all.
PROGRAM = ["/bin/sh", "-c",
           "stty raw -echo; printf R; head -c %d >/dev/null; "
           "head -c %d /dev/zero | tr '\\0' x; printf D; exec sleep 300" % (INPUT, OUTPUT)]


class SessionBytes(E2ETestCase):
    SIDECAR_ARGS = ("--state-dir", "{dir}/state", "--state-plaintext")

    async def wait_counts(self, sid, output, input_):
        deadline = time.monotonic() + TIMEOUT
        while True:
            doc = self.stack.get_session(sid)
            if (doc.get("output_bytes"), doc.get("input_bytes")) == (output, input_):
                return doc
            self.assertLess(time.monotonic(), deadline, doc)
            await asyncio.sleep(0.05)

    def instance_metric(self, name):
        return self.stack.metrics().get('%s{instance="%s"}' % (name, self.stack.instance))

    async def test_counts_in_rest_and_metrics(self):
        sid, ctl = await self.session_with("controller", sub="alice", command=PROGRAM)
        await self.wait_counts(sid, 1, 0)  # "R": raw and silent
        for i in range(0, INPUT, 1000):
            await ctl.type("i" * 1000)
        await ctl.wait_output("D", timeout=TIMEOUT)
        doc = await self.wait_counts(sid, OUTPUT + 2, INPUT)
        self.assertIsInstance(doc["output_bytes"], int)
        # The list carries them too.
        r = self.stack.http("GET", "/agents/%s/sessions" % self.stack.instance,
                            token=self.stack.token(sub="e2e-admin", scope="sessions"))
        listed = [s for s in r.json()["sessions"] if s["session_id"] == sid]
        self.assertEqual((listed[0]["output_bytes"], listed[0]["input_bytes"]),
                         (OUTPUT + 2, INPUT))
        # The instance's totals (the sidecar reports every 5 s).
        deadline = time.monotonic() + TIMEOUT
        while True:
            out = self.instance_metric("ptygate_sidecar_pty_bytes_total")
            inp = self.instance_metric("ptygate_sidecar_pty_input_bytes_total")
            if out is not None and inp is not None and out >= OUTPUT + 2 and inp >= INPUT:
                break
            self.assertLess(time.monotonic(), deadline, (out, inp))
            await asyncio.sleep(0.2)
        metrics_text = self.stack.http("GET", "/metrics").body.decode()
        self.assertNotIn(sid, metrics_text)  # no per-session label

        # Across a sidecar restart (the record keeps them): the program is
        # lost, its counts are not.
        await ctl.close()
        self.clients.remove(ctl)
        self.stack.sidecar.stop()
        self.stack.sidecar.start()
        deadline = time.monotonic() + TIMEOUT
        while True:
            try:
                if self.stack.http("GET", "/readyz", timeout=2).status == 200:
                    doc = self.stack.get_session(sid)
                    break
            except (OSError, AssertionError):
                pass
            self.assertLess(time.monotonic(), deadline, "the sidecar did not come back")
            await asyncio.sleep(0.1)
        self.assertEqual((doc["output_bytes"], doc["input_bytes"]), (OUTPUT + 2, INPUT))
        self.assertTrue(os.path.isdir(os.path.join(self.stack.dir, "state")))


if __name__ == "__main__":
    harness.main()
