// A consumer's Redis session through ioredis, for tests/captures/ioredis (run by ../record.sh).
const Redis = require('ioredis');

async function main() {
  const r = new Redis({ host: '127.0.0.1', port: Number(process.argv[2]), lazyConnect: true });
  await r.connect();
  await r.set('lock:io', 'owner', 'PX', 30000, 'NX');
  await r.xgroup('CREATE', 'orders', 'workers', '$', 'MKSTREAM');
  const id1 = await r.xadd('orders', '*', 'order', '1', 'amount', '10');
  const id2 = await r.xadd('orders', '*', 'order', '2', 'amount', '20');
  await r.xreadgroup('GROUP', 'workers', 'c1', 'COUNT', 10, 'BLOCK', 1000, 'STREAMS', 'orders', '>');
  await r.xautoclaim('orders', 'workers', 'c2', 0, '0-0', 'COUNT', 10);
  await r.xack('orders', 'workers', id1, id2);
  await r.xreadgroup('GROUP', 'workers', 'c1', 'COUNT', 10, 'BLOCK', 50, 'STREAMS', 'orders', '>');
  await r.pipeline().xadd('orders', '*', 'order', '3').set('done:3', '1', 'NX').get('done:3').exec();
  await r.multi().incrby('balance:1', 10).set('done:4', '1', 'NX').exec();
  r.disconnect();
}
main().catch((e) => { console.error(e); process.exit(1); });
