# The measuring half of perf/host-gluster-counts: one `gfapi-io serve`
# client against a running brick, 4 KiB reads one after another, stats,
# then 128 KiB writes (4 MiB files through write-behind, each to its
# fsync), each kind counted on its own.  Natively: CPU time and every
# thread's context switches per fop (/proc).  With --callgrind DIR (the
# brick and, through --wrap, the client run under callgrind, dumping into
# DIR): callgrind's counters are zeroed before each kind and dumped after
# it, and the instructions per fop are summed by the object they ran in.
#
# Prints `fop TRANSPORT KIND_NAME VALUE` lines (per fop) beside tables.
# `host-counts.py split DUMP FOPS LINE-NAME` splits a callgrind dump of
# FOPS operations (perf/rpc-instructions') the same way.
#
# Usage: python3 host-counts.py --reads N [--transport T] [--callgrind DIR --wrap CMD]
#                               --gfapi-io PROG --log-dir DIR VOLFILE VOLNAME BRICK_PID
import glob
import os
import re
import subprocess
import sys

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gfr_serve import HZ, Client, cpu_ticks, die, thread_table  # noqa: E402

FILES = 50


def user_system_ticks(pids):
    """The processes' user and system CPU time in clock ticks together: how
    a fop's CPU time splits between user space and the kernel."""
    ticks = [cpu_ticks(pid) for pid in pids]
    return sum(t[0] for t in ticks), sum(t[1] for t in ticks)


def object_kind(path):
    """Which part of the stack an ELF object is."""
    base = os.path.basename(path)
    if "/xlator/" in path:
        return "xlators (" + path.split("/xlator/", 1)[1].split("/")[0] + ")"
    if "/rpc-transport/" in path:
        return "transport " + base
    for prefix, kind in (("libglusterfs", "libglusterfs"), ("libgfrpc", "libgfrpc+libgfxdr"),
                         ("libgfxdr", "libgfrpc+libgfxdr"), ("libgfapi", "libgfapi"),
                         ("libc.so", "libc"), ("ld-linux", "ld.so"), ("libtirpc", "libtirpc"),
                         ("libcrypto", "libcrypto"), ("liburcu", "liburcu")):
        if base.startswith(prefix):
            return kind
    if base in ("glusterfsd", "gfapi-io"):
        return "the program (" + base + ")"
    return "other"


# callgrind's name compression: one table for objects (ob=, cob=), one
# for source files (fl=, fi=, fe=, cfi=, cfl=); "(id) name" defines an id,
# "(id)" uses it.  Which lines set the current object or file:
NAME_TABLES = {"ob": "ob", "cob": "ob", "fl": "fl", "fi": "fl", "fe": "fl",
               "cfi": "fl", "cfl": "fl"}
CURRENT = {"ob": "ob", "fl": "fl", "fi": "fl", "fe": "fl"}


def self_cost(path):
    """Instructions (Ir) by (ELF object, source file), from a callgrind
    dump: each cost line counts to the current ob= and fl= (or the fi= or
    fe= of inlined code), except the line after calls=, which is the
    call's inclusive cost."""
    names = {"ob": {}, "fl": {}}
    cur = {"ob": "?", "fl": "?"}
    by, skip = {}, False
    with open(path) as f:
        for line in f:
            key = line.split("=", 1)[0] if "=" in line[:5] else ""
            if key in NAME_TABLES:
                table = names[NAME_TABLES[key]]
                m = re.match(r"\w+=(?:\((\d+)\))?\s*(.*)", line.rstrip("\n"))
                if m.group(1) and m.group(2):
                    table[m.group(1)] = m.group(2)
                if key in CURRENT:
                    cur[CURRENT[key]] = table.get(m.group(1), "?") if m.group(1) else m.group(2)
            elif line.startswith("calls="):
                skip = True
            elif line[:1].isdigit() or line[:1] in "+-*":
                if skip:
                    skip = False
                    continue
                parts = line.split()
                if len(parts) >= 2:
                    k = (cur["ob"], cur["fl"])
                    by[k] = by.get(k, 0) + int(parts[1])
    return by


TOP = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def source_part(path):
    """Which part of this project a source file (as its debug information
    names it, under this tree) belongs to; None for any other file."""
    path = os.path.normpath(path)
    for sub, part in (("rpc-transport-rdma/", "the plugin (rpc-transport-rdma/)"),
                      ("lib/", "the engine (lib/)"),
                      ("tests/unit/verbs-model", "the verbs model (the adapter's stand-in)"),
                      ("perf/", "the benchmark")):
        if path.startswith(os.path.join(TOP, sub)):
            return part
    return None


def callgrind(action, pid):
    res = subprocess.run(["callgrind_control", action, str(pid)], capture_output=True, text=True)
    if res.returncode != 0:
        die(f"callgrind_control {action} {pid}: {res.stderr.strip() or res.stdout.strip()}")


def newest_dump(directory, pid):
    dumps = glob.glob(os.path.join(directory, f"callgrind.{pid}.*"))
    if not dumps:
        die(f"no callgrind dump of pid {pid} in {directory}")
    return max(dumps, key=lambda p: int(p.rsplit(".", 1)[1]))


def main(argv):
    if argv[:1] == ["split"]:
        if len(argv) != 4:
            die("usage: host-counts.py split DUMP FOPS LINE-NAME", 2)
        split(argv[1], int(argv[2]), "one RPC over the verbs model, both engines", argv[3])
        return
    import argparse
    p = argparse.ArgumentParser(prog="host-counts")
    p.add_argument("--reads", type=int, required=True)
    p.add_argument("--transport", default="tcp")
    p.add_argument("--callgrind", default=None)
    p.add_argument("--wrap", default="")
    p.add_argument("--gfapi-io", required=True)
    p.add_argument("--log-dir", required=True)
    p.add_argument("side", nargs=3)
    a = p.parse_args(argv)
    volfile, volname, brick = a.side
    fops = max(FILES, a.reads // FILES * FILES)
    c = Client("host", a.gfapi_io, volfile, volname, brick, a.log_dir, 5, 4, fops, FILES,
               wrap=a.wrap.split())
    try:
        c.run("reads 20 0")
        c.run(f"create {FILES}")
        pids = c.pids()
        names = dict(zip(pids, ("client", "brick")))
        # "write 4": a fresh 4 MiB file in 32 writes of 128 KiB, then its
        # fsync; its create and fsync count towards its writes
        files = max(2, fops // 64)
        kinds = [("read4k", fops, [f"reads {fops} 0"]),
                 ("stat", fops, [f"stat {FILES}"] * (fops // FILES)),
                 ("write128k", 32 * files, ["write 4"] * files)]
        for kind, n, commands in kinds:
            if a.callgrind:
                for pid in pids:
                    callgrind("--zero", pid)
            t0, us0 = thread_table(pids, cpu_ns=True), user_system_ticks(pids)
            for cmd in commands:
                c.run(cmd)
            t1, us1 = thread_table(pids, cpu_ns=True), user_system_ticks(pids)
            if a.callgrind:
                report_instructions(a.callgrind, f"fop {a.transport} {kind}", n, pids, names)
            else:
                report_native(f"fop {a.transport} {kind}", n, t0, t1, names)
                print(f"fop {a.transport} {kind}_user_us {(us1[0] - us0[0]) * 1e6 / HZ / n:.1f}")
                print(f"fop {a.transport} {kind}_system_us {(us1[1] - us0[1]) * 1e6 / HZ / n:.1f}")
        c.run(f"unlink {FILES}")
    finally:
        c.close()


def report_native(kind, fops, t0, t1, names):
    """Per fop between the thread tables t0 and t1, each thread under its
    process's name in names.  A thread that started in between counts from
    0; one that exited in between is lost (GlusterFS's threads live as long
    as the process)."""
    print(f"  {kind.split()[-1]}: per fop, by thread (voluntary, involuntary switches; µs on a CPU)")
    vol = invol = ns = 0
    for key, (name, v, n, t) in sorted(t1.items()):
        _, v0, n0, tt0 = t0.get(key, (name, 0, 0, 0))
        if v - v0 or n - n0:
            print(f"    {names[key[0]]:6s} {name:20s} {(v - v0) / fops:8.2f} {(n - n0) / fops:8.2f}"
                  f" {(t - tt0) / 1e3 / fops:8.1f}")
        vol += v - v0
        invol += n - n0
        ns += t - tt0
    print(f"{kind}_cpu_us {ns / 1e3 / fops:.1f}")
    print(f"{kind}_vcswitches {vol / fops:.2f}")
    print(f"{kind}_ivcswitches {invol / fops:.2f}")


def report_instructions(directory, kind, fops, pids, names):
    for pid in pids:
        callgrind("--dump=" + kind.split()[-1], pid)
    for pid in pids:
        split(newest_dump(directory, pid), fops, f"{kind.split()[-1]}, {names[pid]}",
              f"{kind}_instructions_{names[pid]}")


def split(dump, fops, title, line):
    """The instructions per fop of a dump, by part: this project's source
    files apart (the plugin, the engine), the rest by ELF object; then
    the total as `LINE N`, without the driving program's own work (gfapi-io
    fills what it writes with a pattern), which is shown but not counted."""
    by = {}
    for (obj, fl), ir in self_cost(dump).items():
        k = source_part(fl) or object_kind(obj)
        by[k] = by.get(k, 0) + ir
    total = sum(ir for k, ir in by.items() if not k.startswith("the program"))
    print(f"  {title}: instructions per fop, by part")
    for k, ir in sorted(by.items(), key=lambda x: -x[1]):
        if ir / fops >= 100:
            print(f"    {k:44s} {ir / fops:10.0f}" +
                  ("  (not counted)" if k.startswith("the program") else f" {100.0 * ir / total:5.1f}%"))
    for k in ("the engine (lib/)", "the plugin (rpc-transport-rdma/)"):
        if k in by:
            print(f"{line}_{k.split()[1]} {by[k] / fops:.0f}")
    print(f"{line} {total / fops:.0f}")


if __name__ == "__main__":
    main(sys.argv[1:])
