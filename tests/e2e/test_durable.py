"""Durable history: after a sidecar SIGKILL or SIGTERM and a
restart, sequence numbers continue above every number clients hold, the
screen is recent, replays inside the persisted range are exact (same
sequence, ts and payload as clients got live), and the boundary is stated
in a `log` line then `Closed {instance_terminated}`. Damaged segments are
cut, never served; keys rotate; a disk budget evicts old history."""
import asyncio
import base64
import os
import re
import json
import signal
import subprocess
import time
import unittest

import harness
from harness import E2ETestCase, matches, screen_text

# Continuous output: a frame every few ms until killed.
FLOOD = "i=0; while [ $i -lt 200000 ]; do echo tick-$i; i=$((i+1)); sleep 0.004; done"
SAVED = re.compile(r"history was saved up to sequence (\d+)")


def same(frame):
    return (frame["sequence"], frame["ts"], frame["payload"])


def broadcast_frames(client, after, through):
    """What a replay from `after` must repeat of what client saw live: the
    broadcast frames (not its own RoleAssigned or join Keyframe)."""
    return [same(f) for f in client.frames
            if f["op"] == "pty.session_frame" and after < f["sequence"] <= through]


def assert_exact(test, replayed, live, after, through):
    """The replay is in order, and every frame the live client got in the
    range is in it, identical. (A flooded live client may have missed the
    last frames before the kill: the gateway dropped its queue.)"""
    seqs = [f["sequence"] for f in replayed]
    test.assertEqual(seqs, sorted(set(seqs)), "in order, no duplicates")
    got = {f["sequence"]: same(f) for f in replayed}
    want = broadcast_frames(live, after, through)
    test.assertTrue(want, "the live client saw frames in the range")
    for w in want:
        test.assertEqual(got.get(w[0]), w, "frame %d replayed exactly as sent live" % w[0])


class DurableCase(E2ETestCase):
    SIDECAR_ARGS = ("--state-dir", "{dir}/state", "--state-key-file", "{dir}/state.key")

    def state_dir(self):
        return os.path.join(self.stack.dir, "state")

    def restart_sidecar(self, sig=signal.SIGKILL, argv=None):
        if sig == signal.SIGKILL:
            self.stack.sidecar.kill(signal.SIGKILL)
        elif sig is not None:  # None: already stopped
            self.assertIsNone(self.stack.sidecar.stop())
        if os.path.exists(self.stack.socket_path):
            os.unlink(self.stack.socket_path)
        if argv is not None:
            self.stack.sidecar.argv = argv
        self.stack.sidecar.start()
        deadline = time.monotonic() + 15
        while not os.path.exists(self.stack.socket_path):
            self.assertTrue(self.stack.sidecar.alive(), self.stack.sidecar.log_tail())
            self.assertLess(time.monotonic(), deadline, "sidecar socket did not come back")
            time.sleep(0.02)

    async def reconnect(self, sid, **kw):
        deadline = time.monotonic() + 20
        while True:
            try:
                return await self.connect(sid, sub="bob", scope="pty:observe", **kw)
            except (AssertionError, OSError, Exception):
                if time.monotonic() > deadline:
                    raise
                await asyncio.sleep(0.2)

    async def flooding_session(self, seconds=1.5):
        """A session printing continuously, a controller that has seen
        `seconds` of it. Returns (sid, client, join keyframe sequence)."""
        sid, live = await self.session_with("controller", sub="alice")
        kf = [f for f in live.frames if matches(f, "pty.session_frame", "Keyframe")][-1]
        await live.type(FLOOD + "\n")
        await live.wait_output("tick-5")
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            try:
                await live.recv(0.2)
            except asyncio.TimeoutError:
                pass
        return sid, live, kf["sequence"]

    async def drain_until_closed(self, client, timeout=10):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                await client.recv(1)
            except asyncio.TimeoutError:
                continue
            except harness.Closed:
                return
        self.fail("the client was not closed when its sidecar died")

    async def replay(self, sid, after):
        """Joins as an observer replaying from after; returns (hello
        current_sequence, the replayed frames, the frame that ended them:
        the post-replay Keyframe, or binding_goodbye when the replay's
        Closed ends the connection)."""
        c = await self.reconnect(sid)
        current = c.hello["payload"]["session"]["current_sequence"]
        await c.join("observer", replay_from=after)
        ra = await c.expect_frame("pty.session_frame", "RoleAssigned")
        end, seen = await c.recv_until(
            lambda f: f["op"] == "binding_goodbye" or
            (matches(f, "pty.session_frame", "Keyframe") and f["sequence"] > ra["sequence"]),
            20, what="the end of the replay")
        return current, seen[:-1], end


class SequenceAfterKill(DurableCase):

    async def test_sigkill_never_reuses_a_sequence(self):
        sid, live, _ = await self.flooding_session()
        held = live.last_sequence()
        self.restart_sidecar(signal.SIGKILL)
        await self.drain_until_closed(live)
        held = max(held, live.last_sequence())
        current, replayed, kf = await self.replay(sid, held)
        self.assertGreater(current, held, "the counter went backwards after SIGKILL")
        kinds = [(f["payload"]["kind"], f["payload"].get("stream")) for f in replayed]
        self.assertEqual(kinds, [("Output", "log"), ("Closed", None)], kinds)
        line, closed = replayed
        self.assertGreater(line["sequence"], held, "the log line reuses a number a client holds")
        self.assertGreater(closed["sequence"], line["sequence"])
        self.assertEqual(closed["payload"]["reason"], "instance_terminated")
        text = base64.b64decode(line["payload"]["data"]).decode()
        m = SAVED.search(text)
        self.assertTrue(m, text)
        self.assertLessEqual(int(m.group(1)), held)
        self.assertIn("lost in the restart", text)

    async def test_sigkill_replay_is_exact_up_to_what_was_saved(self):
        sid, live, join_kf = await self.flooding_session()
        self.restart_sidecar(signal.SIGKILL)
        await self.drain_until_closed(live)
        _, replayed, kf = await self.replay(sid, join_kf)
        line, closed = replayed[-2:]
        saved = int(SAVED.search(base64.b64decode(line["payload"]["data"]).decode()).group(1))
        self.assertGreater(saved, join_kf + 20, "the flood's history was saved")
        assert_exact(self, replayed[:-2], live, join_kf, saved)
        self.assertEqual(closed["payload"]["reason"], "instance_terminated")

    async def test_screen_after_sigkill_is_the_recent_one(self):
        sid, live = await self.session_with("controller", sub="alice")
        await live.run("echo recent-screen-$((6*7))", "recent-screen-42")
        await asyncio.sleep(2.5)  # no Keyframe is due: the session is idle
        # Output after the last screen save, in the frame log only (each
        # frame is written before it goes out, the screen once a second):
        # the restored screen is rebuilt up to the last frame sent.
        await live.run("echo late-line-$((3*3))", "late-line-9")
        self.restart_sidecar(signal.SIGKILL)
        await self.drain_until_closed(live)
        c = await self.reconnect(sid)
        _, _, kf = await c.join_fresh("observer")
        text = screen_text(base64.b64decode(kf["payload"]["snapshot"]))
        self.assertIn("recent-screen-42", text, "the saved screen is stale")
        self.assertIn("late-line-9", text, "the screen is rebuilt from the frame log")
        self.assertIn("lost in the restart", text, "the boundary line is on the screen")


class KillPoints(DurableCase):
    """A frame is in the frame log (written to the kernel, not
    necessarily synced) before any client can have it, so a process crash
    (SIGKILL: the page cache survives it) loses nothing a client saw. Each
    round kills the sidecar right after a random line reached the client,
    restarts it, and checks that the restored screen shows that line and
    that a replay repeats every frame the client got. The seed is printed
    on failure (PTG_KILL_SEED=N replays it)."""

    ROUNDS = 8
    # A line every 0 to 60 ms: some kills land just after a line, some
    # while a line is on its way.
    TICKER = ("i=0; while [ $i -lt 100000 ]; do echo kp-$i; i=$((i+1)); "
              "sleep 0.0$((i % 7)); done")
    LINE = re.compile(rb"kp-(\d+)")

    async def kill_after_a_line(self, rng):
        sid = self.stack.create_session(command=["/bin/sh", "-c", self.TICKER])
        live = await self.connect(sid, sub="alice", scope="pty:observe")
        _, _, join_kf = await live.join_fresh("observer")
        # Lines printed before the join are in its Keyframe, not in Output.
        before = self.LINE.findall(base64.b64decode(join_kf["payload"]["snapshot"]))
        first = int(before[-1]) + 1 if before else 0
        await live.wait_output("kp-%d\r\n" % (first + rng.randrange(1, 12)), timeout=20)
        self.restart_sidecar(signal.SIGKILL)
        await self.drain_until_closed(live)
        seen = [int(n) for n in self.LINE.findall(bytes(live.output))]
        return sid, live, join_kf["sequence"], seen[-1]

    async def test_every_frame_a_client_saw_survives_sigkill(self):
        import random
        seed = int(os.environ.get("PTG_KILL_SEED", random.randrange(1 << 30)))
        rng = random.Random(seed)
        for rnd in range(self.ROUNDS):
            where = "seed %d, round %d" % (seed, rnd)
            sid, live, join_kf, last_line = await self.kill_after_a_line(rng)
            held = live.last_sequence()
            c = await self.reconnect(sid)
            _, _, kf = await c.join_fresh("observer")
            screen = screen_text(base64.b64decode(kf["payload"]["snapshot"]))
            self.assertIn("kp-%d" % last_line, screen,
                          "%s: the restored screen lacks the last line the client saw" % where)
            await c.close()
            _, replayed, _ = await self.replay(sid, join_kf)
            line = base64.b64decode(replayed[-2]["payload"]["data"]).decode()
            saved = int(SAVED.search(line).group(1))
            self.assertGreaterEqual(saved, held, "%s: a frame a client saw was not saved" % where)
            assert_exact(self, replayed[:-2], live, join_kf, held)


class CleanStop(DurableCase):

    async def test_sigterm_saves_everything_and_replays_exactly(self):
        sid, live, join_kf = await self.flooding_session(1.0)
        self.restart_sidecar(signal.SIGTERM)
        await self.drain_until_closed(live)
        held = live.last_sequence()
        current, replayed, kf = await self.replay(sid, join_kf)
        line, closed = replayed[-2:]
        saved = int(SAVED.search(base64.b64decode(line["payload"]["data"]).decode()).group(1))
        self.assertGreaterEqual(saved, held, "a clean stop saves every frame")
        self.assertEqual([same(f) for f in replayed[:-2]], broadcast_frames(live, join_kf, saved),
                         "a client that kept up: the replay is exactly what it got")
        self.assertGreater(line["sequence"], held)
        # Out of range is still out of range: before the first frame.
        c = await self.reconnect(sid)
        await c.join("observer", replay_from=current + 100000)
        err = await c.expect_frame("Error")
        self.assertEqual(err["payload"]["code"], "REPLAY_OUT_OF_RANGE")


class Export(DurableCase):

    def export(self, sid):
        return subprocess.run(
            [self.stack.sidecar_bin, "--export-asciicast", sid, "--state-dir", self.state_dir(),
             "--state-key-file", os.path.join(self.stack.dir, "state.key")],
            capture_output=True, timeout=30)

    async def test_export_asciicast_v2(self):
        sid, live = await self.session_with("controller", sub="alice", cols=100, rows=20)
        await live.run("printf 'export-%s\\n' caf$(printf '\\303\\251')", "export-caf")
        await live.send("pty.session_resize", {"cols": 90, "rows": 25})
        await live.wait_for("pty.session_frame", "Resize")
        await live.run("echo after-resize-$((5*5))", "after-resize-25")
        p = await self.in_thread(self.export, sid)
        self.assertEqual(p.returncode, 0, p.stderr)
        lines = p.stdout.decode("utf-8").splitlines()
        header = json.loads(lines[0])
        self.assertEqual(header["version"], 2)
        self.assertEqual((header["width"], header["height"]), (100, 20))
        events = [json.loads(l) for l in lines[1:]]
        times = [e[0] for e in events]
        self.assertEqual(times, sorted(times))
        text = "".join(e[2] for e in events if e[1] == "o")
        self.assertIn("export-caf\u00e9", text)
        self.assertIn("after-resize-25", text)
        self.assertIn([ "r", "90x25"], [e[1:] for e in events])
        bad = await self.in_thread(self.export, "not-a-session")
        self.assertNotEqual(bad.returncode, 0)
        self.assertIn(b"not a session id", bad.stderr)


class Flags(DurableCase):

    def run_sidecar(self, *args):
        sock = os.path.join(self.stack.dir, "flags.sock")
        return subprocess.run([self.stack.sidecar_bin, "--listen", "unix:" + sock, *args],
                              capture_output=True, timeout=20)

    def test_state_is_refused_in_clear_without_a_key(self):
        d = os.path.join(self.stack.dir, "flags-state")
        p = self.run_sidecar("--state-dir", d)
        self.assertEqual(p.returncode, 2)
        self.assertIn(b"--state-key-file", p.stderr)
        self.assertFalse(os.path.exists(os.path.join(d, "tasks")), "nothing written")

    def test_bad_flags_are_refused_with_a_reason(self):
        d = os.path.join(self.stack.dir, "flags-state")
        key = os.path.join(self.stack.dir, "loose.key")
        with open(key, "w") as f:
            f.write("00" * 32 + "\n")
        os.chmod(key, 0o644)
        for args, why in (
                (("--state-dir", d, "--state-key-file", key), b"readable by others"),
                (("--state-dir", d, "--state-plaintext", "--fsync", "sometimes"), b"--fsync"),
                (("--state-dir", d, "--state-plaintext", "--fsync", "interval:0ms"), b"--fsync"),
                (("--state-dir", d, "--state-plaintext", "--state-segment-bytes", "10"), b"65536"),
                (("--state-dir", d, "--state-key-file", key + ".new", "--state-plaintext"), b"exclude"),
                (("--export-asciicast", "x"), b"needs --state-dir")):
            p = self.run_sidecar(*args)
            self.assertEqual(p.returncode, 2, args)
            self.assertIn(why, p.stderr, args)
        os.chmod(key, 0o600)
        with open(key, "w") as f:
            f.write("not hex\n")
        p = self.run_sidecar("--state-dir", d, "--state-key-file", key)
        self.assertEqual(p.returncode, 2)
        self.assertIn(b"hex digits", p.stderr)


class Damage(DurableCase):

    def segments(self, sid):
        d = os.path.join(self.state_dir(), sid + ".frames")
        return sorted(os.path.join(d, n) for n in os.listdir(d) if n.endswith(".seg"))

    async def test_torn_and_flipped_tails_are_cut_never_served(self):
        sid, live, join_kf = await self.flooding_session(1.0)
        self.assertIsNone(self.stack.sidecar.stop())
        await self.drain_until_closed(live)
        seg = self.segments(sid)[-1]
        size = os.path.getsize(seg)
        with open(seg, "r+b") as f:       # a torn last record...
            f.truncate(size - 7)
            f.seek(size // 2)             # ...and a flipped byte mid-segment
            b = f.read(1)
            f.seek(size // 2)
            f.write(bytes([b[0] ^ 0x40]))
        self.restart_sidecar(None)
        _, replayed, _ = await self.replay(sid, join_kf)
        line, closed = replayed[-2:]
        saved = int(SAVED.search(base64.b64decode(line["payload"]["data"]).decode()).group(1))
        self.assertLess(saved, live.last_sequence(), "the damaged part is not claimed")
        assert_exact(self, replayed[:-2], live, join_kf, saved)
        with open(self.stack.sidecar.log_path, errors="replace") as f:
            self.assertIn("damaged bytes, never served", f.read())

    async def test_sigkill_during_a_flood_leaves_a_readable_log(self):
        sid, live = await self.session_with("controller", sub="alice")
        kf = [f for f in live.frames if matches(f, "pty.session_frame", "Keyframe")][-1]["sequence"]
        # Long enough to still run at the kill: the sidecar forwards lines
        # at about 100 MB/s, so 30 MB could end (and close the session)
        # within the 0.3 s below.
        await live.type("yes flood-line-of-some-length | head -c 3000000000\n")
        await live.wait_output("flood-line", timeout=20)
        await asyncio.sleep(0.3)
        self.restart_sidecar(signal.SIGKILL)
        await self.drain_until_closed(live)
        _, replayed, _ = await self.replay(sid, kf)
        line = replayed[-2]
        saved = int(SAVED.search(base64.b64decode(line["payload"]["data"]).decode()).group(1))
        assert_exact(self, replayed[:-2], live, kf, saved)


class DamageInAnOlderSegment(DurableCase):
    """An older segment's index spares it the check on start, so damage
    in it is found when a replay reads it: the replay stops there (an
    Error PTY_OUTPUT_LAGGED naming the last sequence sent, then the
    Keyframe), the damaged record is never served, the log says so."""
    SIDECAR_ARGS = DurableCase.SIDECAR_ARGS + ("--state-segment-bytes", "65536")

    def segments(self, sid, ext=".seg"):
        d = os.path.join(self.state_dir(), sid + ".frames")
        return sorted(os.path.join(d, n) for n in os.listdir(d) if n.endswith(ext))

    async def test_flipped_byte_in_an_older_segment_stops_the_replay(self):
        sid, live = await self.session_with("controller", sub="alice")
        join_kf = live.last_sequence()
        await live.run("seq 1 40000; echo lines-$((4*10))", "lines-40")
        self.assertIsNone(self.stack.sidecar.stop())
        await self.drain_until_closed(live)
        segs = self.segments(sid)
        self.assertGreaterEqual(len(segs), 3, "the history spans several segments")
        self.assertGreaterEqual(len(self.segments(sid, ".idx")), len(segs) - 1,
                         "every closed segment has its index")
        size = os.path.getsize(segs[1])
        with open(segs[1], "r+b") as f:   # a flipped byte mid-way in an older segment
            f.seek(size // 2)
            b = f.read(1)
            f.seek(size // 2)
            f.write(bytes([b[0] ^ 0x40]))
        self.restart_sidecar(None)
        _, replayed, kf = await self.replay(sid, join_kf)
        self.assertEqual(kf["payload"]["kind"], "Keyframe")
        err = replayed[-1]
        self.assertEqual(err["payload"]["kind"], "Error", err)
        self.assertEqual(err["payload"]["code"], "PTY_OUTPUT_LAGGED")
        self.assertIn("damaged", err["payload"]["message"])
        served = replayed[:-1]
        self.assertTrue(served, "the history before the damage is served")
        stopped = int(re.search(r"after sequence (\d+)", err["payload"]["message"]).group(1))
        self.assertEqual(served[-1]["sequence"], stopped)
        # Everything served is exactly what the live client got; nothing
        # from the damaged record on (the boundary line is never reached).
        live_frames = {f["sequence"]: same(f) for f in live.frames
                       if f["op"] == "pty.session_frame"}
        for f in served:
            self.assertEqual(same(f), live_frames.get(f["sequence"]),
                             "frame %d served exactly as sent live" % f["sequence"])
        self.assertLess(stopped, live.last_sequence())
        self.assertFalse(any(f["payload"]["kind"] == "Closed" for f in served))
        with open(self.stack.sidecar.log_path, errors="replace") as f:
            log = f.read()
        self.assertIn("the replay stopped after sequence %d" % stopped, log)
        self.assertIn("damaged", log)


class KeyRotation(DurableCase):

    async def test_old_segments_readable_with_the_old_key_only(self):
        sid, live, join_kf = await self.flooding_session(0.5)
        old_key = os.path.join(self.stack.dir, "state.key")
        new_key = os.path.join(self.stack.dir, "state2.key")
        argv = list(self.stack.sidecar.argv)
        rotated = [a if a != old_key else new_key for a in argv] + ["--state-old-key-file", old_key]
        self.restart_sidecar(signal.SIGTERM, argv=rotated)
        await self.drain_until_closed(live)
        self.assertEqual(os.stat(new_key).st_mode & 0o777, 0o600)
        _, replayed, _ = await self.replay(sid, join_kf)
        line = replayed[-2]
        saved = int(SAVED.search(base64.b64decode(line["payload"]["data"]).decode()).group(1))
        assert_exact(self, replayed[:-2], live, join_kf, saved)
        # Without the old key, its segments are not served (out of range).
        only_new = [a if a != old_key else new_key for a in argv]
        self.restart_sidecar(signal.SIGTERM, argv=only_new)
        c = await self.reconnect(sid)
        await c.join("observer", replay_from=join_kf)
        err = await c.expect_frame("Error")
        self.assertEqual(err["payload"]["code"], "REPLAY_OUT_OF_RANGE")
        with open(self.stack.sidecar.log_path, errors="replace") as f:
            self.assertIn("sealed with a key not given", f.read())
        # The state on disk is sealed: frames, screens and records alike
        # hold no output text, command line or label in clear.
        checked = set()
        for root, _, files in os.walk(self.state_dir()):
            for n in files:
                try:
                    with open(os.path.join(root, n), "rb") as f:
                        data = f.read()
                except FileNotFoundError:
                    continue  # a record's temp file, renamed over it meanwhile
                for clear in (b"tick-", b"/bin/sh", b"ptygate-session"):
                    self.assertNotIn(clear, data, n)
                checked.add(n.rsplit(".", 1)[-1])
        self.assertTrue({"seg", "session", "screen"} <= checked, checked)


class DiskBudget(DurableCase):
    SIDECAR_ARGS = DurableCase.SIDECAR_ARGS + (
        "--state-segment-bytes", "65536", "--state-max-bytes", "400000",
        "--replay-memory-bytes", "65536")

    async def test_budget_eviction_gives_out_of_range_with_the_oldest(self):
        sid, live = await self.session_with("controller", sub="alice")
        first = live.last_sequence()
        # The marker is computed, so the typed line's echo does not match it.
        await live.type("yes budget-line-xxxxxxxxxxxxxxxxxxxx | head -c 3000000; "
                        "echo budget-$((1+1))-done\n")
        await live.wait_output("budget-2-done", timeout=60)
        # The budget is checked once a second: wait for it (a loaded machine
        # may take several), never for a fixed time.
        bound, deadline = 400000 + 65536 + 70000, time.monotonic() + 60
        while True:
            total = 0
            for root, _, files in os.walk(self.state_dir()):
                for n in files:
                    try:  # the budget check may delete it meanwhile
                        total += os.path.getsize(os.path.join(root, n)) if n.endswith(".seg") else 0
                    except FileNotFoundError:
                        pass
            if total <= bound:
                break
            self.assertLess(time.monotonic(), deadline,
                            "the disk budget does not hold: %d bytes" % total)
            await asyncio.sleep(0.2)
        c = await self.reconnect(sid)
        await c.join("observer", replay_from=first)
        err = await c.expect_frame("Error")
        self.assertEqual(err["payload"]["code"], "REPLAY_OUT_OF_RANGE")
        m = re.search(r"oldest retained frame \(sequence=(\d+)\)", err["payload"]["message"])
        self.assertTrue(m, err["payload"]["message"])
        oldest = int(m.group(1))
        self.assertGreater(oldest, first + 1)
        # From just before the oldest retained: served (partly from disk).
        c2 = await self.reconnect(sid)
        await c2.join("observer", replay_from=oldest - 1)
        await c2.expect_frame("pty.session_frame", "RoleAssigned")
        nxt = await c2.expect_frame("pty.session_frame")
        self.assertEqual(nxt["sequence"], oldest)
        live_copy = [f for f in live.frames if f.get("sequence") == oldest]
        if live_copy:  # the flooded live client may have skipped it
            self.assertEqual(same(nxt), same(live_copy[0]))


if __name__ == "__main__":
    harness.main()


@unittest.skipUnless(os.environ.get("PTG_MEASURE"), "measurements: set PTG_MEASURE=1")
class Measure(DurableCase):
    """Replay speed from disk and restart time, noted in the test log."""
    SIDECAR_ARGS = DurableCase.SIDECAR_ARGS + ("--replay-memory-bytes", "65536",
                                               "--replay-bytes", "1073741824")
    # A replay streams at the pace its client reads; this client is slow,
    # so its queue at the gateway may hold a whole replay, however long it
    # waits, rather than lag.
    GATEWAY_ARGS = ("--max-queue-bytes", "1073741824", "--max-queue-ms", "0")

    def timed_restart(self):
        """Restarts the stopped sidecar; ms until it logs that it listens
        (after every session is restored)."""
        def listening():
            with open(self.stack.sidecar.log_path, errors="replace") as f:
                return f.read().count("listening on")
        before = listening()
        t0 = time.monotonic()
        self.restart_sidecar(None)
        while listening() == before:
            self.assertLess(time.monotonic() - t0, 60)
            time.sleep(0.005)
        return (time.monotonic() - t0) * 1000

    def disk_replay_line(self, sid):
        with open(self.stack.sidecar.log_path, errors="replace") as f:
            lines = [l for l in f if sid in l and "from disk in" in l]
        return lines[-1].strip() if lines else None

    async def replay_all(self, sid, after):
        """Replays everything after `after`; ms until the client has it all."""
        c = await self.reconnect(sid)
        t0 = time.monotonic()
        await c.join("observer", replay_from=after)
        await c.wait_for("pty.session_frame", "MembershipChanged", timeout=600)
        took = (time.monotonic() - t0) * 1000
        await c.close()
        return took

    async def test_replay_speed_from_disk(self):
        for label, cmd, marker in (
                ("1000 frames", "i=0; while [ $i -lt 1000 ]; do echo line-$i; i=$((i+1)); sleep 0.002; done; echo done-$((1+1))", "done-2"),
                ("100 MiB", "yes 0123456789abcdef0123456789abcdef | head -c 104857600; echo done-$((2+2))", "done-4")):
            sid, live = await self.session_with("controller", sub="alice")
            first = live.last_sequence()
            await live.type(cmd + "\n")
            await live.wait_output(marker, timeout=600)
            await live.close()
            took = await self.replay_all(sid, first)
            harness.note("replay from disk, %s: %s" % (label, self.disk_replay_line(sid)))
            harness.note("replay from disk, %s: the client had it all in %.0f ms"
                         % (label, took))
        # A restart verifies every segment on disk (every record's tag).
        self.assertIsNone(self.stack.sidecar.stop())
        harness.note("restart with about 100 MiB of history on disk: ready in %.0f ms"
                     % self.timed_restart())
        c = await self.reconnect(sid)  # the gateway's link is back for the next test
        await c.close()

    async def test_restart_time_with_100_sessions(self):
        sids = [self.stack.create_session() for _ in range(100)]
        await asyncio.sleep(1.5)  # each screen saved once
        self.assertIsNone(self.stack.sidecar.stop())
        took = self.timed_restart()
        c = await self.reconnect(sids[-1])  # the gateway's link is back
        self.assertEqual(c.hello["payload"]["session"]["session_id"], sids[-1])
        harness.note("restart with %d sessions on disk: ready in %.0f ms" % (len(sids), took))
