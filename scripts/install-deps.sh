#!/usr/bin/env bash
# Installs, as root on Debian 12, every package idemproof needs to build, run and test.
# Idempotent: it asks apt only for what is missing, so a second run costs ~1 s.
set -euo pipefail
pkgs=(
  build-essential cmake ninja-build pkg-config git mold
  libboost1.81-dev libboost-filesystem1.81-dev
  libpqxx-dev libpq-dev libhiredis-dev librdkafka-dev libnats-dev
  librapidcheck-dev nlohmann-json3-dev catch2 libcli11-dev libfmt-dev
  postgresql-15 redis-server kcat nats-server
  python3 python3-psycopg python3-psycopg2 python3-redis python3-flask python3-confluent-kafka python3-pika
  librabbitmq-dev rabbitmq-server
  nodejs
  clang-14 libclang-rt-14-dev
  chromium python3-lxml
  procps
  yamllint dpkg-dev
)
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  if [ "$(id -u)" -ne 0 ]; then
    echo "install-deps: missing packages (${missing[*]}); run as root" >&2; exit 2
  fi
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
# Debian's redis-server package starts a system service on port 6379; idemproof never uses it.
if command -v systemctl >/dev/null 2>&1 && systemctl is-active --quiet redis-server 2>/dev/null; then
  systemctl stop redis-server || true
fi
# Debian's rabbitmq-server package may start a system node (beam.smp, with epmd on 4369) where an init system
# runs; idemproof starts its own node per command (harness/brokers/rabbitmq/README.md) and never uses it.
if command -v systemctl >/dev/null 2>&1 && systemctl is-active --quiet rabbitmq-server 2>/dev/null; then
  systemctl stop rabbitmq-server || true
  systemctl disable rabbitmq-server >/dev/null 2>&1 || true
fi
# Without an init system (a container) the package starts nothing: checked on Debian 12 with `ps aux | grep beam`.
# npm: Debian ships it as a package of its own; NodeSource's nodejs carries it (and conflicts with Debian's).
if ! command -v npm >/dev/null 2>&1; then
  export DEBIAN_FRONTEND=noninteractive
  apt-get install -y -qq --no-install-recommends npm >/dev/null
fi
# The Node test consumers' clients (node-postgres, ioredis, kafkajs, nats, amqplib), pinned by their package-lock.json, from the npm
# registry; again only when the lock changed since the last install.
node_dir="$(dirname "$0")/../tests/targets/node-common"
if ! cmp -s "$node_dir/package-lock.json" "$node_dir/node_modules/.idem-installed-lock" 2>/dev/null; then
  (cd "$node_dir" && npm ci --no-audit --no-fund --loglevel=error >/dev/null)
  cp "$node_dir/package-lock.json" "$node_dir/node_modules/.idem-installed-lock"
fi
# The system account the embedded Valkey runs as when idemproof is root: one no other process uses, so
# that no other process can read the server's password in its valkey.conf (harness/servers/server_util.h).
# The .deb's postinst (scripts/deb/postinst) creates it too.
bash "$(dirname "$0")/deb/postinst" configure
