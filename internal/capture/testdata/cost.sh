#!/bin/sh
# Measures what capture logging costs a server: log bytes per pgbench
# transaction (tpcb-like, 7 statements) per protocol and log format, and
# throughput with logging off and on, interleaved in rounds. The figures in
# docs/capture.md and ServerSettings come from this script. It starts its
# own throw-away cluster on a unix socket (as the user dbparity when run as
# root) and removes it at the end.
# Usage: sh cost.sh [seconds per run (20)] [rounds (3)] [clients (4)]
set -eu
secs=${1:-20}
rounds=${2:-3}
clients=${3:-4}
PATH=$PATH:/usr/lib/postgresql/15/bin
export PATH PGUSER=postgres PGDATABASE=postgres

as_server() {
	if [ "$(id -u)" = 0 ]; then runuser -u dbparity -- "$@"; else "$@"; fi
}
work=$(mktemp -d /tmp/dbparity-capture-cost.XXXXXX)
chmod 755 "$work"
[ "$(id -u)" = 0 ] && chown dbparity "$work"
export PGHOST="$work"
trap 'as_server pg_ctl -D "$work/data" -m immediate stop >/dev/null 2>&1 || true; rm -rf "$work"' EXIT

as_server initdb -D "$work/data" -U postgres -A trust -E UTF8 --locale=C --no-instructions >/dev/null
cat >>"$work/data/postgresql.conf" <<CONF
listen_addresses = ''
unix_socket_directories = '$work'
logging_collector = on
log_directory = '$work/log'
log_filename = 'postgresql.log'
log_rotation_age = 0
log_rotation_size = 0
log_line_prefix = '%m [%p] %q%c %e user=%u db=%d app=%a '
log_timezone = 'UTC'
lc_messages = 'C'
CONF
as_server pg_ctl -D "$work/data" -l "$work/pg_ctl.log" -w start >/dev/null
pgbench -i -s 10 -q >/dev/null 2>&1

# setup NAME: apply one logging configuration (all reloadable).
setup() {
	case $1 in
	off) dest=stderr lmds=-1 stmt=none conn=off ;;
	stderr | csvlog | jsonlog) dest=$1 lmds=0 stmt=none conn=on ;;
	both) dest=csvlog lmds=0 stmt=all conn=on ;;
	esac
	psql -X -q -c "alter system set log_destination = '$dest'" \
		-c "alter system set log_min_duration_statement = $lmds" \
		-c "alter system set log_statement = '$stmt'" \
		-c "alter system set log_connections = $conn" \
		-c "alter system set log_disconnections = $conn" \
		-c "select pg_reload_conf()" >/dev/null
	sleep 0.5
}
logbytes() { du -sb "$work/log" | cut -f1; }

echo "# log bytes per transaction (pgbench -c 1 -t 2000, 7 statements per transaction)"
printf '%-8s %10s %10s %10s\n' format simple extended prepared
for fmt in stderr csvlog jsonlog both; do
	setup "$fmt"
	printf '%-8s' "$fmt"
	for mode in simple extended prepared; do
		before=$(logbytes)
		pgbench -n -M "$mode" -c 1 -t 2000 >/dev/null 2>&1
		sleep 0.5
		after=$(logbytes)
		printf ' %10d' $(((after - before) / 2000))
	done
	echo
done

echo "# throughput, pgbench -c $clients -j 2 -T $secs, $rounds rounds in rotated order"
printf '%-6s %-9s %-8s %8s\n' round mode logging tps
for r in $(seq 1 "$rounds"); do
	for mode in extended simple; do
		set -- off stderr csvlog jsonlog
		# Rotate the order each round so that no configuration always
		# runs first or last.
		k=$(((r - 1) % 4)); while [ "$k" -gt 0 ]; do x=$1; shift; set -- "$@" "$x"; k=$((k - 1)); done
		for fmt in "$@"; do
			setup "$fmt"
			rm -f "$work"/log/postgresql.*
			psql -X -q -c "select pg_rotate_logfile()" >/dev/null
			tps=$(pgbench -n -M "$mode" -c "$clients" -j 2 -T "$secs" 2>/dev/null | sed -n 's/^tps = \([0-9.]*\) .*/\1/p')
			printf '%-6s %-9s %-8s %8s\n' "$r" "$mode" "$fmt" "$tps"
		done
	done
done
