// The wallet consumer in Node (node-postgres 8, ioredis 5): py-dedup-table's loop and round trips, with
// Node's event loop and its clients' habits (ioredis sends INFO as its ready check; node-postgres sends a
// query without parameters as a simple Query and one with parameters as Parse/Bind/Describe/Execute/Sync
// with an unnamed statement). Flags from the manifest's `env`:
//   default       dedup-table: in one transaction INSERT the event_id into processed_messages (ON CONFLICT
//                 DO NOTHING) and credit the wallet only if the row was inserted; XACK after COMMIT (correct)
//   ACK_FIRST=1   XACK first, then credit in its own transaction, with no dedup (wrong: lost when killed
//                 after its XACK, applied twice on a producer retry)
//   CONCURRENT=1  dedup-table, but the entries of a batch at once, each on a connection of a pg.Pool (up to
//                 4), each XACKed after its own COMMIT; ioredis pipelines what is sent together (correct)
//   RECONNECT=1   dedup-table, with ioredis as a user configures it: its own reconnect (`retryStrategy` as
//                 shipped: a new attempt 50, 100, ... up to 2000 ms after each loss) and
//                 `maxRetriesPerRequest: 1` (a command in flight when the connection broke is sent again
//                 once, then fails); the consumer exits 1 on a command that fails (correct)
//   WORK_MS=N     N milliseconds of work per entry before its transaction (an external call; default 0);
//                 SIGTERM during it leaves the entry unacknowledged
//   CHECK_THEN_ACT=1  in one READ COMMITTED transaction SELECT the event_id from seen_events (no unique key),
//                 and only if no row INSERT it and credit (right in every sequential history; a duplicate
//                 when two consumers hold one event at once: both SELECT before either commits)
//   CLIENT_NAME=1 ioredis's connectionName is the consumer's name: it sends CLIENT SETNAME as it connects
// Round trips: stream_loop.js's (its own pending list, then XAUTOCLAIM and XREADGROUP BLOCK 100 in a loop);
// per entry BEGIN, INSERT, [UPDATE], COMMIT, XACK (check-then-act: BEGIN, SELECT, [INSERT, UPDATE], COMMIT,
// XACK). SIGTERM sets a flag checked between entries; any error is printed and exits 1.
'use strict';
const { Client, Pool } = require('pg');
const Redis = require('ioredis');

const { stopping, work, fieldsOf, runStream, exitWhenDone } = require('./stream_loop');

const ACK_FIRST = process.env.ACK_FIRST === '1';
const CONCURRENT = process.env.CONCURRENT === '1';
const RECONNECT = process.env.RECONNECT === '1';
const CHECK_THEN_ACT = process.env.CHECK_THEN_ACT === '1';
const NAME = process.env.TARGET_NAME || 'node-consumer';
const WORK_MS = Number(process.env.WORK_MS || 0);

async function main() {
  const env = process.env;
  const stream = env.STREAM, group = env.GROUP, name = env.CONSUMER, idle = Number(env.CLAIM_IDLE_MS);
  const db = CONCURRENT ? new Pool({ connectionString: env.DATABASE_URL, max: 4 })
                        : new Client({ connectionString: env.DATABASE_URL });
  if (!CONCURRENT) await db.connect();
  db.on('error', () => {}); // an idle pooled connection that breaks: the next query on it reports it
  // By default no reconnects and no retries: a broken connection is an error the consumer exits on
  // (idemproof restarts it), as py-dedup-table does. RECONNECT=1: ioredis's own reconnect.
  const connectionName = env.CLIENT_NAME === '1' ? name : undefined;
  const kv = new Redis(env.VALKEY_URL || env.REDIS_URL,
                       RECONNECT ? { maxRetriesPerRequest: 1, lazyConnect: true, connectionName }
                                 : { maxRetriesPerRequest: 0, retryStrategy: () => null, lazyConnect: true,
                                     connectionName });
  let kvError = null;
  kv.on('error', (e) => { kvError = kvError || e; });
  await kv.connect();

  async function credit(f, dedup) {
    const c = CONCURRENT ? await db.connect() : db;
    let failed = false;
    try {
      await c.query('BEGIN');
      let inserted = 1;
      if (dedup && CHECK_THEN_ACT) {
        // Nothing unique on seen_events.event_id: a second transaction's insert is never stopped.
        const seen = await c.query('SELECT 1 FROM seen_events WHERE event_id = $1', [f.event_id]);
        inserted = seen.rowCount === 0 ? 1 : 0;
        if (inserted === 1) await c.query('INSERT INTO seen_events (event_id) VALUES ($1)', [f.event_id]);
      } else if (dedup) {
        const r = await c.query('INSERT INTO processed_messages(event_id) VALUES ($1) ON CONFLICT DO NOTHING',
                                [f.event_id]);
        inserted = r.rowCount;
      }
      if (inserted === 1)
        await c.query('UPDATE wallets SET balance_halala = balance_halala + $1 WHERE id = $2',
                      [Number(f.amount), f.wallet]);
      await c.query('COMMIT');
    } catch (e) {
      failed = true;
      await c.query('ROLLBACK').catch(() => {});
      throw e;
    } finally {
      if (CONCURRENT) c.release(failed); // after an error the connection is closed, not pooled again
    }
  }

  async function handle(entries) {
    if (CONCURRENT) {
      await Promise.all((entries || []).map(async ([id, flat]) => {
        const f = fieldsOf(flat);
        if (f && WORK_MS > 0 && !(await work(WORK_MS))) return;
        if (f) await credit(f, true);
        await kv.xack(stream, group, id);
      }));
      return;
    }
    for (const [id, flat] of entries || []) {
      if (stopping()) return;
      const f = fieldsOf(flat);
      if (f && WORK_MS > 0 && !(await work(WORK_MS))) return;
      if (ACK_FIRST) {
        await kv.xack(stream, group, id);
        if (f) await credit(f, false);
      } else {
        if (f) await credit(f, true);
        await kv.xack(stream, group, id);
      }
    }
  }

  await runStream(kv, { stream, group, name, idle }, handle);
  await db.end();
  kv.disconnect();
}

exitWhenDone(main(), (e) => `${NAME}: ${e && e.message}`);
