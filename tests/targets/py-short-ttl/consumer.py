"""py-short-ttl (wallet, test consumer): WRONG on purpose, as targets/dedup-valkey-short-ttl. For each entry
it marks the event `SET seen:<event_id> 1 NX PX $DEDUP_TTL_MS` (its manifest declares 20 s) and, when the
mark is new, credits the wallet in its own transaction; then it XACKs. Python, psycopg 3.1.7, redis-py
4.3.4, run with /usr/bin/python3.

What idemproof must conclude: fail, `dedup-window`. The wallet's producer retries for 60 s
(`retry_window_ms`): after an `age` fault of 60 s the marks are gone, and a retry the producer sends
then, still within its window, is credited again.

The stream loop is py-dedup-table's (imported from there): at start XREADGROUP ... STREAMS $STREAM <cursor>
over its own pending list; then XAUTOCLAIM and XREADGROUP ... BLOCK 100 ... > in a loop; per entry SET,
BEGIN, UPDATE, COMMIT, XACK (a duplicate: SET, XACK).
"""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "py-dedup-table"))

import consumer as loop  # noqa: E402

TTL_MS = int(os.environ.get("DEDUP_TTL_MS") or 20000)


class ShortTtl(loop.Consumer):
    def process(self, entry_id, fields):
        if fields and self.kv.set("seen:" + fields["event_id"], "1", nx=True, px=TTL_MS):
            with self.db.transaction():  # a new mark: the first time within its TTL
                self.db.execute("UPDATE wallets SET balance_halala = balance_halala + %s WHERE id = %s",
                                (int(fields["amount"]), fields["wallet"]))
        self.kv.xack(self.stream, self.group, entry_id)
        return True


if __name__ == "__main__":
    sys.exit(loop.main(ShortTtl, "py-short-ttl"))
