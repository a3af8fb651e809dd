"""flood (wallet, test target): py-dedup-table's correct consumer (Python, psycopg 3, redis-py), which
first writes FLOOD_MB mebibytes of text to stdout (environment, default 0) and, when VALUE_MB is set,
SETs a value of that many mebibytes in Valkey through its proxy. What idemproof must conclude: pass;
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

        redis.Redis.from_url(os.environ["VALKEY_URL"]).set("flood:value", b"v" * (value_mb << 20))
    return loop.Consumer()


if __name__ == "__main__":
    sys.exit(loop.main(flood, "flood"))
