#!/usr/bin/python3
"""pika 1.2 (BlockingConnection) against RabbitMQ, for tests/captures/pika: declares the queue, publishes
three JSON messages with message_id and an event_id header, consumes them with basic.qos(prefetch 2) and
manual acks (the second acked with multiple after the third arrives, so one ack settles two), then a
basic.get and an empty basic.get, a basic.reject with requeue of the redelivered message, and closes.
argv: URL QUEUE"""
import json
import sys

import pika

url, queue = sys.argv[1], sys.argv[2]
conn = pika.BlockingConnection(pika.URLParameters(url))
ch = conn.channel()
ch.queue_declare(queue=queue, durable=True)
for i in range(1, 4):
    ch.basic_publish("", queue, json.dumps({"wallet": "w1", "amount": str(i)}),
                     pika.BasicProperties(message_id=f"m{i}", delivery_mode=2, headers={"event_id": f"e{i}"}))
ch.basic_qos(prefetch_count=2)
got = []


def on(chan, method, props, body):
    got.append(method.delivery_tag)
    if len(got) == 1:
        chan.basic_ack(method.delivery_tag)
    elif len(got) == 3:
        chan.basic_ack(method.delivery_tag, multiple=True)
        chan.stop_consuming()


tag = ch.basic_consume(queue, on)
ch.start_consuming()
ch.basic_cancel(tag)
ch.basic_publish("", queue, json.dumps({"wallet": "w2", "amount": "4"}),
                 pika.BasicProperties(message_id="m4", headers={"event_id": "e4"}))
method, props, body = ch.basic_get(queue)
ch.basic_reject(method.delivery_tag, requeue=True)
method, props, body = ch.basic_get(queue)
ch.basic_ack(method.delivery_tag)
ch.basic_get(queue)
conn.close()
