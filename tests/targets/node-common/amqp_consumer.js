// The wallet consumer on RabbitMQ in Node: amqplib 2.3.1 and node-postgres 8 (pinned in package-lock.json).
// It connects to $AMQP_URL, asks for one unacknowledged message at a time (prefetch 1) and consumes $QUEUE
// with manual acks under the consumer tag $CONSUMER, one delivery after the other (the next waits for the
// last one's work). Flags from the manifest's `env`:
//   default        dedup-table: in one transaction INSERT the event_id into processed_messages (ON CONFLICT
//                  DO NOTHING) and credit the wallet only if the row was inserted; after COMMIT ack (correct)
//   ACK_FIRST=1    ack first, then credit with no dedup (wrong: a kill between the two loses the message,
//                  and a producer retry is applied twice)
// SIGTERM closes the connection (the broker requeues what was not acknowledged) and exits 0; any other
// error is printed and exits 1.
'use strict';
const { Client } = require('pg');
const amqp = require('amqplib');

const ACK_FIRST = process.env.ACK_FIRST === '1';
const NAME = process.env.TARGET_NAME || 'node-amqp-consumer';

/** The JSON body as fields (values as strings), with the event_id header if the body has none. */
function fieldsOf(msg) {
  let value = null;
  try { value = JSON.parse(msg.content.toString()); } catch (e) { value = null; }
  const f = {};
  if (value && typeof value === 'object' && !Array.isArray(value))
    for (const [k, v] of Object.entries(value)) f[k] = typeof v === 'string' ? v : JSON.stringify(v);
  const header = msg.properties.headers && msg.properties.headers.event_id;
  if (f.event_id === undefined && header !== undefined) f.event_id = header.toString();
  return f;
}

async function credit(db, f, dedup) {
  await db.query('BEGIN');
  try {
    let inserted = 1;
    if (dedup) {
      const r = await db.query('INSERT INTO processed_messages(event_id) VALUES ($1) ON CONFLICT DO NOTHING',
                               [f.event_id]);
      inserted = r.rowCount;
    }
    if (inserted === 1)
      await db.query('UPDATE wallets SET balance_halala = balance_halala + $1 WHERE id = $2',
                     [Number(f.amount), f.wallet]);
    await db.query('COMMIT');
  } catch (e) {
    await db.query('ROLLBACK').catch(() => {});
    throw e;
  }
}

async function main() {
  const env = process.env;
  const db = new Client({ connectionString: env.DATABASE_URL });
  await db.connect();
  const conn = await amqp.connect(env.AMQP_URL);
  let closing = false;
  process.on('SIGTERM', () => {
    if (closing) return;
    closing = true;
    conn.close().then(() => db.end()).then(() => process.exit(0), () => process.exit(0));
  });
  conn.on('error', (e) => { if (!closing) { console.error(`${NAME}: ${e.message}`); process.exit(1); } });
  conn.on('close', () => { if (!closing) { console.error(`${NAME}: the connection closed`); process.exit(1); } });
  const ch = await conn.createChannel();
  await ch.prefetch(1);
  let chain = Promise.resolve(); // one delivery at a time, in order
  await ch.consume(env.QUEUE, (msg) => {
    if (msg === null) return;
    chain = chain.then(async () => {
      const f = fieldsOf(msg);
      if (ACK_FIRST) {
        ch.ack(msg);
        await credit(db, f, false);
      } else {
        await credit(db, f, true);
        ch.ack(msg);
      }
    }).catch((e) => { console.error(`${NAME}: ${e.stack || e}`); process.exit(1); });
  }, { noAck: false, consumerTag: env.CONSUMER });
}

main().catch((e) => { console.error(`${NAME}: ${e.stack || e}`); process.exit(1); });
