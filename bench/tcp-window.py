#!/usr/bin/env python3
"""How many small messages a loopback TCP connection delivers into an idle reader's receive
queue before the rest waits, unsent, in the writer's send queue (issue #16's chat row: the
simulator bounds a TCP channel on the sender's side only, with `channel_bytes`).

    bench/tcp-window.py [SIZE [COUNTS...]]     # default 116 bytes (a chat message), 10 … 5000

One TCP_NODELAY connection on 127.0.0.1; the writer sends SIZE-byte messages without blocking
and nobody reads. After each count it prints the reader's queue (FIONREAD) and the writer's
(SIOCOUTQ: sent but unacknowledged plus unsent). Only loopback addresses are used.
"""
import fcntl
import socket
import struct
import sys
import termios
import time

SIOCOUTQ = termios.TIOCOUTQ  # the same request number as SIOCOUTQ on Linux


def queued(sock, request):
    return struct.unpack('i', fcntl.ioctl(sock, request, b'\0' * 4))[0]


def main():
    size = int(sys.argv[1]) if len(sys.argv) > 1 else 116
    counts = [int(a) for a in sys.argv[2:]] or [10, 100, 300, 950, 2000, 5000]
    if size < 1 or size > 65536 or any(c < 1 or c > 100000 for c in counts):
        sys.exit('tcp-window.py: SIZE must be 1..65536 bytes and each COUNT 1..100000')
    listener = socket.socket()
    listener.bind(('127.0.0.1', 0))
    listener.listen(1)
    writer = socket.socket()
    writer.connect(listener.getsockname())
    reader, _ = listener.accept()
    for s in (writer, reader):
        s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    writer.setblocking(False)
    message = b'x' * size
    sent = 0
    print(f"{'writes':>7} {'reader queue B':>15} {'messages':>9} {'writer queue B':>15}")
    for target in sorted(counts):
        try:
            while sent < target:
                writer.send(message)
                sent += 1
        except BlockingIOError:
            print(f"(the writer's buffer is full after {sent} writes)")
        time.sleep(0.05)  # let loopback's softirq deliver what the window allows
        inq = queued(reader, termios.FIONREAD)
        print(f"{sent:7d} {inq:15d} {inq // size:9d} {queued(writer, SIOCOUTQ):15d}")
    for s in (writer, reader, listener):
        s.close()


if __name__ == '__main__':
    main()
