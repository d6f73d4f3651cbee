#!/bin/bash
# Soak: 64 connections with 32 messages outstanding on each, sizes 1 byte
# to 128 KiB (log-uniform: inline and read lists), every echoed byte
# checked, for GFR_SOAK_SECONDS (default 30; the long run in
# docs/reliability.md used 600).  The server's resident memory, open file
# descriptors and registered memory (the mrlen of its MRs in
# `rdma resource show mr`) are sampled while it runs: the fd count must
# not change, and in runs of 120 s or more the means of RSS and of
# registered memory must not rise by more than 10 % from the first half to
# the second after the warm-up (see below).  RSS and fds are sampled every
# second; registered memory in a loop of its own, because one
# `rdma resource show` takes seconds under TCG and would starve the
# cheap samples (a 30 s run once got only 3).
# Zero mismatches, and the server ends every connection in order.
set -u
. "$(dirname "$0")/fabric-lib.sh"
prog=${GFR_BUILDDIR:?}/tests/softroce/engine-test
seconds=${GFR_SOAK_SECONDS:-30}
port=20140
dir=$(mktemp -d)
trap 'kill -9 $server $client $registered_sampler 2>/dev/null; rm -rf "$dir"' EXIT
server= client= registered_sampler=

"$prog" server "$GFR_SERVER_ADDR" $port -c 0 >"$dir/srv" 2>&1 &
server=$!
wait_for_output "$dir/srv" listening 60 || exit 1
before=$(fabric_snapshot)
timeout $((seconds + 300)) "$prog" client "$GFR_SERVER_ADDR" $port "$GFR_CLIENT_ADDR" \
	-c 64 -b 32 -s 131072 -t "$seconds" >"$dir/client" 2>&1 &
client=$!

sample_proc() { # PID: RSS kB, open fds
	echo "$(awk '/^VmRSS:/ {print $2}' "/proc/$1/status") $(ls "/proc/$1/fd" | wc -l)"
}
sample_registered() { # PID: bytes registered by its threads
	# The kernel tags an MR with the thread that registered it.
	rdma resource show mr | awk -v tids=" $(ls "/proc/$1/task" | tr '\n' ' ') " '
		{ for (i = 1; i < NF; i++) { if ($i == "mrlen") len = $(i + 1); if ($i == "pid") p = $(i + 1) }
		  if (index(tids, " " p " ")) sum += len; p = "" }
		END { print sum + 0 }'
}
# Sampling starts once every connection is up (the client's clock starts
# then too) and goes on while it runs.  A sample is kept only if the
# client was still running after it was taken, so that none sees the
# connections end.
wait_for_output "$dir/client" 'connected from' 300 || { cat "$dir/client"; exit 1; }
touch "$dir/samples" "$dir/registered"
while kill -0 $client 2>/dev/null; do
	sleep 1
	r=$(sample_registered $server)
	kill -0 $client 2>/dev/null && echo "$r" >>"$dir/registered"
done &
registered_sampler=$!
while kill -0 $client 2>/dev/null; do
	sleep 1
	p=$(sample_proc $server)
	kill -0 $client 2>/dev/null && echo "$p" >>"$dir/samples"
done
wait $client
rc=$?
client=
wait $registered_sampler
registered_sampler=
cat "$dir/client"
failed=0
[ "$rc" = 0 ] || { echo "t-engine-soak: FAILED: the client exited $rc"; failed=1; }
grep -q ' 0 bad;' "$dir/client" || { echo "t-engine-soak: FAILED: mismatches"; failed=1; }
fabric_check "$before" 1000 1000 || failed=1
echo "t-engine-soak: server samples (RSS kB, fds):"
tr '\n' ';' <"$dir/samples"
echo
echo "t-engine-soak: server samples (registered bytes):"
tr '\n' ';' <"$dir/registered"
echo
# Flat: the same fds throughout; after the warm-up (the first quarter of
# each series: pull-buffer lists, the SRQ and malloc's arenas grow), the
# second half's mean RSS and registered memory within 10 % of the first
# half's (means: registered memory moves with the offers in flight).  The
# warm-up takes about a minute in the VM, so a shorter run only checks the
# fds.
judge=$((seconds >= 120))
drift() { # NAME UNIT FILE: warm-up, then the two halves' means
	awk -v judge=$judge -v name="$1" -v unit="$2" '
		{ v[NR] = $1 }
		END {
			n = NR
			if (n < 4) { if (!judge) exit 0; printf "t-engine-soak: FAILED: only %d samples of %s\n", n, name; exit 1 }
			w = int(n / 4); h = w + int((n - w) / 2)
			for (i = w + 1; i <= h; i++) a += v[i]
			for (i = h + 1; i <= n; i++) b += v[i]
			a /= h - w; b /= n - h
			printf "t-engine-soak: %s: %d samples, %d of warm-up; mean %d %s, then %d\n", name, n, w, a, unit, b
			if (!judge) exit 0
			if (b > a * 1.10) { printf "t-engine-soak: FAILED: mean %s rose more than 10 %%\n", name; exit 1 }
		}' "$3"
}
awk '{ fds[NR] = $2 }
	END {
		if (NR < 2) { printf "t-engine-soak: FAILED: only %d sample of fds\n", NR; exit 1 }
		for (i = 1; i <= NR; i++) if (fds[i] != fds[1]) { printf "t-engine-soak: FAILED: fds went from %d to %d\n", fds[1], fds[i]; exit 1 }
		printf "t-engine-soak: fds: %d samples, %d throughout\n", NR, fds[1]
	}' "$dir/samples" || failed=1
awk '{ print $1 }' "$dir/samples" >"$dir/rss"
drift RSS kB "$dir/rss" || failed=1
drift "registered memory" bytes "$dir/registered" || failed=1
[ "$judge" = 1 ] || echo "t-engine-soak: RSS and registered memory not judged: the run is shorter than 120 s"
kill -TERM $server
wait $server || { echo "t-engine-soak: FAILED: the server exited $?"; failed=1; }
server=
grep -E '^engine-test: server: stopped' "$dir/srv"
grep 'gfr-rdma: ' "$dir/srv" | sort | uniq -c
exit "$failed"
