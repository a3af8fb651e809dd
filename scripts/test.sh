#!/usr/bin/env bash
# The test command (README, .ci/run): installs what is missing, builds from scratch, runs every test
# (unit tests on values and recorded bytes; integration tests on real PostgreSQL and Valkey/Redis that
# the tests start themselves).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
rm -rf build
# Everything the tests use; the benchmarks (no test runs them) are a separate build: cmake without -DIDEM_BENCH=OFF.
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release -DIDEM_BENCH=OFF >/dev/null
# One compile per core: ninja's default (cores + 2) took 284 s against 270 s on the 2-core test machine
# (docs/benchmarks.md); the compiles are CPU-bound and no faster for sharing a core.
cmake --build build -j"$(nproc)"
cd build
# The complete matrices (label slow: demo --full, the live exhaustive sweeps) run with `ctest -L slow`.
# Twice as many tests as the cores: an integration test mostly waits (servers, sleeps, a broker's timers),
# so two per core keep both busy (tests/CMakeLists.txt; docs/benchmarks.md).
status=0
ctest --output-on-failure -j"$(( $(nproc) * 2 ))" -LE slow || status=$?
if [ "$status" -ne 0 ] && [ -f Testing/Temporary/LastTestsFailed.log ]; then
  # A CI log may keep only its end: each failing test's first failed assertion again, last.
  while IFS=: read -r _ name; do
    echo "=== failed: $name"
    awk -v t="$name" 'index($0, "Testing: " t) { on = 1 } on && /FAILED:/ { shown = 1 }
      on && /<end of output>/ { exit } on && shown && n++ < 60' Testing/Temporary/LastTest.log
  done < Testing/Temporary/LastTestsFailed.log
fi
exit "$status"
