# Mount points for host directories inside another Debian root (the Debian
# 13 root of vm-root-debian13), for tests/softroce/root-run and
# scripts/softroce-run --root.  Sourced by bash.
#
# root_points ROOT PATH...: makes ROOT/PATH for each PATH that is missing
# and records what it made in root_points_made; root_points_remove removes
# those again (empty directories only, deepest first).
root_points_made=()
root_points() {
	local root=$1 want path missing
	shift
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
			root_points_made+=("$root$path")
			[ "$path" = "$missing" ] && break
			path=$(dirname "$path")
		done
	done
}
root_points_remove() {
	local d
	for d in "${root_points_made[@]}"; do rmdir "$d" 2>/dev/null || true; done
	root_points_made=()
}

# root_binds TOP: the host directories a command in the root needs at their
# own paths: the project's tree, and the current directory when it is
# elsewhere.
root_binds() {
	echo "$1"
	case "$PWD/" in "$1"/*) ;; *) echo "$PWD" ;; esac
}
