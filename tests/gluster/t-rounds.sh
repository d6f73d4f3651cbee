#!/bin/bash
# perf/gluster-rounds on stock GlusterFS (docs/performance.md, "Verdicts
# from paired rounds"): two `gfapi-io serve` clients, one over rdma and one
# over tcp, 5 rounds of the workloads that need no perftest; every round
# gives every workload a figure on both sides, and every workload gets a
# verdict with a 90 % interval.  Then serve's own protocol: a bad command
# gets an "error" answer naming it and changes nothing, the next command
# still works.
set -u
. "$(dirname "$0")/gluster-lib.sh"
top=$(cd "$(dirname "$0")/../.." && pwd)
prog=$GFR_BUILDDIR/tests/gluster/gfapi-io
run=$GFR_GLUSTER_RUN/rounds
rounds=5
cleanup() {
	brick_stop rndtcp
	brick_stop rndrdma
	rm -rf "$run" "$GFR_GLUSTER_RUN/rndtcp" "$GFR_GLUSTER_RUN/rndrdma"
}
trap cleanup EXIT
fail() { echo "t-rounds: $*"; exit 1; }

gluster_setup || exit 1
mkdir -p "$run"
serve_with_write_behind rndtcp tcp 24230 || exit 1
serve_with_write_behind rndrdma rdma 24240 || exit 1
workloads=turns,cold,warm,stream,4t,write,read1m,meta,idle
"$top/perf/gluster-rounds" --rounds $rounds --seed 1 --workloads $workloads --lines "$run/lines" \
	--gfapi-io "$prog" --log-dir "$GFR_GLUSTER_LOGS" \
	"$GFR_GLUSTER_RUN/rndrdma/client.vol" rndrdma "$(brick_pid rndrdma)" \
	"$GFR_GLUSTER_RUN/rndtcp/client.vol" rndtcp "$(brick_pid rndtcp)" >"$run/out" 2>"$run/err" ||
	{ cat "$run/err" "$run/out"; fail "gluster-rounds failed"; }
grep '^rounds ' "$run/out" | sed 's/^/t-rounds: /'
names="read4k_turns_p50 read4k_qd1_cold_p50 read4k_qd1_warm_p50 read4k_stream_p50 read4k_stream_p99
	cpu_per_read4k vcswitch_per_read4k cswitch_per_read4k read4k_4t_iops write128k_tput read1m_tput
	create_p50 stat_p50 unlink_p50"
for n in $names; do
	[ "$(awk -v n=$n '$1 == n && NF == 4 && $3 > 0 && $4 > 0' "$run/lines" | wc -l)" = $rounds ] ||
		fail "$n: not $rounds rounds with a figure > 0 on both sides"
	grep -Eq "^verdict $n (PASS|FAIL|INCONCLUSIVE|-) [0-9.]+ [0-9.]+ [0-9.]+ $rounds\$" "$run/out" ||
		fail "$n: no verdict with an interval"
done
[ "$(awk '$1 == "idle_cpu_pct" && NF == 3' "$run/lines" | wc -l)" = $rounds ] ||
	fail "idle_cpu_pct: not one value a round"
grep -q '^missing ' "$run/out" && fail "a round missed a figure: $(grep '^missing ' "$run/out")"

# serve's protocol: a bad command is answered and harms nothing
printf 'frob 1 2\nreads 999999 0\nreads 3 0\nquit\n' |
	timeout 120 "$prog" serve "$GFR_GLUSTER_RUN/rndrdma/client.vol" rndrdma --size-mib 4 --no-fini \
		--log "$GFR_GLUSTER_LOGS/rounds-serve.log" >"$run/serve" 2>"$run/serve.err" ||
	{ cat "$run/serve.err"; fail "gfapi-io serve exited $?"; }
grep -qx 'error not a command or out of range: frob 1 2' "$run/serve" || fail "no error for 'frob 1 2': $(cat "$run/serve")"
grep -qx 'error not a command or out of range: reads 999999 0' "$run/serve" || fail "no error for too many reads"
grep -Eqx 'lat [0-9.]+ [0-9.]+ [0-9.]+' "$run/serve" || fail "'reads 3 0' after the errors gave no 3 latencies"
echo "t-rounds: $rounds rounds of rdma against tcp, a verdict each; serve refuses bad commands"
