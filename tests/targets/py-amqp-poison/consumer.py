"""py-amqp-poison (scenario tests/scenarios/wallet-poison-queue.json, RabbitMQ): py-amqp-dedup-table's
strategy; a payment whose amount is not positive is published to $DEAD_LETTER_QUEUE (the default exchange,
a JSON body with its event_id and the reason), then its delivery is acknowledged. Correct without faults; a
kill between the publish and the ack publishes a second dead letter on the redelivery."""
import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "py-amqp-dedup-table"))

import consumer as base  # noqa: E402

import pika  # noqa: E402
import psycopg  # noqa: E402


def run():
    env = os.environ
    db = psycopg.connect(env["DATABASE_URL"], autocommit=True, prepare_threshold=None)
    conn = pika.BlockingConnection(pika.URLParameters(env["AMQP_URL"]))
    try:
        ch = conn.channel()
        ch.basic_qos(prefetch_count=1)
        for method, props, body in ch.consume(env["QUEUE"], inactivity_timeout=0.1):
            if base.stop:
                break
            if method is None:
                continue
            fields = base.fields_of(props, body)
            if int(fields["amount"]) <= 0:
                letter = {"event_id": fields["event_id"], "reason": "amount is not positive"}
                ch.basic_publish("", env["DEAD_LETTER_QUEUE"], json.dumps(letter).encode())
            else:
                base.credit(db, fields, dedup=True)
            ch.basic_ack(method.delivery_tag)
    finally:
        if conn.is_open:
            conn.close()


if __name__ == "__main__":
    try:
        if not base.stop:
            run()
    except Exception as e:  # any server or connection error: report and exit 1
        print(f"py-amqp-poison: {type(e).__name__}: {e}", file=sys.stderr, flush=True)
        sys.exit(1)
    sys.exit(0)
