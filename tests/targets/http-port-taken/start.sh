#!/bin/sh
# http-correct, but the first process finds its PORT taken by another process between idemproof's check and
# its own bind: it asks the test, through the FIFOs in $PORT_TAKER, to listen on $PORT (and answer 200 to
# everything, its health path included), then starts http-correct, which cannot bind and exits 1. The
# processes after it are http-correct itself.
set -eu
if mkdir "$PORT_TAKER/first" 2>/dev/null; then
  echo "$PORT" > "$PORT_TAKER/ask"
  read -r _ < "$PORT_TAKER/done"
fi
exec ../../../targets/http-correct/http-correct
