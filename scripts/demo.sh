#!/usr/bin/env bash
# The main job (README): installs what is missing, builds, and compares the reference targets on the
# built-in scenarios on embedded servers; writes reports/latest/report.html and report.json.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build -j"$(nproc)"
exec ./build/idemproof demo "$@"
