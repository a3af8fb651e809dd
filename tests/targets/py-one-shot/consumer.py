"""py-one-shot (wallet, test consumer): a correct, slow, one-shot consumer in the shape a new user writes
(/usr/bin/python3, psycopg 3.1.7, redis-py 4.3.4 in their default configuration). It runs once and exits:

- at start `XAUTOCLAIM $STREAM $GROUP $CONSUMER $CLAIM_IDLE_MS 0-0 COUNT 100` (what a dead consumer left);
- then one `XREADGROUP GROUP $GROUP $CONSUMER COUNT 100 BLOCK 1000 STREAMS $STREAM >`;
- then it works through the claimed entries and the read ones: per entry WORK_MS milliseconds (manifest
  `env`, default 0) of work before its transaction (an external call), then in one transaction it inserts
  the event_id into processed_messages (ON CONFLICT DO NOTHING) and credits the wallet only if the row was
  inserted, then XACK (duplicates too);
- then it exits 0 (idemproof starts another process while work is left).

It installs no SIGTERM handler: SIGTERM ends it at once, leaving what it holds unacknowledged. Correct: the
record of the event and its effect commit together. Any error exits 1.

HOLD_FOREVER=1 (tests/targets/py-holds-forever): after its two reads it never works on what it holds; it
blocks in `XREADGROUP … BLOCK 0 … >` forever (wrong: it never finishes, and nothing tells it from a consumer
still calling out).
"""
import os
import sys
import time

import psycopg
import redis


def main():
    env = os.environ
    stream, group, name = env["STREAM"], env["GROUP"], env["CONSUMER"]
    work_s = int(env.get("WORK_MS") or 0) / 1000.0
    db = psycopg.connect(env["DATABASE_URL"], autocommit=True)
    kv = redis.Redis.from_url(env.get("VALKEY_URL") or env["REDIS_URL"], decode_responses=True)
    # redis-py 4.3.4 on Redis 7: [next cursor, [(id, fields)...], [deleted id...]]
    claimed = kv.xautoclaim(stream, group, name, int(env["CLAIM_IDLE_MS"]), start_id="0-0", count=100)[1]
    read = kv.xreadgroup(group, name, {stream: ">"}, count=100, block=1000)
    batch = claimed + (read[0][1] if read else [])
    while env.get("HOLD_FOREVER") == "1":
        kv.xreadgroup(group, name, {stream: ">"}, count=100, block=0)
    for entry_id, fields in batch:
        if fields:  # None for an entry deleted from the stream while pending
            time.sleep(work_s)
            with db.transaction():
                cur = db.execute("INSERT INTO processed_messages(event_id) VALUES (%s) ON CONFLICT DO NOTHING",
                                 (fields["event_id"],))
                if cur.rowcount == 1:
                    db.execute("UPDATE wallets SET balance_halala = balance_halala + %s WHERE id = %s",
                               (int(fields["amount"]), fields["wallet"]))
        kv.xack(stream, group, entry_id)
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except Exception as e:  # any server or connection error: report and exit 1
        print(f"py-one-shot: {type(e).__name__}: {e}", file=sys.stderr, flush=True)
        sys.exit(1)
