"""What operators of Prometheus expect of /metrics, against real daemons:
the whole text parses with a strict text-format parser (promtext.py);
request latency histograms count each request under its route and the
attach histogram each join; build info for the gateway and, over the
link, its sidecar; sessions, instances and clients gauges; the process
metrics match what /proc says of the gateway; each sidecar's report
(sessions, attachments, PTY bytes, memory) appears under its instance; a
sidecar that does not offer reports (an older one, here a fake that
answers the hello without the offer) is never asked and keeps its link;
a fake's report lands field by field, one over the limits is refused;
and every metric the shipped Grafana dashboard queries exists."""
import json
import math
import os
import re
import socket
import subprocess
import threading
import time

import fake_sidecar as fake
import harness
import promtext
from harness import E2ETestCase, Stack

HERE = os.path.dirname(os.path.abspath(__file__))
DASHBOARD = os.path.join(HERE, "..", "..", "deploy", "grafana", "ptygate-dashboard.json")
GET_STATS = 41  # LinkMessage.get_stats
# The gateway asks each sidecar every 5 s: a few rounds on a loaded machine.
REPORT_WAIT = 60


def stats_reply(request_id, version):
    """A Reply holding a SidecarStats with figures no real sidecar has."""
    st = (fake.field(1, version) + fake.field(2, b"feedc0de") + fake.vfield(3, 90061500)
          + fake.vfield(4, 7) + fake.vfield(5, 2) + fake.vfield(6, 5)
          + fake.vfield(7, 123456789012) + fake.vfield(8, 1) + fake.vfield(9, 4096)
          + fake.vfield(10, 3 << 20) + fake.vfield(11, 2500) + fake.vfield(12, 17))
    return fake.reply(request_id, fake.field(21, st))  # Reply.stats = 21


class OldSidecar:
    """A sidecar from before the reports: answers the Hello with a HelloAck
    that does not offer them and records the field number of every
    LinkMessage the gateway sends; one it does not know ends the link, as
    an older sidecar's does. With a version, it is a fake of a current
    one: it offers reports and answers each GetStats with stats_reply."""

    KNOWN = set(range(1, 14)) | {20, 21, 22, 23, 30, 31, 40}

    def __init__(self, path, instance, version=None):
        self.path, self.instance, self.version = path, instance, version
        self.known = self.KNOWN | ({GET_STATS} if version else set())
        self.received = []
        self.srv = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.srv.bind(path)
        self.srv.listen(4)
        self.srv.settimeout(0.2)
        self.stopping = threading.Event()
        self.thread = threading.Thread(target=self.serve, daemon=True)
        self.thread.start()

    def serve(self):
        while not self.stopping.is_set():
            try:
                conn, _ = self.srv.accept()
            except socket.timeout:
                continue
            except OSError:
                return
            conn.settimeout(0.2)
            self.serve_link(conn)

    def serve_link(self, conn):
        buf = b""
        with conn:
            while not self.stopping.is_set():
                try:
                    chunk = conn.recv(1 << 16)
                except socket.timeout:
                    continue
                except OSError:
                    return
                if not chunk:
                    return
                buf += chunk
                while len(buf) >= 4 and len(buf) >= 4 + int.from_bytes(buf[:4], "big"):
                    n = int.from_bytes(buf[:4], "big")
                    msg, buf = fake.parse(buf[4:4 + n]), buf[4 + n:]
                    kinds = sorted(msg)
                    self.received.extend(kinds)
                    if fake.HELLO in kinds:
                        conn.sendall(self.hello_ack())
                    if GET_STATS in kinds and self.version:
                        q = fake.parse(msg[GET_STATS][0])
                        conn.sendall(stats_reply(q[1][0], self.version))
                    if not set(kinds) <= self.known:
                        return  # "unexpected message": the link ends

    def hello_ack(self):
        ack = fake.vfield(1, 1) + fake.field(2, self.instance.encode())
        if self.version:
            ack += fake.vfield(4, 1)  # HelloAck.reports_stats
        return fake.framed(fake.field(2, ack))  # LinkMessage.hello_ack

    def stop(self):
        self.stopping.set()
        self.srv.close()
        self.thread.join(5)


class MetricsStack(Stack):
    """The real sidecar (inst-e2e), an older one (inst-old), a fake current
    one (inst-fake) and one whose answers break the limits (inst-long)."""

    def __init__(self):
        super().__init__(gateway_args=["--instance", "inst-old=unix:{dir}/old.sock",
                                       "--instance", "inst-fake=unix:{dir}/fake.sock",
                                       "--instance", "inst-long=unix:{dir}/long.sock"])
        self.old = OldSidecar(os.path.join(self.dir, "old.sock"), "inst-old")
        self.fake = OldSidecar(os.path.join(self.dir, "fake.sock"), "inst-fake", b"7.7.7")
        self.long = OldSidecar(os.path.join(self.dir, "long.sock"), "inst-long", b"v" * 65)

    def stop(self):
        for s in (self.old, self.fake, self.long):
            s.stop()
        return super().stop()


class Metrics(E2ETestCase):

    @classmethod
    def make_stack(cls):
        return MetricsStack()

    def scrape(self):
        r = self.stack.http("GET", "/metrics")
        self.assertEqual(r.status, 200)
        self.assertEqual(r.header("Content-Type"), "text/plain; version=0.0.4; charset=utf-8")
        return promtext.parse(r.body.decode())

    def value(self, fams, family, sample=None, **labels):
        return fams[family].value(sample, **labels)

    def count(self, fams, family, **labels):
        return self.value(fams, family, family + "_count", **labels)

    def wait_metric(self, predicate, what, timeout=REPORT_WAIT):
        deadline = time.monotonic() + timeout
        while True:
            fams = self.scrape()
            try:
                if predicate(fams):
                    return fams
            except KeyError:
                pass
            if time.monotonic() > deadline:
                seen = ["%s%s %s" % (n, l, v) for f in fams.values() for n, l, v in f.samples
                        if n.startswith(("ptygate_sidecar_", "ptygate_instance"))]
                self.fail("%s within %d s; last seen:\n%s\n%s"
                          % (what, timeout, "\n".join(seen), self.stack.logs()))
            time.sleep(0.1)

    def sidecar_reported(self, fams):
        return self.value(fams, "ptygate_sidecar_up", instance=self.stack.instance) == 1

    def sessions(self, fams):
        return sum(self.value(fams, "ptygate_sidecar_sessions", instance=self.stack.instance,
                              state=state) for state in ("running", "exited"))

    def listed(self):
        r = self.stack.http("GET", "/agents/%s/sessions" % self.stack.instance,
                            token=self.stack.token(sub="e2e-admin", scope="sessions"))
        self.assertEqual(r.status, 200)
        doc = r.json()
        self.assertFalse(doc.get("next_page_token"))
        return doc["sessions"]

    # -- the text as a whole

    def test_whole_exposition_is_strict_text_format(self):
        st = self.stack
        st.create_session(command=["/bin/sh", "-c", "sleep 60"])
        st.http("GET", "/agents/%s/.well-known/agent-card.json" % st.instance)
        fams = self.wait_metric(self.sidecar_reported, "the sidecar's first report")
        types = {name: f.type for name, f in fams.items()}
        self.assertEqual(types["ptygate_http_request_duration_seconds"], "histogram")
        self.assertEqual(types["ptygate_attach_duration_seconds"], "histogram")
        for name in ("ptygate_build_info", "ptygate_instances_linked", "ptygate_instance_sessions",
                     "ptygate_instance_clients", "process_resident_memory_bytes",
                     "process_virtual_memory_bytes", "process_open_fds", "process_max_fds",
                     "process_start_time_seconds", "ptygate_sidecar_up",
                     "ptygate_sidecar_sessions", "ptygate_sidecar_resident_memory_bytes"):
            self.assertEqual(types[name], "gauge", name)
        for name in ("process_cpu_seconds_total", "ptygate_sidecar_pty_bytes_total",
                     "ptygate_sidecar_cpu_seconds_total"):
            self.assertEqual(types[name], "counter", name)

    def test_parser_refuses_what_is_not_the_format(self):
        """The parser is strict: each of these breaks one rule."""
        good = ("# HELP h_seconds x\n# TYPE h_seconds histogram\n"
                'h_seconds_bucket{le="1"} 1\nh_seconds_bucket{le="+Inf"} 2\n'
                "h_seconds_sum 3\nh_seconds_count 2\n")
        promtext.parse(good)
        for bad in (good.replace("h_seconds_count 2", "h_seconds_count 3"),
                    good.replace('{le="1"} 1', '{le="1"} 3'),
                    good.replace('h_seconds_bucket{le="+Inf"} 2\n', ""),
                    good.replace("h_seconds_sum 3\n", ""),
                    "# HELP c x\n# TYPE c counter\nc 1\n",
                    "# HELP g x\n# TYPE g gauge\ng{a=\"\\x\"} 1\n",
                    "# HELP g x\n# TYPE g gauge\ng 1\ng 2\n",
                    "# HELP g x\n# TYPE g gauge\ng 1 1700000000\n",
                    "g 1\n", "# HELP g x\n# TYPE g gauge\ng 1"):
            with self.assertRaises(promtext.ExpositionError, msg=bad):
                promtext.parse(bad)

    # -- latency

    def test_request_latency_counts_each_route(self):
        st = self.stack
        admin = st.token(sub="e2e-admin", scope="sessions")
        before = self.scrape()
        for _ in range(3):
            self.assertEqual(st.http("GET", "/healthz").status, 200)
        self.assertEqual(st.http("GET", "/agents/%s/.well-known/agent-card.json"
                                 % st.instance).status, 200)
        sid = st.create_session(command=["/bin/sh", "-c", "sleep 60"])
        self.assertEqual(st.http("GET", "/agents/%s/sessions/%s" % (st.instance, sid),
                                 token=admin).status, 200)
        self.assertEqual(st.http("GET", "/agents/%s/sessions/%s" % (st.instance, sid)).status, 401)
        after = self.scrape()
        name = "ptygate_http_request_duration_seconds"
        for route, n in (("healthz", 3), ("agent_card", 1), ("sessions", 1), ("session", 2),
                         ("attach", 0), ("recording", 0)):
            grew = self.count(after, name, route=route) - self.count(before, name, route=route)
            self.assertEqual(grew, n, route)
            inf = self.value(after, name, name + "_bucket", route=route, le="+Inf")
            self.assertEqual(inf, self.count(after, name, route=route))
        # Loopback answers take far under the top bucket: all below +Inf.
        below = self.value(after, name, name + "_bucket", route="healthz", le="30.000000")
        self.assertEqual(below, self.count(after, name, route="healthz"))
        self.assertGreater(self.value(after, name, name + "_sum", route="sessions"),
                           self.value(before, name, name + "_sum", route="sessions"))

    def test_rest_refusals_counted(self):
        st = self.stack
        path = "/agents/%s/sessions" % st.instance
        before = self.scrape()
        self.assertEqual(st.http("GET", path).status, 401)  # no token
        self.assertEqual(st.http("GET", path, token="not.a.jwt").status, 401)
        self.assertEqual(st.http("GET", path, token=st.token(scope="pty:observe")).status, 403)
        after = self.scrape()

        def grew(family, **labels):
            return self.value(after, family, **labels) - self.value(before, family, **labels)

        self.assertEqual(grew("ptygate_auth_failures_total"), 2)
        self.assertEqual(grew("ptygate_http_refusals_total", status="401"), 2)
        self.assertEqual(grew("ptygate_http_refusals_total", status="403"), 1)
        self.assertEqual(grew("ptygate_http_refusals_total", status="429"), 0)

    async def test_attach_latency_and_instance_gauges(self):
        st = self.stack
        name = "ptygate_attach_duration_seconds"
        sid = st.create_session(command=["/bin/sh", "-c", "sleep 120"])
        before = self.scrape()
        c = await self.connect(sid, sub="alice")
        await c.join_fresh("controller")
        o = await self.connect(sid, sub="bob", scope="pty:observe")
        await o.join_fresh("observer")
        after = self.scrape()
        self.assertEqual(self.count(after, name) - self.count(before, name), 2)
        self.assertGreater(self.value(after, name, name + "_sum"),
                           self.value(before, name, name + "_sum"))
        http = "ptygate_http_request_duration_seconds"
        self.assertEqual(self.count(after, http, route="attach")
                         - self.count(before, http, route="attach"), 2)
        inst = st.instance
        base_clients = self.value(before, "ptygate_instance_clients", instance=inst)
        base_sessions = self.value(before, "ptygate_instance_sessions", instance=inst)
        self.assertEqual(self.value(after, "ptygate_instance_clients", instance=inst),
                         base_clients + 2)
        self.assertEqual(self.value(after, "ptygate_instance_sessions", instance=inst),
                         base_sessions + 1)
        self.wait_metric(lambda f: self.value(f, "ptygate_sidecar_attachments", instance=inst)
                         == base_clients + 2, "the sidecar's report of two attachments")
        await c.close()
        await o.close()
        self.wait_metric(lambda f: self.value(f, "ptygate_instance_clients", instance=inst)
                         == base_clients, "the attachments gone", timeout=harness.DEFAULT_TIMEOUT)
        # A join answered once: no frame after it is timed again.
        self.assertEqual(self.count(self.scrape(), name), self.count(after, name))

    # -- build, instances, process

    def test_build_info(self):
        out = subprocess.run([self.stack.gateway_bin, "--version"], capture_output=True,
                             text=True, timeout=30).stdout.split()
        version = out[-1]
        fams = self.wait_metric(self.sidecar_reported, "the sidecar's first report")
        [(_, labels, value)] = fams["ptygate_build_info"].samples
        self.assertEqual(value, 1)
        self.assertEqual(labels["version"], version)
        self.assertRegex(labels["commit"], r"^([0-9a-f]{7,40}|unknown)$")
        [(_, side, value)] = [s for s in fams["ptygate_sidecar_build_info"].samples
                              if s[1]["instance"] == self.stack.instance]
        self.assertEqual((side["instance"], side["version"], value),
                         (self.stack.instance, version, 1))
        self.assertRegex(side["commit"], r"^([0-9a-f]{7,40}|unknown)$")

    def test_instances(self):
        fams = self.wait_metric(
            lambda f: self.value(f, "ptygate_link_up", instance="inst-old") == 1,
            "the old sidecar's link up")
        fams = self.wait_metric(lambda f: self.value(f, "ptygate_instances_linked") == 4,
                                "every link up")
        self.assertEqual(self.value(fams, "ptygate_instances", kind="configured"), 4)
        self.assertEqual(self.value(fams, "ptygate_instances", kind="registered"), 0)

    def test_process_metrics_match_proc(self):
        pid = self.stack.gateway.pid
        fams = self.scrape()
        with open("/proc/%d/stat" % pid) as f:
            fields = f.read().rpartition(")")[2].split()
        with open("/proc/stat") as f:
            btime = int(next(l for l in f if l.startswith("btime ")).split()[1])
        hz = os.sysconf("SC_CLK_TCK")
        start = btime + int(fields[19]) / hz  # field 22, the third after ")"
        self.assertAlmostEqual(self.value(fams, "process_start_time_seconds"), start, delta=0.02)
        with open("/proc/%d/limits" % pid) as f:
            soft = next(l for l in f if l.startswith("Max open files")).split()[3]
        self.assertEqual(self.value(fams, "process_max_fds"),
                         math.inf if soft == "unlimited" else float(soft))
        held = len(os.listdir("/proc/%d/fd" % pid))
        # The scrape's own connection, and connections closing meanwhile.
        self.assertLessEqual(abs(self.value(fams, "process_open_fds") - held), 4)
        cpu_after = (int(fields[11]) + int(fields[12])) / hz
        self.assertLessEqual(self.value(fams, "process_cpu_seconds_total"), cpu_after + 1)
        rss = self.value(fams, "process_resident_memory_bytes")
        self.assertGreater(rss, 0)
        self.assertLess(abs(rss - self.stack.gateway.rss_kib() * 1024), rss)
        self.assertGreaterEqual(self.value(fams, "process_virtual_memory_bytes"), rss)

    # -- the sidecar's reports

    def test_sidecar_reports_sessions_and_pty_bytes(self):
        st = self.stack
        inst = st.instance
        fams = self.wait_metric(self.sidecar_reported, "the sidecar's first report")
        pty0 = self.value(fams, "ptygate_sidecar_pty_bytes_total", instance=inst)
        # A report may be 5 s old: the baseline is the session list. Other
        # tests' sessions may exit meanwhile, none is reaped (600 s), so
        # the total grows by exactly the new one. No other session writes.
        total0 = len(self.listed())
        # 4096 bytes and no newline, so the PTY adds nothing; no input, no echo.
        sid = st.create_session(command=["/bin/sh", "-c",
                                         "head -c 4096 /dev/zero | tr '\\0' A; exec sleep 120"])
        fams = self.wait_metric(
            lambda f: self.value(f, "ptygate_sidecar_pty_bytes_total", instance=inst)
            >= pty0 + 4096 and self.sessions(f) == total0 + 1,
            "the sidecar's report of the new session and its 4096 bytes")
        self.assertEqual(self.value(fams, "ptygate_sidecar_pty_bytes_total", instance=inst),
                         pty0 + 4096)
        running = [s["session_id"] for s in self.listed() if s["state"] == "running"]
        self.assertIn(sid, running)
        self.assertEqual(st.delete_session(sid).status, 200)
        self.wait_metric(
            lambda f: self.value(f, "ptygate_sidecar_sessions", instance=inst, state="running")
            == len([s for s in self.listed() if s["state"] == "running"])
            and self.value(f, "ptygate_sidecar_sessions", instance=inst, state="exited")
            == len([s for s in self.listed() if s["state"] == "exited"]) > 0,
            "the sidecar's report matching the session list after the kill")
        self.assertEqual(self.value(fams, "ptygate_sidecar_state_dir", instance=inst), 0)
        side_rss = self.value(fams, "ptygate_sidecar_resident_memory_bytes", instance=inst)
        self.assertLess(abs(side_rss - st.sidecar.rss_kib() * 1024), side_rss)
        self.assertGreater(self.value(fams, "ptygate_sidecar_uptime_seconds", instance=inst), 0)
        self.assertGreater(self.value(fams, "ptygate_sidecar_open_fds", instance=inst), 2)
        age = time.time() - self.value(fams, "ptygate_sidecar_last_report_timestamp_seconds",
                                       instance=inst)
        self.assertLess(age, REPORT_WAIT)

    def test_old_sidecar_is_never_asked(self):
        inst = self.stack.instance
        first = self.wait_metric(
            lambda f: self.sidecar_reported(f)
            and self.value(f, "ptygate_link_up", instance="inst-old") == 1,
            "both links up and the real sidecar reporting")
        t0 = self.value(first, "ptygate_sidecar_last_report_timestamp_seconds", instance=inst)
        # Two more report rounds of the real sidecar: the old link's own
        # timer has had as many turns, all while its link was up.
        for _ in range(2):
            fams = self.wait_metric(
                lambda f: self.value(f, "ptygate_sidecar_last_report_timestamp_seconds",
                                     instance=inst) > t0, "a later report")
            t0 = self.value(fams, "ptygate_sidecar_last_report_timestamp_seconds",
                            instance=inst)
        self.assertNotIn(GET_STATS, self.stack.old.received)
        self.assertIn(fake.HELLO, self.stack.old.received)
        self.assertEqual(self.value(fams, "ptygate_link_up", instance="inst-old"), 1)
        self.assertEqual(self.value(fams, "ptygate_sidecar_up", instance="inst-old"), 0)
        self.assertEqual(self.value(fams, "ptygate_link_reconnects_total"), 0)
        self.assertNotIn("inst-old", [s[1].get("instance") for s in
                                      fams["ptygate_sidecar_build_info"].samples])

    def test_reports_read_as_sent_and_checked(self):
        """Every field of a report lands in its family as the sidecar sent
        it; a report over the limits (a 65-byte version) is refused, its
        link kept."""
        fake_up = lambda f: self.value(f, "ptygate_sidecar_up", instance="inst-fake") == 1
        fams = self.wait_metric(fake_up, "the fake sidecar's report")
        want = {
            "ptygate_sidecar_uptime_seconds": 90061.5,
            "ptygate_sidecar_attachments": 5,
            "ptygate_sidecar_pty_bytes_total": 123456789012,
            "ptygate_sidecar_state_dir": 1,
            "ptygate_sidecar_framelog_bytes": 4096,
            "ptygate_sidecar_resident_memory_bytes": 3 << 20,
            "ptygate_sidecar_cpu_seconds_total": 2.5,
            "ptygate_sidecar_open_fds": 17,
        }
        for family, v in want.items():
            self.assertEqual(self.value(fams, family, instance="inst-fake"), v, family)
        self.assertEqual(self.value(fams, "ptygate_sidecar_sessions", instance="inst-fake",
                                    state="running"), 7)
        self.assertEqual(self.value(fams, "ptygate_sidecar_sessions", instance="inst-fake",
                                    state="exited"), 2)
        self.assertEqual(self.value(fams, "ptygate_sidecar_build_info", instance="inst-fake",
                                    version="7.7.7", commit="feedc0de"), 1)
        self.wait_metric(lambda f: GET_STATS in self.stack.long.received
                         and self.value(f, "ptygate_link_replies_refused_total") > 0,
                         "the over-long report asked and refused")
        fams = self.scrape()
        self.assertEqual(self.value(fams, "ptygate_sidecar_up", instance="inst-long"), 0)
        self.assertEqual(self.value(fams, "ptygate_link_up", instance="inst-long"), 1)
        self.assertNotIn("inst-long", [s[1].get("instance") for s in
                                       fams["ptygate_sidecar_build_info"].samples])

    # -- the dashboard

    def test_dashboard_queries_only_live_metrics(self):
        with open(DASHBOARD) as f:
            dash = json.load(f)
        fams = self.wait_metric(self.sidecar_reported, "the sidecar's first report")
        live = promtext.sample_names(fams)
        used, ids = set(), set()
        for panel in dash["panels"]:
            self.assertNotIn(panel["id"], ids)
            ids.add(panel["id"])
            self.assertTrue(panel["targets"], panel["title"])
            for target in panel["targets"]:
                names = re.findall(r"\b(?:ptygate|process)_[a-z0-9_]+", target["expr"])
                self.assertTrue(names, target["expr"])
                used.update(names)
        for var in dash["templating"]["list"]:
            used.update(re.findall(r"\b(?:ptygate|process)_[a-z0-9_]+",
                                   json.dumps(var.get("query", ""))))
        missing = sorted(used - live)
        self.assertEqual(missing, [], "queried by the dashboard, absent from /metrics")
        # The families this work adds are all on it.
        for name in ("ptygate_http_request_duration_seconds_bucket",
                     "ptygate_attach_duration_seconds_bucket", "ptygate_build_info",
                     "ptygate_sidecar_build_info", "ptygate_instance_sessions",
                     "ptygate_instances_linked", "ptygate_sidecar_pty_bytes_total",
                     "ptygate_http_refusals_total",
                     "ptygate_sidecar_framelog_bytes", "process_cpu_seconds_total",
                     "process_open_fds", "process_max_fds", "process_start_time_seconds"):
            self.assertIn(name, used)


if __name__ == "__main__":
    import unittest
    unittest.main()
