#!/bin/bash
# ibv_devices lists the fabric's two devices (rxe0 and rxe1, or siw0 and
# siw1), both ports are active at MTU 4096, and each device's transport is
# its provider's (InfiniBand for RoCE, iWARP for siw).
set -u
. "$(dirname "$0")/fabric-lib.sh"
fail=0
case $fabric_provider in
siw) transport=iWARP ;;
*) transport=InfiniBand ;;
esac
devices=$(ibv_devices)
echo "$devices"
for dev in "$fabric_dev0" "$fabric_dev1"; do
	if ! grep -qw "$dev" <<<"$devices"; then
		echo "t-devices: ibv_devices does not list $dev"
		fail=1
		continue
	fi
	info=$(ibv_devinfo -d "$dev")
	grep -q "state:.*PORT_ACTIVE" <<<"$info" || { echo "t-devices: $dev port is not active"; fail=1; }
	grep -q "active_mtu:.*4096" <<<"$info" || { echo "t-devices: $dev active MTU is not 4096"; fail=1; }
	grep -q "transport:.*$transport" <<<"$info" || { echo "t-devices: $dev's transport is not $transport"; fail=1; }
done
exit "$fail"
