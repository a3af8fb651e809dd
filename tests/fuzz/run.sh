#!/usr/bin/env bash
# Builds the fuzzers with clang++-14 (libFuzzer + ASan + UBSan) in a build dir of their own and runs them
# for SECONDS each (default 60), two at a time: the PostgreSQL and RESP trackers, seeded with the recorded
# captures; the Kafka tracker (seeded likewise) beside the RESP framers of values too large to hold; then
# the parsers of target.json, scenarios and schedule files, seeded with the repository's own, beside the
# sink's HTTP tracker, seeded with written calls.
# Exits non-zero when a fuzzer finds a crash, a hang or a split-dependent result; the reproducer is
# kept under the build dir's artifacts/ folder and its path printed.
# Usage: tests/fuzz/run.sh [SECONDS]    (IDEM_FUZZ_BUILD_DIR overrides the build dir; IDEM_FUZZ_OPT the
# optimisation flags, -O1 -gline-tables-only by default)
set -euo pipefail
SECS=${1:-60}
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
BUILD=${IDEM_FUZZ_BUILD_DIR:-${TMPDIR:-/tmp}/idemproof-fuzz-$(printf %s "$ROOT" | md5sum | cut -c1-8)}
CAPS=$ROOT/tests/captures

command -v clang++-14 >/dev/null || { echo "run.sh: clang++-14 not found (apt-get install clang-14 libclang-rt-14-dev)" >&2; exit 2; }
cmake -S "$HERE" -B "$BUILD" -DIDEM_FUZZ=ON -DCMAKE_CXX_COMPILER=clang++-14 -DCMAKE_BUILD_TYPE= \
  -DIDEM_FUZZ_OPT="${IDEM_FUZZ_OPT:--O1 -gline-tables-only}" >/dev/null
cmake --build "$BUILD" -j2 >"$BUILD/build.log" 2>&1 || { tail -40 "$BUILD/build.log"; exit 2; }

WORK=$(mktemp -d "${TMPDIR:-/tmp}/idemproof-fuzz-run.XXXXXX")
trap 'rm -rf "$WORK"' EXIT
mkdir -p "$BUILD/artifacts"
# Copies the recorded captures of the named clients into the corpus folder of a fuzzer.
seed_captures() { # corpus client...
  local corpus=$1; shift
  for s in "$@"; do
    for f in "$CAPS/$s"/*.cap; do cp "$f" "$corpus/$s-$(basename "$f")"; done
  done
}
# Starts fuzzer NAME (binary EXE) in the background on its corpus folder.
declare -A PIDS
start() { # name exe max_len
  "$BUILD/$2" "$WORK/$1" -max_total_time="$SECS" -timeout=10 -rss_limit_mb=2048 -max_len="$3" \
    -artifact_prefix="$BUILD/artifacts/$1-" -print_final_stats=1 >"$WORK/$1.log" 2>&1 &
  PIDS[$1]=$!
}
# Waits for fuzzer NAME and says how it went; a finding sets status=1 and names its reproducer.
status=0
finish() { # name
  if wait "${PIDS[$1]}"; then
    echo "fuzz $1: ok, $(awk '/^stat::number_of_executed_units/ {print $2}' "$WORK/$1.log") runs in ${SECS}s, $(ls "$WORK/$1" | wc -l) corpus units"
  else
    status=1
    echo "fuzz $1: FAILED"
    tail -40 "$WORK/$1.log"
    ls -1 "$BUILD/artifacts/$1-"* 2>/dev/null | sed 's/^/reproducer: /'
  fi
}

mkdir "$WORK/pg" "$WORK/resp" "$WORK/framers" "$WORK/parsers" "$WORK/kafka" "$WORK/nats" "$WORK/amqp" "$WORK/http"
# The protocol trackers, seeded with the recorded captures; then the RESP framers of values too large to
# hold, seeded with the RESP captures, beside the file parsers, seeded with every target.json, scenario
# and schedule-shaped file of the repository. Two at a time (the machine has two cores).
seed_captures "$WORK/pg" libpq psycopg node-pg asyncpg pgx
seed_captures "$WORK/resp" hiredis redis-py ioredis resp3
seed_captures "$WORK/framers" hiredis redis-py ioredis resp3
seed_captures "$WORK/kafka" librdkafka kafkajs
seed_captures "$WORK/nats" libnats natsjs
seed_captures "$WORK/amqp" pika amqplib librabbitmq
i=0
for f in "$ROOT"/scenarios/*.json "$ROOT"/tests/scenarios/*.json "$ROOT"/targets/*/target.json \
         "$ROOT"/tests/targets/*/target.json; do
  [ -f "$f" ] && cp "$f" "$WORK/parsers/seed-$((i++)).json"
done
printf '%s' '{"version": 2, "scenario": "wallet", "target": "t", "seed": 7, "events": [{"n": 1, "fields": {"amount": "5"}}], "stream": [1, {"event": 1, "phase": 2}], "faults": ["after:COMMIT#1"], "restart": "same-name"}' >"$WORK/parsers/schedule.json"
printf '%s' '{"version": 1, "scenario": "wallet", "events": [{"n": 1}], "stream": [1], "kills": ["before:XACK#1"]}' >"$WORK/parsers/schedule-v1.json"

start pg pg_tracker_fuzz 16384
start resp resp_tracker_fuzz 16384
finish pg
finish resp
start framers resp_framers_fuzz 16384
start kafka kafka_tracker_fuzz 16384
finish framers
finish kafka
start nats nats_tracker_fuzz 16384
start amqp amqp_tracker_fuzz 16384
finish nats
finish amqp
# The sink's HTTP/1.1 tracker, seeded with written calls and answers (capture records: 'C'|'S', length, bytes;
# each given as a printf format, so that no trailing newline is lost).
http_seed() { # file direction bytes...
  local f=$1; shift
  while [ $# -gt 0 ]; do
    printf "$2" | perl -e 'my $d = shift; local $/; my $b = <STDIN>; print $d, pack("N", length $b), $b' "$1" >>"$f"
    shift 2
  done
}
http_seed "$WORK/http/keyed" C 'POST /charges HTTP/1.1\r\nHost: h\r\nIdempotency-Key: e1\r\nContent-Length: 17\r\n\r\n{"event_id":"e1"}' \
  S 'HTTP/1.1 200 OK\r\nIdempotent-Replayed: true\r\nContent-Length: 2\r\n\r\n{}'
http_seed "$WORK/http/chunked" C 'POST /charges HTTP/1.1\r\nExpect: 100-continue\r\nTransfer-Encoding: chunked\r\n\r\n2\r\n{}\r\n0\r\n\r\n' \
  S 'HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 503 X\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n'
start parsers parsers_fuzz 65536
start http http_tracker_fuzz 16384
finish parsers
finish http
exit $status
