#!/bin/bash
# ibv_devices lists rxe0 and rxe1, both ports are active at MTU 4096.
set -u
fail=0
devices=$(ibv_devices)
echo "$devices"
for dev in rxe0 rxe1; do
	if ! grep -qw "$dev" <<<"$devices"; then
		echo "t-devices: ibv_devices does not list $dev"
		fail=1
		continue
	fi
	info=$(ibv_devinfo -d "$dev")
	grep -q "state:.*PORT_ACTIVE" <<<"$info" || { echo "t-devices: $dev port is not active"; fail=1; }
	grep -q "active_mtu:.*4096" <<<"$info" || { echo "t-devices: $dev active MTU is not 4096"; fail=1; }
done
exit "$fail"
