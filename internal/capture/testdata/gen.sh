#!/bin/sh
# Regenerates the real PostgreSQL 15 logs under run1/, both/ and stmt/ (see
# README.md). Needs initdb, pg_ctl, postgres (on PATH or in
# /usr/lib/postgresql/15/bin), psql, pgbench and Go. As root it runs the
# server as the user dbparity (created if missing). The server listens on a
# unix socket in a temporary directory only. Usage: sh gen.sh
set -eu

here=$(cd "$(dirname "$0")" && pwd)
module=$(cd "$here/../../.." && pwd)
PATH=$PATH:/usr/lib/postgresql/15/bin
export PATH PGUSER=postgres PGDATABASE=postgres

as_server() {
	if [ "$(id -u)" = 0 ]; then runuser -u dbparity -- "$@"; else "$@"; fi
}
if [ "$(id -u)" = 0 ] && ! id dbparity >/dev/null 2>&1; then
	useradd --system --no-create-home --shell /usr/sbin/nologin dbparity
fi

work=$(mktemp -d /tmp/dbparity-capture-gen.XXXXXX)
chmod 755 "$work"
[ "$(id -u)" = 0 ] && chown dbparity "$work"
export PGHOST="$work"
trap 'as_server pg_ctl -D "$work/data" -m fast stop >/dev/null 2>&1 || true; rm -rf "$work"' EXIT

(cd "$module" && go build -o "$work/driver" ./internal/capture/testdata/gen)

as_server initdb -D "$work/data" -U postgres -A trust -E UTF8 --locale=C --no-instructions >/dev/null
cat >>"$work/data/postgresql.conf" <<CONF
listen_addresses = ''
unix_socket_directories = '$work'
logging_collector = on
log_destination = 'stderr,csvlog,jsonlog'
log_directory = '$work/log'
log_filename = 'postgresql-%Y%m%d-%H%M%S.log'
log_rotation_age = 0
log_rotation_size = 0
log_min_duration_statement = 0
log_connections = on
log_disconnections = on
log_line_prefix = '%m [%p] %q%c %e user=%u db=%d app=%a '
log_timezone = 'UTC'
log_parameter_max_length = -1
log_checkpoints = on
lc_messages = 'C'
CONF

start() { as_server pg_ctl -D "$work/data" -l "$work/pg_ctl.log" -w start >/dev/null; }
stop() { as_server pg_ctl -D "$work/data" -m fast -w stop >/dev/null; }
# rotate starts new log files: names hold the second, so wait for a new one.
rotate() { sleep 1.1; as_server pg_ctl -D "$work/data" logrotate >/dev/null; sleep 0.3; }
# keep copies the log files of a run (the server is stopped) to $1 and
# empties the log directory for the next run.
keep() {
	mkdir -p "$here/$1"
	rm -f "$here/$1"/*
	for f in "$work"/log/*; do
		if [ -s "$f" ]; then cp "$f" "$here/$1/" && chmod 644 "$here/$1/${f##*/}"; fi
	done
	rm -f "$work"/log/*
}

# psql_session is one psql connection: multi-line statements, comments,
# literals with quotes and newlines, two failing statements, PREPARE and
# EXECUTE (simple queries), a changed application_name, and whatever $1
# puts in the middle (pgbench runs and rotations), so that it spans them.
psql_session() {
	PGAPPNAME=psql-session psql -X -q -v ON_ERROR_STOP=0 >/dev/null 2>&1 <<SQL
create table if not exists notes (id int primary key,
    body text,
    created timestamptz default now());
-- a comment line before a statement
select id,
       body
  from notes
 where body = 'it''s
two lines'   /* trailing comment */
   or id in (1, 2, 3);
insert into notes (id, body) values (1, E'tab\there'), (2, \$\$dollar 'quoted'\$\$);
select * from no_such_table;
select 1 / 0;
prepare get_note (int) as select body from notes where id = \$1;
execute get_note(1);
set application_name = 'psql renamed';
select count(*) from notes;
$1
deallocate get_note;
select 'end of session';
SQL
}

start
PGAPPNAME=pgbench-init PGOPTIONS='-c log_min_duration_statement=-1' pgbench -i -s 1 -q >/dev/null 2>&1
rotate
# Drop the init files (everything but the newest set).
newest=$(ls -t "$work"/log/*.log | head -1); newest=${newest%.log}
for f in "$work"/log/*; do case $f in "$newest".*) ;; *) rm -f "$f" ;; esac; done

# run1: log_min_duration_statement = 0, three files per format.
psql_session "
\\! PGAPPNAME=pgbench-simple pgbench -n -M simple -c 2 -t 3 >/dev/null 2>&1
select pg_sleep(1.1);
select pg_rotate_logfile();
\\! PGAPPNAME=pgbench-extended pgbench -n -M extended -c 2 -t 3 >/dev/null 2>&1
\\! $work/driver -host $work
select pg_sleep(1.1);
select pg_rotate_logfile();
\\! PGAPPNAME=pgbench-prepared pgbench -n -M prepared -c 2 -t 3 >/dev/null 2>&1
"
stop
keep run1

# both: log_statement = all and log_min_duration_statement = 0.
echo "log_statement = 'all'" >>"$work/data/postgresql.conf"
start
psql_session "
\\! PGAPPNAME=pgbench-extended pgbench -n -M extended -c 1 -t 2 >/dev/null 2>&1
\\! PGAPPNAME=pgbench-prepared pgbench -n -M prepared -c 1 -t 1 >/dev/null 2>&1
\\! PGAPPNAME=pgbench-simple pgbench -n -M simple -c 1 -t 1 >/dev/null 2>&1
\\! $work/driver -host $work
"
stop
keep both

# stmt: log_statement = all alone, parameters cut at 10 characters.
cat >>"$work/data/postgresql.conf" <<CONF
log_min_duration_statement = -1
log_parameter_max_length = 10
CONF
start
psql_session "
\\! PGAPPNAME=pgbench-extended pgbench -n -M extended -c 1 -t 2 >/dev/null 2>&1
\\! $work/driver -host $work
"
stop
keep stmt

# One file of each format in run1 compressed (the reader goes by content).
for ext in log csv json; do
	mid=$(ls "$here"/run1/*."$ext" | sed -n 2p)
	gzip -9n "$mid"
done
ls -l "$here"/run1 "$here"/both "$here"/stmt
