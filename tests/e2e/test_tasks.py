"""A2A task operations over pty-ws/v1 (docs/protocol.md, "Tasks"): a message's text is
a command the sidecar runs without a terminal; every op, every error code
tasks can raise, idempotent re-sends that run nothing, cancel, subscribe,
trace ids, limits, durability across a sidecar restart, the operator's
handler, `ptygate run`, output holding NUL bytes, and task owners (a
principal sees its own tasks; scope tasks:all sees every one). Every frame received is schema-validated by the
harness; the task JSON is checked here against A2A v1.0's canonical form."""
import asyncio
import os
import signal
import subprocess
import pwd
import time
import unittest

import harness
from harness import E2ETestCase, uuid7

TERMINAL = ("TASK_STATE_COMPLETED", "TASK_STATE_FAILED", "TASK_STATE_CANCELED",
            "TASK_STATE_REJECTED")
STATES = ("TASK_STATE_SUBMITTED", "TASK_STATE_WORKING") + TERMINAL
TASK_SCOPE = "tasks"


def text_message(command, message_id=None, lower_case=False):
    if lower_case:  # the older forms the protocol accepts inbound
        return {"messageId": message_id or uuid7(), "role": "user", "kind": "message",
                "parts": [{"kind": "text", "text": command}]}
    return {"messageId": message_id or uuid7(), "role": "ROLE_USER",
            "parts": [{"text": command}]}


def check_message(test, m, role):
    test.assertEqual(m["role"], role, m)
    test.assertTrue(m["messageId"], m)
    test.assertIsInstance(m["parts"], list)
    for p in m["parts"]:
        test.assertEqual(set(p), {"text"}, "a v1.0 text part is {text}: %r" % p)


def check_task(test, task, sid):
    """A2A v1.0 canonical Task."""
    test.assertEqual(set(task) - {"metadata"}, {"id", "contextId", "status", "artifacts", "history"},
                     task)
    test.assertTrue(harness.UUID7.match(task["id"]), task["id"])
    test.assertEqual(task["contextId"], sid)
    st = task["status"]
    test.assertIn(st["state"], STATES)
    test.assertTrue(harness.TS_MILLIS.match(st["timestamp"]), st)
    if "message" in st:
        check_message(test, st["message"], "ROLE_AGENT")
        test.assertEqual(st["message"]["taskId"], task["id"])
    for m in task["history"]:
        test.assertIn(m["role"], ("ROLE_USER", "ROLE_AGENT"))
        check_message(test, m, m["role"])
    for a in task["artifacts"]:
        test.assertIn(a["artifactId"], ("stdout", "stderr"))
        test.assertIn("truncated", a["metadata"])
    return task


def artifact_text(task, name):
    for a in task["artifacts"]:
        if a["artifactId"] == name:
            return "".join(p["text"] for p in a["parts"])
    return ""


class TaskCase(E2ETestCase):
    async def task_client(self, sid=None, scope=TASK_SCOPE, sub="agent", **kw):
        sid = sid or self.stack.create_session(cwd=self.stack.dir)
        c = await self.connect(sid, sub=sub, scope=scope, **kw)
        return sid, c

    async def request(self, c, op, payload, expect=None, **fields):
        """Sends op; returns the reply (its .Response/.Accepted, or Error)."""
        rid = await c.send(op, payload, **fields)
        frame, _ = await c.recv_until(lambda f: f["id"] == rid and f["op"] != "TaskStatusUpdate",
                                      timeout=10, what="the answer to %s" % op)
        if expect:
            self.assertEqual(frame["op"], expect, frame)
        return frame

    async def send_message(self, c, command, sid, **kw):
        r = await self.request(c, "SendMessage", {"message": text_message(command, **kw)},
                               expect="SendMessage.Response")
        return check_task(self, r["payload"]["task"], sid)

    async def get_task(self, c, tid, sid, **extra):
        r = await self.request(c, "GetTask", dict(task_id=tid, **extra), expect="GetTask.Response")
        return check_task(self, r["payload"]["task"], sid)

    async def wait_done(self, c, tid, sid, timeout=15):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            t = await self.get_task(c, tid, sid)
            if t["status"]["state"] in TERMINAL:
                return t
            await asyncio.sleep(0.05)
        self.fail("task %s did not finish in %d s" % (tid, timeout))

    async def updates_until_terminal(self, c, tid, timeout=15):
        """TaskStatusUpdate frames for tid up to the terminal one."""
        got = []

        def done(f):
            if f["op"] == "TaskStatusUpdate" and f["payload"]["task"]["id"] == tid:
                got.append(f)
                return f["payload"]["task"]["status"]["state"] in TERMINAL
            return False
        await c.recv_until(done, timeout=timeout, what="the terminal update of %s" % tid)
        return got

    async def measure_round_trips(self, what, n=20):
        """Median ms from SendStreamingMessage to the terminal update of `true`."""
        sid, c = await self.task_client()
        times = []
        for _ in range(n):
            t0 = time.monotonic()
            acc = await self.request(c, "SendStreamingMessage", {"message": text_message("true")},
                                     expect="SendStreamingMessage.Accepted")
            await self.updates_until_terminal(c, acc["payload"]["task_id"])
            times.append((time.monotonic() - t0) * 1000)
        times.sort()
        # A measurement for the log, not a bound a loaded machine could break.
        harness.note("task round trip (%s): median %.1f ms, max %.1f ms over %d"
                     % (what, times[n // 2], times[-1], n))

    async def reconnect(self, sid, sub="agent", scope=TASK_SCOPE):
        deadline = time.monotonic() + 20
        while True:
            try:
                return await self.connect(sid, sub=sub, scope=scope)
            except Exception:
                if time.monotonic() > deadline:
                    raise
                await asyncio.sleep(0.2)

    async def no_more_updates(self, c, seconds=0.6):
        late = [f for f in await c.quiet(seconds) if f["op"] == "TaskStatusUpdate"]
        self.assertEqual(late, [], "nothing after the terminal update")


class Tasks(TaskCase):
    SIDECAR_ARGS = ("--task-max-running-session", "3")

    async def test_send_message_runs_the_command_in_the_session(self):
        sid = self.stack.create_session(cwd=self.stack.dir, env={
            "PS1": "$ ", "PATH": "/usr/bin:/bin", "TASKVAR": "from-the-session"})
        _, c = await self.task_client(sid)
        task = await self.send_message(
            c, "pwd; echo $TASKVAR; echo to-stderr >&2; read x || echo stdin-empty; exit 3", sid)
        # Answered before the task ended, not after it: at once.
        self.assertIn(task["status"]["state"], ("TASK_STATE_SUBMITTED", "TASK_STATE_WORKING"))
        done = await self.wait_done(c, task["id"], sid)
        self.assertEqual(done["status"]["state"], "TASK_STATE_FAILED")
        self.assertEqual(done["metadata"]["exit_code"], 3)
        self.assertIn("exited with code 3", done["status"]["message"]["parts"][0]["text"])
        out = artifact_text(done, "stdout").splitlines()
        self.assertEqual(out, [os.path.realpath(self.stack.dir), "from-the-session", "stdin-empty"])
        self.assertEqual(artifact_text(done, "stderr"), "to-stderr\n")
        roles = [m["role"] for m in done["history"]]
        self.assertEqual(roles, ["ROLE_USER", "ROLE_AGENT"])
        self.assertEqual(done["history"][0]["parts"][0]["text"].split(";")[0], "pwd")
        ok = await self.send_message(c, "true", sid)
        ok = await self.wait_done(c, ok["id"], sid)
        self.assertEqual(ok["status"]["state"], "TASK_STATE_COMPLETED")
        self.assertEqual(ok["metadata"]["exit_code"], 0)

    async def test_lower_case_forms_are_accepted(self):
        sid, c = await self.task_client()
        task = await self.send_message(c, "echo old-forms", sid, lower_case=True)
        done = await self.wait_done(c, task["id"], sid)
        self.assertEqual(artifact_text(done, "stdout"), "old-forms\n")
        self.assertEqual(done["history"][0]["role"], "ROLE_USER", "canonical out")

    async def test_streaming_states_in_order_terminal_last(self):
        sid, c = await self.task_client()
        acc = await self.request(c, "SendStreamingMessage",
                                 {"message": text_message("echo one; sleep 0.6; echo two")},
                                 expect="SendStreamingMessage.Accepted")
        tid = acc["payload"]["task_id"]
        ups = await self.updates_until_terminal(c, tid)
        states = [u["payload"]["task"]["status"]["state"] for u in ups]
        self.assertEqual(states[0], "TASK_STATE_SUBMITTED", states)
        self.assertIn("TASK_STATE_WORKING", states)
        self.assertEqual(states[-1], "TASK_STATE_COMPLETED")
        self.assertNotIn("sequence", ups[0])
        for u in ups:
            check_task(self, u["payload"]["task"], sid)
            self.assertIsInstance(u["payload"]["delta"], dict)
        # Output streamed while it ran: "one" before the end, "two" not yet.
        working = [u["payload"]["task"] for u in ups
                   if u["payload"]["task"]["status"]["state"] == "TASK_STATE_WORKING"]
        self.assertTrue(any(artifact_text(t, "stdout") == "one\n" for t in working),
                        [artifact_text(t, "stdout") for t in working])
        self.assertEqual(artifact_text(ups[-1]["payload"]["task"], "stdout"), "one\ntwo\n")
        await self.no_more_updates(c)

    async def test_idempotent_resend_runs_nothing(self):
        sid, c = await self.task_client()
        path = os.path.join(self.stack.dir, "ran-%s" % uuid7())
        mid = uuid7()
        cmd = "echo ran >> %s" % path
        first = await self.send_message(c, cmd, sid, message_id=mid)
        await self.wait_done(c, first["id"], sid)
        # Again on this connection, then on another one (a reconnect of the
        # same principal: messageIds are scoped by session and principal).
        again = await self.send_message(c, cmd, sid, message_id=mid)
        self.assertEqual(again["id"], first["id"])
        _, c2 = await self.task_client(sid)
        acc = await self.request(c2, "SendStreamingMessage", {"message": text_message(cmd, message_id=mid)},
                                 expect="SendStreamingMessage.Accepted")
        self.assertEqual(acc["payload"]["task_id"], first["id"])
        snap = await c2.wait_for("TaskStatusUpdate")
        self.assertEqual(snap["payload"]["task"]["status"]["state"], "TASK_STATE_COMPLETED")
        # idempotency_key: new messageIds, one key, one run.
        keyed = os.path.join(self.stack.dir, "keyed-%s" % uuid7())
        _, c3 = await self.task_client(sid, sub="agent3")
        params = {"trace_id": "t-idem", "idempotency_key": "key-%s" % uuid7()}
        r1 = await self.request(c3, "SendMessage", {"message": text_message("echo k >> " + keyed)},
                                expect="SendMessage.Response", service_parameters=params)
        r2 = await self.request(c3, "SendMessage", {"message": text_message("echo k >> " + keyed)},
                                expect="SendMessage.Response")
        self.assertEqual(r1["payload"]["task"]["id"], r2["payload"]["task"]["id"])
        await self.wait_done(c3, r1["payload"]["task"]["id"], sid)
        await asyncio.sleep(0.3)
        with open(path) as f:
            self.assertEqual(f.read().splitlines(), ["ran"], "the command ran once")
        with open(keyed) as f:
            self.assertEqual(f.read().splitlines(), ["k"], "the keyed command ran once")

    async def test_cancel_running_kills_the_group_and_tells_subscribers(self):
        sid, c = await self.task_client()
        pidfile = os.path.join(self.stack.dir, "bg-%s" % uuid7())
        task = await self.send_message(c, "sleep 60 & echo $! > %s; wait" % pidfile, sid)
        _, watcher = await self.task_client(sid)  # the owner's second connection
        acc = await self.request(watcher, "SubscribeToTask", {"task_id": task["id"]},
                                 expect="SubscribeToTask.Accepted")
        self.assertIsInstance(acc["payload"]["current_sequence"], int)
        deadline = time.monotonic() + 5
        while not (os.path.exists(pidfile) and open(pidfile).read().strip()):
            self.assertLess(time.monotonic(), deadline, "the command started")
            await asyncio.sleep(0.05)
        bg = int(open(pidfile).read())
        r = await self.request(c, "CancelTask", {"task_id": task["id"]}, expect="CancelTask.Response")
        self.assertEqual(r["payload"]["task"]["status"]["state"], "TASK_STATE_CANCELED")
        ups = await self.updates_until_terminal(watcher, task["id"])
        self.assertEqual(ups[-1]["payload"]["task"]["status"]["state"], "TASK_STATE_CANCELED")
        await self.no_more_updates(watcher)
        deadline = time.monotonic() + 5
        while os.path.exists("/proc/%d" % bg) and open("/proc/%d/stat" % bg).read().split()[2] != "Z":
            self.assertLess(time.monotonic(), deadline, "the group's background sleep was killed")
            await asyncio.sleep(0.05)
        err = await self.request(c, "CancelTask", {"task_id": task["id"]}, expect="Error")
        self.assertEqual(err["payload"]["code"], "TASK_NOT_CANCELABLE")

    async def test_cancel_finished_task_is_not_cancelable(self):
        sid, c = await self.task_client()
        task = await self.send_message(c, "echo done", sid)
        await self.wait_done(c, task["id"], sid)
        err = await self.request(c, "CancelTask", {"task_id": task["id"]}, expect="Error")
        self.assertEqual(err["payload"]["code"], "TASK_NOT_CANCELABLE")
        self.assertFalse(err["payload"]["retryable"])

    async def test_get_task_history_length_and_not_found(self):
        sid, c = await self.task_client()
        task = await self.send_message(c, "echo h", sid)
        done = await self.wait_done(c, task["id"], sid)
        self.assertEqual(len(done["history"]), 2)
        none = await self.get_task(c, task["id"], sid, history_length=0)
        self.assertEqual(none["history"], [])
        last = await self.get_task(c, task["id"], sid, history_length=1)
        self.assertEqual([m["role"] for m in last["history"]], ["ROLE_AGENT"])
        err = await self.request(c, "GetTask", {"task_id": uuid7()}, expect="Error")
        self.assertEqual(err["payload"]["code"], "TASK_NOT_FOUND")
        # Another session's task is not found from here.
        other, c2 = await self.task_client()
        err = await self.request(c2, "GetTask", {"task_id": task["id"]}, expect="Error")
        self.assertEqual(err["payload"]["code"], "TASK_NOT_FOUND")
        bad = await self.request(c, "GetTask", {"task_id": task["id"], "history_length": -1},
                                 expect="Error")
        self.assertEqual(bad["payload"]["code"], "INVALID_REQUEST")

    async def test_list_tasks_paged_and_session_scoped(self):
        sid, c = await self.task_client()
        ids = []
        for i in range(3):
            t = await self.send_message(c, "echo %d" % i, sid)
            await self.wait_done(c, t["id"], sid)
            ids.append(t["id"])
        other, c2 = await self.task_client()
        await self.send_message(c2, "echo elsewhere", other)
        p1 = await self.request(c, "ListTasks", {"page_size": 2}, expect="ListTasks.Response")
        got = [t["id"] for t in p1["payload"]["tasks"]]
        self.assertEqual(got, ids[::-1][:2], "newest first")
        tok = p1["payload"]["next_page_token"]
        self.assertTrue(tok)
        p2 = await self.request(c, "ListTasks", {"page_size": 2, "page_token": tok},
                                expect="ListTasks.Response")
        self.assertEqual([t["id"] for t in p2["payload"]["tasks"]], ids[:1])
        self.assertEqual(p2["payload"]["next_page_token"], "")
        for t in p1["payload"]["tasks"] + p2["payload"]["tasks"]:
            check_task(self, t, sid)
        only = await self.request(c, "ListTasks", {"filter": {"state": "TASK_STATE_WORKING"}},
                                  expect="ListTasks.Response")
        self.assertEqual(only["payload"]["tasks"], [])
        big = await self.request(c, "ListTasks", {"page_size": 100000}, expect="ListTasks.Response")
        self.assertEqual(len(big["payload"]["tasks"]), 3, "clamped, session-scoped")
        bad = await self.request(c, "ListTasks", {"page_token": "nope"}, expect="Error")
        self.assertEqual(bad["payload"]["code"], "INVALID_REQUEST")

    async def test_subscribe_after_completion_gets_the_final_task(self):
        sid, c = await self.task_client()
        task = await self.send_message(c, "echo finished-before", sid)
        await self.wait_done(c, task["id"], sid)
        _, late = await self.task_client(sid)
        acc = await self.request(late, "SubscribeToTask", {"task_id": task["id"]},
                                 expect="SubscribeToTask.Accepted")
        self.assertGreaterEqual(acc["payload"]["current_sequence"], 0)
        up = await late.expect_frame("TaskStatusUpdate")
        t = check_task(self, up["payload"]["task"], sid)
        self.assertEqual(t["status"]["state"], "TASK_STATE_COMPLETED")
        self.assertEqual(artifact_text(t, "stdout"), "finished-before\n")
        await self.no_more_updates(late)
        err = await self.request(late, "SubscribeToTask", {"task_id": uuid7()}, expect="Error")
        self.assertEqual(err["payload"]["code"], "TASK_NOT_FOUND")

    async def test_two_subscribers_see_the_same_states_in_order(self):
        sid, c = await self.task_client()
        # Both subscribe before anything changes: the command waits for a gate.
        gate = os.path.join(self.stack.dir, "gate-%s" % uuid7())
        task = await self.send_message(
            c, "while [ ! -e %s ]; do sleep 0.05; done; echo a; sleep 0.4; echo b; sleep 0.3" % gate, sid)
        subs = []
        for name in ("s1", "s2"):
            _, s = await self.task_client(sid, label=name)
            await self.request(s, "SubscribeToTask", {"task_id": task["id"]},
                               expect="SubscribeToTask.Accepted")
            subs.append(s)
        open(gate, "w").close()
        seen = [await self.updates_until_terminal(s, task["id"]) for s in subs]
        views = [[(u["payload"]["task"]["status"]["state"], artifact_text(u["payload"]["task"], "stdout"))
                  for u in ups] for ups in seen]
        self.assertEqual(views[0], views[1])
        self.assertGreaterEqual(len(views[0]), 3, views[0])
        self.assertEqual(views[0][-1], ("TASK_STATE_COMPLETED", "a\nb\n"))

    async def test_late_subscriber_deltas_continue_its_snapshot(self):
        sid, c = await self.task_client()
        gate = os.path.join(self.stack.dir, "gate-%s" % uuid7())
        task = await self.send_message(
            c, "echo a; while [ ! -e %s ]; do sleep 0.05; done; echo b" % gate, sid)
        deadline = time.monotonic() + 10
        while artifact_text(await self.get_task(c, task["id"], sid), "stdout") != "a\n":
            self.assertLess(time.monotonic(), deadline)
            await asyncio.sleep(0.05)
        _, s = await self.task_client(sid, label="late-sub")
        await self.request(s, "SubscribeToTask", {"task_id": task["id"]}, expect="SubscribeToTask.Accepted")
        snap = await s.expect_frame("TaskStatusUpdate")
        text = artifact_text(snap["payload"]["task"], "stdout")
        self.assertEqual(text, "a\n")
        open(gate, "w").close()
        for u in await self.updates_until_terminal(s, task["id"]):
            for a in u["payload"]["delta"].get("artifacts", []):
                if a["artifactId"] == "stdout":
                    text += "".join(p["text"] for p in a["parts"])
        self.assertEqual(text, "a\nb\n", "snapshot + appended deltas = the output, once")

    async def test_unsubscribe_stops_updates(self):
        sid, c = await self.task_client()
        task = await self.send_message(c, "sleep 0.5; echo x", sid)
        _, s = await self.task_client(sid, label="quitter")
        await self.request(s, "SubscribeToTask", {"task_id": task["id"]}, expect="SubscribeToTask.Accepted")
        await s.expect_frame("TaskStatusUpdate")
        await self.request(s, "Unsubscribe", {"task_id": task["id"]}, expect="Unsubscribe.Response")
        await self.wait_done(c, task["id"], sid)
        await self.no_more_updates(s)

    async def test_trace_id_on_every_update_and_in_the_logs(self):
        sid = self.stack.create_session()
        c = await self.connect(sid, sub="tracer", scope=TASK_SCOPE)
        trace = "trace-%s" % uuid7()
        acc = await self.request(c, "SendStreamingMessage", {"message": text_message("echo traced")},
                                 expect="SendStreamingMessage.Accepted",
                                 service_parameters={"trace_id": trace})
        tid = acc["payload"]["task_id"]
        ups = await self.updates_until_terminal(c, tid)
        self.assertGreaterEqual(len(ups), 3)
        for u in ups:
            self.assertEqual(u["service_parameters"]["trace_id"], trace, u)
        new = "trace2-%s" % uuid7()
        await self.request(c, "UpdateServiceParameters", {"service_parameters": {"trace_id": new}},
                           expect="UpdateServiceParameters.Response")
        await self.request(c, "SubscribeToTask", {"task_id": tid}, expect="SubscribeToTask.Accepted")
        snap = await c.expect_frame("TaskStatusUpdate")
        self.assertEqual(snap["service_parameters"]["trace_id"], new)
        # Waited for, not slept on: the task's lines (submitted, started,
        # finished) are each written by the sidecar as the task moves.
        def task_lines():
            lines = [l for l in self.stack.sidecar.log_text().splitlines() if tid in l]
            return lines if len(lines) >= 3 else None
        lines = await harness.poll_until(task_lines, "three log lines of task %s" % tid,
                                         logs=self.stack.logs)
        self.assertGreaterEqual(len(lines), 3, lines)
        for l in lines:
            self.assertIn("trace=" + trace, l)

    async def test_errors_tasks_can_raise(self):
        sid, c = await self.task_client()
        bad = [
            ({}, "INVALID_REQUEST"),
            ({"message": {"role": "ROLE_USER", "parts": [{"text": "x"}]}}, "INVALID_REQUEST"),
            ({"message": dict(text_message("x"), role="ROLE_AGENT")}, "INVALID_REQUEST"),
            ({"message": dict(text_message("x"), parts=[{"data": {"a": 1}}])}, "INVALID_REQUEST"),
            ({"message": dict(text_message("x"), parts=[])}, "INVALID_REQUEST"),
            ({"message": dict(text_message(""))}, "INVALID_REQUEST"),
            ({"message": dict(text_message("x"), taskId=uuid7())}, "INVALID_REQUEST"),
            ({"message": text_message("x" * (64 * 1024 + 1))}, "INVALID_REQUEST"),
            ({"message": dict(text_message("x"), contextId=uuid7())}, "PERMISSION_DENIED"),
        ]
        for payload, code in bad:
            # A fresh connection each: repeated violations close one (4400).
            _, c = await self.task_client(sid)
            err = await self.request(c, "SendMessage", payload, expect="Error")
            self.assertEqual(err["payload"]["code"], code, payload if len(str(payload)) < 200 else code)
        for op in ("SetTaskPushNotificationConfig", "GetTaskPushNotificationConfig",
                   "ListTaskPushNotificationConfig", "DeleteTaskPushNotificationConfig"):
            err = await self.request(c, op, {"task_id": uuid7()}, expect="Error")
            self.assertEqual(err["payload"]["code"], "UNSUPPORTED_OPERATION")
        # Without the tasks scope.
        noscope = await self.connect(sid, sub="viewer", scope="pty:observe")
        for op in ("SendMessage", "SendStreamingMessage", "GetTask", "ListTasks", "CancelTask",
                   "SubscribeToTask", "Unsubscribe"):
            err = await self.request(noscope, op, {"message": text_message("echo no")}, expect="Error")
            self.assertEqual(err["payload"]["code"], "PERMISSION_DENIED", op)

    async def test_rate_limited_past_the_running_cap(self):
        sid, c = await self.task_client()
        running = [await self.send_message(c, "sleep 30", sid) for _ in range(3)]
        err = await self.request(c, "SendMessage", {"message": text_message("echo one-too-many")},
                                 expect="Error")
        self.assertEqual(err["payload"]["code"], "RATE_LIMITED")
        self.assertTrue(err["payload"]["retryable"])
        # Another session has its own cap.
        other, c2 = await self.task_client()
        t = await self.send_message(c2, "echo fine", other)
        await self.wait_done(c2, t["id"], other)
        for t in running:
            await self.request(c, "CancelTask", {"task_id": t["id"]}, expect="CancelTask.Response")
        t = await self.send_message(c, "echo room-again", sid)
        self.assertEqual((await self.wait_done(c, t["id"], sid))["status"]["state"], "TASK_STATE_COMPLETED")

    async def test_round_trip_without_state_dir(self):
        await self.measure_round_trips("no --state-dir")

    async def test_tasks_work_beside_a_joined_terminal(self):
        sid, alice = await self.session_with("controller", sub="alice")
        c = await self.connect(sid, sub="both", scope="pty:control tasks")
        await c.join_fresh("controller")
        task = await self.send_message(c, "echo beside", sid)
        done = await self.wait_done(c, task["id"], sid)
        self.assertEqual(artifact_text(done, "stdout"), "beside\n")
        await alice.run("echo still-$((20+1))", "still-21")


class TaskSlowReader(TaskCase):
    # The stall bound (a queue over the cap this long closes the client)
    # is not this test's subject: on a loaded machine the task's updates
    # outlast its default 10 s before the slow client starts reading.
    GATEWAY_ARGS = ("--max-queue-bytes", "65536", "--queue-stall-timeout", "3600")

    async def test_a_client_that_does_not_read_gets_the_end_not_a_backlog(self):
        sid, c = await self.task_client()
        gate = os.path.join(self.stack.dir, "gate-%s" % uuid7())
        # About 1 MB in 40 steps: one update per 150 ms, each the whole task.
        task = await self.send_message(c, "while [ ! -e %s ]; do sleep 0.05; done; for i in $(seq 40); "
                                       "do head -c 25000 /dev/zero | tr '\\0' x; sleep 0.06; done" % gate, sid)
        slow = self.raw(sid, sub="agent", scope=TASK_SCOPE, rcvbuf=4096)
        await slow.expect_hello(sid)
        await slow.send("SubscribeToTask", {"task_id": task["id"]})
        await slow.expect_frame("SubscribeToTask.Accepted")
        await slow.expect_frame("TaskStatusUpdate")
        _, reader = await self.task_client(sid, label="reader")
        await self.request(reader, "SubscribeToTask", {"task_id": task["id"]},
                           expect="SubscribeToTask.Accepted")
        await reader.expect_frame("TaskStatusUpdate")
        open(gate, "w").close()  # from here the slow client reads nothing
        # Each update carries the whole task (up to 1 MB): beside a CPU hog
        # the sanitizer build took over 30 s for the forty of them, so the
        # deadline is a generous bound on a hang, not a speed the test needs.
        sent = len(await self.updates_until_terminal(reader, task["id"], timeout=180))
        done = await self.wait_done(c, task["id"], sid, timeout=180)
        self.assertEqual(len(artifact_text(done, "stdout")), 1000000)
        await asyncio.sleep(0.5)
        ups, got = [], 0
        while True:
            f = await slow.recv(timeout=10)
            if f["op"] == "TaskStatusUpdate":
                ups.append(f)
                got += len(harness.json.dumps(f))
                if f["payload"]["task"]["status"]["state"] in TERMINAL:
                    break
        last = ups[-1]["payload"]["task"]
        self.assertEqual(last["status"]["state"], "TASK_STATE_COMPLETED")
        self.assertEqual(artifact_text(last, "stdout"), "x" * 1000000, "the end arrives whole")
        harness.note("slow task subscriber: %d of %d updates, %d KiB while not reading"
                     % (len(ups), sent, got // 1024))
        # The kernel's socket buffers take a few MB; the rest was skipped.
        self.assertLess(len(ups), sent, "intermediate updates were skipped, not queued")
        await self.no_more_updates(slow)


@unittest.skipUnless(os.geteuid() == 0 and "nobody" in [p.pw_name for p in pwd.getpwall()],
                     "needs root and the user nobody")
class TaskSessionUser(TaskCase):
    """A task never runs with more privilege than the session's program:
    with --session-user, tasks too run as that user, never as the
    sidecar's root in a directory and environment the user chose."""
    SIDECAR_ARGS = ("--session-user", "nobody")

    async def test_a_task_runs_as_the_session_user(self):
        os.chmod(self.stack.dir, 0o755)  # only the socket's own mode keeps it out
        sid = self.stack.create_session()
        c = await self.connect(sid, sub="agent", scope=TASK_SCOPE)
        probe = ("id -u; python3 -c 'import socket,sys\n"
                 "try:\n socket.socket(socket.AF_UNIX).connect(sys.argv[1]); print(\"connect=ok\")\n"
                 "except PermissionError: print(\"connect=EACCES\")' %s; ls /proc/self/fd | sort -n | tr '\\n' ,"
                 % self.stack.socket_path)
        task = await self.send_message(c, probe, sid)
        done = await self.wait_done(c, task["id"], sid)
        out = artifact_text(done, "stdout").split("\n")
        self.assertEqual(out[0], str(pwd.getpwnam("nobody").pw_uid), done)
        self.assertEqual(out[1], "connect=EACCES", done)
        # stdin, stdout, stderr and ls's own directory fd: nothing inherited.
        self.assertEqual(out[2], "0,1,2,3,", done)


class TaskOutputCap(TaskCase):
    SIDECAR_ARGS = ("--task-output-bytes", "1000")

    async def test_output_is_capped_and_says_so(self):
        sid, c = await self.task_client()
        task = await self.send_message(c, "head -c 5000 /dev/zero | tr '\\0' a; printf '\\377' >&2", sid)
        done = await self.wait_done(c, task["id"], sid)
        out = [a for a in done["artifacts"] if a["artifactId"] == "stdout"][0]
        self.assertEqual(len(artifact_text(done, "stdout")), 1000)
        self.assertEqual(out["metadata"]["bytes"], 5000)
        self.assertEqual(out["metadata"]["kept_bytes"], 1000)
        self.assertTrue(out["metadata"]["truncated"])
        err = [a for a in done["artifacts"] if a["artifactId"] == "stderr"][0]
        self.assertTrue(err["metadata"]["truncated"], "the cap is for both streams")


class TaskHandler(TaskCase):
    SIDECAR_ARGS = ("--task-handler", "{dir}/handler.sh")

    @classmethod
    def setUpClass(cls):
        # The handler must exist before the sidecar runs it; {dir} is the
        # stack's dir, made in setUpClass, so write it from a wrapper dir.
        super().setUpClass()
        path = os.path.join(cls.stack.dir, "handler.sh")
        with open(path, "w") as f:
            f.write("#!/bin/sh\necho handler-got: $(cat)\n")
        os.chmod(path, 0o755)

    async def test_handler_gets_the_message_as_json(self):
        sid, c = await self.task_client()
        mid = uuid7()
        task = await self.send_message(c, "echo not-run-by-sh", sid, message_id=mid)
        done = await self.wait_done(c, task["id"], sid)
        out = artifact_text(done, "stdout")
        self.assertTrue(out.startswith("handler-got: {"), out)
        doc = harness.json.loads(out[len("handler-got: "):])
        self.assertEqual(doc["message"]["messageId"], mid)
        self.assertEqual(doc["message"]["parts"], [{"text": "echo not-run-by-sh"}])
        self.assertEqual(doc["taskId"], task["id"])


class TaskRestart(TaskCase):
    SIDECAR_ARGS = ("--state-dir", "{dir}/state", "--state-key-file", "{dir}/state.key")

    async def test_round_trip_with_state_dir(self):
        await self.measure_round_trips("--state-dir: 3 fsynced record writes per task")

    async def test_sidecar_restart_keeps_finished_and_fails_running(self):
        sid, c = await self.task_client()
        done = await self.send_message(c, "echo kept-output", sid)
        done = await self.wait_done(c, done["id"], sid)
        running = await self.send_message(c, "sleep 60", sid)
        await asyncio.sleep(0.3)
        self.assertEqual((await self.get_task(c, running["id"], sid))["status"]["state"],
                         "TASK_STATE_WORKING")
        self.assertIsNone(self.stack.sidecar.stop())
        # A connection that only used tasks is told the link is gone and
        # closed, like a joined one: its subscriptions did not survive.
        await c.expect_close(1011, timeout=10, allow=("Error", "binding_goodbye"))
        self.stack.sidecar.start()
        c2 = await self.reconnect(sid)
        after = await self.get_task(c2, done["id"], sid)
        self.assertEqual(after["status"]["state"], "TASK_STATE_COMPLETED")
        self.assertEqual(artifact_text(after, "stdout"), "kept-output\n")
        self.assertEqual(after["status"]["timestamp"], done["status"]["timestamp"])
        lost = await self.get_task(c2, running["id"], sid)
        self.assertEqual(lost["status"]["state"], "TASK_STATE_FAILED")
        self.assertIn("lost in a sidecar restart", lost["status"]["message"]["parts"][0]["text"])
        self.assertNotIn("exit_code", lost["metadata"], "nothing padded: the end is unknown")
        # Nothing re-runs: resending the finished message returns it.
        first = done["history"][0]
        again = await self.request(c2, "SendMessage", {"message": {
            "messageId": first["messageId"], "role": "ROLE_USER", "parts": first["parts"]}},
            expect="SendMessage.Response")
        self.assertEqual(again["payload"]["task"]["id"], done["id"])
        listed = await self.request(c2, "ListTasks", {}, expect="ListTasks.Response")
        self.assertEqual({t["id"] for t in listed["payload"]["tasks"]}, {done["id"], running["id"]})


NUL_OUT = "a\0b\0\n"
NUL_COMMAND = "printf 'a\\000b\\000\\n'; printf 'e\\000' >&2"


class TaskNulOutput(TaskCase):
    """One NUL byte in a task's output made the task
    unreadable at the gateway (its "\\u0000" refused), the session's
    ListTasks failed for every principal, a stream stopped at WORKING and
    the record did not load after a restart. Output is passed byte for
    byte, and one bad task never fails a list."""
    SIDECAR_ARGS = ("--state-dir", "{dir}/state", "--state-key-file", "{dir}/state.key")

    async def test_nul_output_reaches_the_client_intact_everywhere(self):
        sid, c = await self.task_client()
        plain = await self.send_message(c, "echo plain", sid)
        await self.wait_done(c, plain["id"], sid)
        acc = await self.request(c, "SendStreamingMessage", {"message": text_message(NUL_COMMAND)},
                                 expect="SendStreamingMessage.Accepted")
        tid = acc["payload"]["task_id"]
        ups = await self.updates_until_terminal(c, tid)
        last = ups[-1]["payload"]["task"]
        self.assertEqual(last["status"]["state"], "TASK_STATE_COMPLETED")
        self.assertEqual(artifact_text(last, "stdout"), NUL_OUT)
        self.assertEqual(artifact_text(last, "stderr"), "e\0")
        got = await self.get_task(c, tid, sid)
        self.assertEqual(artifact_text(got, "stdout"), NUL_OUT)
        # The list holds both tasks, for the owner and for tasks:all.
        for client in (c, await self.connect(sid, sub="auditor", scope="tasks:all")):
            listed = await self.request(client, "ListTasks", {}, expect="ListTasks.Response")
            tasks = {t["id"]: t for t in listed["payload"]["tasks"]}
            self.assertEqual(set(tasks), {plain["id"], tid})
            self.assertEqual(artifact_text(tasks[tid], "stdout"), NUL_OUT)
        # A late subscriber's snapshot, then the record after a restart.
        await self.request(c, "SubscribeToTask", {"task_id": tid}, expect="SubscribeToTask.Accepted")
        snap = await c.expect_frame("TaskStatusUpdate")
        self.assertEqual(artifact_text(snap["payload"]["task"], "stdout"), NUL_OUT)
        self.assertIsNone(self.stack.sidecar.stop())
        await c.expect_close(1011, timeout=10, allow=("Error", "binding_goodbye"))
        self.stack.sidecar.start()
        c2 = await self.reconnect(sid)
        after = await self.get_task(c2, tid, sid)
        self.assertEqual(artifact_text(after, "stdout"), NUL_OUT, "the record kept the NUL bytes")
        listed = await self.request(c2, "ListTasks", {}, expect="ListTasks.Response")
        self.assertEqual(len(listed["payload"]["tasks"]), 2)


class TaskOwners(TaskCase):
    """Tasks have owners. Another principal's task is not
    found (TASK_NOT_FOUND, as an unknown id: ids do not leak) by every op,
    and its messageId or idempotency key starts a task of one's own
    instead of returning (hijacking) the other's; a token with scope
    tasks:all sees and acts on every principal's tasks of the session."""

    async def two_principals(self):
        sid, alice = await self.task_client(sub="alice")
        _, bob = await self.task_client(sid, sub="bob")
        return sid, alice, bob

    async def assert_not_found(self, c, op, payload):
        err = await self.request(c, op, payload, expect="Error")
        self.assertEqual(err["payload"]["code"], "TASK_NOT_FOUND", err)

    async def test_another_principals_task_is_not_found(self):
        sid, alice, bob = await self.two_principals()
        mid = uuid7()
        running = await self.send_message(alice, "sleep 30", sid, message_id=mid)
        done = await self.send_message(alice, "echo secret-output", sid)
        await self.wait_done(alice, done["id"], sid)
        for tid in (running["id"], done["id"]):
            await self.assert_not_found(bob, "GetTask", {"task_id": tid})
            await self.assert_not_found(bob, "CancelTask", {"task_id": tid})
            await self.assert_not_found(bob, "SubscribeToTask", {"task_id": tid})
            await self.assert_not_found(bob, "Unsubscribe", {"task_id": tid})
        listed = await self.request(bob, "ListTasks", {}, expect="ListTasks.Response")
        self.assertEqual(listed["payload"]["tasks"], [])
        bad = await self.request(bob, "ListTasks", {"page_token": done["id"]}, expect="Error")
        self.assertEqual(bad["payload"]["code"], "INVALID_REQUEST", "another's id is no page token")
        # alice's messageId from bob is bob's own new task, not alice's.
        mine = await self.send_message(bob, "echo bobs", sid, message_id=mid)
        self.assertNotEqual(mine["id"], running["id"])
        mine = await self.wait_done(bob, mine["id"], sid)
        self.assertEqual(artifact_text(mine, "stdout"), "bobs\n")
        acc = await self.request(bob, "SendStreamingMessage", {"message": text_message("true", message_id=mid)},
                                 expect="SendStreamingMessage.Accepted")
        self.assertEqual(acc["payload"]["task_id"], mine["id"], "bob's own repeat")
        # The idempotency key too.
        key = {"idempotency_key": "key-%s" % uuid7()}
        a = await self.request(alice, "SendMessage", {"message": text_message("echo a")},
                               expect="SendMessage.Response", service_parameters=key)
        b = await self.request(bob, "SendMessage", {"message": text_message("echo b")},
                               expect="SendMessage.Response", service_parameters=key)
        self.assertNotEqual(a["payload"]["task"]["id"], b["payload"]["task"]["id"])
        # Nothing of bob's touched alice's task, and she sees only hers.
        self.assertEqual((await self.get_task(alice, running["id"], sid))["status"]["state"],
                         "TASK_STATE_WORKING")
        listed = await self.request(alice, "ListTasks", {}, expect="ListTasks.Response")
        self.assertEqual({t["id"] for t in listed["payload"]["tasks"]},
                         {running["id"], done["id"], a["payload"]["task"]["id"]})
        await self.request(alice, "CancelTask", {"task_id": running["id"]}, expect="CancelTask.Response")

    async def test_tasks_all_sees_and_acts_on_every_principals_tasks(self):
        sid, alice, bob = await self.two_principals()
        mid = uuid7()
        running = await self.send_message(alice, "echo started; sleep 30", sid, message_id=mid)
        theirs = await self.send_message(bob, "echo bobs", sid)
        _, admin = await self.task_client(sid, sub="admin", scope="tasks:all")
        listed = await self.request(admin, "ListTasks", {}, expect="ListTasks.Response")
        self.assertEqual({t["id"] for t in listed["payload"]["tasks"]}, {running["id"], theirs["id"]})
        done = await self.wait_done(admin, theirs["id"], sid)
        self.assertEqual(artifact_text(done, "stdout"), "bobs\n")
        await self.request(admin, "SubscribeToTask", {"task_id": running["id"]},
                           expect="SubscribeToTask.Accepted")
        snap = await admin.expect_frame("TaskStatusUpdate")
        self.assertEqual(snap["payload"]["task"]["id"], running["id"])
        again = await self.request(admin, "SendMessage", {"message": text_message("true", message_id=mid)},
                                   expect="SendMessage.Response")
        self.assertEqual(again["payload"]["task"]["id"], running["id"], "alice's task, nothing run")
        r = await self.request(admin, "CancelTask", {"task_id": running["id"]}, expect="CancelTask.Response")
        self.assertEqual(r["payload"]["task"]["status"]["state"], "TASK_STATE_CANCELED")
        ups = await self.updates_until_terminal(admin, running["id"])
        self.assertEqual(ups[-1]["payload"]["task"]["status"]["state"], "TASK_STATE_CANCELED")
        self.assertEqual((await self.get_task(alice, running["id"], sid))["status"]["state"],
                         "TASK_STATE_CANCELED")
        # Its own tasks are its own: alice does not see the admin's.
        own = await self.send_message(admin, "true", sid)
        await self.assert_not_found(alice, "GetTask", {"task_id": own["id"]})


class RunCommand(TaskCase):
    def cli(self, *args, **kw):
        cli = harness.cli_binary()
        if not cli:
            self.skipTest("ptygate CLI not built")
        env = dict(os.environ, PTYGATE_TOKEN=self.token)
        return subprocess.Popen([cli, "run", "--gateway", "http://127.0.0.1:%d" % self.stack.port,
                                 "--instance", self.stack.instance, "--session", self.sid, *args],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, **kw)

    def setUp(self):
        super().setUp()
        self.sid = self.stack.create_session()
        self.token = self.stack.token(sub="runner", session_id=self.sid, scope=TASK_SCOPE)

    def test_exit_code_and_output(self):
        p = self.cli("--", "sh", "-c", "echo out-line; echo err-line >&2; exit 7")
        out, err = p.communicate(timeout=30)
        self.assertEqual(p.returncode, 7, err)
        self.assertEqual(out, b"out-line\n")
        self.assertIn(b"err-line\n", err)
        p = self.cli("--", "true")
        p.communicate(timeout=30)
        self.assertEqual(p.returncode, 0)

    def test_nul_output_is_written_byte_for_byte(self):
        # The updates carrying the NUL must not be dropped, or
        # `ptygate run` waits forever at WORKING.
        p = self.cli("--", NUL_COMMAND)
        out, err = p.communicate(timeout=90)
        self.assertEqual(p.returncode, 0, err)
        self.assertEqual(out, NUL_OUT.encode())
        self.assertIn(b"e\0", err)

    async def test_timeout_cancels_the_task_and_exits_124(self):
        p = self.cli("--timeout", "2s", "--", "echo started; sleep 60")
        self.assertEqual(await self.in_thread(p.stdout.readline), b"started\n")
        out, err = await self.in_thread(lambda: p.communicate(timeout=60))
        self.assertEqual(p.returncode, 124, err)
        self.assertIn(b"did not end within 2s (--timeout): canceling it", err)
        c = await self.connect(self.sid, sub="runner", scope=TASK_SCOPE)
        listed = await self.request(c, "ListTasks", {}, expect="ListTasks.Response")
        tid = listed["payload"]["tasks"][0]["id"]
        self.assertEqual((await self.wait_done(c, tid, self.sid))["status"]["state"],
                         "TASK_STATE_CANCELED")

    def test_bad_timeout_is_a_usage_error(self):
        p = self.cli("--timeout", "soon", "--", "true")
        _, err = p.communicate(timeout=30)
        self.assertEqual(p.returncode, 2, err)
        self.assertIn(b"--timeout", err)

    def test_ctrl_c_cancels(self):
        p = self.cli("--", "echo started; sleep 60")
        deadline = time.monotonic() + 15
        line = p.stdout.readline()
        self.assertEqual(line, b"started\n")
        p.send_signal(signal.SIGINT)
        out, err = p.communicate(timeout=15)
        self.assertLess(time.monotonic(), deadline + 15)
        self.assertEqual(p.returncode, 130, err)
        self.assertIn(b"CANCELED", err)


if __name__ == "__main__":
    harness.main()
