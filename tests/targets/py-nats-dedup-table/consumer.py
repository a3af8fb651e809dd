"""py-nats-dedup-table (wallet, NATS JetStream test consumer): the dedup-table strategy in Python on NATS
JetStream, with a small NATS client of its own on the standard library's socket (Debian 12 packages no Python
NATS client) and psycopg 3.1.7, run with /usr/bin/python3. It mirrors tests/targets/node-common/nats_consumer.js.

The client speaks the NATS text protocol: INFO, then CONNECT (its name $CONSUMER, headers and no_responders on;
the token from $NATS_TOKEN or the user part of $NATS_URL, or the user and password from $NATS_USER and
$NATS_PASSWORD or the URL), PING/PONG (the server's PINGs answered), SUB, PUB with a reply subject, and MSG and
HMSG with their headers and status line. It binds the durable $DURABLE of stream $STREAM (it creates nothing)
and pulls one message at a time: PUB $JS.API.CONSUMER.MSG.NEXT.<stream>.<durable> <inbox> with
{"batch":1,"expires":1 s}. A 404 or 408 status is an empty read; another status (409: the durable was deleted
and made anew; 503: no responders) or a refused pull (-ERR 'Permissions Violation ...') is printed and the loop
goes on after 10 ms. A delivery's fields are its JSON payload's (values as strings), with the event_id header
when the payload has none. An ack is `+ACK` published to the delivery's reply subject as a request (AckSync,
as nats.js's ackAck): the consumer waits for the server's answer; a refused or unanswered ack is printed and
the loop goes on (the message comes again after AckWait).

Default (py-nats-dedup-table): in one transaction it inserts the event_id into processed_messages (ON
CONFLICT DO NOTHING) and credits the wallet only if the row was inserted; after COMMIT it acks. It is correct.

ACK_FIRST=1 (py-nats-ack-first): it acks first, then credits the wallet with no dedup. It is NOT correct:
killed between the two it loses the message, and a producer retry is applied twice.

SIGTERM sets a flag checked while waiting for the server (every 100 ms) and between deliveries; both
connections close and the process exits 0. Any other error (PostgreSQL, a lost connection) is printed and
exits 1.
"""
import json
import os
import secrets
import signal
import socket
import sys
import time
import urllib.parse

stop = False


def on_sigterm(signum, frame):
    global stop
    stop = True


# Before the slow imports, so that an early SIGTERM still ends the process with status 0.
signal.signal(signal.SIGTERM, on_sigterm)

import psycopg  # noqa: E402

ACK_FIRST = os.environ.get("ACK_FIRST") == "1"
NAME = os.environ.get("TARGET_NAME") or ("py-nats-ack-first" if ACK_FIRST else "py-nats-dedup-table")
PULL_SID, ACK_SID = "1", "2"
EXPIRES_S = 1.0
ACK_TIMEOUT_S = 5.0


class Refused(Exception):
    """The server refused a publish (-ERR 'Permissions Violation ...'); the connection stays open."""


class Msg:
    """A MSG or HMSG: subject, sid, reply subject, status code (0 without one), headers and payload."""

    def __init__(self, subject, sid, reply, status, description, headers, payload):
        self.subject, self.sid, self.reply = subject, sid, reply
        self.status, self.description, self.headers, self.payload = status, description, headers, payload


def parse_headers(block):
    """The header block of an HMSG ("NATS/1.0 404 No Messages\\r\\nKey: value\\r\\n..."): status, its
    description and the header values (the first of each name)."""
    lines = block.decode("utf-8", "replace").split("\r\n")
    first = lines[0].split(" ", 2)
    status = int(first[1]) if len(first) > 1 and first[1].isdigit() else 0
    description = first[2] if len(first) > 2 else ""
    headers = {}
    for line in lines[1:]:
        if ":" in line:
            k, v = line.split(":", 1)
            headers.setdefault(k.strip(), v.strip())
    return status, description, headers


class Nats:
    """One connection to a NATS server, read and written on the calling thread only."""

    def __init__(self, url, name):
        u = urllib.parse.urlsplit(url)
        env = os.environ
        user = urllib.parse.unquote(u.username or "")
        password = urllib.parse.unquote(u.password or "")
        self.sock = socket.create_connection((u.hostname or "127.0.0.1", u.port or 4222), timeout=5)
        self.buf = bytearray()
        info = self._line()
        if not info.startswith(b"INFO "):
            raise ConnectionError(f"the server's first line is not INFO: {info[:80]!r}")
        connect = {"verbose": False, "pedantic": False, "lang": "python3", "version": "0", "protocol": 1,
                   "headers": True, "no_responders": True, "name": name}
        if env.get("NATS_TOKEN"):
            connect["auth_token"] = env["NATS_TOKEN"]
        elif env.get("NATS_USER"):
            connect["user"], connect["pass"] = env["NATS_USER"], env.get("NATS_PASSWORD", "")
        elif user and password:
            connect["user"], connect["pass"] = user, password
        elif user:
            connect["auth_token"] = user
        self._send(b"CONNECT " + json.dumps(connect).encode() + b"\r\nPING\r\n")
        while True:
            line = self._line()
            if line == b"PONG":
                break
            if line.startswith(b"-ERR"):
                raise ConnectionError(f"CONNECT refused: {line.decode('utf-8', 'replace')}")
        self.sock.settimeout(0.1)

    def close(self):
        try:
            self.sock.close()
        except OSError:
            pass

    def _send(self, data):
        self.sock.sendall(data)

    def _fill(self):
        """Reads more bytes; False when 100 ms passed without any."""
        try:
            data = self.sock.recv(65536)
        except socket.timeout:
            return False
        if not data:
            raise ConnectionError("connection closed by the server")
        self.buf += data
        return True

    def _line(self):
        """A control line (blocking, for the handshake)."""
        while b"\r\n" not in self.buf:
            self._fill()
        i = self.buf.index(b"\r\n")
        line = bytes(self.buf[:i])
        del self.buf[:i + 2]
        return line

    def sub(self, subject, sid):
        self._send(f"SUB {subject} {sid}\r\n".encode())

    def pub(self, subject, reply, payload):
        self._send(f"PUB {subject} {reply} {len(payload)}\r\n".encode() + payload + b"\r\n")

    def _op(self):
        """The next whole message of the server in the buffer (a Msg, or a -ERR line as Refused), None when
        the buffer holds none yet. PING is answered; PONG, +OK and INFO are passed over."""
        while b"\r\n" in self.buf:
            i = self.buf.index(b"\r\n")
            line = bytes(self.buf[:i]).decode("utf-8", "replace")
            op = line.split(" ", 1)[0].upper()
            if op in ("MSG", "HMSG"):
                args = line.split()
                counts = 2 if op == "HMSG" else 1
                sizes = [int(a) for a in args[-counts:]]
                total = sizes[-1]
                end = i + 2 + total + 2
                if len(self.buf) < end:
                    return None
                body = bytes(self.buf[i + 2:i + 2 + total])
                del self.buf[:end]
                subject, sid = args[1], args[2]
                reply = args[3] if len(args) - counts == 4 else ""
                status, description, headers = 0, "", {}
                if op == "HMSG":
                    status, description, headers = parse_headers(body[:sizes[0]])
                    body = body[sizes[0]:]
                return Msg(subject, sid, reply, status, description, headers, body)
            del self.buf[:i + 2]
            if op == "PING":
                self._send(b"PONG\r\n")
            elif op == "-ERR":
                if "permissions violation" in line.lower():
                    return Refused(line)
                raise ConnectionError(line)
        return None

    def wait(self, sid, subject, timeout):
        """The next message to `sid` (and `subject` when given), or Refused; None after `timeout` seconds or
        once SIGTERM came. Messages to other subscriptions are passed over."""
        deadline = time.monotonic() + timeout
        while not stop and time.monotonic() < deadline:
            op = self._op()
            if op is None:
                self._fill()
                continue
            if isinstance(op, Refused):
                return op
            if op.sid == sid and (subject is None or op.subject == subject):
                return op
        return None


def stream_seq(ack_subject):
    """The stream sequence a $JS.ACK subject carries (both layouts), for messages."""
    t = ack_subject.split(".")
    return t[5] if len(t) == 9 else t[7] if len(t) >= 11 else "?"


def fields_of(m):
    """The message's JSON payload as fields (values as strings), with the event_id header if it has none."""
    fields = {}
    try:
        value = json.loads(m.payload or b"null")
    except ValueError:
        value = None
    if isinstance(value, dict):
        fields = {k: v if isinstance(v, str) else json.dumps(v) for k, v in value.items()}
    if "event_id" not in fields and "event_id" in m.headers:
        fields["event_id"] = m.headers["event_id"]
    return fields


def credit(db, fields, dedup):
    with db.transaction():
        if dedup:
            cur = db.execute("INSERT INTO processed_messages(event_id) VALUES (%s) ON CONFLICT DO NOTHING",
                             (fields["event_id"],))
            if cur.rowcount != 1:
                return
        db.execute("UPDATE wallets SET balance_halala = balance_halala + %s WHERE id = %s",
                   (int(fields["amount"]), fields["wallet"]))


def log(text):
    print(f"{NAME}: {text}", file=sys.stderr, flush=True)


def run(db, nc):
    env = os.environ
    inbox = "_INBOX." + secrets.token_hex(11).upper()
    pull_inbox = inbox + ".pull"
    nc.sub(pull_inbox, PULL_SID)
    nc.sub(inbox + ".ack.*", ACK_SID)
    next_subject = f"$JS.API.CONSUMER.MSG.NEXT.{env['STREAM']}.{env['DURABLE']}"
    request = json.dumps({"batch": 1, "expires": int(EXPIRES_S * 1e9)}).encode()
    acks = 0

    def ack(m):
        # An ack the server refuses or never answers is printed: the message comes again after AckWait.
        nonlocal acks
        acks += 1
        reply = f"{inbox}.ack.{acks}"
        nc.pub(m.reply, reply, b"+ACK")
        answer = nc.wait(ACK_SID, reply, ACK_TIMEOUT_S)
        if isinstance(answer, Refused):
            log(f"ack of {stream_seq(m.reply)}: {answer}")
        elif answer is None and not stop:
            log(f"ack of {stream_seq(m.reply)}: no answer in {ACK_TIMEOUT_S:g} s")
        elif answer is not None and answer.status >= 300:
            log(f"ack of {stream_seq(m.reply)}: {answer.status} {answer.description}")

    while not stop:
        nc.pub(next_subject, pull_inbox, request)
        m = nc.wait(PULL_SID, None, EXPIRES_S + 4)  # a delivery keeps its own subject
        if stop:
            break
        if m is None:
            log("next: no answer to the pull request")
            continue
        if isinstance(m, Refused):
            log(f"next: {m}")
            time.sleep(0.01)
            continue
        if not m.reply.startswith("$JS.ACK."):
            if m.status not in (0, 100, 404, 408):
                log(f"next: {m.status} {m.description}")
                time.sleep(0.01)
            continue
        fields = fields_of(m)
        if ACK_FIRST:
            ack(m)
            credit(db, fields, dedup=False)
        else:
            credit(db, fields, dedup=True)
            ack(m)


def main():
    if stop:
        return 0
    db = nc = None
    try:
        db = psycopg.connect(os.environ["DATABASE_URL"], autocommit=True, prepare_threshold=None)
        nc = Nats(os.environ["NATS_URL"], os.environ.get("CONSUMER", NAME))
        run(db, nc)
    except Exception as e:  # any server or connection error: report and exit 1
        if stop:
            return 0
        log(f"{type(e).__name__}: {e}")
        return 1
    finally:
        if nc is not None:
            nc.close()
        if db is not None:
            db.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
