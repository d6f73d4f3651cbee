#!/bin/bash
# lib/'s RDMA engine over IPv6: listen and connect on fd99::1, messages up
# to 1 MiB echoed and checked.  Both ends are on rxe0: across the veth the
# kernel CM of this emulation refuses IPv6 requests (fabric-lib.sh says why),
# so this proves the engine's IPv6 handling, not the fabric's.
set -u
. "$(dirname "$0")/fabric-lib.sh"
prog=${GFR_BUILDDIR:?}/tests/softroce/engine-test
pair_init

# The GID table lists the address once rxe has seen it.
for _ in $(seq 50); do
	ibv_devinfo -v -d rxe0 | grep -q "fd99::1" && break
	sleep 0.1
done
run_pair t-engine-ipv6 120 "$prog" server fd99::1 20120 -- \
	"$prog" client fd99::1 20120 fd99::1 -n 100 -b 4 -s 1048576 || exit 1
cat "$pair_dir/client" "$pair_dir/server"
