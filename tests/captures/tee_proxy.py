#!/usr/bin/env python3
"""Recording tee proxy for tests/captures (a recording tool only; not part of idemproof).

Listens on 127.0.0.1:LISTEN, relays every accepted connection to 127.0.0.1:UPSTREAM and records both
directions of connection N in OUT_DIR/session.cap (N = 1) or OUT_DIR/session-N.cap, in the order this
single-threaded relay saw the chunks. Record format: 1 byte direction ('C' client->server, 'S'
server->client), 4-byte big-endian length, the bytes.

With --pg it answers SSLRequest and GSSENCRequest itself with 'N', as idemproof's proxy does: the
request is recorded as client bytes, the 'N' is not recorded and the server never sees the request.

With --kafka it forwards the server's responses whole (length-prefixed frames) with the broker's
address 127.0.0.1:UPSTREAM replaced by 127.0.0.1:LISTEN wherever a Metadata or FindCoordinator answer
names it (the string "127.0.0.1", classic or compact, then the port as int32), so that every connection
the client opens comes through the relay, as idemproof's proxy makes it. The recording keeps the
broker's own bytes: what a tracker in the proxy sees.
Stops on SIGTERM/SIGINT."""
import argparse
import selectors
import signal
import socket
import struct
import sys

SSL_CODES = (80877103, 80877104)


class Conn:
    def __init__(self, client, upstream, path, pg, kafka_ports=None):
        self.client, self.upstream = client, upstream
        self.out = open(path, "wb")
        self.startup = pg
        self.pending = b""
        self.kafka_ports = kafka_ports
        self.frames = b""

    def record(self, direction, data):
        self.out.write(direction + struct.pack(">I", len(data)) + data)
        self.out.flush()

    def from_client(self, data):
        if not self.startup:
            self.record(b"C", data)
            self.upstream.sendall(data)
            return
        self.pending += data
        while self.startup and len(self.pending) >= 8:
            length, code = struct.unpack(">II", self.pending[:8])
            if length == 8 and code in SSL_CODES:
                self.record(b"C", self.pending[:8])
                self.pending = self.pending[8:]
                self.client.sendall(b"N")
            else:
                self.startup = False
                self.record(b"C", self.pending)
                self.upstream.sendall(self.pending)
                self.pending = b""

    def from_server(self, data):
        self.record(b"S", data)
        if self.kafka_ports is None:
            self.client.sendall(data)
            return
        self.frames += data
        while len(self.frames) >= 4:
            size = 4 + struct.unpack(">I", self.frames[:4])[0]
            if len(self.frames) < size:
                break
            frame, self.frames = self.frames[:size], self.frames[size:]
            self.client.sendall(kafka_rewrite(frame, *self.kafka_ports))

    def close(self):
        for s in (self.client, self.upstream):
            try:
                s.close()
            except OSError:
                pass
        self.out.close()


def kafka_rewrite(frame, upstream, listen):
    """The frame with every 127.0.0.1:UPSTREAM broker address made 127.0.0.1:LISTEN (same length)."""
    for host in (struct.pack(">h", 9) + b"127.0.0.1", bytes([10]) + b"127.0.0.1"):
        frame = frame.replace(host + struct.pack(">i", upstream), host + struct.pack(">i", listen))
    return frame


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("listen", type=int)
    ap.add_argument("upstream", type=int)
    ap.add_argument("out_dir")
    ap.add_argument("--pg", action="store_true")
    ap.add_argument("--kafka", action="store_true")
    args = ap.parse_args()
    sel = selectors.DefaultSelector()
    lsock = socket.socket()
    lsock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    lsock.bind(("127.0.0.1", args.listen))
    lsock.listen(16)
    sel.register(lsock, selectors.EVENT_READ, None)
    running = [True]
    signal.signal(signal.SIGTERM, lambda *_: running.__setitem__(0, False))
    signal.signal(signal.SIGINT, lambda *_: running.__setitem__(0, False))
    count = 0
    print("ready", flush=True)
    while running[0]:
        for key, _ in sel.select(timeout=0.1):
            if key.data is None:
                client, _ = lsock.accept()
                upstream = socket.create_connection(("127.0.0.1", args.upstream))
                for s in (client, upstream):
                    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
                count += 1
                name = "session.cap" if count == 1 else f"session-{count}.cap"
                ports = (args.upstream, args.listen) if args.kafka else None
                conn = Conn(client, upstream, f"{args.out_dir}/{name}", args.pg, ports)
                sel.register(client, selectors.EVENT_READ, (conn, True))
                sel.register(upstream, selectors.EVENT_READ, (conn, False))
                continue
            conn, is_client = key.data
            try:
                data = key.fileobj.recv(65536)
            except OSError:
                data = b""
            if not data:
                sel.unregister(conn.client)
                sel.unregister(conn.upstream)
                conn.close()
                continue
            (conn.from_client if is_client else conn.from_server)(data)
    return 0


if __name__ == "__main__":
    sys.exit(main())
