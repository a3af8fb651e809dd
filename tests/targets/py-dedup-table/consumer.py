"""py-dedup-table (wallet, test consumer): the dedup-table strategy in Python (psycopg 3.1.7, redis-py
4.3.4, run with /usr/bin/python3). In one transaction it inserts the entry's event_id into
processed_messages (ON CONFLICT DO NOTHING) and credits the wallet only if the row was inserted; after
COMMIT it XACKs the entry, duplicates included. It is correct, like targets/dedup-table.

Round trips, as in targets/common/consumer.h: at start XREADGROUP ... STREAMS $STREAM <cursor> over its
own pending list; then XAUTOCLAIM ... COUNT 10 and XREADGROUP ... COUNT 10 BLOCK 100 ... > in a loop; per
entry BEGIN, INSERT, [UPDATE], COMMIT, XACK. Statements go with psycopg's extended protocol (unnamed
statements: prepare_threshold=None keeps psycopg from switching to named prepared statements after five
runs). SIGTERM sets a flag checked between entries; any error is printed and exits 1.

WORK_MS (environment: the manifest's env or idemproof's own, default 0): milliseconds of work per entry
before its transaction, as an external call would take; SIGTERM during it leaves the entry unacknowledged.
"""
import os
import signal
import sys
import time

COUNT = 10
SLICE_S = 0.05
WORK_MS = int(os.environ.get("WORK_MS") or 0)
stop = False


def on_sigterm(signum, frame):
    global stop
    stop = True


# Before the slow imports (~0.3 s), so that an early SIGTERM still ends the process with status 0.
signal.signal(signal.SIGTERM, on_sigterm)

import psycopg  # noqa: E402
import redis  # noqa: E402


def pause(ms):
    """Sleeps ms milliseconds in slices, unless SIGTERM arrives. True when the full time passed."""
    deadline = time.monotonic() + ms / 1000.0
    while not stop:
        left = deadline - time.monotonic()
        if left <= 0:
            return True
        time.sleep(min(left, SLICE_S))
    return False


def entries_of_read(reply):
    """XREADGROUP reply -> [(id, fields)]; None on a BLOCK timeout."""
    if not reply:
        return []
    [(_stream, entries)] = reply
    return entries


class Consumer:
    def __init__(self):
        env = os.environ
        self.stream, self.group, self.name = env["STREAM"], env["GROUP"], env["CONSUMER"]
        self.idle = int(env["CLAIM_IDLE_MS"])
        self.db = psycopg.connect(env["DATABASE_URL"], autocommit=True, prepare_threshold=None)
        url = env.get("VALKEY_URL") or env["REDIS_URL"]
        self.kv = redis.Redis.from_url(url, decode_responses=True)

    def apply(self, fields):
        with self.db.transaction():
            cur = self.db.execute(
                "INSERT INTO processed_messages(event_id) VALUES (%s) ON CONFLICT DO NOTHING",
                (fields["event_id"],))
            if cur.rowcount == 1:
                self.db.execute(
                    "UPDATE wallets SET balance_halala = balance_halala + %s WHERE id = %s",
                    (int(fields["amount"]), fields["wallet"]))

    def process(self, entry_id, fields):
        """One entry: its effect, then its acknowledgement. False: stop here (SIGTERM), leaving it pending.
        Consumers built on this loop (py-ledger, py-slow, py-ack-first, ...) override it or apply()."""
        if fields:  # None for an entry deleted from the stream while pending
            if not pause(WORK_MS):
                return False
            self.apply(fields)
        self.kv.xack(self.stream, self.group, entry_id)
        return True

    def handle(self, entries):
        for entry_id, fields in entries:
            if stop or not self.process(entry_id, fields):
                return

    def run(self):
        cursor = "0"
        while not stop:
            batch = entries_of_read(self.kv.xreadgroup(
                self.group, self.name, {self.stream: cursor}, count=COUNT))
            if not batch:
                break
            cursor = batch[-1][0]
            self.handle(batch)
            if len(batch) < COUNT:
                break
        claim_cursor = "0-0"
        while not stop:
            # redis-py 4.3.4 on Redis 7: [next cursor, [(id, fields)...], [deleted id...]]
            reply = self.kv.xautoclaim(self.stream, self.group, self.name, self.idle,
                                       start_id=claim_cursor, count=COUNT)
            claim_cursor = reply[0]
            self.handle(reply[1])
            if stop:
                break
            self.handle(entries_of_read(self.kv.xreadgroup(
                self.group, self.name, {self.stream: ">"}, count=COUNT, block=100)))


def main(make=None, name="py-dedup-table"):
    """Runs the consumer `make()` builds (default: Consumer) until SIGTERM; 0, or 1 on any error."""
    try:
        if not stop:
            (make or Consumer)().run()
    except Exception as e:  # any server or connection error: report and exit 1
        print(f"{name}: {type(e).__name__}: {e}", file=sys.stderr, flush=True)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
