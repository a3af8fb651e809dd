// The stream loop shared by the Node consumers of a Valkey stream (consumer.js, sink_consumer.js): their
// round trips on the stream and their SIGTERM flag, so that each file holds only its strategy.
//   start:  XREADGROUP GROUP <group> <consumer> COUNT 10 STREAMS <stream> <cursor> over its own pending list
//           (the cursor starts at 0 and moves past each batch, until a batch has fewer than 10 entries)
//   loop:   XAUTOCLAIM <stream> <group> <consumer> <CLAIM_IDLE_MS> <cursor> COUNT 10, then
//           XREADGROUP GROUP <group> <consumer> COUNT 10 BLOCK 100 STREAMS <stream> >
// Each batch goes to the consumer's handler, which acknowledges what it is done with. SIGTERM sets a flag
// checked between reads (a read blocks at most 100 ms), and handlers check it between entries.
'use strict';

const COUNT = 10;
let stop = false;
process.on('SIGTERM', () => { stop = true; });

/** True once SIGTERM has arrived. */
const stopping = () => stop;

/** Waits `ms` in slices of 50 ms unless SIGTERM comes first; true when the full time passed. */
async function work(ms) {
  const end = Date.now() + ms;
  while (!stop && Date.now() < end)
    await new Promise((resolve) => setTimeout(resolve, Math.min(50, end - Date.now())));
  return !stop;
}

/** [f1, v1, f2, v2, ...] -> {f1: v1, ...}; null for an entry deleted from the stream while pending. */
function fieldsOf(flat) {
  if (!flat) return null;
  const f = {};
  for (let i = 0; i + 1 < flat.length; i += 2) f[flat[i]] = flat[i + 1];
  return f;
}

/** XREADGROUP reply -> [[id, flat fields], ...]; a BLOCK timeout is null. */
const entriesOfRead = (reply) => (reply ? reply[0][1] : []);

/**
 * Runs the loop above on ioredis client `kv` as consumer `name` of `group` on `stream` (claiming entries
 * idle for `idle` ms) until SIGTERM, handing each batch ([[id, flat fields], ...], maybe empty) to
 * `await handle(entries)`.
 */
async function runStream(kv, { stream, group, name, idle }, handle) {
  let cursor = '0';
  while (!stop) {
    const batch = entriesOfRead(await kv.xreadgroup('GROUP', group, name, 'COUNT', COUNT, 'STREAMS', stream, cursor));
    if (batch.length === 0) break;
    cursor = batch[batch.length - 1][0];
    await handle(batch);
    if (batch.length < COUNT) break;
  }
  let claimCursor = '0-0';
  while (!stop) {
    // Valkey/Redis 7: [next cursor, [[id, flat fields]...], [deleted id...]]
    const reply = await kv.xautoclaim(stream, group, name, idle, claimCursor, 'COUNT', COUNT);
    claimCursor = reply[0];
    await handle(reply[1]);
    if (stop) break;
    await handle(entriesOfRead(await kv.xreadgroup('GROUP', group, name, 'COUNT', COUNT, 'BLOCK', 100,
                                                   'STREAMS', stream, '>')));
  }
}

/** Exits 0 once `done` resolves; prints `message(error)` and exits 1 when it rejects. */
function exitWhenDone(done, message) {
  done.then(() => process.exit(0), (e) => {
    console.error(message(e));
    process.exit(1);
  });
}

module.exports = { stopping, work, fieldsOf, runStream, exitWhenDone };
