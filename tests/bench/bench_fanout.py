#!/usr/bin/python3
"""bench_fanout: the gateway's fan-out cost as attached clients grow.

A real sidecar and gateway; a session prints MIB of terminal-like lines;
N observers read everything (raw sockets, one reader loop). Reported per
N: wall time, bytes delivered to all clients, and the gateway's CPU time
(utime+stime from /proc) per MiB of session output and per MiB delivered.
Each frame is JSON- and WebSocket-encoded once and shared by reference,
so the CPU per session MiB should grow far slower than N (the per-client
part is the kernel copy of writev). Runs alternate between N values and
medians are reported; N=1 is the baseline the ratios are against.

Usage: PTG_SIDECAR=... PTG_GATEWAY=... tests/bench/bench_fanout.py [MIB] [RUNS] [N,...]
"""
import os
import selectors
import statistics
import struct
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "e2e"))
import harness  # noqa: E402
from harness import RawWs, Stack  # noqa: E402

CLK = os.sysconf("SC_CLK_TCK")


def cpu_seconds(pid):
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / CLK


def make_data(path, mib):
    row, done = 0, 0
    with open(path, "w") as f:
        while done < mib << 20:
            line = "%08x  %s\n" % (row * 16, " ".join("%02x" % ((row + i) & 0xff) for i in range(16)))
            f.write(line)
            done += len(line)
            row += 1


class Reader:
    """Reads a raw WebSocket to its end, counting bytes, without JSON."""

    def __init__(self, raw):
        self.sock, self.buf, self.bytes, self.done = raw.sock, bytearray(raw.buf), 0, False
        self.sock.setblocking(False)

    def feed(self):
        try:
            chunk = self.sock.recv(1 << 20)
        except BlockingIOError:
            return
        if not chunk:
            self.done = True
            return
        self.buf += chunk
        self.bytes += len(chunk)
        # Skip whole frames; the session's end is its Closed frame.
        while len(self.buf) >= 2:
            n, off = self.buf[1] & 0x7f, 2
            if n == 126:
                if len(self.buf) < 4:
                    return
                n, off = struct.unpack(">H", self.buf[2:4])[0], 4
            elif n == 127:
                if len(self.buf) < 10:
                    return
                n, off = struct.unpack(">Q", self.buf[2:10])[0], 10
            if len(self.buf) < off + n:
                return
            closing = self.buf[0] & 0x0f == 0x8
            if closing or (n < 600 and b'"Closed"' in self.buf[off:off + n]):
                self.done = True
            del self.buf[:off + n]


def one_run(stack, data_path, n):
    sid = stack.create_session(command=["sh", "-c", "stty -echo; read x; exec cat '%s'" % data_path])
    readers = []
    for i in range(n):
        raw = RawWs.connect(stack, sid, stack.token(sub="obs-%d" % i, session_id=sid,
                                                    scope="pty:observe"), label="obs")
        frame = raw.envelope("pty.join_session", {"role": "observer", "client_label": "obs-%d" % i},
                             extensions=[harness.EXTENSION_URI])
        raw.send_frame(0x1, harness.json.dumps(frame).encode())
        readers.append(Reader(raw))
    ctl = RawWs.connect(stack, sid, stack.token(sub="ctl", session_id=sid, scope="pty:control"))
    frame = ctl.envelope("pty.join_session", {"role": "controller"}, extensions=[harness.EXTENSION_URI])
    ctl.send_frame(0x1, harness.json.dumps(frame).encode())
    time.sleep(0.5)  # every join done before the flood starts
    for r in readers:
        while True:  # drain the join frames
            try:
                r.sock.recv(1 << 20)
            except BlockingIOError:
                break
        r.buf.clear()
        r.bytes = 0
    gw = stack.gateway.pid
    cpu0, t0 = cpu_seconds(gw), time.monotonic()
    frame = ctl.envelope("pty.session_input", {"data": harness.b64(b"\n")})
    ctl.send_frame(0x1, harness.json.dumps(frame).encode())
    sel = selectors.DefaultSelector()
    for r in readers:
        sel.register(r.sock, selectors.EVENT_READ, r)
    left, deadline = len(readers), time.monotonic() + 300
    while left and time.monotonic() < deadline:
        for key, _ in sel.select(1):
            r = key.data
            r.feed()
            if r.done:
                sel.unregister(r.sock)
                left -= 1
    wall, cpu = time.monotonic() - t0, cpu_seconds(gw) - cpu0
    delivered = sum(r.bytes for r in readers)
    for r in readers:
        r.sock.close()
    ctl.close()
    if left:
        raise SystemExit("bench_fanout: %d readers did not finish" % left)
    return wall, cpu, delivered


def main():
    mib = int(sys.argv[1]) if len(sys.argv) > 1 else 32
    runs = int(sys.argv[2]) if len(sys.argv) > 2 else 3
    ns = [int(x) for x in (sys.argv[3] if len(sys.argv) > 3 else "1,8,32").split(",")]
    stack = Stack(gateway_args=["--max-queue-bytes", str(256 << 20),
                                "--max-conns-per-ip", "100000"]).start()
    try:
        data = os.path.join(stack.dir, "out.txt")
        make_data(data, mib)
        results = {n: [] for n in ns}
        for _ in range(runs):
            for n in ns:
                results[n].append(one_run(stack, data, n))
        base = statistics.median(cpu for _, cpu, _ in results[ns[0]]) / mib
        print("fan-out of %d MiB of session output, median of %d runs (gateway CPU = utime+stime):"
              % (mib, runs))
        for n in ns:
            wall = statistics.median(w for w, _, _ in results[n])
            cpu = statistics.median(c for _, c, _ in results[n])
            sent = statistics.median(d for _, _, d in results[n])
            print("  %3d clients: %.2f s, %.0f MB/s delivered in all, gateway CPU %.1f ms per "
                  "session MiB (x%.2f of %d client), %.2f ms per delivered MiB"
                  % (n, wall, sent / wall / 1e6, cpu / mib * 1e3, cpu / mib / base if base else 0,
                     ns[0], cpu / (sent / 2**20) * 1e3))
    finally:
        stack.stop()
        stack.cleanup()


if __name__ == "__main__":
    main()
