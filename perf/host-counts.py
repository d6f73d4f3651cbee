# The measuring half of perf/host-gluster-counts: one `gfapi-io serve`
# client against a running brick, 4 KiB reads one after another and then
# stats, each kind counted on its own.  Natively: CPU time and every
# thread's context switches per fop (/proc).  With --callgrind DIR (the
# brick and, through --wrap, the client run under callgrind, dumping into
# DIR): callgrind's counters are zeroed before each kind and dumped after
# it, and the instructions per fop are summed by the object they ran in.
#
# Prints `fop TRANSPORT KIND_NAME VALUE` lines (per fop) beside tables.
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
from gfr_serve import Client, die  # noqa: E402

FILES = 50


def threads(pids, names):
    """{(process, tid): (thread name, voluntary, involuntary, ns on a CPU)}
    of the live threads (schedstat's ns, not clock ticks: a fop takes a
    fraction of a tick)."""
    out = {}
    for pid in pids:
        for tid in os.listdir(f"/proc/{pid}/task"):
            try:
                with open(f"/proc/{pid}/task/{tid}/status") as f:
                    st = dict(line.rstrip("\n").split(":\t", 1) for line in f if ":\t" in line)
                with open(f"/proc/{pid}/task/{tid}/schedstat") as f:
                    ns = int(f.read().split()[0])
            except FileNotFoundError:
                continue
            out[names[pid], tid] = (st["Name"], int(st["voluntary_ctxt_switches"]),
                                    int(st["nonvoluntary_ctxt_switches"]), ns)
    return out


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


def self_cost_by_object(path):
    """Instructions (Ir) by ELF object, from a callgrind dump: each cost
    line counts to the current ob=, except the line after calls=, which is
    the call's inclusive cost.  ob= and cob= share one table of compressed
    names, "(id) name" defining an id and "(id)" using it."""
    names, cur, by, skip = {}, "?", {}, False
    with open(path) as f:
        for line in f:
            if line.startswith(("ob=", "cob=")):
                m = re.match(r"c?ob=(?:\((\d+)\))?\s*(.*)", line.rstrip("\n"))
                if m.group(1) and m.group(2):
                    names[m.group(1)] = m.group(2)
                if line.startswith("ob="):
                    cur = names.get(m.group(1), "?") if m.group(1) else m.group(2)
            elif line.startswith("calls="):
                skip = True
            elif line[:1].isdigit() or line[:1] in "+-*":
                if skip:
                    skip = False
                    continue
                parts = line.split()
                if len(parts) >= 2:
                    by[cur] = by.get(cur, 0) + int(parts[1])
    return by


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
        kinds = [("read4k", [f"reads {fops} 0"]),
                 ("stat", [f"stat {FILES}"] * (fops // FILES))]
        for kind, commands in kinds:
            if a.callgrind:
                for pid in pids:
                    callgrind("--zero", pid)
            t0 = threads(pids, names)
            for cmd in commands:
                c.run(cmd)
            t1 = threads(pids, names)
            if a.callgrind:
                report_instructions(a.callgrind, f"fop {a.transport} {kind}", fops, pids, names)
            else:
                report_native(f"fop {a.transport} {kind}", fops, t0, t1)
        c.run(f"unlink {FILES}")
    finally:
        c.close()


def report_native(kind, fops, t0, t1):
    """A thread that started in between counts from 0; one that exited in
    between is lost (GlusterFS's threads live as long as the process)."""
    print(f"  {kind.split()[-1]}: per fop, by thread (voluntary, involuntary switches; µs on a CPU)")
    vol = invol = ns = 0
    for key, (name, v, n, t) in sorted(t1.items()):
        _, v0, n0, tt0 = t0.get(key, (name, 0, 0, 0))
        if v - v0 or n - n0:
            print(f"    {key[0]:6s} {name:20s} {(v - v0) / fops:8.2f} {(n - n0) / fops:8.2f}"
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
        by = {}
        for obj, ir in self_cost_by_object(newest_dump(directory, pid)).items():
            k = object_kind(obj)
            by[k] = by.get(k, 0) + ir
        total = sum(by.values())
        print(f"  {kind.split()[-1]}, {names[pid]}: instructions per fop, by object")
        for k, ir in sorted(by.items(), key=lambda x: -x[1]):
            if ir / fops >= 100:
                print(f"    {k:44s} {ir / fops:10.0f} {100.0 * ir / total:5.1f}%")
        print(f"{kind}_instructions_{names[pid]} {total / fops:.0f}")


if __name__ == "__main__":
    main(sys.argv[1:])
