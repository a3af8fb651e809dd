// A consumer's PostgreSQL session through node-postgres, for tests/captures/node-pg (run by ../record.sh).
const { Client } = require('pg');

async function main() {
  const c = new Client({ host: '127.0.0.1', port: Number(process.argv[2]), user: 'postgres', database: 'postgres' });
  await c.connect();
  await c.query('BEGIN');
  await c.query('INSERT INTO processed(msg_id) VALUES ($1) ON CONFLICT DO NOTHING', ['node-1']);
  const upd = { name: 'upd', text: 'UPDATE accounts SET balance = balance + $1 WHERE id = $2', values: [5, 1] };
  await c.query(upd);
  await c.query(upd); // the named statement again: Bind/Execute only
  await c.query('COMMIT');
  await c.end();
}
main().catch((e) => { console.error(e); process.exit(1); });
