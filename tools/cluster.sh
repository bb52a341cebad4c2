#!/usr/bin/env bash
# A local ringcast cluster: three nats-servers forming a JetStream cluster
# and two ringcast replicas on one R3 stream. Used by `go tool task cluster`
# and `go tool task cluster:stop`; state, logs and pids live in .cluster/.
#   cluster.sh start PORT_A PORT_B   (bin/ringcast and bin/nats-server built)
#   cluster.sh stop
set -euo pipefail
dir=.cluster
urls=nats://127.0.0.1:4221,nats://127.0.0.1:4222,nats://127.0.0.1:4223
routes=nats://127.0.0.1:6221,nats://127.0.0.1:6222,nats://127.0.0.1:6223

stop_pid() { # pidfile
	[ -f "$1" ] || return 0
	local pid
	pid=$(cat "$1")
	if kill -TERM "$pid" 2>/dev/null; then
		for _ in $(seq 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
	fi
	rm -f "$1"
}

wait_for() { # what, command...
	local what=$1
	shift
	for _ in $(seq 300); do
		if "$@"; then return 0; fi
		sleep 0.1
	done
	echo "$what did not start" >&2
	return 1
}

start_ringcast() { # port, demo
	setsid bin/ringcast serve --addr "127.0.0.1:$1" --store jetstream --nats-url "$urls" \
		--nats-replicas 3 --demo="$2" >"$dir/ringcast-$1.log" 2>&1 </dev/null &
	echo $! >"$dir/ringcast-$1.pid"
	if ! wait_for "ringcast on $1" grep -q "ringcast serving" "$dir/ringcast-$1.log"; then
		cat "$dir/ringcast-$1.log" >&2
		exit 1
	fi
}

case ${1:-} in
start)
	a=${2:-8080} b=${3:-8081}
	mkdir -p "$dir"
	for i in 1 2 3; do
		if [ -f "$dir/n$i.pid" ] && kill -0 "$(cat "$dir/n$i.pid")" 2>/dev/null; then
			echo "a cluster is already running (go tool task cluster:stop)" >&2
			exit 1
		fi
	done
	for i in 1 2 3; do
		setsid bin/nats-server --name "n$i" --addr 127.0.0.1 --port "422$i" --http_port "822$i" \
			--jetstream --store_dir "$dir/n$i" --cluster_name ringcast \
			--cluster "nats://127.0.0.1:622$i" --routes "$routes" >"$dir/n$i.log" 2>&1 </dev/null &
		echo $! >"$dir/n$i.pid"
	done
	for i in 1 2 3; do
		wait_for "nats-server n$i (see $dir/n$i.log)" curl -fs -o /dev/null "http://127.0.0.1:822$i/healthz"
	done
	start_ringcast "$a" true
	start_ringcast "$b" false
	echo "NATS JetStream cluster: $urls"
	echo "ringcast: http://127.0.0.1:$a (demo feed) and http://127.0.0.1:$b, one stream, cursors valid on both"
	echo "logs and data in $dir/; stop with: go tool task cluster:stop"
	;;
stop)
	for f in "$dir"/ringcast-*.pid; do stop_pid "$f"; done
	for i in 1 2 3; do stop_pid "$dir/n$i.pid"; done
	echo "cluster stopped (the stream stays in $dir/; rm -rf $dir to start afresh)"
	;;
*)
	echo "usage: cluster.sh start [PORT_A PORT_B] | stop" >&2
	exit 2
	;;
esac
