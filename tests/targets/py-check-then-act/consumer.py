"""py-check-then-act (wallet, test consumer): the check-then-act strategy of targets/check-then-act in
Python (psycopg 3.1.7, redis-py 4.3.4, run with /usr/bin/python3). In one READ COMMITTED transaction
(PostgreSQL's default level) it runs SELECT 1 FROM seen_events WHERE event_id = %s; if a row is there the
event was applied before: COMMIT, then XACK. Otherwise INSERT INTO seen_events (event_id) VALUES (%s),
then the credit (UPDATE wallets ...), COMMIT, XACK. seen_events has NO unique key on event_id (schema.sql).

What idemproof must conclude, as for targets/check-then-act: pass with one consumer at a time, under any
kill (the record and the credit commit together; a redelivery finds the committed row); fail (duplicate)
when two consumers hold the same event at once: both SELECT before either commits, neither sees a row,
both insert one (nothing unique stops the second) and both credit. py-dedup-table is its correct
counterpart (INSERT ... ON CONFLICT DO NOTHING on a primary key).

LAZY_SETUP=1 (py-check-then-act-lazy): before its first entry's work it sends what SQLAlchemy 1.4 sends as
its engine first connects (BEGIN, a pg_type lookup, ROLLBACK, BEGIN, version(), current_schema(), two SHOW,
ROLLBACK): steps of c1's work on its first entry that touch none of the scenario's tables.

The stream loop is py-dedup-table's (imported from there). Round trips, as in py-dedup-table
(targets/common/consumer.h): at start XREADGROUP ... STREAMS $STREAM <cursor> over its own pending list;
then XAUTOCLAIM ... COUNT 10 and XREADGROUP ... COUNT 10 BLOCK 100 ... > in a loop; per entry BEGIN,
SELECT, INSERT, UPDATE, COMMIT, XACK; a duplicate BEGIN, SELECT, COMMIT, XACK. Statements go with
psycopg's extended protocol (unnamed statements: prepare_threshold=None). SIGTERM sets a flag checked
between entries; any error is printed and exits 1.
"""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "py-dedup-table"))

import consumer as loop  # noqa: E402


# LAZY_SETUP=1: what SQLAlchemy 1.4 (on psycopg2) sends when its engine first connects, at the session's
# first use, after the first delivery: statements on no table of the scenario's before the consumer's own.
LAZY_SETUP = os.environ.get("LAZY_SETUP") == "1"
SETUP = ["BEGIN",
         "SELECT t.oid, typarray FROM pg_type t JOIN pg_namespace ns ON typnamespace = ns.oid WHERE typname = 'hstore'",
         "ROLLBACK", "BEGIN", "select pg_catalog.version()", "select current_schema()",
         "show transaction isolation level", "show standard_conforming_strings", "ROLLBACK"]


class CheckThenAct(loop.Consumer):
    def apply(self, fields):
        if LAZY_SETUP and not getattr(self, "set_up", False):
            for sql in SETUP:
                self.db.execute(sql)
            self.set_up = True
        with self.db.transaction():
            seen = self.db.execute("SELECT 1 FROM seen_events WHERE event_id = %s",
                                   (fields["event_id"],)).fetchone() is not None
            if not seen:  # nothing unique on event_id: a second transaction's insert is never stopped
                self.db.execute("INSERT INTO seen_events (event_id) VALUES (%s)", (fields["event_id"],))
                self.db.execute(
                    "UPDATE wallets SET balance_halala = balance_halala + %s WHERE id = %s",
                    (int(fields["amount"]), fields["wallet"]))


if __name__ == "__main__":
    sys.exit(loop.main(CheckThenAct, "py-check-then-act"))
