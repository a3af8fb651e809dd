"""A consumer's Kafka session through librdkafka 2.0.2, driven from python3-confluent-kafka 1.7 (Debian),
for tests/captures/librdkafka (run by ../record.sh against idemproof-kafka-server with the topics
payments:3 and outbox:1): three keyed JSON records with an event_id header (two in one batch on
partition 0, one on partition 2), a fourth gzip-compressed on partition 1; a consumer in group g-rec
reads the four, committing each synchronously; a transactional producer writes to outbox and commits
the consumer's positions in its transaction (InitProducerId, AddPartitionsToTxn, Produce,
AddOffsetsToTxn, TxnOffsetCommit, EndTxn); the consumer closes (LeaveGroup)."""
import json
import sys

from confluent_kafka import Consumer, Producer

boot = f"127.0.0.1:{sys.argv[1]}"


def event(n, wallet):
    return json.dumps({"n": str(n), "event_id": f"e-{n}", "wallet": wallet, "amount": "5000"})


p = Producer({"bootstrap.servers": boot, "client.id": "rec-producer", "linger.ms": 50})
p.produce("payments", key="w1", value=event(1, "w1"), partition=0, headers=[("event_id", b"e-1")])
p.produce("payments", key="w1", value=event(2, "w1"), partition=0, headers=[("event_id", b"e-2")])
p.produce("payments", key="w3", value=event(3, "w3"), partition=2, headers=[("event_id", b"e-3")])
p.flush(10)
gz = Producer({"bootstrap.servers": boot, "client.id": "rec-gzip", "compression.type": "gzip"})
gz.produce("payments", key="w2", value=event(4, "w2"), partition=1, headers=[("event_id", b"e-4")])
gz.flush(10)

c = Consumer({"bootstrap.servers": boot, "group.id": "g-rec", "client.id": "c1", "enable.auto.commit": False,
              "auto.offset.reset": "earliest", "fetch.wait.max.ms": 100})
c.subscribe(["payments"])
got = 0
while got < 4:
    m = c.poll(10)
    if m is None:
        sys.exit("no record within 10 s")
    if m.error():
        continue
    got += 1
    c.commit(message=m, asynchronous=False)

t = Producer({"bootstrap.servers": boot, "client.id": "rec-txn", "transactional.id": "txn-rec"})
t.init_transactions(10)
t.begin_transaction()
t.produce("outbox", key="w1", value=event(1, "w1"), partition=0)
t.send_offsets_to_transaction(c.position(c.assignment()), c.consumer_group_metadata(), 10)
t.commit_transaction(10)
c.close()
