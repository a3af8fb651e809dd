"""py-pg-garbage (wallet, test consumer): the dedup-table strategy of py-dedup-table (correct), plus one
connection that no PostgreSQL protocol decoder can frame. Python, psycopg 3.1.7, redis-py 4.3.4, run with
/usr/bin/python3.

Right after start-up (its first PostgreSQL connection is open) it opens a SECOND psycopg connection to
DATABASE_URL, waits until it is established (startup, authentication, ReadyForQuery), then writes raw
bytes that are not a valid frontend message onto that connection's socket with os.write:
b"zzzz\\x00\\x00\\x00\\x08garbage!" ('z' is no frontend message type, so the stream cannot be framed).
The server answers with a FATAL error and closes; the consumer closes that second connection and ignores
any error from it. Then it runs the normal consumer loop on its first connection: in one transaction it
inserts the entry's event_id into processed_messages (ON CONFLICT DO NOTHING) and credits the wallet only
if the row was inserted; after COMMIT it XACKs the entry, duplicates included. Its effects on the wallet
are correct.

What idemproof must conclude: unknown (exit 2), never pass: the PostgreSQL proxy saw a connection it could
not decode, so the history it recorded is incomplete and cannot be judged, however right the end state.

The stream loop is py-dedup-table's (imported from there). Round trips, as in py-dedup-table (targets/common/consumer.h): at start XREADGROUP ... STREAMS $STREAM
<cursor> over its own pending list; then XAUTOCLAIM ... COUNT 10 and XREADGROUP ... COUNT 10 BLOCK 100
... > in a loop; per entry BEGIN, INSERT, [UPDATE], COMMIT, XACK. Statements go with psycopg's extended
protocol (unnamed statements: prepare_threshold=None). SIGTERM sets a flag checked between entries; any
error (other than on the garbage connection) is printed and exits 1.
"""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "py-dedup-table"))

import consumer as loop  # noqa: E402

GARBAGE = b"zzzz\x00\x00\x00\x08garbage!"


class Garbage(loop.Consumer):
    def __init__(self):
        super().__init__()
        # A second connection, established, then bytes no PostgreSQL decoder can frame.
        other = loop.psycopg.connect(os.environ["DATABASE_URL"], autocommit=True)
        try:
            os.write(other.pgconn.socket, GARBAGE)
        finally:
            try:
                other.close()
            except Exception:
                pass


if __name__ == "__main__":
    sys.exit(loop.main(Garbage, "py-pg-garbage"))
