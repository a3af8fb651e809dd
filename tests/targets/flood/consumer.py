"""flood (wallet, test target): py-dedup-table's correct consumer (Python, psycopg 3, redis-py), which
first writes FLOOD_MB mebibytes of text to stdout (environment, default 0) and, when VALUE_MB is set,
SETs a value of that many mebibytes in Valkey through its proxy and GETs it back, and when PG_MB is
set, sends PostgreSQL a query with a parameter of that many mebibytes (a Bind that large), and when
PG_RESULT_MB is set, reads a result of that many mebibytes. What idemproof must conclude: pass;
bench/memory_bench.sh measures idemproof's peak memory against both sizes.
"""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "py-dedup-table"))

import consumer as loop  # noqa: E402


def flood():
    mib = ("x" * 1023 + "\n") * 1024
    for _ in range(int(os.environ.get("FLOOD_MB") or 0)):
        sys.stdout.write(mib)
    sys.stdout.flush()
    value_mb = int(os.environ.get("VALUE_MB") or 0)
    if value_mb:
        import redis

        kv = redis.Redis.from_url(os.environ["VALKEY_URL"])
        kv.set("flood:value", b"v" * (value_mb << 20))
        if len(kv.get("flood:value")) != value_mb << 20:
            raise RuntimeError("the value came back cut")
    pg_mb = int(os.environ.get("PG_MB") or 0)
    if pg_mb:
        import psycopg

        with psycopg.connect(os.environ["DATABASE_URL"], prepare_threshold=None) as conn:
            (n,) = conn.execute("SELECT length(%s::text)", ("p" * (pg_mb << 20),)).fetchone()
            if n != pg_mb << 20:
                raise RuntimeError("the parameter came through cut")
    result_mb = int(os.environ.get("PG_RESULT_MB") or 0)
    if result_mb:
        import psycopg

        with psycopg.connect(os.environ["DATABASE_URL"], prepare_threshold=None) as conn:
            (r,) = conn.execute("SELECT repeat('r', %s)", (result_mb << 20,)).fetchone()
            if len(r) != result_mb << 20:
                raise RuntimeError("the result came through cut")
    return loop.Consumer()


if __name__ == "__main__":
    sys.exit(loop.main(flood, "flood"))
