#!/bin/sh
# record.sh re-records the fixtures proc-a and proc-b from this machine's
# /proc, about one second apart, while it makes disk IO (direct reads and
# writes, so the page cache does not absorb them), loopback packets (curl)
# and CPU load (a small
# process tree of two busy loops under one shell, which the tests use as
# the "server"). Run from this directory: sh record.sh
set -eu
scratch=${TMPDIR:-/tmp}/ostat-record.$$
dd if=/dev/zero of="$scratch" bs=1M count=256 oflag=direct status=none

sh -c 'yes >/dev/null & yes >/dev/null & wait' &
tree=$!
dd if="$scratch" of=/dev/null bs=4k iflag=direct status=none &
reader=$!
dd if=/dev/zero of="$scratch.w" bs=64k count=100000 oflag=direct status=none &
writer=$!
# Connections refused on loopback, so that lo has packets to count.
(while :; do curl -s --noproxy "*" http://127.0.0.1:9/ >/dev/null 2>&1 || :; done) &
net=$!
sleep 0.5

snap() {
	dir=$1
	rm -rf "$dir"
	mkdir -p "$dir/net" "$dir/pressure"
	date +%s.%N >"$dir.time"
	for f in stat diskstats net/dev loadavg meminfo vmstat; do cat "/proc/$f" >"$dir/$f"; done
	for f in cpu io memory; do cat "/proc/pressure/$f" >"$dir/pressure/$f" 2>/dev/null || rm -f "$dir/pressure/$f"; done
	# self is this script's shell; the tree is the busy shell and its children;
	# pid 1 is a process outside both.
	for p in $$ $tree $(cat /proc/$tree/task/*/children) 1; do
		mkdir -p "$dir/$p"
		cat "/proc/$p/stat" >"$dir/$p/stat"
	done
	ln -s $$ "$dir/self"
}
snap proc-a
sleep 1
snap proc-b

kill $reader $writer $net 2>/dev/null || true
pkill -P $tree || true
kill $tree 2>/dev/null || true
wait 2>/dev/null || true
rm -f "$scratch" "$scratch.w"
echo "tree root $tree, self $$"
