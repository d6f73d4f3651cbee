#!/bin/bash
# The comparisons' path for two real hosts (GFR_HOSTS=1: perf/compare-perftest
# --hosts and perf/compare-gluster --hosts; docs/performance.md, "Running
# the comparisons on your fabric"), with the VM playing both hosts: the
# "peer" is reached through GFR_PEER_RUN="sh -c", which takes one shell
# command line as ssh does, and serves on rxe0 at 10.99.0.1; this side is
# the client on rxe1.  Every server, brick, pid and /proc read of the peer
# goes through that command, as it would through ssh.  Each comparison runs
# 2 paired rounds and must print a figure for each of its pairs (two
# rounds give no 90 % interval yet: INCONCLUSIVE, nan, which
# perf/tools-test and t-rounds check beyond) and name the two hosts.
set -u
. "$(dirname "$0")/gluster-lib.sh"
top=$(cd "$(dirname "$0")/../.." && pwd)
run=$GFR_GLUSTER_RUN/hosts
fail() { echo "t-hosts: $*"; exit 1; }
# the VM's rdma.so overlay stands for the package both hosts would have
gluster_setup || exit 1
mkdir -p "$run"
# the peer's bricks need trusted.* xattrs: the VM's tmpfs, not 9p's /var/tmp
peer_bricks=$GFR_GLUSTER_RUN/peer
trap 'rm -rf "$run" "$peer_bricks"' EXIT
# A run over its time limit (run-suite's timeout sends TERM) shows how far
# each comparison got before its output goes with $run.
trap 'echo "t-hosts: terminated after $SECONDS s; the comparisons'"'"' output so far:";
	tail -n 30 "$run"/gluster "$run"/perftest 2>/dev/null; exit 143' TERM
hosts=(GFR_PEER=vm-peer GFR_PEER_RUN="sh -c" GFR_PEER_GLUSTER_RUN="$peer_bricks"
	GFR_SERVER_ADDR=10.99.0.1 GFR_CLIENT_ADDR=10.99.0.2
	GFR_SERVER_DEVICE=rxe0 GFR_CLIENT_DEVICE=rxe1 GFR_GID_INDEX=1 GFR_ROUNDS=2 GFR_ROUNDS_SEED=5)

# expect NAME FILE PATTERN WHAT: FILE (NAME's output) has a line matching
# the extended PATTERN, or the test fails with NAME and WHAT after FILE.
expect() {
	grep -Eq "$3" "$2" || { cat "$2"; fail "$1: $4"; }
}
# paired NAME FILE PAIR...: a figure for each PAIR over the 2 rounds
# (too few for an interval)
paired() {
	local name=$1 file=$2 n
	shift 2
	for n; do
		expect "$name" "$file" "^verdict $n INCONCLUSIVE [0-9.]+ nan nan 2\$" "no verdict for $n over 2 rounds"
	done
}

env "${hosts[@]}" GFR_ROUNDS_WORKLOADS=turns,stream,verbs,idle \
	"$top/perf/compare-gluster" --hosts "$GFR_BUILDDIR" >"$run/gluster" 2>&1 ||
	{ cat "$run/gluster"; fail "compare-gluster --hosts failed"; }
echo "t-hosts: compare-gluster --hosts took $SECONDS s"
expect "compare-gluster --hosts" "$run/gluster" \
	"^== GlusterFS over tcp and over rdma, hosts .* \(rxe1\) -> vm-peer \(rxe0\)" "does not name the hosts"
paired "compare-gluster --hosts" "$run/gluster" read4k_turns_p50 read4k_stream_p50 cpu_per_read4k
expect "compare-gluster --hosts" "$run/gluster" "^verdict idle_cpu_pct (PASS|FAIL|INCONCLUSIVE) " \
	"no idle_cpu_pct verdict"
[ -z "$(ls "$peer_bricks" 2>/dev/null)" ] ||
	fail "compare-gluster --hosts left bricks on the peer: $(ls "$peer_bricks")"

# GFR_PASS=0: the rounds only (as compare-gluster --hosts runs), which use
# the same peer commands as the single pass, and of them the pairs checked
# below: a latency and a bandwidth against perftest, gfr-perf against
# itself; a fabric check follows them
env "${hosts[@]}" GFR_PASS=0 GFR_ROUNDS_PAIRS=rtt64_vs_perftest,bw1m_vs_perftest,rtt64_adaptive_pool_vs_inline \
	"$top/perf/compare-perftest" --hosts "$GFR_BUILDDIR" >"$run/perftest" 2>&1 ||
	{ cat "$run/perftest"; fail "compare-perftest --hosts failed"; }
echo "t-hosts: compare-perftest --hosts done at $SECONDS s, $(grep -c 'did not calibrate' "$run/perftest") perftest run(s) made again"
expect "compare-perftest --hosts" "$run/perftest" \
	"^== perftest and gfr-perf across the fabric, hosts .* \(rxe1\) -> vm-peer \(rxe0\)" "does not name the hosts"
expect "compare-perftest --hosts" "$run/perftest" "^fabric_check: rxe1 sent [0-9]+ packets" \
	"did not count rxe1's packets"
paired "compare-perftest --hosts" "$run/perftest" rtt64_vs_perftest bw1m_vs_perftest rtt64_adaptive_pool_vs_inline
! grep -Eq "^verdict (rtt4k_vs_perftest|bw64k_vs_perftest|rtt64_adaptive_vs_write_lat) " "$run/perftest" ||
	{ cat "$run/perftest"; fail "compare-perftest --hosts measured a pair GFR_ROUNDS_PAIRS left out"; }
echo "t-hosts: compare-gluster --hosts and compare-perftest --hosts ran through a peer command, 2 rounds each"
