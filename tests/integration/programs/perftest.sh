#!/usr/bin/env bash
# An unmodified perftest program (ib_write_bw, ib_read_lat, ...) with -R (connection through
# rdma_cm, the only way on iWARP) between a server and a client through our libraries: both
# must exit 0 and the client must report a result line with a non-zero figure.
# usage: perftest.sh lo4|netns PROGRAM [extra args for both sides...]
. "$(dirname "$0")/../lib.sh"
prog=$2
sr_need_cmd "$prog"
sr_hosts "$1"
shift 2
# perftest -R makes two connections: one to exchange parameters, then the test's own; its
# server listens anew for the second, and a client that connects before that is refused
# (REJECTED -ECONNREFUSED, as by any stack: nobody listens on the port) and then crashes in
# perftest's own retry path. Only that failure is retried (up to 5 times); it shows on a
# loaded machine.
for try in $(seq 5); do
	port=$(sr_port)
	SR_SERVER_KILL_ON=RDMA_CM_EVENT_REJECTED \
		sr_server_client "$port" timeout 120 "$prog" -R -p "$port" "$@" -- \
		timeout 120 "$prog" -R -p "$port" "$@" "$SR_ADDR"
	[ "$SR_CRC" -ne 0 ] && grep -q 'RDMA_CM_EVENT_REJECTED' "$SR_CLOG" || break
	echo "retrying: perftest's server was not listening again yet (try $try)"
done
[ "$SR_CRC" -eq 0 ] || sr_fail "$prog client exited $SR_CRC"
[ "$SR_SRC" -eq 0 ] || sr_fail "$prog server exited $SR_SRC"
# The line under the "#bytes ..." header: size, iterations, then the measured figures
# (bandwidth in MB/s, or latencies in usec); the fourth field must be a positive number.
res=$(grep -A1 '#bytes' "$SR_CLOG" | tail -1)
awk '{ exit !($4 + 0 > 0) }' <<<"$res" || sr_fail "no result in: $res"
sr_pass "$prog -R over $SR_ADDR: $res"
