"""py-noack (wallet, test consumer): reads with XREADGROUP ... NOACK (redis-py's `noack=True`), so the group
never lists an entry pending: each is acknowledged by its delivery. It credits each entry with the dedup
table (py-dedup-table's transaction) and sends no XACK. Python, psycopg 3.1.7, redis-py 4.3.4, run with
/usr/bin/python3.

What idemproof must conclude: pass when nothing goes wrong (a producer retry is deduplicated; no entry is
ever pending, so nothing is left to acknowledge), and lost when the process dies between a read and the
credits of what it read: `--crash after:XREADGROUP#1` kills it as the read's reply arrives, and no one
ever gets those entries again — acknowledged before the effect, the anti-pattern.

Round trips: XREADGROUP ... COUNT 10 BLOCK 100 NOACK ... > in a loop; per entry BEGIN, INSERT, [UPDATE],
COMMIT. SIGTERM sets a flag checked between entries; any error is printed and exits 1.
"""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "py-dedup-table"))

import consumer as loop  # noqa: E402


class NoAck(loop.Consumer):
    def process(self, entry_id, fields):
        if fields:
            self.apply(fields)
        return True  # no XACK: NOACK delivered it acknowledged

    def run(self):
        while not loop.stop:
            self.handle(loop.entries_of_read(self.kv.xreadgroup(
                self.group, self.name, {self.stream: ">"}, count=loop.COUNT, block=100, noack=True)))


if __name__ == "__main__":
    sys.exit(loop.main(NoAck, "py-noack"))
