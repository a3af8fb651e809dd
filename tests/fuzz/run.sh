#!/usr/bin/env bash
# Builds the fuzzers with clang++-14 (libFuzzer + ASan + UBSan) in a build dir of their own and runs them
# for SECONDS each (default 60): the protocol trackers (both at once), seeded with the recorded captures,
# then the RESP framers of values too large to hold, and the parsers of target.json, scenarios and
# schedule files, seeded with the repository's own.
# Exits non-zero when a fuzzer finds a crash, a hang or a split-dependent result; the reproducer is
# kept under the build dir's artifacts/ folder and its path printed.
# Usage: tests/fuzz/run.sh [SECONDS]    (IDEM_FUZZ_BUILD_DIR overrides the build dir)
set -euo pipefail
SECS=${1:-60}
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
BUILD=${IDEM_FUZZ_BUILD_DIR:-${TMPDIR:-/tmp}/idemproof-fuzz-$(printf %s "$ROOT" | md5sum | cut -c1-8)}
CAPS=$ROOT/tests/captures

command -v clang++-14 >/dev/null || { echo "run.sh: clang++-14 not found (apt-get install clang-14 libclang-rt-14-dev)" >&2; exit 2; }
cmake -S "$HERE" -B "$BUILD" -DIDEM_FUZZ=ON -DCMAKE_CXX_COMPILER=clang++-14 -DCMAKE_BUILD_TYPE= >/dev/null
cmake --build "$BUILD" -j2 >"$BUILD/build.log" 2>&1 || { tail -40 "$BUILD/build.log"; exit 2; }

WORK=$(mktemp -d "${TMPDIR:-/tmp}/idemproof-fuzz-run.XXXXXX")
trap 'rm -rf "$WORK"' EXIT
mkdir -p "$BUILD/artifacts"
declare -A PIDS
for name in pg resp; do
  mkdir "$WORK/$name"
  if [ "$name" = pg ]; then seeds=(libpq psycopg node-pg); else seeds=(hiredis redis-py ioredis resp3); fi
  for s in "${seeds[@]}"; do
    for f in "$CAPS/$s"/*.cap; do cp "$f" "$WORK/$name/$s-$(basename "$f")"; done
  done
  "$BUILD/${name}_tracker_fuzz" "$WORK/$name" -max_total_time="$SECS" -timeout=10 -rss_limit_mb=2048 \
    -max_len=16384 -artifact_prefix="$BUILD/artifacts/$name-" -print_final_stats=1 >"$WORK/$name.log" 2>&1 &
  PIDS[$name]=$!
done
status=0
for name in pg resp; do
  if wait "${PIDS[$name]}"; then
    echo "fuzz $name: ok, $(awk '/^stat::number_of_executed_units/ {print $2}' "$WORK/$name.log") runs in ${SECS}s, $(ls "$WORK/$name" | wc -l) corpus units"
  else
    status=1
    echo "fuzz $name: FAILED"
    tail -40 "$WORK/$name.log"
    ls -1 "$BUILD/artifacts/$name-"* 2>/dev/null | sed 's/^/reproducer: /'
  fi
done
# The RESP framers of values too large to hold, seeded with the RESP captures.
mkdir "$WORK/framers"
for s in hiredis redis-py ioredis resp3; do
  for f in "$CAPS/$s"/*.cap; do cp "$f" "$WORK/framers/$s-$(basename "$f")"; done
done
if "$BUILD/resp_framers_fuzz" "$WORK/framers" -max_total_time="$SECS" -timeout=10 -rss_limit_mb=2048 -max_len=16384 \
     -artifact_prefix="$BUILD/artifacts/framers-" -print_final_stats=1 >"$WORK/framers.log" 2>&1; then
  echo "fuzz framers: ok, $(awk '/^stat::number_of_executed_units/ {print $2}' "$WORK/framers.log") runs in ${SECS}s, $(ls "$WORK/framers" | wc -l) corpus units"
else
  status=1
  echo "fuzz framers: FAILED"
  tail -40 "$WORK/framers.log"
  ls -1 "$BUILD/artifacts/framers-"* 2>/dev/null | sed 's/^/reproducer: /'
fi

# The file parsers: every target.json, scenario and schedule-shaped file of the repository as seeds.
mkdir "$WORK/parsers"
i=0
for f in "$ROOT"/scenarios/*.json "$ROOT"/tests/scenarios/*.json "$ROOT"/targets/*/target.json \
         "$ROOT"/tests/targets/*/target.json; do
  [ -f "$f" ] && cp "$f" "$WORK/parsers/seed-$((i++)).json"
done
printf '%s' '{"version": 2, "scenario": "wallet", "target": "t", "seed": 7, "events": [{"n": 1, "fields": {"amount": "5"}}], "stream": [1, {"event": 1, "phase": 2}], "faults": ["after:COMMIT#1"], "restart": "same-name"}' >"$WORK/parsers/schedule.json"
printf '%s' '{"version": 1, "scenario": "wallet", "events": [{"n": 1}], "stream": [1], "kills": ["before:XACK#1"]}' >"$WORK/parsers/schedule-v1.json"
if "$BUILD/parsers_fuzz" "$WORK/parsers" -max_total_time="$SECS" -timeout=10 -rss_limit_mb=2048 -max_len=65536 \
     -artifact_prefix="$BUILD/artifacts/parsers-" -print_final_stats=1 >"$WORK/parsers.log" 2>&1; then
  echo "fuzz parsers: ok, $(awk '/^stat::number_of_executed_units/ {print $2}' "$WORK/parsers.log") runs in ${SECS}s, $(ls "$WORK/parsers" | wc -l) corpus units"
else
  status=1
  echo "fuzz parsers: FAILED"
  tail -40 "$WORK/parsers.log"
  ls -1 "$BUILD/artifacts/parsers-"* 2>/dev/null | sed 's/^/reproducer: /'
fi
exit $status
