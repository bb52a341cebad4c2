#!/usr/bin/env bash
# A local ringcast cluster: three nats-servers forming a JetStream cluster
# and two ringcast replicas on one R3 stream. Used by `go tool task cluster`
# and `go tool task cluster:stop`; the nats-servers' configuration files,
# state, logs and pids live in .cluster/.
#   cluster.sh start   (bin/ringcast and bin/nats-server built)
#   cluster.sh stop
# The ports and the demo feed come from the environment (the task passes
# its variables of the same names; README.md, "A durable cluster"):
#   CLUSTER_PORT_A, CLUSTER_PORT_B   the two ringcast replicas (8080, 8081)
#   CLUSTER_NATS_PORT     the first nats-server's client port (14221); the
#                         three servers take it and the next two
#   CLUSTER_ROUTE_PORT    the first cluster-route port (16221), likewise
#   CLUSTER_MONITOR_PORT  the first HTTP monitoring port (18221), likewise
#   CLUSTER_DEMO          true: replica A publishes the demo feed (false)
set -euo pipefail
# shellcheck source=tools/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
prog=cluster
dir=.cluster
port_a=${CLUSTER_PORT_A:-8080}
port_b=${CLUSTER_PORT_B:-8081}
nats_port=${CLUSTER_NATS_PORT:-14221}
route_port=${CLUSTER_ROUTE_PORT:-16221}
monitor_port=${CLUSTER_MONITOR_PORT:-18221}
demo=${CLUSTER_DEMO:-false}
check_ports port_a port_b nats_port route_port monitor_port
if [[ $demo != true && $demo != false ]]; then
	echo "cluster: CLUSTER_DEMO=$demo: want true or false" >&2
	exit 2
fi
urls=$(nats_urls)

start_ringcast() { # port, demo
	setsid bin/ringcast serve --addr "127.0.0.1:$1" --store jetstream --nats-url "$urls" \
		--nats-replicas 3 --demo="$2" >"$dir/ringcast-$1.log" 2>&1 </dev/null &
	echo $! >"$dir/ringcast-$1.pid"
	if ! wait_for "ringcast on $1" serving "$1"; then
		cat "$dir/ringcast-$1.log" >&2
		exit 1
	fi
}

serving() { # port: the replica has logged that it serves; one that has exited stops the wait
	still_running "$dir/ringcast-$1.pid" "$dir/ringcast-$1.log"
	grep -q "ringcast serving" "$dir/ringcast-$1.log"
}

case ${1:-} in
start)
	a=$port_a b=$port_b
	mkdir -p "$dir"
	for i in 1 2 3; do
		if [ -f "$dir/n$i.pid" ] && kill -0 "$(cat "$dir/n$i.pid")" 2>/dev/null; then
			echo "a cluster is already running (go tool task cluster:stop)" >&2
			exit 1
		fi
	done
	rm -f "$dir"/ringcast-*.pid
	# Whatever fails from here on stops what was started.
	trap '[ "$started" = true ] || stop_all' EXIT
	started=false
	start_nats ringcast
	start_ringcast "$a" "$demo"
	start_ringcast "$b" false
	started=true
	echo "NATS JetStream cluster: $urls"
	if [[ $demo == true ]]; then
		echo "ringcast: http://127.0.0.1:$a (demo feed) and http://127.0.0.1:$b, one stream, cursors valid on both"
	else
		echo "ringcast: http://127.0.0.1:$a and http://127.0.0.1:$b, one stream, cursors valid on both (CLUSTER_DEMO=true: the demo feed on $a)"
	fi
	echo "logs and data in $dir/; stop with: go tool task cluster:stop"
	;;
stop)
	stop_all
	echo "cluster stopped (the stream stays in $dir/; rm -rf $dir to start afresh)"
	;;
*)
	echo "usage: cluster.sh start | stop (ports: CLUSTER_* variables, see the top of this file)" >&2
	exit 2
	;;
esac
