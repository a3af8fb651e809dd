"""py-amqp-dedup-table (wallet, RabbitMQ test consumer): the dedup-table strategy in Python on RabbitMQ, with
python3-pika 1.2 (BlockingConnection) and psycopg 3.1.7, run with /usr/bin/python3. It connects to $AMQP_URL,
asks for one unacknowledged message at a time (basic.qos prefetch 1) and consumes $QUEUE with manual acks
(pika's BlockingChannel.consume names its own consumer tag); for each delivery, in one transaction it inserts the event_id into
processed_messages (ON CONFLICT DO NOTHING) and credits the wallet only if the row was inserted; after
COMMIT it acknowledges the delivery. It is correct, like targets/amqp-dedup-table.

ACK_FIRST=1 (py-amqp-ack-first): it acknowledges the delivery first, then credits the wallet with no
dedup. It is NOT correct: killed between the two it loses the message, and a producer retry is applied
twice.

AUTO_ACK=1 (py-amqp-auto-ack): it consumes with auto_ack=True (the broker settles each message as it
delivers it, and ignores the prefetch: every ready message is pushed at once), then credits with the
dedup table. It is NOT correct: killed before its COMMIT, it loses what it was handed and had not applied.

SIGTERM sets a flag checked between deliveries (a wait lasts at most 100 ms); the connection closes and the
process exits 0. Any other error is printed and exits 1.
"""
import json
import os
import signal
import sys

stop = False


def on_sigterm(signum, frame):
    global stop
    stop = True


# Before the slow imports, so that an early SIGTERM still ends the process with status 0.
signal.signal(signal.SIGTERM, on_sigterm)

import pika  # noqa: E402
import psycopg  # noqa: E402

ACK_FIRST = os.environ.get("ACK_FIRST") == "1"
AUTO_ACK = os.environ.get("AUTO_ACK") == "1"
NAME = "py-amqp-ack-first" if ACK_FIRST else "py-amqp-auto-ack" if AUTO_ACK else "py-amqp-dedup-table"


def fields_of(props, body):
    """The JSON body as fields (values as strings), with the event_id header if the body has none."""
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


def credit(db, fields, dedup):
    with db.transaction():
        if dedup:
            cur = db.execute("INSERT INTO processed_messages(event_id) VALUES (%s) ON CONFLICT DO NOTHING",
                             (fields["event_id"],))
            if cur.rowcount != 1:
                return
        db.execute("UPDATE wallets SET balance_halala = balance_halala + %s WHERE id = %s",
                   (int(fields["amount"]), fields["wallet"]))


def run():
    env = os.environ
    db = psycopg.connect(env["DATABASE_URL"], autocommit=True, prepare_threshold=None)
    conn = pika.BlockingConnection(pika.URLParameters(env["AMQP_URL"]))
    try:
        ch = conn.channel()
        ch.basic_qos(prefetch_count=1)
        for method, props, body in ch.consume(env["QUEUE"], auto_ack=AUTO_ACK, inactivity_timeout=0.1):
            if stop:
                break
            if method is None:
                continue
            fields = fields_of(props, body)
            if ACK_FIRST:
                ch.basic_ack(method.delivery_tag)
                credit(db, fields, dedup=False)
            elif AUTO_ACK:
                credit(db, fields, dedup=True)
            else:
                credit(db, fields, dedup=True)
                ch.basic_ack(method.delivery_tag)
    finally:
        if conn.is_open:
            conn.close()


def main():
    try:
        if not stop:
            run()
    except Exception as e:  # any server or connection error: report and exit 1
        print(f"{NAME}: {type(e).__name__}: {e}", file=sys.stderr, flush=True)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
