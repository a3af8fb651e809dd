#!/usr/bin/env bash
# Records tests/captures/<client>/session.cap: both directions of a real client's session with a real
# server, through tee_proxy.py. Starts a throwaway PostgreSQL 15 and redis-server in a temp dir, builds
# or installs the clients (g++ with libpq, gcc with libhiredis, npm pg and ioredis, Debian's
# python3-psycopg, python3-asyncpg and python3-redis, Go with Debian's pgx v4), runs each once, stops the servers and removes the temp dir.
# The Kafka clients (Debian's python3-confluent-kafka on librdkafka, npm kafkajs 2.2.4) each get a fresh
# idemproof-kafka-server (built here with g++ from harness/brokers/kafka/server) with the topics
# payments:3 and outbox:1; every connection a client opens is a capture of its own.
# The NATS clients (libnats 3.4.1 with gcc, npm nats 2.28.2) each get a fresh nats-server 2.9 with JetStream
# (token s3cret); their sessions open one connection each.
# Usage: tests/captures/record.sh [client…]   (default: all; run as root, PostgreSQL runs as postgres)
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
PGBIN=/usr/lib/postgresql/15/bin
PY=/usr/bin/python3
WORK=$(mktemp -d /dev/shm/idem-captures.XXXXXX)
chmod 755 "$WORK"
PG_PID="" REDIS_PID="" PROXY_PID="" KAFKA_PID="" NATS_PID=""

cleanup() {
  [ -n "$PROXY_PID" ] && kill "$PROXY_PID" 2>/dev/null && wait "$PROXY_PID" 2>/dev/null || true
  [ -n "$KAFKA_PID" ] && kill "$KAFKA_PID" 2>/dev/null && wait "$KAFKA_PID" 2>/dev/null || true
  [ -n "$NATS_PID" ] && kill "$NATS_PID" 2>/dev/null && wait "$NATS_PID" 2>/dev/null || true
  [ -n "$REDIS_PID" ] && kill "$REDIS_PID" 2>/dev/null && wait "$REDIS_PID" 2>/dev/null || true
  if [ -f "$WORK/pgdata/postmaster.pid" ]; then
    kill -INT "$(head -1 "$WORK/pgdata/postmaster.pid")" 2>/dev/null || true
  fi
  [ -n "$PG_PID" ] && wait "$PG_PID" 2>/dev/null || true
  rm -rf "$WORK"
}
trap cleanup EXIT

free_port() { $PY -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

start_servers() {
  PGPORT=$(free_port)
  mkdir "$WORK/pgdata" && chown postgres: "$WORK/pgdata"
  (cd "$WORK" && runuser -u postgres -- "$PGBIN/initdb" -D "$WORK/pgdata" --auth=trust --no-sync -E UTF8 \
    --locale=C >"$WORK/initdb.log")
  (cd "$WORK" && exec runuser -u postgres -- "$PGBIN/postgres" -D "$WORK/pgdata" -c listen_addresses=127.0.0.1 \
    -c port="$PGPORT" -c unix_socket_directories='' -c fsync=off >"$WORK/pg.log" 2>&1) &
  PG_PID=$!
  until pg_isready -q -h 127.0.0.1 -p "$PGPORT"; do sleep 0.1; done
  psql -q -h 127.0.0.1 -p "$PGPORT" -U postgres -d postgres -c \
    "CREATE TABLE processed(msg_id text PRIMARY KEY); CREATE TABLE accounts(id int PRIMARY KEY, balance int NOT NULL);
     INSERT INTO accounts VALUES (1, 0);"
  REDIS_PORT=$(free_port)
  redis-server --port "$REDIS_PORT" --bind 127.0.0.1 --save '' --appendonly no --enable-debug-command yes \
    --dir "$WORK" >"$WORK/redis.log" 2>&1 &
  REDIS_PID=$!
  until redis-cli -p "$REDIS_PORT" ping >/dev/null 2>&1; do sleep 0.1; done
}

# A fresh Kafka broker for each Kafka client: its offsets start at 0.
start_kafka() {
  [ -n "$KAFKA_PID" ] && kill "$KAFKA_PID" && wait "$KAFKA_PID" || true
  rm -f "$WORK/kafka.ready"
  "$WORK/idemproof-kafka-server" --topic payments:3 --topic outbox:1 --ready-file "$WORK/kafka.ready" \
    </dev/null >"$WORK/kafka.log" 2>&1 &
  KAFKA_PID=$!
  until [ -f "$WORK/kafka.ready" ]; do sleep 0.05; done
  KAFKA_PORT=$(cut -d: -f2 "$WORK/kafka.ready")
}

# A fresh nats-server with JetStream (token s3cret, store in the temp dir) for each NATS client.
start_nats() {
  [ -n "$NATS_PID" ] && kill "$NATS_PID" && wait "$NATS_PID" 2>/dev/null || true
  NATS_PORT=$(free_port)
  rm -rf "$WORK/nats-store"
  /usr/sbin/nats-server -js -a 127.0.0.1 -p "$NATS_PORT" -sd "$WORK/nats-store" --auth s3cret >"$WORK/nats.log" 2>&1 &
  NATS_PID=$!
  until grep -q "Server is ready" "$WORK/nats.log"; do sleep 0.05; done
}

# record NAME pg|redis|kafka|nats COMMAND…: runs COMMAND PORT with PORT a tee proxy in front of the server.
record() {
  local name=$1 kind=$2 out=$HERE/$1 port upstream flag=""
  shift 2
  rm -rf "$out" && mkdir -p "$out"
  port=$(free_port)
  if [ "$kind" = pg ]; then upstream=$PGPORT flag=--pg; elif [ "$kind" = kafka ]; then
    start_kafka; upstream=$KAFKA_PORT flag=--kafka; elif [ "$kind" = nats ]; then
    start_nats; upstream=$NATS_PORT; else
    upstream=$REDIS_PORT; redis-cli -p "$REDIS_PORT" FLUSHALL >/dev/null; fi
  $PY "$HERE/tee_proxy.py" "$port" "$upstream" "$out" $flag >"$WORK/proxy.log" 2>&1 &
  PROXY_PID=$!
  until grep -q ready "$WORK/proxy.log"; do sleep 0.05; done
  "$@" "$port" >"$WORK/$name.log" 2>&1 || { cat "$WORK/$name.log"; exit 1; }
  sleep 0.3
  kill "$PROXY_PID" && wait "$PROXY_PID" || true
  PROXY_PID=""
  echo "recorded $name: $(ls "$out")"
}

SELECTED="$*"
start_servers
g++ -O1 -o "$WORK/libpq_session" "$HERE/clients/libpq_session.cc" -I"$(pg_config --includedir)" -lpq
gcc -O1 -o "$WORK/hiredis_session" "$HERE/clients/hiredis_session.c" -lhiredis
if [ -z "$SELECTED" ] || [[ "$SELECTED" == *node-pg* || "$SELECTED" == *ioredis* || "$SELECTED" == *kafkajs* ]]; then
  npm install --prefix "$WORK/node" --no-save --no-audit --no-fund --silent pg ioredis kafkajs@2.2.4 >/dev/null
fi
if [ -z "$SELECTED" ] || [[ "$SELECTED" == *natsjs* ]]; then
  npm install --prefix "$WORK/node" --no-save --no-audit --no-fund --silent nats@2.28.2 >/dev/null
fi
if [ -z "$SELECTED" ] || [[ "$SELECTED" == *libnats* ]]; then
  gcc -O1 -o "$WORK/libnats_session" "$HERE/clients/libnats_session.c" -lnats
fi
[ -n "$SELECTED" ] && [[ "$SELECTED" != *kafka* ]] ||
g++ -std=c++20 -O1 -o "$WORK/idemproof-kafka-server" -I"$HERE/../../harness" \
  "$HERE/../../harness/brokers/kafka/server/main.cc" "$HERE/../../harness/brokers/kafka/errors.cc" -lrdkafka
if [ -z "$SELECTED" ] || [[ "$SELECTED" == *pgx* ]]; then
  mkdir -p "$WORK/go"
  GO111MODULE=off GOPATH=/usr/share/gocode GOCACHE="$WORK/go" go build -o "$WORK/pgx_session" "$HERE/clients/pgx_session.go"
fi
export NODE_PATH=$WORK/node/node_modules
for c in libpq psycopg node-pg asyncpg pgx hiredis redis-py ioredis resp3 librdkafka kafkajs libnats natsjs; do
  [ -z "$SELECTED" ] || [[ " $SELECTED " == *" $c "* ]] || continue
  case $c in
    libpq) record libpq pg "$WORK/libpq_session" ;;
    psycopg) record psycopg pg $PY "$HERE/clients/psycopg_session.py" ;;
    node-pg) record node-pg pg node "$HERE/clients/node_pg_session.js" ;;
    asyncpg) record asyncpg pg $PY "$HERE/clients/asyncpg_session.py" ;;
    pgx) record pgx pg "$WORK/pgx_session" ;;
    hiredis) record hiredis redis "$WORK/hiredis_session" ;;
    redis-py) record redis-py redis $PY "$HERE/clients/redispy_session.py" ;;
    ioredis) record ioredis redis node "$HERE/clients/ioredis_session.js" ;;
    resp3) record resp3 redis $PY "$HERE/clients/resp3_session.py" ;;
    librdkafka) record librdkafka kafka $PY "$HERE/clients/confluent_kafka_session.py" ;;
    kafkajs) record kafkajs kafka node "$HERE/clients/kafkajs_session.js" ;;
    libnats) record libnats nats "$WORK/libnats_session" ;;
    natsjs) record natsjs nats node "$HERE/clients/natsjs_session.js" ;;
  esac
done
