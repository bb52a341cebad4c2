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
dir=.cluster
port_a=${CLUSTER_PORT_A:-8080}
port_b=${CLUSTER_PORT_B:-8081}
nats_port=${CLUSTER_NATS_PORT:-14221}
route_port=${CLUSTER_ROUTE_PORT:-16221}
monitor_port=${CLUSTER_MONITOR_PORT:-18221}
demo=${CLUSTER_DEMO:-false}
for v in port_a port_b nats_port route_port monitor_port; do
	if ! [[ ${!v} =~ ^[0-9]+$ ]] || ((${!v} < 1 || ${!v} > 65533)); then
		echo "cluster: $v=${!v}: want a port number" >&2
		exit 2
	fi
done
if [[ $demo != true && $demo != false ]]; then
	echo "cluster: CLUSTER_DEMO=$demo: want true or false" >&2
	exit 2
fi
urls=nats://127.0.0.1:$nats_port,nats://127.0.0.1:$((nats_port + 1)),nats://127.0.0.1:$((nats_port + 2))
routes=nats://127.0.0.1:$route_port,nats://127.0.0.1:$((route_port + 1)),nats://127.0.0.1:$((route_port + 2))

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

has_meta_leader() {
	curl -fs "http://127.0.0.1:$monitor_port/jsz" | grep -q '"leader": *"[^"]'
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
	a=$port_a b=$port_b
	mkdir -p "$dir"
	for i in 1 2 3; do
		if [ -f "$dir/n$i.pid" ] && kill -0 "$(cat "$dir/n$i.pid")" 2>/dev/null; then
			echo "a cluster is already running (go tool task cluster:stop)" >&2
			exit 1
		fi
	done
	for i in 1 2 3; do
		# A configuration file, for the batch limit: a PublishBatch is one
		# JetStream atomic batch of up to 1,024 commits (nats-server's
		# default limit is 1,000; docs/scaling.md, "PublishBatch on a
		# durable store").
		cat >"$dir/n$i.conf" <<-EOF
			server_name: n$i
			listen: 127.0.0.1:$((nats_port + i - 1))
			http: 127.0.0.1:$((monitor_port + i - 1))
			jetstream {
				store_dir: "$dir/n$i"
				limits { batch { max_msgs: 1024 } }
			}
			cluster {
				name: ringcast
				listen: 127.0.0.1:$((route_port + i - 1))
				routes: [${routes//,/, }]
			}
		EOF
		setsid bin/nats-server -c "$dir/n$i.conf" >"$dir/n$i.log" 2>&1 </dev/null &
		echo $! >"$dir/n$i.pid"
	done
	for i in 1 2 3; do
		wait_for "nats-server n$i (see $dir/n$i.log)" curl -fs -o /dev/null "http://127.0.0.1:$((monitor_port + i - 1))/healthz"
	done
	# A JetStream request before the cluster has elected its meta leader
	# gets no responder, and a replica would exit on it.
	wait_for "the JetStream cluster's meta leader (see $dir/n1.log)" has_meta_leader
	start_ringcast "$a" "$demo"
	start_ringcast "$b" false
	echo "NATS JetStream cluster: $urls"
	if [[ $demo == true ]]; then
		echo "ringcast: http://127.0.0.1:$a (demo feed) and http://127.0.0.1:$b, one stream, cursors valid on both"
	else
		echo "ringcast: http://127.0.0.1:$a and http://127.0.0.1:$b, one stream, cursors valid on both (CLUSTER_DEMO=true: the demo feed on $a)"
	fi
	echo "logs and data in $dir/; stop with: go tool task cluster:stop"
	;;
stop)
	for f in "$dir"/ringcast-*.pid; do stop_pid "$f"; done
	for i in 1 2 3; do stop_pid "$dir/n$i.pid"; done
	echo "cluster stopped (the stream stays in $dir/; rm -rf $dir to start afresh)"
	;;
*)
	echo "usage: cluster.sh start | stop (ports: CLUSTER_* variables, see the top of this file)" >&2
	exit 2
	;;
esac
