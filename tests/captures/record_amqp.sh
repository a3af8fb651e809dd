#!/usr/bin/env bash
# Records the AMQP captures (pika/, amqplib/, librabbitmq/) against a RabbitMQ node of its own, as root
# (about 15 s): the node runs as the `rabbitmq` account with a private node name, ports, epmd and files in
# a temp dir under /dev/shm, all removed at the end. Each client runs once through tee_proxy.py.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
dir="$(mktemp -d /dev/shm/amqp-record.XXXXXX)"
port=$((20000 + RANDOM % 10000)); dist=$((port + 1)); epmd_port=$((port + 2)); relay=$((port + 3))
printf 'listeners.tcp.default = 127.0.0.1:%s\nloopback_users = none\ndefault_user = rec\ndefault_pass = rec\n' "$port" > "$dir/rabbit.conf"
echo '[].' > "$dir/enabled_plugins"
chown -R rabbitmq: "$dir"
run() { exec setsid env -i PATH=/usr/sbin:/usr/bin:/bin HOME="$dir" RABBITMQ_NODENAME="rec$$@localhost" RABBITMQ_NODE_PORT="$port" \
  RABBITMQ_DIST_PORT="$dist" ERL_EPMD_PORT="$epmd_port" RABBITMQ_MNESIA_BASE="$dir/mnesia" RABBITMQ_LOG_BASE="$dir/log" \
  RABBITMQ_ENABLED_PLUGINS_FILE="$dir/enabled_plugins" RABBITMQ_CONFIG_FILE="$dir/rabbit" /usr/sbin/runuser -u rabbitmq -- "$@"; }
(run epmd -port "$epmd_port" -address 127.0.0.1 > /dev/null 2>&1) & epmd_pid=$!
(run /usr/lib/rabbitmq/bin/rabbitmq-server > "$dir/server.log" 2>&1) & server_pid=$!
cleanup() { kill -TERM -- "-$server_pid" 2>/dev/null || true; sleep 2; kill -KILL -- "-$server_pid" "-$epmd_pid" 2>/dev/null || true
  rm -rf "$dir"; }
trap cleanup EXIT
for _ in $(seq 1 300); do (echo > "/dev/tcp/127.0.0.1/$port") 2>/dev/null && break; sleep 0.1; done
sleep 1
record() { # NAME COMMAND...
  local name="$1"; shift
  rm -rf "${here:?}/$name"; mkdir -p "$here/$name"
  python3 "$here/tee_proxy.py" "$relay" "$port" "$here/$name" & local tee=$!
  sleep 0.3
  "$@"
  sleep 0.3; kill "$tee"; wait "$tee" 2>/dev/null || true
}
record pika /usr/bin/python3 "$here/clients/pika_session.py" "amqp://rec:rec@127.0.0.1:$relay/%2F" q-pika
record amqplib env NODE_PATH="$here/../targets/node-common/node_modules" node "$here/clients/amqplib_session.js" \
  "amqp://rec:rec@127.0.0.1:$relay/%2F" q-amqplib
cc -o "$dir/librabbitmq_session" "$here/clients/librabbitmq_session.c" -lrabbitmq
record librabbitmq "$dir/librabbitmq_session" "$relay" / rec rec q-librabbitmq
