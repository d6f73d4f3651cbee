#!/bin/bash
# Live statistics (gfr-stat, docs/statistics.md) of a brick and two gfapi
# clients over rdma.  After N 4 KiB reads of client A, gfr-stat shows the
# connection from both sides (the brick's peer is the client's local
# address), at least N messages each way on it, and stage histograms that
# grew by exactly N calls (client: call, reply_owner; brick: serve,
# req_owner); --json parses; --openmetrics parses with Prometheus's own
# parser and counts the brick's messages sent as its table does; the
# brick's device's port counters (hw_counters) appear in all three; the brick's statedump counts the bytes the
# transport moved; client B is listed as a process of its own.
# Bad input: a stale socket of a dead brick is removed when the brick
# starts, readers that send nothing or garbage are cut off with a message
# while reads go on, a name that matches two processes is refused, and a
# non-root caller is refused with a message naming why.
set -u
. "$(dirname "$0")/gluster-lib.sh"
name=statvol
reads=300
gfr_stat=${GFR_BUILDDIR:?}/tools/gfr-stat
statdir=/run/gluster/rdma
run=$GFR_GLUSTER_RUN/$name
pids=()
cleanup() {
	touch "$run/a/go" "$run/b/go" "$run/a/stop" "$run/b/stop" 2>/dev/null
	for p in "${pids[@]}"; do wait "$p" 2>/dev/null; done
	brick_stop $name
	rm -rf "$run"
}
trap cleanup EXIT
fail() { echo "t-stats: $*"; exit 1; }

gluster_setup || exit 1
mkdir -p "$statdir"
: >"$statdir/glusterfsd.4194305.sock" # no pid is above pid_max
brick_start $name rdma 24140 || exit 1
[ ! -e "$statdir/glusterfsd.4194305.sock" ] || fail "the stale socket of a dead brick is still there"
bpid=$(brick_pid $name)
[ -S "$statdir/glusterfsd.$bpid.sock" ] || fail "the brick serves no statistics socket"
[ "$(stat -c %a "$statdir/glusterfsd.$bpid.sock")" = 600 ] || fail "the brick's socket is not 0600"
client_volfile $name rdma 24140 >"$run/client.vol"

# Client A (gluster-lib.sh's hold client): mounted, then N reads.
hold_start "$run/a" "$run/client.vol" $name --reads $reads \
	--log "$GFR_GLUSTER_LOGS/$name-gfapi-a.log" || exit 1
apid=$hold_pid
pids+=($apid)
hold_stat_snap "$run/a" before $name rdma || fail "gfr-stat --json of client $apid or brick $bpid failed"

# Readers that send nothing, and garbage, while the reads run.
python3 - "$statdir/glusterfsd.$bpid.sock" >"$run/bad-readers" 2>&1 <<'PY' &
import socket, sys, time
path = sys.argv[1]
for i in range(3):
    s = socket.socket(socket.AF_UNIX); s.connect(path)
    time.sleep(1.5)                      # sends nothing: cut off after 1 s
    s.close()
s = socket.socket(socket.AF_UNIX); s.connect(path)
s.sendall(b"\x00garbage\n")
print(s.recv(4096).decode(errors="replace").strip())
PY
badpid=$!
hold_step "$run/a" || exit 1
wait $badpid
grep -q "^error: unknown request '?garbage': send json, table or openmetrics" "$run/bad-readers" ||
	fail "garbage got no clear answer: $(cat "$run/bad-readers")"
hold_stat_snap "$run/a" after $name rdma || fail "gfr-stat --json after the reads failed"
"$gfr_stat" "$bpid" >"$run/brick-table" || fail "gfr-stat $bpid (tables) failed"
grep -q "^connections: " "$run/brick-table" && grep -q "^  serve " "$run/brick-table" ||
	fail "the brick's tables lack connections or stages: $(head -20 "$run/brick-table")"

# OpenMetrics: parsed by python3-prometheus-client's parser, and the
# messages the brick sent, summed over its connections, as its table says.
# The brick may send between two readings (a ping): taken between two
# tables that agree.
dump=$(dirname "$0")/../unit/openmetrics-dump
sent_in_table() { awk '/^connections: /{c=1; next} /^pollers: /{c=0} c && $3 ~ /^(client|server)$/ {s += $7} END {print s + 0}' "$1"; }
agreed=
for try in 1 2 3 4 5; do
	"$gfr_stat" "$bpid" >"$run/om-table1" && "$gfr_stat" --openmetrics "$bpid" >"$run/brick.om" &&
		"$gfr_stat" "$bpid" >"$run/om-table2" || fail "gfr-stat --openmetrics $bpid failed"
	"$dump" "$run/brick.om" >"$run/brick.om-dump" ||
		fail "the brick's OpenMetrics text does not parse: $(tail -3 "$run/brick.om")"
	t1=$(sent_in_table "$run/om-table1") t2=$(sent_in_table "$run/om-table2")
	[ "$t1" = "$t2" ] || continue
	om=$(awk '$4 ~ /^glusterfs_rdma_messages_sent_total[{]/ {s += $5} END {printf "%d", s}' "$run/brick.om-dump")
	[ "$om" = "$t1" ] || fail "OpenMetrics says the brick sent $om messages, its table $t1"
	agreed=$t1
	break
done
[ -n "$agreed" ] && [ "$agreed" -ge $reads ] ||
	fail "no two tables of the brick agreed on its messages sent ('$agreed'), or fewer than $reads"
grep -q '^glusterfs_rdma_stage_seconds histogram seconds glusterfs_rdma_stage_seconds_count{engine=0,pid='"$bpid"',process=glusterfsd,stage=serve} ' "$run/brick.om-dump" ||
	fail "the brick's OpenMetrics text has no serve stage: $(grep -c . "$run/brick.om-dump") samples"
echo "t-stats: openmetrics: $(grep -c . "$run/brick.om-dump") samples parse; the brick sent $agreed messages, as its table says"

# The fabric's own counters beside the brick's: its device's port, by the
# provider's names (siw keeps none: the port is listed with none).
bdev=$(awk '/^pollers: /{p=1; next} p && $2 ~ /^[0-9]+$/ {print $1; exit}' "$run/om-table2")
[ -n "$bdev" ] || fail "the brick's table names no poller device"
grep -q "^  $bdev port 1:" "$run/om-table2" || fail "the brick's table shows no counters of $bdev port 1: $(sed -n '/^ports:/,$p' "$run/om-table2")"
if fabric_has_counters; then
	grep -q "^    .*sent_pkts  *[0-9]" "$run/om-table2" || fail "the brick's table lacks $bdev's sent_pkts"
	grep -q "^glusterfs_rdma_port_hw_counter unknown - glusterfs_rdma_port_hw_counter{counter=sent_pkts,device=$bdev,pid=$bpid,port=1,process=glusterfsd} " "$run/brick.om-dump" ||
		fail "the brick's OpenMetrics text lacks $bdev's sent_pkts"
	"$gfr_stat" --json "$bpid" | python3 -c '
import json, sys
ports = json.load(sys.stdin)["ports"]
assert any(p["device"] == sys.argv[1] and p["port"] == 1 and p["hw_counters"]["sent_pkts"] > 0 for p in ports), ports
' "$bdev" || fail "the brick's JSON lacks $bdev's sent_pkts"
fi
echo "t-stats: ports: $bdev port 1's hw_counters shown in the table, JSON and OpenMetrics"

python3 - "$run/a" $reads <<'PY' || exit 1
import json, sys
run, n = sys.argv[1], int(sys.argv[2])
def load(f):
    with open(f"{run}/{f}.json") as fp:
        return json.load(fp)          # must parse
def stage(j, name):
    return sum(s["count"] for e in j["engines"] for s in e["stages"] if s["name"] == name)
def conns(j, role):
    return [c for e in j["engines"] for c in e["connections"] if c["role"] == role]
def fail(msg):
    print("t-stats:", msg); sys.exit(1)
bb, ba, cb, ca = (load(f) for f in ("brick-before", "brick-after", "client-before", "client-after"))
srv, cli = conns(ba, "server"), conns(ca, "client")
if len(cli) != 1 or cli[0]["state"] != "ESTABLISHED":
    fail(f"client A shows {len(cli)} client connections: {cli}")
mine = [c for c in srv if c["peer"] == cli[0]["local"] and c["local"] == cli[0]["peer"]]
if len(mine) != 1 or mine[0]["state"] != "ESTABLISHED":
    fail(f"the brick does not show client A's connection {cli[0]['local']}: {srv}")
for side, c in (("client", cli[0]), ("brick", mine[0])):
    m = c["messages"]
    if m["sent"] < n or m["received"] < n:
        fail(f"{side}: {m['sent']} sent, {m['received']} received after {n} reads")
for j, name in ((ca, "call"), (ca, "reply_owner"), (ba, "serve"), (ba, "req_owner")):
    before = stage(cb if j is ca else bb, name)
    grew = stage(j, name) - before
    if grew != n:
        fail(f"stage {name} grew by {grew} calls during {n} reads")
    print(f"t-stats: stage {name}: {grew} calls during the reads")
p = ca["engines"][0]["pollers"][0]
print(f"t-stats: client poller: {p['completions']} completions, {p['wakeups']} wake-ups, "
      f"{p['reaped_after_sleep']} reaped after a sleep")
PY

# GlusterFS's own statedump counts the transport's bytes (docs/plugin.md).
mkdir -p /var/run/gluster
rm -f /var/run/gluster/*.$bpid.dump.*
kill -USR1 "$bpid"
for i in $(seq 300); do
	dump=$(ls /var/run/gluster/*.$bpid.dump.* 2>/dev/null | head -1)
	[ -n "$dump" ] && grep -q '^server.total-bytes-write=' "$dump" && break
	sleep 0.1
done
[ -n "$dump" ] || fail "the brick wrote no statedump within 30 s of SIGUSR1"
rd=$(sed -n 's/^server.total-bytes-read=//p' "$dump")
wr=$(sed -n 's/^server.total-bytes-write=//p' "$dump")
[ "${rd:-0}" -gt 0 ] && [ "${wr:-0}" -ge $((reads * 4096)) ] ||
	fail "the statedump counts ${rd:-no} bytes read and ${wr:-no} written after $reads 4 KiB reads"
echo "t-stats: statedump: $rd bytes read, $wr written"
rm -f "$dump"

hold_start "$run/b" "$run/client.vol" $name --reads 1 \
	--log "$GFR_GLUSTER_LOGS/$name-gfapi-b.log" || exit 1
bpid_b=$hold_pid
pids+=($bpid_b)
"$gfr_stat" >"$run/list"
grep -q "^$apid *gfapi-io " "$run/list" && grep -q "^$bpid_b *gfapi-io " "$run/list" ||
	fail "gfr-stat does not list both clients: $(cat "$run/list")"
"$gfr_stat" gfapi-io >"$run/ambiguous" 2>&1 && fail "a name of two processes was taken"
grep -q "2 processes are named gfapi-io" "$run/ambiguous" || fail "unclear: $(cat "$run/ambiguous")"
n=$("$gfr_stat" --json "$bpid" | python3 -c 'import json,sys; j=json.load(sys.stdin); print(sum(1 for e in j["engines"] for c in e["connections"] if c["state"] == "ESTABLISHED"))')
[ "$n" -ge 2 ] || fail "the brick shows $n established connections with two clients"

setpriv --reuid=65534 --regid=65534 --clear-groups "$gfr_stat" "$bpid" >"$run/nonroot" 2>&1 &&
	fail "a non-root caller got the statistics"
grep -q "permission denied: the RDMA statistics are root's only" "$run/nonroot" ||
	fail "a non-root caller got no clear refusal: $(cat "$run/nonroot")"

hold_step "$run/b" && hold_finish "$run/b" || fail "client B failed"
hold_pid=$apid
hold_finish "$run/a" || fail "client A failed"
pids=()
for log in "$GFR_GLUSTER_LOGS/$name-brick.log" "$GFR_GLUSTER_LOGS/$name-gfapi-a.log"; do
	plugin_errors "$log" && fail "$log has errors of the plugin"
done
echo "t-stats: passed"
