"""py-outbox-relay's consumer (wallet, test target): py-dedup-table's loop, and in the transaction that
credits the wallet and inserts processed_messages it also inserts an outbox row (event_id, amount) for the
relay (relay.py) to pass on. A duplicate writes neither the credit nor an outbox row. Python, psycopg 3.1.7,
redis-py 4.3.4, run with /usr/bin/python3.
"""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "py-dedup-table"))

import consumer as loop  # noqa: E402


class OutboxConsumer(loop.Consumer):
    def apply(self, fields):
        with self.db.transaction():
            cur = self.db.execute(
                "INSERT INTO processed_messages(event_id) VALUES (%s) ON CONFLICT DO NOTHING",
                (fields["event_id"],))
            if cur.rowcount == 1:
                self.db.execute(
                    "UPDATE wallets SET balance_halala = balance_halala + %s WHERE id = %s",
                    (int(fields["amount"]), fields["wallet"]))
                self.db.execute(
                    "INSERT INTO outbox(event_id, amount) VALUES (%s, %s)",
                    (fields["event_id"], int(fields["amount"])))


if __name__ == "__main__":
    sys.exit(loop.main(OutboxConsumer, "py-outbox-relay consumer"))
