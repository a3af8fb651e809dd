#!/usr/bin/env bash
# CPU by process name over N repetitions of a command, from process accounting (as root; package acct):
#   bench/cpu_by_process.sh 10 build/idemproof run --target targets/dedup-table
# prints, per command name, the CPU ticks (1/100 s, user + system) per repetition and the processes per
# repetition ("pg-child": PostgreSQL processes forked without exec: backends and auxiliaries). Every process
# of the machine is accounted: keep it quiet, and compare two trees or settings one after the other, twice.
set -euo pipefail
n=$1
shift
command -v accton >/dev/null || { echo "cpu_by_process.sh: needs accton and dump-acct (apt-get install acct)" >&2; exit 2; }
file=$(mktemp)
trap 'accton off >/dev/null 2>&1 || true; rm -f "$file"' EXIT
accton "$file" >/dev/null
for _ in $(seq "$n"); do "$@" >/dev/null 2>&1 || true; done
accton off >/dev/null
dump-acct "$file" | awk -F'|' -v n="$n" '
  { c = $1; gsub(/ +$/, "", c); if (c == "postgres" && $12 ~ /F/) c = "pg-child"
    t[c] += $3 + $4; k[c]++; total += $3 + $4 }
  END { for (x in t) if (t[x] > 0) printf "%s %.1f ticks/run (%.1f procs)\n", x, t[x] / n, k[x] / n
        printf "TOTAL %.1f ticks/run\n", total / n }' | sort -k2 -rn
