"""A consumer's PostgreSQL session through psycopg 3, for tests/captures/psycopg (run by ../record.sh)."""
import sys

import psycopg

INSERT = "INSERT INTO processed(msg_id) VALUES (%s) ON CONFLICT DO NOTHING"
UPDATE = "UPDATE accounts SET balance = balance + %s WHERE id = %s"

with psycopg.connect(f"host=127.0.0.1 port={sys.argv[1]} dbname=postgres user=postgres") as conn:
    # 1: a transaction: BEGIN; INSERT … ON CONFLICT DO NOTHING; UPDATE (prepared); COMMIT
    with conn.cursor() as cur:
        cur.execute(INSERT, ("psycopg-1",))
        cur.execute(UPDATE, (10, 1), prepare=True)
    conn.commit()
    # 2: the same in a pipeline
    with conn.pipeline():
        with conn.cursor() as cur:
            cur.execute(INSERT, ("psycopg-2",))
            cur.execute(UPDATE, (10, 1))
        conn.commit()
    # 3: autocommit; the sixth execution of a statement runs prepared
    conn.autocommit = True
    for i in range(6):
        conn.execute("SELECT msg_id FROM processed WHERE msg_id = %s", (f"psycopg-{i}",))
