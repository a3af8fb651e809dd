"""py-ack-first (wallet, test consumer): WRONG on purpose. For each entry it first XACKs it, THEN
credits the wallet in its own transaction (BEGIN; UPDATE wallets SET balance_halala = balance_halala +
amount WHERE id = wallet; COMMIT), with no dedup at all (no table of its own, so no schema.sql). Python,
psycopg 3.1.7, redis-py 4.3.4, run with /usr/bin/python3.

What idemproof must conclude: fail, on two counts.
- A producer retry of an event (a second stream entry with the same event_id) is credited twice: a
  duplicate. The default wallet schedule (stream 1, 2, 3, 4, 5, 2) retries event 2.
- A SIGKILL after an entry's XACK and before its COMMIT loses the event: the entry is acknowledged, so
  nobody ever redelivers it, and its credit never happened. `--crash after:XACK#4` on the default wallet
  schedule kills it between event 4's XACK and its COMMIT: event 2 duplicate, event 4 lost.

The stream loop is py-dedup-table's (imported from there). Round trips: py-dedup-table's loop (targets/common/consumer.h): at start XREADGROUP ... STREAMS $STREAM
<cursor> over its own pending list; then XAUTOCLAIM ... COUNT 10 and XREADGROUP ... COUNT 10 BLOCK 100
... > in a loop; per entry XACK, BEGIN, UPDATE, COMMIT. Statements go with psycopg's extended protocol
(unnamed statements: prepare_threshold=None). SIGTERM sets a flag checked between entries; any error is
printed and exits 1.
"""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "py-dedup-table"))

import consumer as loop  # noqa: E402


class AckFirst(loop.Consumer):
    def process(self, entry_id, fields):
        self.kv.xack(self.stream, self.group, entry_id)  # acknowledged before its effect
        if fields:
            with self.db.transaction():  # no dedup: every delivery is credited
                self.db.execute("UPDATE wallets SET balance_halala = balance_halala + %s WHERE id = %s",
                                (int(fields["amount"]), fields["wallet"]))
        return True


if __name__ == "__main__":
    sys.exit(loop.main(AckFirst, "py-ack-first"))
