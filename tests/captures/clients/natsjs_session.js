// A JetStream pull consumer session on nats.js 2.28.2 (tests/captures/README.md), through the relay on
// port argv[2] of a nats-server with token s3cret: a stream `orders` (subject orders.>) and a durable pull
// consumer `workers`, three JSON messages with an event_id header; then consumer.next() one at a time: the
// first acked, the second NAKed, the third marked working and acked with ackAck, the second again (the
// server redelivers a NAKed message after those waiting) terminated; a next() with nothing left (an idle
// heartbeat, then 408); a plain publish.
'use strict';
const { connect, headers, AckPolicy } = require('nats');

async function main() {
  const nc = await connect({ servers: `127.0.0.1:${process.argv[2]}`, token: 's3cret', reconnect: false });
  const jsm = await nc.jetstreamManager();
  await jsm.streams.add({ name: 'orders', subjects: ['orders.>'] });
  await jsm.consumers.add('orders', { durable_name: 'workers', ack_policy: AckPolicy.Explicit, ack_wait: 30e9 });
  const js = nc.jetstream();
  for (let i = 1; i <= 3; ++i) {
    const h = headers();
    h.set('event_id', `e-${i}`);
    await js.publish('orders.w1', JSON.stringify({ n: `${i}`, wallet: `w${i}`, amount: '5000' }), { headers: h });
  }
  const c = await js.consumers.get('orders', 'workers');
  let m = await c.next({ expires: 2000 });
  m.ack();
  m = await c.next({ expires: 2000 });
  m.nak();
  m = await c.next({ expires: 2000 });
  m.working();
  await m.ackAck();
  m = await c.next({ expires: 2000 }); // the NAKed one again
  m.term();
  m = await c.next({ expires: 1000 });
  if (m !== null) throw new Error('a fourth message');
  nc.publish('audit.done', '3 handled');
  await nc.flush();
  await nc.close();
}

main().catch((e) => { console.error(e); process.exit(1); });
