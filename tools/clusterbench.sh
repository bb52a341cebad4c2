#!/usr/bin/env bash
# A cluster to measure ringcast on: three nats-servers forming a JetStream
# cluster and one to three ringcast replicas on one R3 stream, every
# replica with the per-client bounds a load generator on one address
# needs lifted (docs/performance.md, "R3 cluster" and "Replicas and
# fan-out"). Each start begins with an empty stream; stop ends everything.
#   clusterbench.sh start [REPLICAS]   (1 to 3, default 1; bin/ringcast and bin/nats-server built)
#   clusterbench.sh cpu     (each process's CPU seconds so far: diff two calls)
#   clusterbench.sh stop
# It prints one line per replica: its URL and process id, for a load
# generator's server and -pid. Its own ports and directory, apart from
# cluster.sh's, come from the environment:
#   CLUSTERBENCH_PORT          the first replica's port (18281); the others take the next two
#   CLUSTERBENCH_NATS_PORT     the first nats-server's client port (24221); likewise
#   CLUSTERBENCH_ROUTE_PORT    the first cluster-route port (26221); likewise
#   CLUSTERBENCH_MONITOR_PORT  the first HTTP monitoring port (28221); likewise
#   CLUSTERBENCH_DIR           stores, logs and pids (${TMPDIR:-/tmp}/ringcast-clusterbench)
#   CLUSTERBENCH_SERVE_ARGS    more `ringcast serve` flags for every replica (e.g. --sse-park)
set -euo pipefail
# shellcheck source=tools/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
prog=clusterbench
dir=${CLUSTERBENCH_DIR:-${TMPDIR:-/tmp}/ringcast-clusterbench}
port=${CLUSTERBENCH_PORT:-18281}
nats_port=${CLUSTERBENCH_NATS_PORT:-24221}
route_port=${CLUSTERBENCH_ROUTE_PORT:-26221}
monitor_port=${CLUSTERBENCH_MONITOR_PORT:-28221}
check_ports port nats_port route_port monitor_port
urls=$(nats_urls)

ready() { # port: the replica answers /readyz 200; one that has exited stops the wait
	still_running "$dir/ringcast-$1.pid" "$dir/ringcast-$1.log"
	curl -fs -o /dev/null "http://127.0.0.1:$1/readyz"
}

case ${1:-} in
start)
	replicas=${2:-1}
	if ! [[ $replicas =~ ^[1-3]$ ]]; then
		echo "clusterbench: start $replicas: want 1, 2 or 3 replicas" >&2
		exit 2
	fi
	for f in "$dir"/*.pid; do
		if [ -f "$f" ] && kill -0 "$(cat "$f")" 2>/dev/null; then
			echo "clusterbench: already running (clusterbench.sh stop)" >&2
			exit 1
		fi
	done
	[ -x bin/ringcast ] && [ -x bin/nats-server ] || {
		echo "clusterbench: build bin/ringcast and bin/nats-server first (go tool task build; go build -o bin/nats-server github.com/nats-io/nats-server/v2)" >&2
		exit 1
	}
	rm -rf "$dir"
	mkdir -p "$dir"
	# Whatever fails from here on stops what was started.
	trap '[ "$started" = true ] || stop_all' EXIT
	started=false
	start_nats clusterbench
	for r in $(seq "$replicas"); do
		p=$((port + r - 1))
		# shellcheck disable=SC2086 # CLUSTERBENCH_SERVE_ARGS is a list of flags
		setsid bin/ringcast serve --addr "127.0.0.1:$p" --store jetstream --nats-url "$urls" --nats-replicas 3 \
			--demo=false --window 4096 --log-level warn --max-streams-per-client -1 --publish-rate -1 \
			--publish-byte-rate -1 --max-conns-per-client -1 ${CLUSTERBENCH_SERVE_ARGS:-} \
			>"$dir/ringcast-$p.log" 2>&1 </dev/null &
		echo $! >"$dir/ringcast-$p.pid"
		if ! wait_for "ringcast on $p (see $dir/ringcast-$p.log)" ready "$p"; then
			cat "$dir/ringcast-$p.log" >&2
			exit 1
		fi
	done
	started=true
	for r in $(seq "$replicas"); do
		p=$((port + r - 1))
		echo "http://127.0.0.1:$p $(cat "$dir/ringcast-$p.pid")"
	done
	;;
cpu)
	# utime and stime, fields 14 and 15 of /proc/PID/stat, in clock ticks
	hz=$(getconf CLK_TCK)
	for f in "$dir"/n?.pid "$dir"/ringcast-*.pid; do
		[ -f "$f" ] || continue
		pid=$(cat "$f")
		name=$(basename "$f" .pid)
		if [ -r "/proc/$pid/stat" ]; then
			awk -v n="$name" -v hz="$hz" '{ sub(/^.*\) /, ""); printf "%s %.2f\n", n, ($12 + $13) / hz }' "/proc/$pid/stat"
		fi
	done
	;;
stop)
	stop_all
	;;
*)
	echo "usage: clusterbench.sh start [1|2|3] | cpu | stop (ports and directory: CLUSTERBENCH_* variables, see the top of this file)" >&2
	exit 2
	;;
esac
