"""py-host-port (wallet, test consumer): py-dedup-table (correct), connected to Valkey from the URL's host,
port and password alone, as a client without URL parsing is (phpredis, a hand-made socket): it never sends
SELECT, so it always works in database 0, whatever database VALKEY_URL names. Python, psycopg 3.1.7,
redis-py 4.3.4, run with /usr/bin/python3.

What idemproof must conclude: pass, on every worker. The embedded servers give every worker database 0
(each worker but the first has a Valkey of its own): when workers shared one server in databases 0, 1, …,
this consumer passed on the first worker and, on the others, read a stream that was not there (NOGROUP),
so check called it flaky.
"""
import os
import sys
from urllib.parse import urlparse

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "py-dedup-table"))

import consumer as loop  # noqa: E402
import redis  # noqa: E402


class HostPort(loop.Consumer):
    def __init__(self):
        super().__init__()
        url = urlparse(os.environ.get("VALKEY_URL") or os.environ["REDIS_URL"])
        self.kv.close()
        self.kv = redis.Redis(host=url.hostname, port=url.port, password=url.password, decode_responses=True)


if __name__ == "__main__":
    sys.exit(loop.main(HostPort, "py-host-port"))
