// A consumer's Kafka session through kafkajs 2.2.4 (npm), for tests/captures/kafkajs (run by
// ../record.sh against idemproof-kafka-server with the topics payments:3 and outbox:1): three keyed JSON
// records with an event_id header (two on partition 0, one on partition 2), a fourth gzip-compressed on
// partition 1; a consumer in group g-js reads the four with autoCommit off, committing each one's offset;
// then the consumer disconnects (LeaveGroup). (No transaction: kafkajs's idempotent producer asks the
// controller for its producer id, and the mock broker names controller 0, which is no broker.)
const { Kafka, CompressionTypes, logLevel } = require('kafkajs');

const kafka = new Kafka({ clientId: 'rec-kafkajs', brokers: [`127.0.0.1:${process.argv[2]}`], logLevel: logLevel.NOTHING });
const event = (n, wallet) => ({
  key: wallet, partition: 0, headers: { event_id: `e-${n}` },
  value: JSON.stringify({ n: String(n), event_id: `e-${n}`, wallet, amount: '5000' }),
});

async function main() {
  const producer = kafka.producer();
  await producer.connect();
  await producer.send({ topic: 'payments', messages: [event(1, 'w1'), event(2, 'w1'), { ...event(3, 'w3'), partition: 2 }] });
  await producer.send({ topic: 'payments', compression: CompressionTypes.GZIP, messages: [{ ...event(4, 'w2'), partition: 1 }] });
  await producer.disconnect();

  const consumer = kafka.consumer({ groupId: 'g-js', maxWaitTimeInMs: 100 });
  await consumer.connect();
  await consumer.subscribe({ topic: 'payments', fromBeginning: true });
  await new Promise((resolve, reject) => {
    let got = 0;
    const timer = setTimeout(() => reject(new Error('no four records within 20 s')), 20000);
    consumer.run({
      autoCommit: false,
      eachMessage: async ({ topic, partition, message }) => {
        const next = (BigInt(message.offset) + 1n).toString();
        await consumer.commitOffsets([{ topic, partition, offset: next }]);
        if (++got === 4) { clearTimeout(timer); resolve(); }
      },
    }).catch(reject);
  });
  await consumer.disconnect();
}

main().then(() => process.exit(0), (e) => { console.error(e); process.exit(1); });
