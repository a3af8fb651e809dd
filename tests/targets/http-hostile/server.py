"""http-hostile: HTTP servers that never give the client a usable answer, one per HOSTILE_MODE (environment):

    never-listen  never listens on PORT (as `sleep 600` would)
    ipv6          listens on [::1]:PORT instead of 127.0.0.1
    wrong-port    listens on 127.0.0.1:PORT+1
    health-500    answers 500 to everything, its health path included
    404           answers 404 Not Found to everything but its health path
    102           answers 102 Processing to every POST, then closes the connection: no final answer
    chunks        answers 201 with an endless chunked JSON body, 64 KiB chunks, until the client closes

Raw sockets, a thread per connection: the answers are written byte for byte, as no framework would.
"""
import os
import signal
import socket
import sys
import threading
import time

MODE = os.environ.get("HOSTILE_MODE", "404")
PORT = int(os.environ["PORT"])
CHUNK = b"%x\r\n" % 65536 + b" " * 65536 + b"\r\n"


def read_request(conn):
    """The request line and headers (and the body by Content-Length); None when the client closed."""
    data = b""
    while b"\r\n\r\n" not in data:
        part = conn.recv(65536)
        if not part:
            return None
        data += part
    head, _, body = data.partition(b"\r\n\r\n")
    length = 0
    for line in head.split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            length = int(value.strip())
    while len(body) < length:
        part = conn.recv(65536)
        if not part:
            break
        body += part
    return head.split(b"\r\n")[0]


def simple(status, reason):
    return b"HTTP/1.1 %d %s\r\nContent-Length: 0\r\nConnection: close\r\n\r\n" % (status, reason)


def serve(conn):
    with conn:
        line = read_request(conn)
        if line is None:
            return
        health = line.startswith(b"GET /healthz")
        try:
            if MODE == "health-500":
                conn.sendall(simple(500, b"Internal Server Error"))
            elif health:
                conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok")
            elif MODE == "102":
                conn.sendall(b"HTTP/1.1 102 Processing\r\n\r\n")
            elif MODE == "chunks":
                conn.sendall(b"HTTP/1.1 201 Created\r\nContent-Type: application/json\r\n"
                             b"Transfer-Encoding: chunked\r\nConnection: close\r\n\r\n")
                while True:
                    conn.sendall(CHUNK)
            else:
                conn.sendall(simple(404, b"Not Found"))
        except OSError:
            pass  # the client closed


def main():
    signal.signal(signal.SIGTERM, lambda *_: os._exit(0))
    if MODE == "never-listen":
        while True:
            time.sleep(600)
    family, host, port = socket.AF_INET, "127.0.0.1", PORT
    if MODE == "ipv6":
        family, host = socket.AF_INET6, "::1"
    if MODE == "wrong-port":
        port = PORT + 1
    srv = socket.socket(family, socket.SOCK_STREAM)
    srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    srv.bind((host, port))
    srv.listen(64)
    print(f"http-hostile ({MODE}): listening on {host}:{port}", file=sys.stderr, flush=True)
    while True:
        conn, _ = srv.accept()
        threading.Thread(target=serve, args=(conn,), daemon=True).start()


if __name__ == "__main__":
    main()
