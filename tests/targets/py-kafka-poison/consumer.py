"""py-kafka-poison (scenario tests/scenarios/wallet-poison-topic.json, Kafka): py-kafka-dedup-table's
strategy; a payment whose amount is not positive is produced to $DEAD_LETTER_TOPIC (a JSON value with its
event_id and the reason, flushed), then its offset is committed. Correct without faults; a kill between the
produce and the offset commit produces a second dead letter on the redelivery."""
import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "py-kafka-dedup-table"))

import consumer as base  # noqa: E402

import psycopg  # noqa: E402
from confluent_kafka import Consumer, KafkaException, Producer  # noqa: E402

NAME = "py-kafka-poison"


def run():
    env = os.environ
    db = psycopg.connect(env["DATABASE_URL"], autocommit=True, prepare_threshold=None)
    consumer = Consumer({"bootstrap.servers": env["KAFKA_BOOTSTRAP"], "group.id": env["GROUP"],
                         "client.id": env["CONSUMER"], "enable.auto.commit": False,
                         "auto.offset.reset": "earliest", "session.timeout.ms": 6000,
                         "heartbeat.interval.ms": 2000, "fetch.wait.max.ms": 100})
    producer = Producer({"bootstrap.servers": env["KAFKA_BOOTSTRAP"], "client.id": env["CONSUMER"] + "-dlq",
                         "linger.ms": 0})
    try:
        consumer.subscribe([env["TOPIC"]])
        while not base.stop:
            msg = consumer.poll(0.1)
            if msg is None:
                continue
            if msg.error():
                if msg.error().fatal():
                    raise KafkaException(msg.error())
                continue
            fields = base.fields_of(msg)
            if int(fields["amount"]) <= 0:
                letter = {"event_id": fields["event_id"], "reason": "amount is not positive"}
                producer.produce(env["DEAD_LETTER_TOPIC"], json.dumps(letter).encode())
                producer.flush(10)
            else:
                base.credit(db, fields, dedup=True)
            base.commit(consumer, msg)
    finally:
        consumer.close()


if __name__ == "__main__":
    try:
        if not base.stop:
            run()
    except Exception as e:  # any server or connection error: report and exit 1
        print(f"{NAME}: {type(e).__name__}: {e}", file=sys.stderr, flush=True)
        sys.exit(1)
    sys.exit(0)
