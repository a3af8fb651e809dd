// A payment consumer in Node (node-postgres 8, ioredis 5, Node's own fetch): for each stream entry of the
// payments scenario it charges at the payment provider ($SINK_URL, idemproof's sink) with POST /charges
// and a JSON body {event_id, wallet, amount}, then in one transaction books it: the processed_events row
// (ON CONFLICT DO NOTHING) and, only when it is new, the wallet's debit and the payments row; XACK after
// COMMIT. py-sink-keyed's strategy and round trips, on stream_loop.js's loop (own pending list, then
// XAUTOCLAIM and XREADGROUP BLOCK 100). Flags from the manifest's `env`:
//   SINK_MODE=keyed             the call carries `Idempotency-Key: <event_id>` and is retried with it on a
//                               5xx, a timeout (2 s) or a connection error, up to 5 tries (correct when the
//                               provider honours keys)
//   SINK_MODE=call-then-commit  no key, no retry: a kill between the call and the COMMIT charges twice
// SIGTERM sets a flag checked between entries; any error is printed and exits 1.
'use strict';
const { Client } = require('pg');
const Redis = require('ioredis');

const { stopping, fieldsOf, runStream, exitWhenDone } = require('./stream_loop');

const MODE = process.env.SINK_MODE || 'keyed';
const NAME = process.env.TARGET_NAME || `node-sink-${MODE}`;
const TIMEOUT_MS = 2000;
const TRIES = MODE === 'keyed' ? 5 : 1;

async function charge(f) {
  const headers = { 'content-type': 'application/json' };
  if (MODE === 'keyed') headers['idempotency-key'] = f.event_id;
  const body = JSON.stringify({ event_id: f.event_id, wallet: f.wallet, amount: Number(f.amount) });
  const pause = (attempt) => new Promise((resolve) => setTimeout(resolve, 50 * attempt));
  for (let attempt = 1; ; ++attempt) {
    let res;
    try {
      res = await fetch(`${process.env.SINK_URL}/charges`,
                        { method: 'POST', headers, body, signal: AbortSignal.timeout(TIMEOUT_MS) });
      await res.text();
    } catch (e) { // refused, reset, timed out
      if (attempt >= TRIES) throw e;
      await pause(attempt);
      continue;
    }
    if (res.ok) return;
    if (res.status < 500 || attempt >= TRIES) throw new Error(`charge answered ${res.status}`);
    await pause(attempt);
  }
}

async function main() {
  const env = process.env;
  const stream = env.STREAM, group = env.GROUP, name = env.CONSUMER, idle = Number(env.CLAIM_IDLE_MS);
  const db = new Client({ connectionString: env.DATABASE_URL });
  await db.connect();
  const kv = new Redis(env.VALKEY_URL || env.REDIS_URL,
                       { maxRetriesPerRequest: 0, retryStrategy: () => null, lazyConnect: true });
  kv.on('error', () => {});
  await kv.connect();

  async function book(f) {
    try {
      await db.query('BEGIN');
      const r = await db.query('INSERT INTO processed_events(event_id) VALUES ($1) ON CONFLICT DO NOTHING',
                               [f.event_id]);
      if (r.rowCount === 1) {
        await db.query('UPDATE wallets SET balance_halala = balance_halala - $1 WHERE id = $2',
                       [Number(f.amount), f.wallet]);
        await db.query('INSERT INTO payments(event_id, wallet, amount_halala) VALUES ($1, $2, $3)',
                       [f.event_id, f.wallet, Number(f.amount)]);
      }
      await db.query('COMMIT');
    } catch (e) {
      await db.query('ROLLBACK').catch(() => {});
      throw e;
    }
  }

  async function handle(entries) {
    for (const [id, flat] of entries || []) {
      if (stopping()) return;
      const f = fieldsOf(flat);
      if (f) {
        await charge(f);
        await book(f);
      }
      await kv.xack(stream, group, id);
    }
  }

  await runStream(kv, { stream, group, name, idle }, handle);
  await db.end();
  kv.disconnect();
}

exitWhenDone(main(), (e) => `${NAME}: ${e && e.stack ? e.stack : e}`);
