"""py-valkey-gone (wallet, test consumer): py-dedup-table (correct effects), except that when its Valkey
connection breaks (a restart of the server, a dropped connection) it prints the error and never makes another
request: it waits for SIGTERM, holding whatever it was handed. Wrong: after a Valkey restart it never finishes
its work. What idemproof must conclude: when it holds nothing, stuck once every consumer has been idle for
CLAIM_IDLE_MS + --stall-timeout, named "its client did not reconnect"; when it holds entries, busy (it may be
calling out): unknown at the deadline, the reason naming the cut connection.
"""
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "py-dedup-table"))

import consumer as loop  # noqa: E402
import redis  # noqa: E402


def main():
    try:
        if not loop.stop:
            loop.Consumer().run()
    except redis.ConnectionError as e:
        print(f"py-valkey-gone: {type(e).__name__}: {e}; not reconnecting", file=sys.stderr, flush=True)
        while not loop.stop:
            time.sleep(loop.SLICE_S)
    except Exception as e:  # any other server or connection error: report and exit 1
        print(f"py-valkey-gone: {type(e).__name__}: {e}", file=sys.stderr, flush=True)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
