"""py-ledger (scenario tests/scenarios/ledger.json, a user's own schema): books each payment into
`ledger` (one row per payment_id, ON CONFLICT DO NOTHING) and, only when the row is new, adds the amount
to the account's balance, in one transaction; XACK after COMMIT. Correct. With LEDGER_NAIVE=1 it credits
the balance first, unconditionally, then books the row: a retried or redelivered payment is credited
twice while the ledger still shows one row (sum-of-distinct fails, one-row-per-event passes).
The stream loop is py-dedup-table's (own pending list, XAUTOCLAIM, XREADGROUP BLOCK)."""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "py-dedup-table"))

import consumer as loop  # noqa: E402

NAIVE = os.environ.get("LEDGER_NAIVE") == "1"


class Ledger(loop.Consumer):
    def apply(self, fields):
        with self.db.transaction():
            if NAIVE:
                self.db.execute("UPDATE accounts SET balance = balance + %s WHERE id = %s",
                                (int(fields["amount"]), fields["account"]))
                self.db.execute(
                    "INSERT INTO ledger(payment_id, account, amount) VALUES (%s, %s, %s) ON CONFLICT DO NOTHING",
                    (fields["payment_id"], fields["account"], int(fields["amount"])))
                return
            cur = self.db.execute(
                "INSERT INTO ledger(payment_id, account, amount) VALUES (%s, %s, %s) ON CONFLICT DO NOTHING",
                (fields["payment_id"], fields["account"], int(fields["amount"])))
            if cur.rowcount == 1:
                self.db.execute("UPDATE accounts SET balance = balance + %s WHERE id = %s",
                                (int(fields["amount"]), fields["account"]))


if __name__ == "__main__":
    sys.exit(loop.main(Ledger, "py-ledger"))
