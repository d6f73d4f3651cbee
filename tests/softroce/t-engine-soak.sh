#!/bin/bash
# Soak: 64 connections with 32 messages outstanding on each, sizes 1 byte
# to 128 KiB (log-uniform: inline and read lists), every echoed byte
# checked, for GFR_SOAK_SECONDS (default 30; the long run in
# docs/reliability.md used 600).  The server's resident memory, open file
# descriptors and registered memory (the mrlen of its MRs in
# `rdma resource show mr`) are sampled every second: the fd count must
# not change, and in runs of 120 s or more the means of RSS and of
# registered memory must not rise by more than 10 % from the first half to
# the second after the warm-up (see below).
# Zero mismatches, and the server ends every connection in order.
set -u
. "$(dirname "$0")/fabric-lib.sh"
prog=${GFR_BUILDDIR:?}/tests/softroce/engine-test
seconds=${GFR_SOAK_SECONDS:-30}
port=20140
dir=$(mktemp -d)
trap 'kill -9 $server $client 2>/dev/null; rm -rf "$dir"' EXIT
server= client=

"$prog" server "$GFR_SERVER_ADDR" $port -c 0 >"$dir/srv" 2>&1 &
server=$!
wait_for_output "$dir/srv" listening 60 || exit 1
before=$(fabric_snapshot)
timeout $((seconds + 300)) "$prog" client "$GFR_SERVER_ADDR" $port "$GFR_CLIENT_ADDR" \
	-c 64 -b 32 -s 131072 -t "$seconds" >"$dir/client" 2>&1 &
client=$!

sample() { # PID: RSS kB, open fds, registered bytes
	local rss fds mr
	rss=$(awk '/^VmRSS:/ {print $2}' "/proc/$1/status")
	fds=$(ls "/proc/$1/fd" | wc -l)
	# The kernel tags an MR with the thread that registered it.
	mr=$(rdma resource show mr | awk -v tids=" $(ls "/proc/$1/task" | tr '\n' ' ') " '
		{ for (i = 1; i < NF; i++) { if ($i == "mrlen") len = $(i + 1); if ($i == "pid") p = $(i + 1) }
		  if (index(tids, " " p " ")) sum += len; p = "" }
		END { print sum + 0 }')
	echo "$rss $fds $mr"
}
# Sampling starts once every connection is up (the client's clock starts
# then too) and goes on every second while it runs.
wait_for_output "$dir/client" 'connected from' 300 || { cat "$dir/client"; exit 1; }
touch "$dir/samples"
while kill -0 $client 2>/dev/null; do
	sleep 1
	kill -0 $client 2>/dev/null && echo "$(sample $server)" >>"$dir/samples"
done
wait $client
rc=$?
client=
cat "$dir/client"
failed=0
[ "$rc" = 0 ] || { echo "t-engine-soak: FAILED: the client exited $rc"; failed=1; }
grep -q ' 0 bad;' "$dir/client" || { echo "t-engine-soak: FAILED: mismatches"; failed=1; }
fabric_check "$before" 1000 1000 || failed=1
echo "t-engine-soak: server samples (RSS kB, fds, registered bytes):"
tr '\n' ';' <"$dir/samples"
echo
n=$(wc -l <"$dir/samples")
# Flat: the same fds throughout; after the warm-up (the first quarter of
# the samples: pull-buffer lists, the SRQ and malloc's arenas grow), the
# second half's mean RSS and registered memory within 10 % of the first
# half's (means: registered memory moves with the offers in flight).  The
# warm-up takes about a minute in the VM, so a shorter run only checks the
# fds.
judge=$((seconds >= 120))
awk -v judge=$judge '
	{ rss[NR] = $1; fds[NR] = $2; mr[NR] = $3 }
	END {
		n = NR; bad = 0
		for (i = 1; i <= n; i++) if (fds[i] != fds[1]) { printf "t-engine-soak: FAILED: fds went from %d to %d\n", fds[1], fds[i]; bad = 1 }
		if (n < 4) { printf "t-engine-soak: FAILED: only %d samples\n", n; exit 1 }
		w = int(n / 4); h = w + int((n - w) / 2)
		for (i = w + 1; i <= h; i++) { r1 += rss[i]; m1 += mr[i] }
		for (i = h + 1; i <= n; i++) { r2 += rss[i]; m2 += mr[i] }
		r1 /= h - w; m1 /= h - w; r2 /= n - h; m2 /= n - h
		printf "t-engine-soak: %d samples, %d of warm-up; mean RSS %d kB, then %d kB; mean registered %d bytes, then %d; fds %d\n", n, w, r1, r2, m1, m2, fds[n]
		if (!judge) { print "t-engine-soak: RSS and registered memory not judged: the run is shorter than 120 s"; exit bad }
		if (r2 > r1 * 1.10) { printf "t-engine-soak: FAILED: mean RSS rose more than 10 %%\n"; bad = 1 }
		if (m2 > m1 * 1.10) { printf "t-engine-soak: FAILED: mean registered memory rose more than 10 %%\n"; bad = 1 }
		exit bad
	}' "$dir/samples" || failed=1
kill -TERM $server
wait $server || { echo "t-engine-soak: FAILED: the server exited $?"; failed=1; }
server=
grep -E '^engine-test: server: stopped' "$dir/srv"
grep 'gfr-rdma: ' "$dir/srv" | sort | uniq -c
exit "$failed"
