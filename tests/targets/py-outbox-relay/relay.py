"""py-outbox-relay's relay (test target): the transactional outbox's second process. It polls the outbox
with a plain SELECT (autocommit: one step, no transaction while there is nothing to send); when a row is
unsent it takes one (BEGIN; SELECT ... FOR UPDATE SKIP LOCKED LIMIT 1), does its external effect — an
INSERT into relay_effects keyed by the outbox id, ON CONFLICT DO NOTHING, so that a relay killed after its
effect and before the mark repeats nothing — and marks the row sent (UPDATE outbox SET sent_at), then
COMMIT. Between empty polls it sleeps POLL_MS (default 20). Python, psycopg 3.1.7, /usr/bin/python3.

RELAY_NEVER_SEND=1 (the manifest's env: tests/targets/py-outbox-unsent): it does the effect but never marks
the row sent, so the outbox never drains and a run never settles.
SIGTERM sets a flag checked between transactions; any error is printed and exits 1.
"""
import os
import signal
import sys
import time

stop = False


def on_sigterm(signum, frame):
    global stop
    stop = True


signal.signal(signal.SIGTERM, on_sigterm)

import psycopg  # noqa: E402

POLL_S = int(os.environ.get("POLL_MS") or 20) / 1000.0
NEVER_SEND = os.environ.get("RELAY_NEVER_SEND") == "1"


def run():
    db = psycopg.connect(os.environ["DATABASE_URL"], autocommit=True, prepare_threshold=None)
    while not stop:
        if not db.execute("SELECT 1 FROM outbox WHERE sent_at IS NULL LIMIT 1").fetchall():
            time.sleep(POLL_S)
            continue
        with db.transaction():
            rows = db.execute(
                "SELECT id, event_id, amount FROM outbox WHERE sent_at IS NULL ORDER BY id "
                "LIMIT 1 FOR UPDATE SKIP LOCKED").fetchall()
            for row_id, event_id, amount in rows:
                db.execute(
                    "INSERT INTO relay_effects(outbox_id, event_id, amount) VALUES (%s, %s, %s) "
                    "ON CONFLICT DO NOTHING", (row_id, event_id, amount))
                if not NEVER_SEND:
                    db.execute("UPDATE outbox SET sent_at = now() WHERE id = %s", (row_id,))
        if NEVER_SEND:
            time.sleep(POLL_S)


def main():
    try:
        if not stop:
            run()
    except Exception as e:  # any server or connection error: report and exit 1
        print(f"py-outbox-relay relay: {type(e).__name__}: {e}", file=sys.stderr, flush=True)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
