"""A consumer's Redis session in RESP3 over a raw socket, for tests/captures/resp3 (run by
../record.sh; the server must run with --enable-debug-command yes). HELLO 3, then the stream commands,
every RESP3 type via DEBUG PROTOCOL (attribute, map, set, double, boolean, big number, verbatim, null),
a client-tracking invalidation push, an inline command and three commands pipelined in one write."""
import socket
import sys


def parse(buf, pos):
    """One value at pos: (value, end) or None when incomplete. Pushes come back as ('push', items)."""
    nl = buf.find(b"\r\n", pos)
    if nl < 0:
        return None
    t, line, p = buf[pos:pos + 1], buf[pos + 1:nl], nl + 2
    if t in b"+-:,(#_":
        return line, p
    if t in b"$!=":
        n = int(line)
        if n < 0:
            return None, p
        return (buf[p:p + n], p + n + 2) if len(buf) >= p + n + 2 else None
    n = int(line)
    count = max(n, 0) * (2 if t in b"%|" else 1)
    items = []
    for _ in range(count):
        got = parse(buf, p)
        if got is None:
            return None
        items.append(got[0])
        p = got[1]
    if t == b"|":  # an attribute, then the value it describes
        return parse(buf, p)
    return (("push", items) if t == b">" else items), p


class Client:
    def __init__(self, port):
        self.s = socket.create_connection(("127.0.0.1", port))
        self.buf = b""

    def reply(self):
        while True:
            got = parse(self.buf, 0) if self.buf else None
            if got is not None:
                self.buf = self.buf[got[1]:]
                if isinstance(got[0], tuple):
                    continue  # a push: not a reply
                return got[0]
            self.buf += self.s.recv(65536)

    def send(self, *cmds):
        out = b""
        for args in cmds:
            args = [a if isinstance(a, bytes) else str(a).encode() for a in args]
            out += b"*%d\r\n" % len(args) + b"".join(b"$%d\r\n%s\r\n" % (len(a), a) for a in args)
        self.s.sendall(out)
        return [self.reply() for _ in cmds]

    def call(self, *args):
        return self.send(args)[0]


c = Client(int(sys.argv[1]))
c.call("HELLO", "3")
c.call("SET", "lock:r3", "owner", "NX", "PX", "30000")
c.call("XGROUP", "CREATE", "orders", "workers", "$", "MKSTREAM")
ids = [c.call("XADD", "orders", "*", "order", str(i), "amount", str(10 * i)) for i in (1, 2)]
c.call("XREADGROUP", "GROUP", "workers", "c1", "COUNT", "10", "BLOCK", "1000", "STREAMS", "orders", ">")
c.call("XAUTOCLAIM", "orders", "workers", "c2", "0", "0-0", "COUNT", "10")
c.call("XACK", "orders", "workers", *ids)
c.call("XREADGROUP", "GROUP", "workers", "c1", "COUNT", "10", "BLOCK", "50", "STREAMS", "orders", ">")
for kind in ("attrib", "map", "set", "double", "true", "bignum", "verbatim", "null"):
    c.call("DEBUG", "PROTOCOL", kind)
c.call("CLIENT", "TRACKING", "ON")
c.call("GET", "lock:r3")
c.call("SET", "lock:r3", "released")  # invalidates the tracked key: a push arrives
c.s.sendall(b"PING\r\n")  # an inline command
c.reply()
c.send(("XADD", "orders", "*", "order", "3"), ("SET", "done:3", "1", "NX"), ("GET", "done:3"))
c.s.close()
