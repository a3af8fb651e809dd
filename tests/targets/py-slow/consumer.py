"""py-slow (wallet, test consumer): the dedup-table strategy of py-dedup-table (correct), but slow. Python,
psycopg 3.1.7, redis-py 4.3.4, run with /usr/bin/python3.

- It sleeps SLOW_START_MS milliseconds (environment, default 0) after installing its SIGTERM handler and
  before connecting to anything: a slow start-up.
- For every entry it handles, duplicates included, it sleeps SLOW_EVENT_MS milliseconds (environment,
  default 5000) BEFORE touching PostgreSQL: it models a slow external call.
Then, as py-dedup-table, in one transaction it inserts the entry's event_id into processed_messages (ON
CONFLICT DO NOTHING) and credits the wallet only if the row was inserted; after COMMIT it XACKs the
entry, duplicates included. Both variables are read from os.environ (idemproof passes its own environment
through to consumers).

What idemproof must conclude: pass, with default flags, even at 5 s per event or 5 s of start-up. Slow is
not stuck: a consumer that is still working (an entry delivered and not yet acknowledged) must be waited
for, not reported stuck or killed as a hang.

Sleeps are interruptible: they run in slices of at most 50 ms, checking the SIGTERM flag. When SIGTERM
arrives during a sleep the process stops promptly with status 0, leaving the entry it was sleeping on
unacknowledged (pending, for XAUTOCLAIM by another consumer or for its own pending list on a restart).

The stream loop is py-dedup-table's (imported from there). Round trips, as in py-dedup-table (targets/common/consumer.h): at start XREADGROUP ... STREAMS $STREAM
<cursor> over its own pending list; then XAUTOCLAIM ... COUNT 10 and XREADGROUP ... COUNT 10 BLOCK 100
... > in a loop; per entry (sleep), BEGIN, INSERT, [UPDATE], COMMIT, XACK. Statements go with psycopg's
extended protocol (unnamed statements: prepare_threshold=None). Any error is printed and exits 1.
"""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "py-dedup-table"))

import consumer as loop  # noqa: E402


def env_ms(name, default):
    value = os.environ.get(name, "")
    return int(value) if value != "" else default


class Slow(loop.Consumer):
    def __init__(self):
        self.event_ms = env_ms("SLOW_EVENT_MS", 5000)
        super().__init__()

    def process(self, entry_id, fields):
        # The "external call", for every entry (duplicates too), before PostgreSQL; SIGTERM during it
        # leaves the entry unacknowledged.
        return loop.pause(self.event_ms) and super().process(entry_id, fields)


def slow_start():
    """A slow start-up, before connecting to anything; None when SIGTERM came first."""
    return Slow() if loop.pause(env_ms("SLOW_START_MS", 0)) else None


class Idle:
    def run(self):
        pass


if __name__ == "__main__":
    sys.exit(loop.main(lambda: slow_start() or Idle(), "py-slow"))
