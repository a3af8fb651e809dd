// The wallet consumer on NATS JetStream in Node: nats 2.28.2 and node-postgres 8 (pinned in
// package-lock.json). It connects through $NATS_URL (host and port; the token from $NATS_TOKEN, or the user
// from $NATS_USER and $NATS_PASSWORD: nats.js does not read them from the URL) as $CONSUMER, binds the
// durable $DURABLE of stream $STREAM and takes one message at a time with consumer.next() (a pull request
// of batch 1 that waits up to 1 s), or with CONSUME=1 iterates consumer.consume() in its default
// configuration (pull requests of 100 messages that wait 30 s, topped up once a quarter of them came: the
// messages of a batch arrive while the first is being worked on). Flags from the manifest's `env`:
//   default      dedup-table: in one transaction INSERT the event_id into processed_messages (ON CONFLICT
//                DO NOTHING) and credit the wallet only if the row was inserted; after COMMIT, +ACK and
//                wait for the server's answer (ackAck) (correct)
//   ACK_FIRST=1  +ACK (ackAck) first, then the credit, no dedup (wrong: a kill between the two loses the
//                event, and a producer retry is applied twice)
// A refused ack or pull is printed and the loop goes on. SIGTERM closes both connections and exits 0; any
// other error (PostgreSQL, a lost connection) is printed and exits 1.
'use strict';
const { Client } = require('pg');
const { connect } = require('nats');

const ACK_FIRST = process.env.ACK_FIRST === '1';
const CONSUME = process.env.CONSUME === '1';
const NAME = process.env.TARGET_NAME || 'node-nats-consumer';

/** The message's JSON payload as fields (values as strings), with the event_id header if it has none. */
function fieldsOf(m) {
  let value = null;
  try { value = JSON.parse(Buffer.from(m.data).toString()); } catch (e) { value = null; }
  const f = {};
  if (value && typeof value === 'object' && !Array.isArray(value))
    for (const [k, v] of Object.entries(value)) f[k] = typeof v === 'string' ? v : JSON.stringify(v);
  if (f.event_id === undefined && m.headers && m.headers.has('event_id')) f.event_id = m.headers.get('event_id');
  return f;
}

async function credit(db, f, dedup) {
  await db.query('BEGIN');
  try {
    let inserted = 1;
    if (dedup) {
      const r = await db.query('INSERT INTO processed_messages(event_id) VALUES ($1) ON CONFLICT DO NOTHING', [f.event_id]);
      inserted = r.rowCount;
    }
    if (inserted === 1)
      await db.query('UPDATE wallets SET balance_halala = balance_halala + $1 WHERE id = $2', [Number(f.amount), f.wallet]);
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
  const url = new URL(env.NATS_URL);
  const nc = await connect({ servers: url.host, token: env.NATS_TOKEN, user: env.NATS_USER, pass: env.NATS_PASSWORD,
                            name: env.CONSUMER, reconnect: false });
  let closing = false;
  process.on('SIGTERM', () => {
    if (closing) return;
    closing = true;
    nc.close().then(() => db.end()).then(() => process.exit(0), () => process.exit(0));
  });
  nc.closed().then((e) => { if (!closing) { console.error(`${NAME}: connection closed ${e || ''}`); process.exit(1); } });
  const consumer = await nc.jetstream().consumers.get(env.STREAM, env.DURABLE);
  // An ack or a pull the server refuses (a permissions violation, the durable deleted and made anew: 409,
  // no responders: 503) is printed and the loop goes on: the message comes again after AckWait.
  const ack = async (m) => {
    try { await m.ackAck(); } catch (e) { console.error(`${NAME}: ack of ${m.seq}: ${e.message}`); }
  };
  const work = async (m) => {
    const f = fieldsOf(m);
    if (ACK_FIRST) {
      await ack(m);
      await credit(db, f, false);
    } else {
      await credit(db, f, true);
      await ack(m);
    }
  };
  if (CONSUME) {
    const messages = await consumer.consume();
    for await (const m of messages) {
      if (closing) break;
      await work(m);
    }
    if (!closing) throw new Error('consume() ended');
    return;
  }
  while (!closing) {
    let m = null;
    try {
      m = await consumer.next({ expires: 1000 });
    } catch (e) {
      if (closing) break;
      console.error(`${NAME}: next: ${e.message}`);
      await new Promise((r) => setTimeout(r, 10));
      continue;
    }
    if (!m || closing) continue;
    await work(m);
  }
}

main().catch((e) => { if (!process.exitCode) { console.error(`${NAME}: ${e.stack || e}`); process.exit(1); } });
