# Mount points for host directories inside another Debian root (the Debian
# 13 root of vm-root-debian13), for tests/softroce/root-run and
# scripts/softroce-run --root.  Sourced by bash.
#
# root_points ROOT PATH...: makes ROOT/PATH for each PATH that is missing
# and records what it made in ROOT.points; root_points_remove removes every
# recorded point again (empty directories only, deepest first) once no
# other user of ROOT is left.  Users of one root may overlap (scripts/check
# runs a QEMU VM and a UML VM in it side by side): each holds a shared lock
# on ROOT.points.lock from root_points to root_points_remove, and only one
# that gets it exclusive removes, so no user loses a mount point while it
# binds onto it.
root_lock_fd=""
root_points_root=""
root_points() {
	local root=$1 want path missing
	shift
	root_points_root=$root
	exec {root_lock_fd}>>"$root.points.lock" && flock -s "$root_lock_fd" || return 1
	for want in "$@"; do
		path=$want missing=""
		while [ ! -e "$root$path" ]; do
			missing=$path
			path=$(dirname "$path")
		done
		[ -n "$missing" ] || continue
		mkdir -p "$root$want" || return 1
		path=$want
		while :; do
			echo "$root$path" >>"$root.points"
			[ "$path" = "$missing" ] && break
			path=$(dirname "$path")
		done
	done
}
root_points_remove() {
	local root=$root_points_root d
	[ -n "$root_lock_fd" ] || return 0
	if flock -n -x "$root_lock_fd" && [ -e "$root.points" ]; then
		sort -r -u "$root.points" | while read -r d; do rmdir "$d" 2>/dev/null || true; done
		rm -f "$root.points"
	fi
	exec {root_lock_fd}>&-
	root_lock_fd=""
}

# root_binds TOP: the host directories a command in the root needs at their
# own paths: the project's tree, and the current directory when it is
# elsewhere.
root_binds() {
	echo "$1"
	case "$PWD/" in "$1"/*) ;; *) echo "$PWD" ;; esac
}
