"""A hostile fake sidecar for the gateway's link tests.

It speaks the link framing (a 4-byte big-endian length, then one packed
LinkMessage of proto/link.proto), hand-encoding the few messages it needs
and decoding just enough of the gateway's (GetSession, Attach,
ListSessions), and misbehaves in one of these ways, given as the first
argument:

  bomb      after the hello, 16 MB messages of 8 million empty Members,
            one every 0.3 s for as long as the link stays
  flood     after the hello, Output frames as fast as it can
  deaf      answers the hello, then never reads again
  wrongid   answers the hello with another instance id

and, for a client attached to its session "hostile" (a GetSession and
an Attach are answered as a sidecar would):

  members   once attached, small MembershipChanged frames (4 members)
            and RoleAssigned frames, as fast as it can: tens of thousands
            in every MiB the gateway reads
  outflood  once attached, tiny Output frames (16 bytes) as fast as it
            can, far faster than any client reads

and, answering ListSessions (every other request gets INTERNAL, addressed
as a sidecar addresses it: by request_id, or by attach_id and client_op_id
for the attach-scoped ones; the Hello is no request and gets no Reply):

  list-argv       sessions whose argv breaks the limits (300 arguments)
  list-ctrl       sessions within every per-session limit whose argv is
                  16 KiB of control bytes (sixfold in JSON), 500 of them
  list-members    a session with more members than the hello allows
  list-ok         one honest session

Usage: fake_sidecar.py MODE SOCKET_PATH INSTANCE_ID
"""
import os
import socket
import struct
import sys
import threading
import time

HOSTILE_SESSION = "hostile"
HELLO = 1  # LinkMessage.hello: answered by the HelloAck sent on connecting
# The attach-scoped requests (LinkMessage.input, resize, request_role,
# request_keyframe), each with the field of its client_op_id: their field 1
# is the attach_id, not a request id.
ATTACH_SCOPED = {9: 3, 10: 4, 11: 3, 12: 2}
INTERNAL = 5  # ErrorCode.INTERNAL


def varint(n):
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def field(num, payload):
    """A length-delimited field (wire type 2)."""
    return varint(num << 3 | 2) + varint(len(payload)) + payload


def vfield(num, value):
    """A varint field (wire type 0)."""
    return varint(num << 3) + varint(value)


def framed(body):
    return struct.pack(">I", len(body)) + body


def parse(data):
    """A message's fields as {number: [value, ...]}: ints for varints,
    bytes for length-delimited fields (others are skipped)."""
    out, i = {}, 0

    def read_varint():
        nonlocal i
        n = shift = 0
        while True:
            b = data[i]
            i += 1
            n |= (b & 0x7F) << shift
            shift += 7
            if not b & 0x80:
                return n

    while i < len(data):
        key = read_varint()
        num, wt = key >> 3, key & 7
        if wt == 0:
            value = read_varint()
        elif wt == 2:
            n = read_varint()
            value, i = data[i:i + n], i + n
        elif wt == 1:
            value, i = data[i:i + 8], i + 8
        elif wt == 5:
            value, i = data[i:i + 4], i + 4
        else:
            raise ValueError("wire type %d" % wt)
        out.setdefault(num, []).append(value)
    return out


def hello_ack(instance_id):
    ack = varint(1 << 3 | 0) + varint(1) + field(2, instance_id.encode())
    return framed(field(2, ack))  # LinkMessage.hello_ack = 2


def frame(session_id, kind_num, kind_payload):
    f = field(1, session_id.encode())
    return framed(field(21, f + field(kind_num, kind_payload)))  # LinkMessage.frame = 21


def reply(request_id, result=b"", code=0, attach_id=0, client_op_id=b""):
    r = (vfield(1, request_id) if request_id else b"") + (vfield(2, code) if code else b"")
    r += vfield(4, attach_id) if attach_id else b""
    r += field(5, client_op_id) if client_op_id else b""
    return framed(field(20, r + result))  # LinkMessage.reply = 20


def member(client_id, label):
    return field(1, client_id.encode()) + field(2, label.encode())


def session_info(session_id, argv=(b"/bin/sh",), controllers=()):
    s = field(1, session_id.encode()) + vfield(3, 4242) + vfield(4, 80) + vfield(5, 24)
    s += b"".join(field(8, m) for m in controllers)
    s += vfield(12, int(time.time() * 1000))
    return s + b"".join(field(16, a) for a in argv)


def bomb():
    members = b"\x0a\x00" * 8_000_000  # MembershipChangedFrame.controllers = 1, empty
    return frame("bomb-session", 13, members)  # Frame.membership = 13


def output(data, session_id="flood-session"):
    return frame(session_id, 10, field(2, data))  # Frame.output = 10, data = 2


def members_frame():
    ms = b"".join(field(1, member("c%d" % i, "m")) for i in range(2))
    ms += b"".join(field(2, member("o%d" % i, "m")) for i in range(2))
    return frame(HOSTILE_SESSION, 13, ms)  # Frame.membership = 13


def role_frame():
    ra = vfield(1, 2) + field(2, b"c1")
    return frame(HOSTILE_SESSION, 12, ra)  # Frame.role_assigned = 12


def session_list(mode):
    if mode == "list-argv":
        sessions = [session_info("s%d" % i, argv=[b"x"] * 300) for i in range(4)]
    elif mode == "list-ctrl":
        argv = [b"\x01" * 4000] * 4  # 16,004 bytes with the NULs: under 16 KiB
        sessions = [session_info("s%d" % i, argv=argv) for i in range(500)]
    elif mode == "list-members":
        ms = [member("c%d" % i, "x") for i in range(5000)]
        sessions = [session_info("s0", controllers=ms)]
    else:
        sessions = [session_info("s0")]
    return field(11, b"".join(field(1, s) for s in sessions))  # Reply.sessions = 11


def read_messages(conn):
    buf = b""
    while True:
        chunk = conn.recv(1 << 16)
        if not chunk:
            return
        buf += chunk
        while len(buf) >= 4:
            n = struct.unpack(">I", buf[:4])[0]
            if len(buf) < 4 + n:
                break
            yield parse(buf[4:4 + n])
            buf = buf[4 + n:]


class Link:
    """One gateway's link: the requests it answers, and the flood a mode
    starts once a client is attached."""

    def __init__(self, conn, mode):
        self.conn, self.mode = conn, mode
        self.lock = threading.Lock()
        self.flooding = False

    def send(self, data):
        with self.lock:
            self.conn.sendall(data)

    def serve_requests(self):
        try:
            for m in read_messages(self.conn):
                self.answer(m)
        except (OSError, ValueError):
            pass

    def answer(self, m):
        if 5 in m:  # GetSession
            req = parse(m[5][0])
            self.send(reply(req[1][0], field(10, session_info(HOSTILE_SESSION))))
        elif 7 in m:  # Attach
            req = parse(m[7][0])
            result = field(12, field(1, b"c1") + vfield(2, 1))  # Reply.attach
            self.send(reply(req[1][0], result, attach_id=req[2][0]))
            if self.mode in ("members", "outflood") and not self.flooding:
                self.flooding = True
                threading.Thread(target=self.flood, daemon=True).start()
        elif 4 in m:  # ListSessions
            req = parse(m[4][0])
            self.send(reply(req[1][0], session_list(self.mode)))
        else:
            self.refuse(m)

    def refuse(self, m):
        """INTERNAL for a request the fake does not serve. The Hello gets
        nothing: its field 1 is the protocol version (1), which a Reply
        would carry as the request id of the gateway's first request, and
        answer that request with INTERNAL when the Hello is read late."""
        for num, values in m.items():
            if num == HELLO or not isinstance(values[0], bytes):
                continue
            req = parse(values[0])
            first = req.get(1, [0])[0]
            if not isinstance(first, int) or not first:
                continue  # no id to answer (a Detach with request_id 0)
            sys.stderr.write("fake: INTERNAL for LinkMessage field %d, id %d\n" % (num, first))
            if num in ATTACH_SCOPED:
                op = req.get(ATTACH_SCOPED[num], [b""])[0]
                self.send(reply(0, code=INTERNAL, attach_id=first, client_op_id=op))
            else:
                self.send(reply(first, code=INTERNAL))

    def flood(self):
        """The same batch again and again: the fake must outpace the
        gateway, so nothing is encoded twice here."""
        if self.mode == "members":
            batch = (members_frame() + role_frame()) * 8192
        else:
            batch = output(os.urandom(16), HOSTILE_SESSION) * 16384
        try:
            while True:
                self.send(batch)
        except OSError:
            pass


def serve(conn, mode, instance_id):
    try:
        conn.sendall(hello_ack("someone-else" if mode == "wrongid" else instance_id))
        if mode == "deaf":
            conn.recv(4)  # the start of the gateway's Hello, then never again
            threading.Event().wait()
        link = Link(conn, mode)
        threading.Thread(target=link.serve_requests, daemon=True).start()
        if mode == "bomb":
            msg = bomb()
            while True:  # again and again, for as long as the link stays
                conn.sendall(msg)
                time.sleep(0.3)
        elif mode == "flood":
            msg = output(os.urandom(60000)) * 16
            while True:
                link.send(msg)
        threading.Event().wait(3600)
    except OSError:
        pass
    finally:
        conn.close()


def main():
    mode, path, instance_id = sys.argv[1:4]
    srv = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    # bind makes the file before listen lets anyone in: a client that
    # waits for the file must not find it before then.
    srv.bind(path + ".tmp")
    srv.listen(16)
    os.rename(path + ".tmp", path)
    while True:
        conn, _ = srv.accept()
        threading.Thread(target=serve, args=(conn, mode, instance_id), daemon=True).start()


if __name__ == "__main__":
    main()
