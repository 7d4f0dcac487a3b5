"""A hostile fake sidecar for the gateway's link tests (issue 6, item 5).

It speaks the link framing (a 4-byte big-endian length, then one packed
LinkMessage of proto/link.proto), hand-encoding the few messages it needs,
and misbehaves in one of these ways, given as the first argument:

  bomb      after the hello, 16 MB messages of 8 million empty Members,
            one every 0.3 s for as long as the link stays
  flood     after the hello, Output frames as fast as it can
  deaf      answers the hello, then never reads again
  wrongid   answers the hello with another instance id

Usage: fake_sidecar.py MODE SOCKET_PATH INSTANCE_ID
"""
import os
import socket
import struct
import sys
import threading
import time


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


def framed(body):
    return struct.pack(">I", len(body)) + body


def hello_ack(instance_id):
    ack = varint(1 << 3 | 0) + varint(1) + field(2, instance_id.encode())
    return framed(field(2, ack))  # LinkMessage.hello_ack = 2


def frame(session_id, kind_num, kind_payload):
    f = field(1, session_id.encode()) + field(kind_num, kind_payload)
    return framed(field(21, f))  # LinkMessage.frame = 21


def bomb():
    members = b"\x0a\x00" * 8_000_000  # MembershipChangedFrame.controllers = 1, empty
    return frame("bomb-session", 13, members)  # Frame.membership = 13


def output(data):
    return frame("flood-session", 10, field(2, data))  # Frame.output = 10, data = 2


def read_all(conn):
    try:
        while conn.recv(1 << 16):
            pass
    except OSError:
        pass


def serve(conn, mode, instance_id):
    try:
        conn.sendall(hello_ack("someone-else" if mode == "wrongid" else instance_id))
        if mode == "deaf":
            conn.recv(4)  # the start of the gateway's Hello, then never again
            threading.Event().wait()
        threading.Thread(target=read_all, args=(conn,), daemon=True).start()
        if mode == "bomb":
            msg = bomb()
            while True:  # again and again, for as long as the link stays
                conn.sendall(msg)
                time.sleep(0.3)
        elif mode == "flood":
            msg = output(os.urandom(60000)) * 16
            while True:
                conn.sendall(msg)
        threading.Event().wait(30)
    except OSError:
        pass
    finally:
        conn.close()


def main():
    mode, path, instance_id = sys.argv[1:4]
    srv = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    srv.bind(path)
    srv.listen(16)
    while True:
        conn, _ = srv.accept()
        threading.Thread(target=serve, args=(conn, mode, instance_id), daemon=True).start()


if __name__ == "__main__":
    main()
