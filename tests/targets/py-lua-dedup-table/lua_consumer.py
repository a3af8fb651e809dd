"""Wallet consumer on Valkey Streams whose acknowledgements (and, with LUA_CLAIM=1, its claims) run in Lua
scripts, with redis-py's register_script (EVALSHA; on NOSCRIPT, SCRIPT LOAD and EVALSHA again) and psycopg2.
What a script does to the stream the proxy does not see (docs/target-contract.md).

MODE (env):
  correct   the credit and its dedup row in one transaction, then a script that records the event and
            acknowledges the entry (XDEL=1: and deletes it) (tests/targets/py-lua-dedup-table)
  ackfirst  a script marks the event seen (SET NX) and acknowledges the entry, then the credit, in its own
            transaction: a kill between them loses the event (tests/targets/py-lua-ack-first)
  seennx    a script marks the event seen (SET NX), the credit, then a script acknowledges the entry
"""
import os
import signal
import sys

stop = False


def on_sigterm(signum, frame):
    global stop
    stop = True


signal.signal(signal.SIGTERM, on_sigterm)

import psycopg2  # noqa: E402
import redis  # noqa: E402

MODE = os.environ.get("MODE", "correct")
XDEL = os.environ.get("XDEL") == "1"
LUA_CLAIM = os.environ.get("LUA_CLAIM") == "1"
COUNT = 10

ACK_DONE = """
if ARGV[3] ~= '' then redis.call('HSET', KEYS[2], ARGV[3], ARGV[2]) end
local n = redis.call('XACK', KEYS[1], ARGV[1], ARGV[2])
if ARGV[4] == '1' then redis.call('XDEL', KEYS[1], ARGV[2]) end
return n"""
MARK_ACK = """
local new = redis.call('SET', KEYS[2], '1', 'NX')
redis.call('XACK', KEYS[1], ARGV[1], ARGV[2])
if new then return 1 else return 0 end"""
MARK = """
if redis.call('SET', KEYS[1], '1', 'NX') then return 1 else return 0 end"""
ACK_ONLY = """
return redis.call('XACK', KEYS[1], ARGV[1], ARGV[2])"""
CLAIM = """
return redis.call('XAUTOCLAIM', KEYS[1], ARGV[1], ARGV[2], ARGV[3], ARGV[4], 'COUNT', ARGV[5])"""


def entries_of_read(reply):
    if not reply:
        return []
    [(_stream, entries)] = reply
    return entries


class Consumer:
    def __init__(self):
        env = os.environ
        self.stream, self.group, self.name = env["STREAM"], env["GROUP"], env["CONSUMER"]
        self.idle = int(env["CLAIM_IDLE_MS"])
        self.db = psycopg2.connect(env["DATABASE_URL"])
        self.kv = redis.Redis.from_url(env.get("VALKEY_URL") or env["REDIS_URL"], decode_responses=True)
        self.ack_done = self.kv.register_script(ACK_DONE)
        self.mark_ack = self.kv.register_script(MARK_ACK)
        self.mark = self.kv.register_script(MARK)
        self.ack_only = self.kv.register_script(ACK_ONLY)
        self.claim = self.kv.register_script(CLAIM)

    def credit(self, f, dedup):
        with self.db:  # commits, or rolls back on an exception
            with self.db.cursor() as cur:
                inserted = 1
                if dedup:
                    cur.execute("INSERT INTO processed_messages(event_id) VALUES (%s) ON CONFLICT DO NOTHING",
                                (f["event_id"],))
                    inserted = cur.rowcount
                if inserted == 1:
                    cur.execute("UPDATE wallets SET balance_halala = balance_halala + %s WHERE id = %s",
                                (int(f["amount"]), f["wallet"]))

    def process(self, entry_id, f):
        if MODE == "correct":
            if f:
                self.credit(f, True)
            self.ack_done(keys=[self.stream, "processed:" + self.stream],
                          args=[self.group, entry_id, f["event_id"] if f else "", "1" if XDEL else "0"])
        elif MODE == "ackfirst":
            if not f:
                self.ack_only(keys=[self.stream], args=[self.group, entry_id])
                return
            if self.mark_ack(keys=[self.stream, "seen:" + f["event_id"]], args=[self.group, entry_id]) == 1:
                self.credit(f, False)
        elif MODE == "seennx":
            if f:
                if self.mark(keys=["seen:" + f["event_id"]]) == 1:
                    self.credit(f, False)
            self.ack_only(keys=[self.stream], args=[self.group, entry_id])
        else:
            raise ValueError("unknown MODE " + MODE)

    def handle(self, entries):
        for entry_id, fields in entries:
            if stop:
                return
            self.process(entry_id, fields)

    def xautoclaim(self, cursor):
        if LUA_CLAIM:
            reply = self.claim(keys=[self.stream], args=[self.group, self.name, self.idle, cursor, COUNT])
            # raw: [cursor, [[id, [f, v, ...]], ...], [deleted...]]
            entries = []
            for item in reply[1]:
                eid, flat = item[0], item[1]
                entries.append((eid, dict(zip(flat[0::2], flat[1::2])) if flat else None))
            return reply[0], entries
        reply = self.kv.xautoclaim(self.stream, self.group, self.name, self.idle, start_id=cursor, count=COUNT)
        return reply[0], reply[1]

    def run(self):
        cursor = "0"
        while not stop:
            batch = entries_of_read(self.kv.xreadgroup(self.group, self.name, {self.stream: cursor}, count=COUNT))
            if not batch:
                break
            cursor = batch[-1][0]
            self.handle(batch)
            if len(batch) < COUNT:
                break
        claim_cursor = "0-0"
        while not stop:
            claim_cursor, entries = self.xautoclaim(claim_cursor)
            self.handle(entries)
            if stop:
                break
            self.handle(entries_of_read(self.kv.xreadgroup(
                self.group, self.name, {self.stream: ">"}, count=COUNT, block=100)))


def main():
    try:
        if not stop:
            Consumer().run()
    except Exception as e:
        print(f"lua_consumer.py({MODE}): {type(e).__name__}: {e}", file=sys.stderr, flush=True)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
