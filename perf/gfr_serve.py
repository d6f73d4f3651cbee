# The `gfapi-io serve` clients that perf/gluster-rounds and
# perf/gluster-counts drive (tests/gluster/gfapi-io.c, "serve"), and the
# CPU time and context switches of their processes, from /proc.
import os
import select
import subprocess
import sys
import time

# A client answers within this, or the run fails naming it.
REPLY_TIMEOUT_S = 600
HZ = os.sysconf("SC_CLK_TCK")


def die(msg, code=1):
    """Ends the calling program with msg, named after it."""
    print(f"{os.path.basename(sys.argv[0])}: {msg}", file=sys.stderr)
    sys.exit(code)


class Client:
    """One `gfapi-io serve` and the brick it talks to."""

    def __init__(self, label, prog, volfile, volname, brick_pid, log_dir, seed,
                 size_mib, reads, files, wrap=(), brick_run=None, gfr_stat=None):
        """Mounts volname through volfile in a new `prog serve`, whose files
        (size_mib MiB to read, reads offsets drawn, files for metadata) are
        named after label, as are its log and stderr in log_dir; run under
        the wrap command (valgrind) when given, which keeps its pid.  The
        brick is brick_pid here, or on another host when brick_run (the
        words of a command that runs one shell command line there, as
        `ssh HOST`) is given.  With gfr_stat (tools/gfr-stat), a client
        that stops answering is reported with the rdma statistics of it and
        of a brick on this host (connections' credits and queues, pollers),
        which say where a message waits."""
        self.label, self.brick_pid, self.brick_run = label, int(brick_pid), brick_run
        self.gfr_stat = gfr_stat
        self.err_path = os.path.join(log_dir, f"rounds-{label}.err")
        self.err = open(self.err_path, "w")
        self.proc = subprocess.Popen(
            list(wrap) + [prog, "serve", volfile, volname, "--size-mib", str(size_mib),
             "--reads", str(reads), "--files", str(files), "--no-fini",
             "--seed", str(seed), "--dir", f"rounds-{label}",
             "--log", os.path.join(log_dir, f"rounds-{label}.log")],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self.err,
            text=True)
        # its answers, read from the pipe as they come (select() knows
        # nothing of what a buffered reader already holds)
        self.pending = b""
        self.expect("ready")

    def fail(self, what):
        self.err.flush()
        with open(self.err_path) as f:
            tail = f.read()[-2000:]
        die(f"client {self.label} (pid {self.proc.pid}): {what}; its stderr ends:\n{tail}"
            f"{self.stats()}")

    def stats(self):
        """gfr-stat's tables of the client and its local brick, where there
        are any (over tcp there are none), for a failure report."""
        if not self.gfr_stat:
            return ""
        out = ""
        pids = [self.proc.pid] + ([] if self.brick_run else [self.brick_pid])
        for who, pid in zip(("client", "brick"), pids):
            try:
                res = subprocess.run([self.gfr_stat, str(pid)], capture_output=True, text=True,
                                     timeout=30)
                text = res.stdout if res.returncode == 0 else res.stderr
            except (OSError, subprocess.TimeoutExpired) as e:
                text = f"{e}\n"
            out += f"\n{who} (pid {pid}), gfr-stat:\n{text}"
        return out

    def line(self):
        fd = self.proc.stdout.fileno()
        deadline = time.monotonic() + REPLY_TIMEOUT_S
        while b"\n" not in self.pending:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([fd], [], [], left)[0]:
                self.fail(f"no answer within {REPLY_TIMEOUT_S} s")
            chunk = os.read(fd, 65536)
            if not chunk:
                self.fail(f"exited (status {self.proc.wait()})")
            self.pending += chunk
        text, self.pending = self.pending.split(b"\n", 1)
        return text.decode()

    def expect(self, word):
        got = self.line()
        if got != word:
            self.fail(f"said {got!r} where {word!r} was due")

    def run(self, command):
        """The answer's values: a list of latencies (µs) or one number."""
        try:
            self.proc.stdin.write(command + "\n")
            self.proc.stdin.flush()
        except BrokenPipeError:
            self.fail(f"exited (status {self.proc.wait()}) before {command!r}")
        answer = self.line().split()
        if not answer or answer[0] == "error":
            self.fail(f"{command!r}: {' '.join(answer)}")
        self.expect("ok")
        values = [float(v) for v in answer[1:]]
        return values if answer[0] == "lat" else values[0]

    def pids(self):
        return [self.proc.pid, self.brick_pid]

    def snapshot(self):
        """proc_snapshot of the client and its brick, wherever it runs."""
        if not self.brick_run:
            return proc_snapshot(self.pids())
        ticks, threads = proc_snapshot([self.proc.pid])
        brick_ticks, brick_threads = remote_proc_snapshot(self.brick_pid, self.brick_run)
        threads.update(brick_threads)
        return add_ticks(ticks, brick_ticks), threads

    def close(self):
        try:
            self.proc.stdin.write("quit\n")
            self.proc.stdin.close()
            self.proc.wait(timeout=120)
        except BrokenPipeError:
            self.proc.wait()
        except subprocess.TimeoutExpired:
            self.proc.kill()
        self.err.close()


def stat_ticks(text):
    """(user, system) CPU clock ticks from the text of /proc/PID/stat: the
    process's, its exited threads' included."""
    fields = text.rsplit(")", 1)[1].split()
    return int(fields[11]), int(fields[12])


def switches(status):
    """(voluntary, involuntary) context switches from a thread's status
    fields (name: value)."""
    return int(status["voluntary_ctxt_switches"]), int(status["nonvoluntary_ctxt_switches"])


def cpu_ticks(pid):
    """stat_ticks of process pid on this host."""
    with open(f"/proc/{pid}/stat") as f:
        return stat_ticks(f.read())


def thread_table(pids, cpu_ns=False):
    """{(pid, tid): (name, voluntary, involuntary, ns)} of the live threads
    of the processes on this host; ns, with cpu_ns, is the thread's time on
    a CPU from schedstat (finer than clock ticks), else None.  A thread
    that exits while listed is left out: its files are gone (ENOENT) or,
    while it is being reaped, still listed but unreadable (ESRCH)."""
    out = {}
    for pid in pids:
        for tid in os.listdir(f"/proc/{pid}/task"):
            ns = None
            try:
                with open(f"/proc/{pid}/task/{tid}/status") as f:
                    st = dict(line.rstrip("\n").split(":\t", 1) for line in f if ":\t" in line)
                if cpu_ns:
                    with open(f"/proc/{pid}/task/{tid}/schedstat") as f:
                        ns = int(f.read().split()[0])
            except (FileNotFoundError, ProcessLookupError):
                continue
            out[pid, tid] = (st["Name"],) + switches(st) + (ns,)
    return out


def add_ticks(a, b):
    """The sum of two (user, system) tick pairs."""
    return a[0] + b[0], a[1] + b[1]


def proc_snapshot(pids):
    """The processes' (user, system) CPU ticks (their exited threads'
    included) and, per live thread, its voluntary and its involuntary
    context switches."""
    ticks = (0, 0)
    for pid in pids:
        ticks = add_ticks(ticks, cpu_ticks(pid))
    return ticks, {tid: (v, n) for (_, tid), (_, v, n, _) in thread_table(pids).items()}


# One process's stat, then each thread's status after a "task TID" line;
# a thread that exits meanwhile is left out (its status gone), not an
# error: only a missing process is.
REMOTE_PROC = ('cat /proc/{pid}/stat || exit 1; for t in /proc/{pid}/task/*; do '
               'echo "task ${{t##*/}}"; cat "$t/status" 2>/dev/null; done; exit 0')


def remote_proc_snapshot(pid, run):
    """proc_snapshot of process pid on another host, through run (the words
    of a command that runs one shell command line there); its threads are
    keyed "peer:TID", apart from this host's."""
    try:
        res = subprocess.run(list(run) + [REMOTE_PROC.format(pid=pid)], capture_output=True,
                             text=True, timeout=REPLY_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        die(f"{' '.join(run)}: no /proc of pid {pid} within {REPLY_TIMEOUT_S} s")
    lines = res.stdout.splitlines()
    if res.returncode != 0 or not lines:
        die(f"{' '.join(run)}: cannot read /proc of pid {pid} ({res.returncode}): {res.stderr.strip()}")
    threads, tid, st = {}, None, {}

    def keep():
        if tid and "voluntary_ctxt_switches" in st:
            threads["peer:" + tid] = switches(st)
    for line in lines[1:]:
        if line.startswith("task "):
            keep()
            tid, st = line[5:], {}
        elif ":" in line:
            k, v = line.split(":", 1)
            st[k] = v
    keep()
    return stat_ticks(lines[0]), threads


def proc_delta(before, after):
    """(CPU ticks, voluntary switches, all switches, user ticks, system
    ticks) between two snapshots.
    A thread counts from its first snapshot, or from 0 when it started in
    between; what a thread did before it exited in between is lost (the
    worker pool's threads exit after 1 s idle), so switches can only be
    undercounted, as perf/proc-delta's."""
    vol = total = 0
    for tid, (v, n) in after[1].items():
        v0, n0 = before[1].get(tid, (0, 0))
        vol += v - v0
        total += v - v0 + n - n0
    user, system = after[0][0] - before[0][0], after[0][1] - before[0][1]
    return user + system, vol, total, user, system
