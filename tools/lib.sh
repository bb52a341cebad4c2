# shellcheck shell=bash
# Shell functions cluster.sh and clusterbench.sh share: checking ports,
# waiting, stopping a process by its pid file (and everything started),
# and three nats-servers forming a JetStream cluster. Sourced, not run; the functions read these
# variables of the script that sources it:
#   prog          the script's name, which its error messages begin with
#   dir           the directory of the nats-servers' configuration files,
#                 stores (n1 to n3), logs and pid files (n1.pid to n3.pid),
#                 and of the replicas' logs and pid files (ringcast-PORT.*)
#   nats_port     the first nats-server's client port; the three servers
#                 take it and the next two
#   route_port    the first cluster-route port, likewise
#   monitor_port  the first HTTP monitoring port, likewise

check_ports() { # variable names: each holds a port, the first of three, or exit 2
	local v
	for v in "$@"; do
		if ! [[ ${!v} =~ ^[0-9]+$ ]] || ((${!v} < 1 || ${!v} > 65533)); then
			echo "$prog: $v=${!v}: want a port number" >&2
			exit 2
		fi
	done
}

nats_urls() { # the three nats-servers' client URLs, comma-separated
	echo "nats://127.0.0.1:$nats_port,nats://127.0.0.1:$((nats_port + 1)),nats://127.0.0.1:$((nats_port + 2))"
}

stop_pid() { # pidfile
	[ -f "$1" ] || return 0
	local pid
	pid=$(cat "$1")
	if kill -TERM "$pid" 2>/dev/null; then
		for _ in $(seq 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
	fi
	rm -f "$1"
}

stop_all() { # the replicas, then the nats-servers
	local f
	for f in "$dir"/ringcast-*.pid; do stop_pid "$f"; done
	stop_nats
}

still_running() { # pidfile log: or exit 1, saying so with the log's last lines
	kill -0 "$(cat "$1")" 2>/dev/null && return 0
	local name=${1##*/}
	echo "$prog: ${name%.pid} exited ($2):" >&2
	tail -5 "$2" >&2
	exit 1
}

wait_for() { # what, command...: until the command succeeds, for 30 s at most
	local what=$1
	shift
	for _ in $(seq 300); do
		if "$@"; then return 0; fi
		sleep 0.1
	done
	echo "$prog: $what did not start" >&2
	return 1
}

has_meta_leader() {
	curl -fs "http://127.0.0.1:$monitor_port/jsz" | grep -q '"leader": *"[^"]'
}

nats_serves() { # i: nats-server n<i> answers /healthz; one that has exited stops the wait
	still_running "$dir/n$1.pid" "$dir/n$1.log"
	curl -fs -o /dev/null "http://127.0.0.1:$((monitor_port + $1 - 1))/healthz"
}

start_nats() { # cluster name: start n1 to n3 and wait until they serve and have a meta leader
	local i routes
	routes=nats://127.0.0.1:$route_port,nats://127.0.0.1:$((route_port + 1)),nats://127.0.0.1:$((route_port + 2))
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
				name: $1
				listen: 127.0.0.1:$((route_port + i - 1))
				routes: [${routes//,/, }]
			}
		EOF
		setsid bin/nats-server -c "$dir/n$i.conf" >"$dir/n$i.log" 2>&1 </dev/null &
		echo $! >"$dir/n$i.pid"
	done
	for i in 1 2 3; do
		wait_for "nats-server n$i (see $dir/n$i.log)" nats_serves "$i" || return 1
	done
	# A JetStream request before the cluster has elected its meta leader
	# gets no responder, and a replica would exit on it.
	wait_for "the JetStream cluster's meta leader (see $dir/n1.log)" has_meta_leader
}

stop_nats() {
	local i
	for i in 1 2 3; do stop_pid "$dir/n$i.pid"; done
}
