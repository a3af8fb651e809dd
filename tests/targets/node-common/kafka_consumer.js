// The wallet consumer on Kafka in Node: kafkajs 2.2.4 and node-postgres 8 (pinned in package-lock.json).
// It subscribes to $TOPIC in group $GROUP (clientId $CONSUMER) through $KAFKA_BOOTSTRAP, from the
// beginning, with kafkajs's eachMessage; sessionTimeout 6000 and heartbeatInterval 2000 (as
// targets/common/kafka.h), kafkajs's default maxWaitTimeInMs (5000, which the embedded broker's proxy asks
// as 500). Flags from the manifest's `env`:
//   default          dedup-table: autoCommit off; in one transaction INSERT the event_id into
//                    processed_messages (ON CONFLICT DO NOTHING) and credit the wallet only if the row was
//                    inserted; after COMMIT commit the offset after the record (correct)
//   AUTO_COMMIT=1    kafkajs's defaults: autoCommit on (it commits the offsets of the records eachMessage
//                    finished, after each batch), and no dedup (wrong: a producer retry is applied twice,
//                    and so is every record of a batch whose commit a kill prevented)
// SIGTERM disconnects the consumer (LeaveGroup) and exits 0; any other error is printed and exits 1.
'use strict';
const { Client } = require('pg');
const { Kafka, logLevel } = require('kafkajs');

const AUTO_COMMIT = process.env.AUTO_COMMIT === '1';
const NAME = process.env.TARGET_NAME || 'node-kafka-consumer';

/** The record's JSON value as fields (values as strings), with the event_id header if the value has none. */
function fieldsOf(message) {
  let value = null;
  try { value = JSON.parse(message.value ? message.value.toString() : 'null'); } catch (e) { value = null; }
  const f = {};
  if (value && typeof value === 'object' && !Array.isArray(value))
    for (const [k, v] of Object.entries(value)) f[k] = typeof v === 'string' ? v : JSON.stringify(v);
  const header = message.headers && message.headers.event_id;
  if (f.event_id === undefined && header !== undefined) f.event_id = header.toString();
  return f;
}

async function main() {
  const env = process.env;
  const db = new Client({ connectionString: env.DATABASE_URL });
  await db.connect();
  const kafka = new Kafka({ clientId: env.CONSUMER, brokers: [env.KAFKA_BOOTSTRAP], logLevel: logLevel.ERROR });
  const consumer = kafka.consumer({ groupId: env.GROUP, sessionTimeout: 6000, heartbeatInterval: 2000 });
  let closing = false;
  process.on('SIGTERM', () => {
    if (closing) return;
    closing = true;
    consumer.disconnect().then(() => db.end()).then(() => process.exit(0), () => process.exit(0));
  });
  consumer.on(consumer.events.CRASH, ({ payload }) => {
    if (!payload.restart) { console.error(`${NAME}: ${payload.error}`); process.exit(1); }
  });
  await consumer.connect();
  await consumer.subscribe({ topic: env.TOPIC, fromBeginning: true });
  await consumer.run({
    autoCommit: AUTO_COMMIT,
    eachMessage: async ({ topic, partition, message }) => {
      const f = fieldsOf(message);
      await db.query('BEGIN');
      try {
        let inserted = 1;
        if (!AUTO_COMMIT) {
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
      if (!AUTO_COMMIT) {
        try {
          await consumer.commitOffsets([{ topic, partition, offset: (BigInt(message.offset) + 1n).toString() }]);
        } catch (e) { // a rebalance in progress: the record comes again and is skipped
          console.error(`${NAME}: offset commit after ${topic}-${partition}@${message.offset}: ${e.message}`);
        }
      }
    },
  });
}

main().catch((e) => { console.error(`${NAME}: ${e.stack || e}`); process.exit(1); });
