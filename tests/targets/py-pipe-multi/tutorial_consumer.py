"""Wallet consumer on Valkey Streams written as tutorials write it (psycopg 3, redis-py), the credit and its
processed_messages row in one transaction. MODE (manifest env):
  pipe      the batch's XACK and the next XREADGROUP in one redis-py pipeline(): by default a transaction
            (MULTI, XACK, XREADGROUP, EXEC), so both run at EXEC (tests/targets/py-pipe-multi)
  delcons   XPENDING + XCLAIM recovery (the pre-6.2 way), and XGROUP DELCONSUMER of its own name in a
            finally, on any exit: after an error it drops what it still held (tests/targets/py-delconsumer-finally)
"""
import os, signal, sys, time

stop = False


def on_term(*_):
    global stop
    stop = True


signal.signal(signal.SIGTERM, on_term)

import psycopg, redis  # noqa: E402

env = os.environ
S, G, ME = env["STREAM"], env["GROUP"], env["CONSUMER"]
IDLE = int(env["CLAIM_IDLE_MS"])
MODE = env.get("MODE", "pipe")
db = psycopg.connect(env["DATABASE_URL"], autocommit=True)
kv = redis.Redis.from_url(env["REDIS_URL"], decode_responses=True)


def apply(f):
    with db.transaction():
        if db.execute("INSERT INTO processed_messages(event_id) VALUES (%s) ON CONFLICT DO NOTHING",
                      (f["event_id"],)).rowcount == 0:
            return
        db.execute("UPDATE wallets SET balance_halala = balance_halala + %s WHERE id = %s",
                   (int(f["amount"]), f["wallet"]))


def handle(entries, ack=True):
    done = []
    for eid, f in entries:
        if stop:
            break
        if f:
            apply(f)
        if ack:
            kv.xack(S, G, eid)
        done.append(eid)
    return done


def recover():
    """XPENDING of up to 100, XCLAIM of those idle long enough."""
    pend = kv.xpending_range(S, G, min="-", max="+", count=100)
    ids = [p["message_id"] for p in pend if p["time_since_delivered"] >= IDLE]
    if ids:
        handle(kv.xclaim(S, G, ME, IDLE, ids))


def loop_pipe():
    recover()
    to_ack = []
    while not stop:
        p = kv.pipeline()  # transaction=True: MULTI … EXEC (a read inside it never blocks)
        if to_ack:
            p.xack(S, G, *to_ack)
        p.xreadgroup(G, ME, {S: ">"}, count=10)
        r = p.execute()[-1]
        entries = r[0][1] if r else []
        to_ack = handle(entries, ack=False)
        if not entries and not stop:
            time.sleep(0.05)
            recover()
    if to_ack:
        kv.xack(S, G, *to_ack)


def loop_delcons():
    try:
        recover()
        while not stop:
            r = kv.xreadgroup(G, ME, {S: ">"}, count=10, block=100)
            handle(r[0][1] if r else [])
            if not stop:
                recover()
    finally:
        kv.xgroup_delconsumer(S, G, ME)


try:
    {"pipe": loop_pipe, "delcons": loop_delcons}[MODE]()
except Exception as e:
    print(f"{MODE}: {type(e).__name__}: {e}", file=sys.stderr, flush=True)
    sys.exit(1)
