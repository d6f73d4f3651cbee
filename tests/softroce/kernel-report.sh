# Sourced by scripts/softroce-run (and tests/softroce/kernel-report-test):
# what a line of the VM's console that starts a kernel report looks like,
# and what kind of report a caught one is.

# kernel_fault: the first line of a report of a fault that no timeout
# inside the VM can end: a soft lockup (a CPU looping in the kernel), an
# RCU stall, a task hung in the kernel, an oops or a panic.  The kernel's
# lines carry a "[ seconds]" prefix, so a test that prints such words is
# not mistaken for the kernel.
kernel_fault='^\[ *[0-9]+\.[0-9]+\] (watchdog: BUG: soft lockup|rcu: INFO: rcu_[a-z]+ (self-)?detected stall|INFO: task .* blocked for more than|BUG: |Oops|general protection fault|kernel BUG at|Kernel panic)'

# kernel_report_kind FILE: prints "lost-timer" when the report in FILE
# (its first line and what the console printed in the seconds after it)
# is an RCU stall that one CPU saw in others that sat idle while a timer
# of theirs was due: the stalled CPUs' backtraces (by NMI) all say
# "skipped: idling", RCU names a "timer handling issue", no task blocks
# the grace period, and nothing else in it is a fault.  No code of the
# guest ran on those CPUs; a timer interrupt never reached them, which
# QEMU's multi-threaded TCG did once in a clean-clone check (a guest idle
# in `sleep`, CPU 0's timer 21 s late; docs/softroce.md).  Prints "fault"
# for every other report: a CPU busy in the kernel shows its registers
# instead, a self-detected stall is the reporting CPU's own, and a soft
# lockup, hung task, oops or panic is never a lost timer.
kernel_report_kind() {
	KERNEL_FAULT=$kernel_fault awk '
		function prefixed(pattern) { return $0 ~ ("^\\[ *[0-9]+\\.[0-9]+\\] " pattern) }
		prefixed("rcu: INFO: rcu_[a-z]+ detected stalls on CPUs/tasks") { others = 1; next }
		$0 ~ ENVIRON["KERNEL_FAULT"] { other_fault = 1 }
		/Possible timer handling issue/ { timer = 1 }
		/\] NMI backtrace for cpu [0-9]+/ { if (/skipped: idling/) idle = 1; else busy = 1 }
		/Task dump for CPU|Tasks blocked on|blocking rcu_node|Offline CPU/ { busy = 1 }
		END { print (others && timer && idle && !busy && !other_fault) ? "lost-timer" : "fault" }
	' "$1"
}
