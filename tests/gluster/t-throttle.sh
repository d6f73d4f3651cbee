#!/bin/bash
# Back-pressure over rdma (docs/plugin.md, "Back-pressure"): a brick with
# io-threads (one thread, so calls queue) and rpc.outstanding-rpc-limit 8.
# Client A floods it from 32 threads (gfapi-io flood: every write read back
# and compared) while client B does 4 KiB reads one after another.
# Passes when:
# - the brick throttled A's connection (gfr-stat: put on at least once)
#   and A's calls waited for credits on A's side, while B's connection
#   was never throttled;
# - A's flood ended on time with every read right (nothing dropped, no
#   stall once the throttle lifted), and so did B's reads, and a read
#   after the flood works;
# - the brick logged no error of the plugin.
# Figures (printed, not judged: the VM's times are noise): B's read
# latency alone and during the flood, A's calls per second.
# GFR_THROTTLE_LIMIT overrides the limit (0: none, to compare).
set -u
. "$(dirname "$0")/gluster-lib.sh"
name=throtvol
limit=${GFR_THROTTLE_LIMIT:-8}
flood_threads=32
flood_seconds=40
reads=200
gfr_stat=${GFR_BUILDDIR:?}/tools/gfr-stat
prog=$GFR_BUILDDIR/tests/gluster/gfapi-io
run=$GFR_GLUSTER_RUN/$name
flood=
cleanup() {
	touch "$run/alone/go" "$run/alone/stop" "$run/during/go" "$run/during/stop" 2>/dev/null
	[ -z "$flood" ] || kill "$flood" 2>/dev/null
	wait 2>/dev/null
	brick_stop $name
	rm -rf "$run"
}
trap cleanup EXIT
fail() { echo "t-throttle: $*"; exit 1; }
result_of() { sed -n "s/^result $2 //p" "$1"; }

gluster_setup || exit 1
brick_iot=1 brick_start $name rdma 24140 "rpc.outstanding-rpc-limit $limit" || exit 1
bpid=$(brick_pid $name)
client_volfile $name rdma 24140 >"$run/client.vol"

# B alone.
hold_start "$run/alone" "$run/client.vol" $name --reads $reads \
	--log "$GFR_GLUSTER_LOGS/$name-gfapi-alone.log" || exit 1
hold_step "$run/alone" && hold_finish "$run/alone" || fail "client B (alone) failed"

# A floods; B reads again meanwhile.
env "${gfr_sanitizer_env[@]}" "$prog" flood "$run/client.vol" $name --threads $flood_threads \
	--seconds $flood_seconds --log "$GFR_GLUSTER_LOGS/$name-gfapi-flood.log" >"$run/flood.out" 2>&1 &
flood=$!
wait_for_output "$run/flood.out" "^seed " 60 || fail "the flood did not start: $(cat "$run/flood.out")"
hold_start "$run/during" "$run/client.vol" $name --reads $reads \
	--log "$GFR_GLUSTER_LOGS/$name-gfapi-during.log" || exit 1
sleep 5
hold_step "$run/during" || fail "client B (during the flood) failed"
kill -0 "$flood" 2>/dev/null || fail "the flood ended before B's reads did: raise flood_seconds"
"$gfr_stat" --json "$bpid" >"$run/brick.json" || fail "gfr-stat --json of the brick failed"
"$gfr_stat" --json "$flood" >"$run/flood.json" || fail "gfr-stat --json of client A failed"
"$gfr_stat" --json "$hold_pid" >"$run/during.json" || fail "gfr-stat --json of client B failed"
"$gfr_stat" "$bpid" | sed -n '/^connections/,/^pollers/p'
hold_finish "$run/during" || fail "client B (during the flood) failed"
start=$(date +%s)
wait "$flood"
rc=$?
flood=
cat "$run/flood.out"
[ "$rc" = 0 ] || fail "the flood (client A) exited $rc"
waited=$(($(date +%s) - start))
[ "$waited" -le $((flood_seconds + 60)) ] ||
	fail "the flood took $waited s to end after B's reads: it stalled"

python3 - "$run" "$limit" <<'PY' || exit 1
import json, sys
run, limit = sys.argv[1], int(sys.argv[2])
def load(f):
    with open(f"{run}/{f}.json") as fp:
        return json.load(fp)
def conns(j, role):
    return [c for e in j["engines"] for c in e["connections"] if c["role"] == role]
def fail(msg):
    print("t-throttle:", msg); sys.exit(1)
brick = conns(load("brick"), "server")
def on_brick(client):
    c = conns(load(client), "client")
    if len(c) != 1:
        fail(f"client {client} shows {len(c)} connections")
    mine = [s for s in brick if s["peer"] == c[0]["local"]]
    if len(mine) != 1:
        fail(f"the brick does not show {client}'s connection {c[0]['local']}")
    return c[0], mine[0]
a, a_brick = on_brick("flood")
b, b_brick = on_brick("during")
t = a_brick["throttle"]
print(f"t-throttle: A: brick put the throttle on {t['times']} times (now {t['on']}), "
      f"A's sends waited for credits {a['messages']['waited_for_credits']} times; "
      f"B: {b_brick['throttle']['times']} times, waited {b['messages']['waited_for_credits']}")
if limit:
    if t["times"] < 1:
        fail("the brick never throttled the flooding client")
    if a["messages"]["waited_for_credits"] < 1:
        fail("the flooding client never waited for credits")
elif t["times"]:
    fail("throttled without a limit")
if b_brick["throttle"]["times"]:
    fail("the brick throttled client B, which never had more than one call outstanding")
for who, c in (("A", a_brick), ("B", b_brick)):
    if c["errors"]["count"]:
        fail(f"{who}'s connection on the brick logged errors: {c['errors']}")
PY

hold_start "$run/after" "$run/client.vol" $name --reads 20 \
	--log "$GFR_GLUSTER_LOGS/$name-gfapi-after.log" || exit 1
hold_step "$run/after" && hold_finish "$run/after" || fail "a read after the flood failed"
errs=$(plugin_errors "$GFR_GLUSTER_LOGS/$name-brick.log")
[ -z "$errs" ] || fail "the brick logged errors: $errs"

echo "t-throttle: limit $limit; B's 4 KiB reads alone: p50 $(result_of "$run/alone/out" hold.read_p50_us) us," \
	"p99 $(result_of "$run/alone/out" hold.read_p99_us) us; during A's flood:" \
	"p50 $(result_of "$run/during/out" hold.read_p50_us) us, p99 $(result_of "$run/during/out" hold.read_p99_us) us;" \
	"A: $(result_of "$run/flood.out" flood.ops) calls in ${flood_seconds} s," \
	"$(result_of "$run/flood.out" flood.mibps) MiB/s"
echo "t-throttle: passed"
