// amqplib (npm) against RabbitMQ, for tests/captures/amqplib: declares the queue, publishes three JSON
// messages with messageId and an event_id header, consumes them with prefetch 1 and manual acks, nacks the
// first delivery with requeue and acks its redelivery, then closes. argv: URL QUEUE
const amqp = require('amqplib');
(async () => {
  const [url, queue] = process.argv.slice(2);
  const conn = await amqp.connect(url);
  const ch = await conn.createChannel();
  await ch.assertQueue(queue, { durable: true });
  for (let i = 1; i <= 3; i++)
    ch.sendToQueue(queue, Buffer.from(JSON.stringify({ wallet: 'w1', amount: String(i) })),
                   { messageId: `m${i}`, persistent: true, headers: { event_id: `e${i}` } });
  await ch.prefetch(1);
  let n = 0;
  await new Promise((resolve) => {
    ch.consume(queue, (msg) => {
      n++;
      if (n === 1) ch.nack(msg, false, true);
      else ch.ack(msg);
      if (n === 4) resolve();
    });
  });
  await ch.close();
  await conn.close();
})().catch((e) => { console.error(e); process.exit(1); });
