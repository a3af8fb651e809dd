'use strict';
// POST /orders with an Idempotency-Key, as a Node service on node-postgres's Pool writes it (the scenario
// orders: 201 with Location, 422 for a key reused with another payload, 409 while the key's first request
// runs). The key's lock is a session-level advisory lock, pg_try_advisory_lock, taken on the request's
// pooled connection before its transaction:
//
//   SELECT pg_try_advisory_lock(hashtextextended(key, 0))   false -> 409
//   BEGIN; SELECT the key's row
//     found: COMMIT; replay its status, Location and body (422 when the payload's hash differs)
//     none:  INSERT the order, UPDATE stock, INSERT the key's row with the answer; COMMIT; 201
//   SELECT pg_advisory_unlock(hashtextextended(key, 0))
//
// LOCK_RELEASE says where the unlock is written:
//   finally     in a finally block, on every path: correct (tests/targets/node-orders-session-lock-finally)
//   on-success  after each COMMIT, as the straight-line code reads: a statement that fails (a serialization
//               failure at COMMIT) skips it, and the lock stays with the connection, which goes back to the
//               pool alive. Its next request on that connection takes the lock again (a session lock is
//               re-entrant) and passes; every other connection, and every other replica, is refused the key
//               for good (tests/targets/node-orders-session-lock).
//   pool        through pool.query, while the request's client is still checked out: the pool sends it on
//               another connection, which holds no lock, and nothing is released (PostgreSQL answers false,
//               with a warning). Every request leaves its lock on its connection
//               (tests/targets/node-orders-unlock-elsewhere).
const http = require('http');
const crypto = require('crypto');
const { Pool } = require('pg');

const RELEASE = process.env.LOCK_RELEASE || 'finally';
const pool = new Pool({ connectionString: process.env.DATABASE_URL, max: 4 });
pool.on('error', () => {}); // an idle connection that the database ended: the pool drops it

// LOCK=blocking: pg_advisory_lock, which waits for the lock instead of answering false
// (tests/targets/node-orders-blocking-lock): a lock left held makes every other session wait for good.
const LOCK = process.env.LOCK === 'blocking'
  ? 'SELECT pg_advisory_lock(hashtextextended($1, 0)), true AS ok'
  : 'SELECT pg_try_advisory_lock(hashtextextended($1, 0)) AS ok';
const UNLOCK = 'SELECT pg_advisory_unlock(hashtextextended($1, 0))';

function send(res, status, body, location) {
  const headers = { 'Content-Type': 'application/json' };
  if (location) headers.Location = location;
  res.writeHead(status, headers);
  res.end(body);
}

const error = (res, status, message) => send(res, status, JSON.stringify({ error: message }));

/// The key is a Structured Field string (RFC 8941): a quoted string of printable ASCII, `\"` and `\\` its
/// only escapes.
const SF_STRING = /^"(?:[\x20\x21\x23-\x5b\x5d-\x7e]|\\["\\])*"$/;

/// The order's fields and the hash of its canonical form, or null when it is no valid order.
function parse(raw) {
  let b;
  try {
    b = JSON.parse(raw);
  } catch (e) {
    return null;
  }
  if (b === null || typeof b !== 'object' || Array.isArray(b)) return null;
  for (const f of ['ref', 'customer', 'sku']) if (typeof b[f] !== 'string') return null;
  for (const f of ['qty', 'amount']) if (!Number.isInteger(b[f])) return null;
  const canonical = JSON.stringify(Object.keys(b).sort().reduce((o, k) => ((o[k] = b[k]), o), {}));
  return { b, hash: crypto.createHash('sha256').update(canonical).digest('hex') };
}

async function order(req, res, raw) {
  const key = req.headers['idempotency-key'];
  if (!key || !SF_STRING.test(key)) return error(res, 400, 'Idempotency-Key required, as a quoted string');
  const p = parse(raw);
  if (!p) return error(res, 400, 'invalid body');
  const { b, hash } = p;
  const client = await pool.connect();
  let locked = false;
  let broken = false;
  try {
    const l = await client.query(LOCK, [key]);
    if (!l.rows[0].ok) return error(res, 409, 'request in progress');
    locked = true;
    await client.query('BEGIN');
    const found = await client.query('SELECT request_hash, status, location, body FROM idempotency_keys WHERE key = $1', [key]);
    if (found.rows.length) {
      await client.query('COMMIT');
      if (RELEASE === 'on-success') await client.query(UNLOCK, [key]);
      const row = found.rows[0];
      if (row.request_hash !== hash) return error(res, 422, 'key reused with another payload');
      return send(res, row.status, row.body, row.location);
    }
    const o = await client.query(
      'INSERT INTO orders(ref, customer, sku, qty, amount) VALUES ($1, $2, $3, $4, $5) RETURNING id',
      [b.ref, b.customer, b.sku, b.qty, b.amount]);
    await client.query('UPDATE stock SET qty = qty - $1 WHERE sku = $2', [b.qty, b.sku]);
    const id = Number(o.rows[0].id);
    const body = JSON.stringify({ id, ref: b.ref, customer: b.customer, sku: b.sku, qty: b.qty, amount: b.amount, status: 'created' });
    const location = `/orders/${id}`;
    await client.query('INSERT INTO idempotency_keys(key, request_hash, status, location, body) VALUES ($1, $2, $3, $4, $5)',
                       [key, hash, 201, location, body]);
    await client.query('COMMIT');
    if (RELEASE === 'on-success') await client.query(UNLOCK, [key]);
    return send(res, 201, body, location);
  } catch (e) {
    // A connection the database ended (08xxx, 57P01) or lost: the pool must not hand it out again.
    broken = !e.code || e.code.startsWith('08') || e.code === '57P01';
    if (!broken) await client.query('ROLLBACK').catch(() => {});
    console.error(`orders: 503: ${e.code || ''} ${e.message}`);
    return error(res, 503, 'database unavailable');
  } finally {
    if (RELEASE === 'finally' && locked && !broken) await client.query(UNLOCK, [key]).catch(() => {});
    // LOCK_RELEASE=pool (tests/targets/node-orders-unlock-elsewhere): the unlock through pool.query while this
    // client is still checked out goes out on another connection, which holds no lock: nothing is released.
    if (RELEASE === 'pool' && locked && !broken) await pool.query(UNLOCK, [key]).catch(() => {});
    client.release(broken);
  }
}

const server = http.createServer((req, res) => {
  if (req.method === 'GET' && req.url === '/healthz') return send(res, 200, '"ok"');
  if (req.method !== 'POST' || req.url !== '/orders') return error(res, 404, 'not found');
  const chunks = [];
  req.on('data', (c) => chunks.push(c));
  req.on('end', () => {
    order(req, res, Buffer.concat(chunks).toString('utf8')).catch((e) => {
      console.error(`orders: 500: ${e.message}`);
      if (!res.headersSent) error(res, 500, 'internal error');
    });
  });
});

process.on('SIGTERM', () => process.exit(0));
server.listen(Number(process.env.PORT), '127.0.0.1', () => console.error(`orders: listening on 127.0.0.1:${process.env.PORT}`));
