"""py-kafka-dedup-table (wallet, Kafka test consumer): the dedup-table strategy in Python on Kafka, with
python3-confluent-kafka 1.7 (librdkafka 2.0.2) and psycopg 3.1.7, run with /usr/bin/python3. It subscribes
to $TOPIC in group $GROUP (client.id $CONSUMER) through $KAFKA_BOOTSTRAP with auto-commit off; for each
record, in one transaction it inserts the event_id into processed_messages (ON CONFLICT DO NOTHING) and
credits the wallet only if the row was inserted; after COMMIT it commits the offset after the record,
synchronously. It is correct, like targets/kafka-dedup-table. A failed offset commit (a rebalance in
progress) is printed and it goes on: the record comes again and is skipped.

COMMIT_FIRST=1 (py-kafka-commit-first): it commits the offset after the record first, then credits the
wallet with no dedup. It is NOT correct: killed between the two it loses the record, and a producer retry
is applied twice.

AUTO_COMMIT=1 (py-kafka-autocommit-dedup): confluent-kafka's default commits — auto-commit every 5 s of the
offsets its polls stored (enable.auto.offset.store: a record's offset is stored as poll() returns it), its
default fetch wait — with the same dedup transaction and no commit of its own (the session settings below
stay: librdkafka's default 45 s session makes the embedded broker wait 44 s for a killed member's successor). It is NOT
correct: a commit on the timer while a record is still in work covers it, and a kill then loses it (a
producer retry is harmless).

TXN=1 (py-kafka-txn): the offsets are committed in a Kafka transaction instead — a producer with
transactional.id "txn-$GROUP" sends the offset after the record (send_offsets_to_transaction) and commits
the transaction after the database's COMMIT; the consumer reads with isolation.level read_committed. It is
correct: a record whose Kafka transaction did not commit comes again and is skipped. With NO_DEDUP=1 too
(py-kafka-txn-no-dedup) the credit is always made: NOT correct, since the Kafka transaction covers the
offsets and not the database, a kill between the database's COMMIT and the Kafka transaction's commit
applies the record twice, and a producer retry is applied twice.

Settings as targets/common/kafka.h (AUTO_COMMIT=1: the first three): auto.offset.reset=earliest, session.timeout.ms=6000,
heartbeat.interval.ms=2000, fetch.wait.max.ms=100. SIGTERM sets a flag checked between records (a poll
waits at most 100 ms); the consumer closes (LeaveGroup) and exits 0. Any other error is printed and exits 1.
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

import psycopg  # noqa: E402
from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition  # noqa: E402

COMMIT_FIRST = os.environ.get("COMMIT_FIRST") == "1"
AUTO_COMMIT = os.environ.get("AUTO_COMMIT") == "1"
TXN = os.environ.get("TXN") == "1"
NO_DEDUP = os.environ.get("NO_DEDUP") == "1"
NAME = ("py-kafka-commit-first" if COMMIT_FIRST else "py-kafka-autocommit-dedup" if AUTO_COMMIT else
        ("py-kafka-txn-no-dedup" if NO_DEDUP else "py-kafka-txn") if TXN else "py-kafka-dedup-table")


def fields_of(msg):
    """The record's JSON value as fields (values as strings), with the event_id header if the value has none."""
    fields = {}
    try:
        value = json.loads(msg.value() or b"null")
    except ValueError:
        value = None
    if isinstance(value, dict):
        fields = {k: v if isinstance(v, str) else json.dumps(v) for k, v in value.items()}
    for k, v in msg.headers() or []:
        if k == "event_id" and "event_id" not in fields and v is not None:
            fields["event_id"] = v.decode()
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


def commit(consumer, msg):
    try:
        consumer.commit(offsets=[TopicPartition(msg.topic(), msg.partition(), msg.offset() + 1)],
                        asynchronous=False)
    except KafkaException as e:
        print(f"{NAME}: offset commit after {msg.topic()}-{msg.partition()}@{msg.offset()}: {e}", file=sys.stderr,
              flush=True)


def run():
    env = os.environ
    db = psycopg.connect(env["DATABASE_URL"], autocommit=True, prepare_threshold=None)
    settings = {"bootstrap.servers": env["KAFKA_BOOTSTRAP"], "group.id": env["GROUP"], "client.id": env["CONSUMER"],
                "auto.offset.reset": "earliest", "session.timeout.ms": 6000, "heartbeat.interval.ms": 2000}
    if not AUTO_COMMIT:
        settings.update({"enable.auto.commit": False, "fetch.wait.max.ms": 100})
    if TXN:
        settings["isolation.level"] = "read_committed"
    consumer = Consumer(settings)
    producer = None
    if TXN:
        producer = Producer({"bootstrap.servers": env["KAFKA_BOOTSTRAP"], "client.id": env["CONSUMER"] + "-txn",
                             "transactional.id": "txn-" + env["GROUP"]})
        producer.init_transactions()
    try:
        consumer.subscribe([env["TOPIC"]])
        while not stop:
            msg = consumer.poll(0.1)
            if msg is None:
                continue
            if msg.error():
                if msg.error().fatal():
                    raise KafkaException(msg.error())
                print(f"{NAME}: {msg.error()}", file=sys.stderr, flush=True)
                continue
            fields = fields_of(msg)
            if TXN:
                producer.begin_transaction()
                credit(db, fields, dedup=not NO_DEDUP)
                producer.send_offsets_to_transaction(
                    [TopicPartition(msg.topic(), msg.partition(), msg.offset() + 1)], consumer.consumer_group_metadata())
                producer.commit_transaction()
            elif COMMIT_FIRST:
                commit(consumer, msg)
                credit(db, fields, dedup=False)
            else:
                credit(db, fields, dedup=True)
                if not AUTO_COMMIT:
                    commit(consumer, msg)
    finally:
        consumer.close()


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
