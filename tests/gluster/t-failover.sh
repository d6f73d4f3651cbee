#!/bin/bash
# Multi-rail failover through stock GlusterFS (docs/multi-rail.md,
# "Failover without loss"): a brick that offers both rail addresses and a
# FUSE mount with transport.rdma.rails auto, as in t-rails.sh.  While 64
# MiB of random data are written in 1 MiB writes and 2,000 records are
# appended one by one (each an O_APPEND open, write and close), the
# client's second rail is cut (fabric_rails_cut_after: its device deleted
# once its veth pair has carried 500 packets).  Checked: the data reads
# back whole, every record appears exactly once (a call run twice would
# append it twice), no write failed, the client's log has no "bailing out
# frame" and no disconnect, and says that it went on over the other rail.
set -u
. "$(dirname "$0")/gluster-lib.sh"
name=failvol
port=24162
mnt=$GFR_GLUSTER_RUN/$name-mnt
src=$GFR_GLUSTER_RUN/$name-src
work=$GFR_GLUSTER_RUN/$name-work
log=$GFR_GLUSTER_LOGS/$name-fuse.log
records=2000
cutter= writer= appender=
fpid=
fail() {
	echo "t-failover: $*"
	cat "$work/cut" 2>/dev/null
	rails_diagnose $name "$log" "$fpid"
	exit 1
}
cleanup() {
	kill $cutter $writer $appender 2>/dev/null
	rails_teardown $name "$mnt"
	rm -rf "$src" "$work" "$GFR_GLUSTER_RUN/$name"
	fabric_rails_down
}
trap cleanup EXIT

rails_start $name $port "$mnt" "$log" || fail "the setup failed"
fpid=$rails_pid
mkdir -p "$work"
head -c $((64 << 20)) /dev/urandom >"$src" || fail "cannot make the source data"

fabric_rails_cut_after 500 "$(fabric_rails_tx)" >"$work/cut" 2>&1 &
cutter=$!
(
	for k in $(seq 1 $records); do
		echo "record $k" >>"$mnt/append" || { echo "append $k failed"; exit 1; }
	done
) >"$work/append.out" 2>&1 &
appender=$!
dd if="$src" of="$mnt/data" bs=1M conv=fsync status=none 2>"$work/dd.err" &
writer=$!
wait_bounded "$writer" 300 || fail "writing 64 MiB across the cut failed or did not end: $(cat "$work/dd.err")"
wait_bounded "$appender" 300 || fail "the appends failed or did not end: $(cat "$work/append.out")"
wait "$cutter"
cutter= writer= appender=
cat "$work/cut"
grep -q "^cut: $fabric_dev3 deleted" "$work/cut" || fail "the rail was not cut during the writes"

want=$(md5sum <"$src")
got=$(dd if="$mnt/data" bs=1M status=none | md5sum)
[ "$got" = "$want" ] || fail "reading the file back gave other data ($got, not $want)"
lines=$(wc -l <"$mnt/append")
dups=$(sort "$mnt/append" | uniq -d | head -n 5)
[ -z "$dups" ] || fail "records appended more than once: $dups"
[ "$lines" -eq "$records" ] || fail "$lines records in the file, not $records"
for k in 1 $((records / 2)) $records; do
	grep -qx "record $k" "$mnt/append" || fail "record $k is missing"
done
grep -q "bailing out frame" "$log" && fail "a call bailed out"
grep -Eq "disconnected from|connection to .* failed" "$log" && fail "GlusterFS saw a disconnect"
grep -q "rail 1 ended (.*): the connection goes on over the other rails" "$log" ||
	fail "the client did not say that it went on over the other rail"
echo "t-failover: 64 MiB and $records O_APPEND records written across a cut of $fabric_dev3:" \
	"the data whole, each record once, no error, no disconnect"
