"""py-amqp-tx (wallet, RabbitMQ test consumer): acknowledgements in an AMQP channel transaction, with
python3-pika 1.2 (BlockingConnection, tx_select) and psycopg 3, run with /usr/bin/python3. Prefetch 1 and
manual acks on $QUEUE; the channel is transactional, so a basic.ack takes effect only at tx.commit.

MODE=rollback (py-amqp-tx): for each delivery it acks inside the channel transaction, then in one PostgreSQL
transaction inserts the event_id into processed_messages (ON CONFLICT DO NOTHING) and credits the wallet only
if the row was inserted; after that COMMIT it commits the channel transaction. When PostgreSQL fails it rolls
the channel transaction back (the ack is undone), reconnects if it must, and tries again. It is correct.

MODE=nocommit (py-amqp-tx-nocommit): it credits as above and acks, but never commits the channel transaction:
the broker applies none of its acks. It is NOT correct: no message is ever settled.

SIGTERM sets a flag checked between deliveries; the connection closes and the process exits 0. Any other
error is printed and exits 1.
"""
import json
import os
import signal
import sys
import time

stop = False


def on_sigterm(signum, frame):
    global stop
    stop = True


signal.signal(signal.SIGTERM, on_sigterm)

import pika  # noqa: E402
import psycopg  # noqa: E402

MODE = os.environ.get("MODE", "rollback")


def fields_of(props, body):
    fields = {}
    try:
        value = json.loads(body or b"null")
    except ValueError:
        value = None
    if isinstance(value, dict):
        fields = {k: v if isinstance(v, str) else json.dumps(v) for k, v in value.items()}
    headers = props.headers or {}
    if "event_id" not in fields and "event_id" in headers:
        v = headers["event_id"]
        fields["event_id"] = v.decode() if isinstance(v, bytes) else str(v)
    return fields


def credit(db, fields):
    with db.transaction():
        if db.execute("INSERT INTO processed_messages(event_id) VALUES (%s) ON CONFLICT DO NOTHING",
                      (fields["event_id"],)).rowcount != 1:
            return
        db.execute("UPDATE wallets SET balance_halala = balance_halala + %s WHERE id = %s",
                   (int(fields["amount"]), fields["wallet"]))


def run():
    env = os.environ
    db = psycopg.connect(env["DATABASE_URL"], autocommit=True)
    conn = pika.BlockingConnection(pika.URLParameters(env["AMQP_URL"]))
    try:
        ch = conn.channel()
        ch.basic_qos(prefetch_count=1)
        ch.tx_select()
        for method, props, body in ch.consume(env["QUEUE"], auto_ack=False, inactivity_timeout=0.1):
            if stop:
                break
            if method is None:
                continue
            fields = fields_of(props, body)
            while True:
                ch.basic_ack(method.delivery_tag)
                try:
                    credit(db, fields)
                except psycopg.Error as e:
                    print(f"py-amqp-tx: {e}: tx_rollback, then again", file=sys.stderr, flush=True)
                    ch.tx_rollback()
                    time.sleep(0.05)
                    if db.closed or db.broken:
                        db = psycopg.connect(env["DATABASE_URL"], autocommit=True)
                    continue
                if MODE != "nocommit":
                    ch.tx_commit()
                break
    finally:
        if conn.is_open:
            conn.close()


try:
    if not stop:
        run()
except Exception as e:
    print(f"py-amqp-tx ({MODE}): {type(e).__name__}: {e}", file=sys.stderr, flush=True)
    sys.exit(1)
