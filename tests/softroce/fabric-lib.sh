# Helpers for the soft-RoCE tests (sourced; bash).  The fabric is the one
# fabric-up builds: rxe0 on veth0 (10.99.0.1), rxe1 on veth1 (10.99.0.2).
#
# The counters prove that a test's traffic really crossed the veth pair:
# without the policy routing of fabric-up, rdma_cm would resolve the peer as
# local and both ends would use rxe0's internal loopback, and a test would
# pass without ever touching the fabric.

GFR_SERVER_ADDR=10.99.0.1
GFR_CLIENT_ADDR=10.99.0.2

net_counter() { # IFACE rx_packets|tx_packets
	cat "/sys/class/net/$1/statistics/$2"
}

rxe_counter() { # DEV sent_pkts|rcvd_pkts
	cat "/sys/class/infiniband/$1/ports/1/hw_counters/$2"
}

fabric_snapshot() { # prints the counters as one line, for fabric_check
	echo "$(net_counter veth0 tx_packets) $(net_counter veth1 rx_packets)" \
		"$(net_counter veth1 tx_packets) $(net_counter veth0 rx_packets)" \
		"$(net_counter lo tx_packets)" \
		"$(rxe_counter rxe0 sent_pkts) $(rxe_counter rxe1 rcvd_pkts)" \
		"$(rxe_counter rxe1 sent_pkts) $(rxe_counter rxe0 rcvd_pkts)"
}

# fabric_check BEFORE MIN_PACKETS [MAX_LO]: fails unless at least MIN_PACKETS
# went each way over the veth pair and through both rxe devices since the
# snapshot BEFORE, and no more than MAX_LO packets (default 0) through lo:
# traffic that rxe loops back locally is thousands of packets.
fabric_check() {
	local -a before after
	read -r -a before <<<"$1"
	read -r -a after <<<"$(fabric_snapshot)"
	local min=$2 max_lo=${3:-0}
	local names=("veth0 tx" "veth1 rx" "veth1 tx" "veth0 rx" "lo tx"
		"rxe0 sent" "rxe1 rcvd" "rxe1 sent" "rxe0 rcvd")
	local i delta ok=0
	for i in "${!names[@]}"; do
		delta=$((after[i] - before[i]))
		if [ "$i" = 4 ]; then
			if [ "$delta" -gt "$max_lo" ]; then
				echo "fabric_check: $delta packets went through lo: the traffic did not cross the veth pair"
				ok=1
			fi
		elif [ "$delta" -lt "$min" ]; then
			echo "fabric_check: only $delta packets on ${names[i]}, expected at least $min"
			ok=1
		fi
	done
	echo "fabric_check: veth0->veth1 $((after[0] - before[0])) packets," \
		"veth1->veth0 $((after[2] - before[2])), lo $((after[4] - before[4]))"
	return "$ok"
}

# wait_for_output FILE PATTERN SECONDS: waits until FILE has a line matching
# PATTERN (a server announcing it listens).
wait_for_output() {
	local i
	for ((i = 0; i < $3 * 10; i++)); do
		grep -q "$2" "$1" 2>/dev/null && return 0
		sleep 0.1
	done
	echo "wait_for_output: '$2' did not appear in $1 within $3 s"
	return 1
}
