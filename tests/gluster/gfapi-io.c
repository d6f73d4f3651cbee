/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * gfapi-io: the libgfapi client of the end-to-end tests and of the tcp-vs-rdma
 * comparison.  It mounts a volume from a hand-written client volfile, so it
 * behaves the same whichever transport the volfile names.
 *
 *   gfapi-io check VOLFILE VOLNAME [--size-mib N] [--files N] [--random-reads N]
 *       writes N MiB of seeded pseudo-random data, reads it back sequentially
 *       and at random offsets comparing every byte, then creates, stats, lists
 *       (readdirplus) and removes N small files.  Ends with "gfapi-io: OK"
 *       (exit 0) or a "gfapi-io: FAIL ..." line (exit 1).
 *   gfapi-io bench VOLFILE VOLNAME [--size-mib N] [--reads N] [--files N]
 *                  [--threads N]
 *       sequential throughput, 4 KiB random read latency on 1 and N threads,
 *       create/stat/unlink latency: "result NAME VALUE" lines on stdout, a
 *       table and everything else on stderr.
 *   gfapi-io pair VOLFILE VOLNAME VOLFILE2 VOLNAME2 [--size-mib N] [--reads N]
 *                 [--block N] [--files N]
 *       4 KiB random read latency of two volumes (say, one over tcp and
 *       one over rdma) measured in turns of N reads from one process, so
 *       that both see the same moments of a noisy machine: "result
 *       VOLNAME.read4k_turns_p50_us VALUE" lines (and p99) for each.
 *       With --files N (default 0), then N creates, N stats and N unlinks
 *       on each volume, in turns the same way: VOLNAME.create_turns_p50_us
 *       and so on.
 *   gfapi-io io VOLFILE VOLNAME --seconds N [--max-op-seconds S]
 *               [--io-kib K] [--stop-file FILE]
 *       creat/pwrite/pread/compare/close a K KiB file (default 4; larger
 *       ones move by RDMA READ/WRITE) in a loop while a test injects faults;
 *       prints when errors begin and when I/O resumes, then
 *       "ok=N errors=N outages=N resumed=0|1".  Stops after N seconds, or
 *       earlier once FILE exists.  Exit 0 if the last cycle worked, 2 if
 *       I/O had not resumed, 1 on a hang (a call longer than S seconds) or
 *       on wrong data.
 *
 *   gfapi-io flood VOLFILE VOLNAME --seconds N [--threads N] [--io-kib K]
 *       N threads (default 4), each on a file of its own, write a K KiB
 *       block of a fresh pattern (default 4 KiB; 16 blocks a file, in turn)
 *       and read it back compared, over and over for N seconds: one
 *       client with as many calls in flight as threads, for back-pressure
 *       tests.  Prints "result flood.ops N" (writes and reads) and
 *       "result flood.mibps X"; exit 0, or 1 on an error or wrong data.
 *
 *   gfapi-io hold VOLFILE VOLNAME --sync-dir DIR [--reads N | --writes N |
 *                 --creates N | --unlinks N] [--io-kib K] [--seconds N]
 *       for tests and benchmarks that look at a client between its steps:
 *       writes a K KiB file (default 4), creates DIR/ready, waits for
 *       DIR/go, reads the file N times (preads of K KiB, compared; default
 *       2000) or, with --writes, writes it N times; with --creates, creates
 *       and closes N files instead, with --unlinks, unlinks N files it made
 *       before DIR/ready.  Prints "result hold.OP_mean_us VALUE" lines (and
 *       p50, p99; OP is read, write, create or unlink), writes each call's
 *       latency in µs to DIR/lat-us, creates DIR/done, waits for DIR/stop,
 *       compares the file after writes (removes the files left after
 *       creates) and unmounts.  Each wait gives up after N seconds
 *       (default 300; exit 1).
 *
 *   gfapi-io serve VOLFILE VOLNAME [--size-mib N] [--reads N] [--files N]
 *       mounts once, writes an N MiB data file (default 64), prints "ready"
 *       and then answers commands on standard input, one a line, until
 *       "quit": "reads N GAP_US" (N 4 KiB random preads one at a time, each
 *       after GAP_US of idling), "threads T N" (T threads of N such reads),
 *       "write MIB" (a fresh file of MIB MiB in 128 KiB writes, timed to
 *       the fsync), "read1m" (that file read back in 1 MiB reads, compared)
 *       and "create N", "stat N", "unlink N" (files f00000.. of a
 *       directory of its own).  Each answer is "lat US..." (every call's
 *       latency), "iops X" or "mibps X", then "ok"; a bad command gets
 *       "error ..." and changes nothing.  N is at most --reads (default
 *       2000) or --files (default 2000), MIB at most --size-mib.
 *
 * Common options: --log FILE (gfapi log, level INFO; default /dev/null),
 * --dir NAME (work directory on the volume, created if missing; default
 * gfapi-io), --seed N (pattern seed; default from the clock, always printed),
 * --no-fini (skip glfs_fini, which takes seconds).  Usage errors exit 64.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <math.h>
#include <poll.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <glusterfs/api/glfs.h>

#define KIB 1024u
#define MIB (1024u * KIB)
#define WRITE_CHUNK (128 * KIB)
#define READ_CHUNK MIB
#define WRITE_BATCH (64 * MIB)
#define SMALL_IO (4 * KIB)
#define NSEC 1000000000ull
/* GF_LOG_INFO; glusterfs/logging.h would drag in half of libglusterfs */
#define GFAPI_LOG_INFO 7
#define EXIT_USAGE 64
/* bench: random reads compared with the pattern before the timed ones */
#define BENCH_VERIFY_READS 64
/* io: pause after a failed cycle so a dead brick is not spun on */
#define IO_RETRY_DELAY_NS (10 * 1000000ull)
#define PATH_LEN 4096
#define MAX_FILES 100000 /* file names are f00000..f99999 */
/* "f" and any unsigned, so the compiler can see nothing is truncated */
#define NAME_LEN 12
#define MAX_RESULTS 32

enum mode {
    MODE_CHECK = 1,
    MODE_BENCH = 2,
    MODE_IO = 4,
    MODE_PAIR = 8,
    MODE_HOLD = 16,
    MODE_FLOOD = 32,
    MODE_SERVE = 64
};
#define ALL_MODES                                                              \
    (MODE_CHECK | MODE_BENCH | MODE_IO | MODE_PAIR | MODE_HOLD | MODE_FLOOD | MODE_SERVE)
/* flood: blocks in each thread's file */
#define FLOOD_BLOCKS 16

struct opts {
    enum mode mode;
    const char *volfile;
    const char *volname;
    const char *volfile2; /* pair: the second volume */
    const char *volname2;
    const char *log;
    const char *dir;
    bool no_fini;
    uint64_t seed;
    unsigned size_mib;
    unsigned files;
    unsigned random_reads;
    unsigned reads;
    unsigned threads;
    unsigned block; /* pair: reads per turn */
    unsigned seconds;
    unsigned max_op_seconds;
    unsigned io_kib;       /* io, hold: size of each file */
    unsigned writes;       /* hold: writes instead of reads */
    unsigned creates;      /* hold: creates instead of reads */
    unsigned unlinks;      /* hold: unlinks instead of reads */
    const char *stop_file; /* io: stop once this exists */
    const char *sync_dir;  /* hold: where the steps are signalled */
};

/* Human-readable output: stdout, except in bench mode where stdout carries
 * only the "result" lines. */
static FILE *out;

static void say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void say(const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    vfprintf(out, fmt, ap);
    va_end(ap);
    fputc('\n', out);
}

static void fail(const char *fmt, ...)
    __attribute__((format(printf, 1, 2), noreturn));
static void fail(const char *fmt, ...)
{
    va_list ap;

    fputs("gfapi-io: FAIL ", out);
    va_start(ap, fmt);
    vfprintf(out, fmt, ap);
    va_end(ap);
    fputc('\n', out);
    fflush(NULL);
    /* gfapi's threads are still running: exit handlers racing them could
     * crash or hang, and the watchdog calls this from its own thread */
    _exit(1);
}

static uint64_t now_ns(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * NSEC + (uint64_t)ts.tv_nsec;
}

/* CPU time the whole machine has spent busy (every CPU, every process and
 * the kernel) since boot, from /proc/stat; 0 where that cannot be read.
 * In the VM the client, the brick and soft-RoCE's emulation of the NIC
 * share these CPUs, so this is what a transfer costs all of them. */
static uint64_t machine_busy_ns(void)
{
    unsigned long long user, nice, sys, idle, iowait, irq, softirq, steal;
    long hz = sysconf(_SC_CLK_TCK);
    FILE *f = fopen("/proc/stat", "r");
    int n;

    if (!f)
        return 0;
    n = fscanf(f, "cpu %llu %llu %llu %llu %llu %llu %llu %llu", &user, &nice,
               &sys, &idle, &iowait, &irq, &softirq, &steal);
    fclose(f);
    if (n != 8 || hz <= 0)
        return 0;
    return (user + nice + sys + irq + softirq + steal) * (NSEC / (uint64_t)hz);
}

static double secs(uint64_t ns)
{
    return (double)ns / NSEC;
}

static double mibps(uint64_t bytes, uint64_t ns)
{
    return ns ? (double)bytes / MIB / secs(ns) : 0.0;
}

static void *xmalloc(size_t n)
{
    void *p = malloc(n);

    if (!p)
        fail("out of memory (%zu bytes)", n);
    return p;
}

static void mkpath(char *buf, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static void mkpath(char *buf, const char *fmt, ...)
{
    va_list ap;
    int n;

    va_start(ap, fmt);
    n = vsnprintf(buf, PATH_LEN, fmt, ap);
    va_end(ap);
    if (n < 0 || n >= PATH_LEN)
        fail("path too long: %s", buf);
}

/* ---- the data pattern ---------------------------------------------------- */

/* splitmix64's finaliser: every input bit affects every output bit */
static uint64_t mix64(uint64_t z)
{
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

/* splitmix64 generator, for random offsets */
static uint64_t rng_next(uint64_t *state)
{
    *state += 0x9e3779b97f4a7c15ull;
    return mix64(*state);
}

/* The file's contents are a pure function of (seed, offset): each 8-byte
 * word is mix64 of the seed and the word's index, so any chunk can be
 * regenerated for comparison without keeping the file in memory, and data
 * landing at the wrong offset or from an earlier run does not match.  All
 * I/O in this program is 8-byte aligned, which this relies on. */
static void fill_pattern(uint8_t *buf, size_t len, uint64_t seed, uint64_t off)
{
    for (size_t i = 0; i < len; i += 8) {
        uint64_t w = htole64(
            mix64(seed + ((off + i) >> 3) * 0x9e3779b97f4a7c15ull));

        memcpy(buf + i, &w, 8);
    }
}

/* Fails unless got holds the pattern for [off, off + len). */
static void verify(const uint8_t *got, uint8_t *scratch, size_t len,
                   uint64_t seed, uint64_t off, const char *path)
{
    size_t first = len, bad = 0;

    fill_pattern(scratch, len, seed, off);
    if (memcmp(got, scratch, len) == 0)
        return;
    for (size_t i = 0; i < len; i++) {
        if (got[i] != scratch[i]) {
            if (first == len)
                first = i;
            bad++;
        }
    }
    fail("data mismatch: pread %s offset %" PRIu64 " length %zu: first bad "
         "byte at offset %" PRIu64 " expected 0x%02x got 0x%02x (%zu bytes "
         "differ)",
         path, off, len, off + first, scratch[first], got[first], bad);
}

#define CSUM_INIT 0xcbf29ce484222325ull

/* FNV-1a over little-endian 64-bit words rather than bytes: an eighth of
 * the multiplies, and it is only compared with itself. */
static uint64_t csum_update(uint64_t h, const uint8_t *buf, size_t len)
{
    for (size_t i = 0; i < len; i += 8) {
        uint64_t w;

        memcpy(&w, buf + i, 8);
        h = (h ^ le64toh(w)) * 0x100000001b3ull;
    }
    return h;
}

/* ---- gfapi helpers -------------------------------------------------------- */

/* The io mode's watchdog: the start time of the gfapi call in progress (0 when
 * none is) and its name.  Elsewhere nothing reads them. */
static _Atomic uint64_t op_started_ns;
static const char *_Atomic op_name;

static void op_begin(const char *name)
{
    atomic_store(&op_name, name);
    atomic_store(&op_started_ns, now_ns());
}

static void op_end(void)
{
    atomic_store(&op_started_ns, 0);
}

/* Evaluates a gfapi call under the watchdog's eye, keeping its errno. */
#define GUARDED(name, call)                                                    \
    ({                                                                         \
        op_begin(name);                                                        \
        __typeof__(call) guarded_ret_ = (call);                                \
        int guarded_errno_ = errno;                                            \
        op_end();                                                              \
        errno = guarded_errno_;                                                \
        guarded_ret_;                                                          \
    })

/* Fails on an error and on a short transfer: every transfer here lies inside
 * a file of known size, so a short one means lost data. */
static void check_io(const char *op, const char *path, uint64_t off,
                     size_t len, ssize_t n)
{
    if (n < 0)
        fail("%s %s offset %" PRIu64 " length %zu: %s", op, path, off, len,
             strerror(errno));
    if ((size_t)n != len)
        fail("short %s %s offset %" PRIu64 ": %zd of %zu bytes", op, path,
             off, n, len);
}

static glfs_t *volume_mount(const char *volfile, const char *volname,
                            const char *log)
{
    glfs_t *fs = glfs_new(volname);
    uint64_t t0;

    if (!fs)
        fail("glfs_new %s: %s", volname, strerror(errno));
    if (glfs_set_volfile(fs, volfile))
        fail("glfs_set_volfile %s: %s", volfile, strerror(errno));
    if (glfs_set_logging(fs, log, GFAPI_LOG_INFO))
        fail("glfs_set_logging %s: %s", log, strerror(errno));
    t0 = now_ns();
    if (GUARDED("glfs_init", glfs_init(fs)))
        fail("glfs_init %s volume %s: %s (gfapi log: %s)", volfile,
             volname, strerror(errno), log);
    say("glfs_init: %.3f s", secs(now_ns() - t0));
    return fs;
}

static void volume_unmount(glfs_t *fs, const struct opts *o)
{
    uint64_t t0 = now_ns();

    if (o->no_fini) {
        say("glfs_fini: skipped (--no-fini)");
        return;
    }
    if (GUARDED("glfs_fini", glfs_fini(fs)))
        fail("glfs_fini: %s", strerror(errno));
    say("glfs_fini: %.3f s", secs(now_ns() - t0));
}

static void make_dir(glfs_t *fs, const char *path, bool may_exist)
{
    if (GUARDED("mkdir", glfs_mkdir(fs, path, 0755)) &&
        !(may_exist && errno == EEXIST))
        fail("mkdir %s: %s", path, strerror(errno));
}

static glfs_fd_t *create_file(glfs_t *fs, const char *path, int flags)
{
    glfs_fd_t *fd = glfs_creat(fs, path, flags, 0644);

    if (!fd)
        fail("creat %s: %s", path, strerror(errno));
    return fd;
}

static void close_file(glfs_fd_t *fd, const char *path)
{
    if (glfs_close(fd))
        fail("close %s: %s", path, strerror(errno));
}

static void unlink_file(glfs_t *fs, const char *path)
{
    if (glfs_unlink(fs, path))
        fail("unlink %s: %s", path, strerror(errno));
}

static void remove_dir(glfs_t *fs, const char *path)
{
    if (glfs_rmdir(fs, path))
        fail("rmdir %s: %s", path, strerror(errno));
}

/* ---- bulk data --------------------------------------------------------- */

/* Time spent inside gfapi calls (pattern generation and comparison are left
 * out, so they do not count against the transport), the machine's busy CPU
 * time meanwhile (machine_busy_ns) and the data's checksum. */
struct xfer {
    uint64_t ns;
    uint64_t busy_ns;
    uint64_t csum;
};

/* The data is generated in batches of up to WRITE_BATCH before their
 * writes, with none in flight meanwhile (each batch ends with an fsync):
 * under TCG generating it costs about as much CPU as moving it, and behind
 * write-behind it would otherwise compete with the transfers it is timed
 * against. */
static struct xfer write_pattern(glfs_fd_t *fd, const char *path,
                                 uint64_t size, uint64_t seed)
{
    uint64_t batch = size < WRITE_BATCH ? size : WRITE_BATCH;
    uint8_t *buf = xmalloc(batch);
    struct xfer x = { 0, 0, CSUM_INIT };
    uint64_t t0, busy0;

    for (uint64_t start = 0; start < size; start += batch) {
        uint64_t len = size - start < batch ? size - start : batch;

        fill_pattern(buf, len, seed, start);
        x.csum = csum_update(x.csum, buf, len);
        t0 = now_ns();
        busy0 = machine_busy_ns();
        for (uint64_t off = 0; off < len; off += WRITE_CHUNK)
            check_io("pwrite", path, start + off, WRITE_CHUNK,
                     glfs_pwrite(fd, buf + off, WRITE_CHUNK, start + off, 0,
                                 NULL, NULL));
        if (glfs_fsync(fd, NULL, NULL))
            fail("fsync %s: %s", path, strerror(errno));
        x.ns += now_ns() - t0;
        x.busy_ns += machine_busy_ns() - busy0;
    }
    free(buf);
    return x;
}

/* Reads the whole file in READ_CHUNK preads, comparing every byte. */
static struct xfer read_pattern(glfs_fd_t *fd, const char *path,
                                uint64_t size, uint64_t seed)
{
    uint8_t *buf = xmalloc(READ_CHUNK), *scratch = xmalloc(READ_CHUNK);
    struct xfer x = { 0, 0, CSUM_INIT };

    for (uint64_t off = 0; off < size; off += READ_CHUNK) {
        uint64_t t0 = now_ns();

        check_io("pread", path, off, READ_CHUNK,
                 glfs_pread(fd, buf, READ_CHUNK, off, 0, NULL));
        x.ns += now_ns() - t0;
        verify(buf, scratch, READ_CHUNK, seed, off, path);
        x.csum = csum_update(x.csum, buf, READ_CHUNK);
    }
    free(scratch);
    free(buf);
    return x;
}

static uint64_t random_block(uint64_t *rng, uint64_t size)
{
    return rng_next(rng) % (size / SMALL_IO) * SMALL_IO;
}

/* count random aligned SMALL_IO preads, each compared with the pattern;
 * returns the time spent in them. */
static uint64_t random_reads_verified(glfs_fd_t *fd, const char *path,
                                      uint64_t size, uint64_t seed,
                                      unsigned count)
{
    uint8_t buf[SMALL_IO], scratch[SMALL_IO];
    uint64_t rng = seed ^ 0x5eed, ns = 0;

    for (unsigned i = 0; i < count; i++) {
        uint64_t off = random_block(&rng, size), t0 = now_ns();

        check_io("pread", path, off, SMALL_IO,
                 glfs_pread(fd, buf, SMALL_IO, off, 0, NULL));
        ns += now_ns() - t0;
        verify(buf, scratch, SMALL_IO, seed, off, path);
    }
    return ns;
}

/* ---- check mode ---------------------------------------------------------- */

static void check_data(glfs_t *fs, const struct opts *o, const char *dir)
{
    uint64_t size = (uint64_t)o->size_mib * MIB, ns;
    char path[PATH_LEN];
    struct xfer w, r;
    struct stat st;
    glfs_fd_t *fd;

    mkpath(path, "%s/data-%d", dir, (int)getpid());
    fd = create_file(fs, path, O_RDWR | O_TRUNC);
    w = write_pattern(fd, path, size, o->seed);
    say("write: %u MiB in %u KiB pwrites + fsync: %.3f s, %.1f MiB/s",
        o->size_mib, WRITE_CHUNK / KIB, secs(w.ns), mibps(size, w.ns));
    if (glfs_fstat(fd, &st))
        fail("fstat %s: %s", path, strerror(errno));
    if ((uint64_t)st.st_size != size)
        fail("fstat %s: size expected %" PRIu64 " got %jd", path, size,
             (intmax_t)st.st_size);

    r = read_pattern(fd, path, size, o->seed);
    say("read: %u MiB in %u KiB preads: %.3f s, %.1f MiB/s, every byte "
        "matches",
        o->size_mib, READ_CHUNK / KIB, secs(r.ns), mibps(size, r.ns));
    say("checksum: written 0x%016" PRIx64 " read 0x%016" PRIx64, w.csum,
        r.csum);
    if (w.csum != r.csum)
        fail("checksum of %s: written 0x%016" PRIx64 " read 0x%016" PRIx64,
             path, w.csum, r.csum);

    ns = random_reads_verified(fd, path, size, o->seed, o->random_reads);
    say("random reads: %u x %u KiB: %.3f s, %.0f IOPS, every byte matches",
        o->random_reads, SMALL_IO / KIB, secs(ns),
        ns ? o->random_reads / secs(ns) : 0.0);

    close_file(fd, path);
    unlink_file(fs, path);
}

static void file_name(char *name, unsigned i)
{
    snprintf(name, NAME_LEN, "f%05u", i);
}

/* A small file's content names it, repeated 1-4 times so that sizes differ
 * and a stat swapped between files shows. */
static size_t file_content(char *buf, unsigned i)
{
    char name[NAME_LEN];
    size_t len = 0;

    file_name(name, i);
    for (unsigned k = 0; k <= i % 4; k++)
        len += (size_t)sprintf(buf + len, "%s\n", name);
    return len;
}

/* The index of a name file_name() makes for i < files, or -1. */
static long file_index(const char *name, unsigned files)
{
    char canonical[NAME_LEN];
    char *end;
    unsigned long i;

    if (name[0] != 'f')
        return -1;
    i = strtoul(name + 1, &end, 10);
    if (*end || i >= files)
        return -1;
    file_name(canonical, (unsigned)i);
    return strcmp(name, canonical) ? -1 : (long)i;
}

static void check_stat(const char *op, const char *dir, const char *name,
                       const struct stat *want, const struct stat *got)
{
    if (got->st_ino != want->st_ino || got->st_size != want->st_size ||
        got->st_mode != want->st_mode)
        fail("%s %s/%s: stat mismatch: ino %ju/%ju size %jd/%jd mode "
             "0%o/0%o (expected/got)",
             op, dir, name, (uintmax_t)want->st_ino, (uintmax_t)got->st_ino,
             (intmax_t)want->st_size, (intmax_t)got->st_size,
             (unsigned)want->st_mode, (unsigned)got->st_mode);
}

/* Lists dir with readdirplus and fails unless it holds exactly ".", ".." and
 * f00000..f<files-1>, each with the stat in want[]. */
static void check_listing(glfs_t *fs, const char *dir, unsigned files,
                          const struct stat *want)
{
    /* glfs.h: 512 bytes hold any dirent gfapi returns */
    union {
        struct dirent d;
        char space[512];
    } ent;
    bool *seen = calloc(files + 1, sizeof(*seen));
    unsigned dots = 0, dotdots = 0;
    struct dirent *res;
    struct stat st;
    glfs_fd_t *fd;

    if (!seen)
        fail("out of memory");
    fd = glfs_opendir(fs, dir);
    if (!fd)
        fail("opendir %s: %s", dir, strerror(errno));
    for (;;) {
        long i;

        if (glfs_readdirplus_r(fd, &st, &ent.d, &res))
            fail("readdirplus %s: %s", dir, strerror(errno));
        if (!res)
            break;
        if (!strcmp(res->d_name, ".")) {
            dots++;
            continue;
        }
        if (!strcmp(res->d_name, "..")) {
            dotdots++;
            continue;
        }
        i = file_index(res->d_name, files);
        if (i < 0)
            fail("readdirplus %s: unexpected entry \"%s\"", dir, res->d_name);
        if (seen[i])
            fail("readdirplus %s: \"%s\" listed twice", dir, res->d_name);
        seen[i] = true;
        check_stat("readdirplus", dir, res->d_name, &want[i], &st);
    }
    if (glfs_closedir(fd))
        fail("closedir %s: %s", dir, strerror(errno));
    if (dots != 1 || dotdots != 1)
        fail("readdirplus %s: \".\" listed %u times, \"..\" %u times", dir,
             dots, dotdots);
    for (unsigned i = 0; i < files; i++) {
        if (!seen[i])
            fail("readdirplus %s: f%05u missing", dir, i);
    }
    free(seen);
}

static void check_metadata(glfs_t *fs, const struct opts *o, const char *dir)
{
    struct stat *want = xmalloc(o->files * sizeof(*want));
    char sub[PATH_LEN], path[PATH_LEN], name[NAME_LEN], content[4 * NAME_LEN];
    uint64_t t0 = now_ns();

    mkpath(sub, "%s/meta-%d", dir, (int)getpid());
    make_dir(fs, sub, false);
    for (unsigned i = 0; i < o->files; i++) {
        size_t len = file_content(content, i);
        glfs_fd_t *fd;

        file_name(name, i);
        mkpath(path, "%s/%s", sub, name);
        fd = create_file(fs, path, O_WRONLY | O_EXCL);
        check_io("pwrite", path, 0, len,
                 glfs_pwrite(fd, content, len, 0, 0, NULL, NULL));
        close_file(fd, path);
    }
    say("create+write+close: %u files in %.3f s", o->files,
        secs(now_ns() - t0));

    t0 = now_ns();
    for (unsigned i = 0; i < o->files; i++) {
        file_name(name, i);
        mkpath(path, "%s/%s", sub, name);
        if (glfs_stat(fs, path, &want[i]))
            fail("stat %s: %s", path, strerror(errno));
        if (!S_ISREG(want[i].st_mode) ||
            (size_t)want[i].st_size != file_content(content, i))
            fail("stat %s: expected a regular file of %zu bytes, got mode "
                 "0%o size %jd",
                 path, file_content(content, i), (unsigned)want[i].st_mode,
                 (intmax_t)want[i].st_size);
    }
    say("stat: %u files in %.3f s", o->files, secs(now_ns() - t0));

    t0 = now_ns();
    check_listing(fs, sub, o->files, want);
    say("readdirplus: %u entries + . and .. in %.3f s, names and stats match",
        o->files, secs(now_ns() - t0));

    t0 = now_ns();
    for (unsigned i = 0; i < o->files; i++) {
        file_name(name, i);
        mkpath(path, "%s/%s", sub, name);
        unlink_file(fs, path);
    }
    say("unlink: %u files in %.3f s", o->files, secs(now_ns() - t0));

    t0 = now_ns();
    check_listing(fs, sub, 0, NULL);
    remove_dir(fs, sub);
    say("empty listing + rmdir: %.3f s", secs(now_ns() - t0));
    free(want);
}

static int run_check(glfs_t *fs, const struct opts *o, const char *dir)
{
    check_data(fs, o, dir);
    check_metadata(fs, o, dir);
    volume_unmount(fs, o);
    say("gfapi-io: OK");
    return 0;
}

/* ---- bench mode ---------------------------------------------------------- */

struct result {
    char name[48];
    double value;
};

static struct result results[MAX_RESULTS];
static unsigned nresults;

static void result(double value, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static void result(double value, const char *fmt, ...)
{
    struct result *r = &results[nresults++];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(r->name, sizeof(r->name), fmt, ap);
    va_end(ap);
    r->value = value;
    printf("result %s %.1f\n", r->name, value);
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;

    return (x > y) - (x < y);
}

/* Nearest-rank percentile of sorted samples. */
static double percentile(const double *sorted, size_t n, double p)
{
    size_t rank = (size_t)ceil(p / 100.0 * (double)n);

    return sorted[rank ? rank - 1 : 0];
}

/* Reports <prefix>_p50_us and <prefix>_p99_us of n samples in microseconds. */
static void result_latency(double *us, size_t n, const char *prefix)
{
    qsort(us, n, sizeof(*us), cmp_double);
    result(percentile(us, n, 50), "%s_p50_us", prefix);
    result(percentile(us, n, 99), "%s_p99_us", prefix);
}

struct reader {
    glfs_fd_t *fd;
    const char *path;
    uint64_t size;
    uint64_t rng;
    unsigned count;
    double *lat_us;
    pthread_barrier_t *start;
};

/* count random aligned SMALL_IO preads, each one's latency into lat_us. */
static void timed_random_reads(glfs_fd_t *fd, const char *path, uint64_t size,
                               uint64_t *rng, unsigned count, double *lat_us)
{
    uint8_t buf[SMALL_IO];

    for (unsigned i = 0; i < count; i++) {
        uint64_t off = random_block(rng, size), t0 = now_ns();

        check_io("pread", path, off, SMALL_IO,
                 glfs_pread(fd, buf, SMALL_IO, off, 0, NULL));
        lat_us[i] = (double)(now_ns() - t0) / 1000.0;
    }
}

static void *reader_run(void *arg)
{
    struct reader *r = arg;

    pthread_barrier_wait(r->start);
    timed_random_reads(r->fd, r->path, r->size, &r->rng, r->count, r->lat_us);
    return NULL;
}

/* threads threads share fd, each doing count random SMALL_IO preads (each
 * thread's offsets seeded from seed and its number), their latencies into
 * lat (count a thread, thread by thread); returns the wall time of them
 * all. */
static uint64_t threaded_random_reads(glfs_fd_t *fd, const char *path, uint64_t size,
                                      uint64_t seed, unsigned threads, unsigned count,
                                      double *lat)
{
    struct reader *rd = xmalloc(threads * sizeof(*rd));
    pthread_t *tid = xmalloc(threads * sizeof(*tid));
    pthread_barrier_t start;
    uint64_t t0;
    int err;

    pthread_barrier_init(&start, NULL, threads + 1);
    for (unsigned t = 0; t < threads; t++) {
        rd[t] = (struct reader){ fd, path, size, mix64(seed + t + 1), count,
                                 lat + (size_t)t * count, &start };
        err = pthread_create(&tid[t], NULL, reader_run, &rd[t]);
        if (err)
            fail("pthread_create: %s", strerror(err));
    }
    pthread_barrier_wait(&start);
    t0 = now_ns();
    for (unsigned t = 0; t < threads; t++)
        pthread_join(tid[t], NULL);
    t0 = now_ns() - t0;
    pthread_barrier_destroy(&start);
    free(tid);
    free(rd);
    return t0;
}

static void bench_random_reads(glfs_fd_t *fd, const char *path, uint64_t size,
                               uint64_t seed, unsigned threads, unsigned count)
{
    size_t n = (size_t)threads * count;
    double *lat = xmalloc(n * sizeof(*lat));
    uint64_t ns = threaded_random_reads(fd, path, size, seed, threads, count, lat);
    char prefix[32];

    snprintf(prefix, sizeof(prefix), "read4k_%ut", threads);
    result_latency(lat, n, prefix);
    result((double)n / secs(ns), "%s_iops", prefix);
    free(lat);
}

static void bench_data(glfs_t *fs, const struct opts *o, const char *dir)
{
    uint64_t size = (uint64_t)o->size_mib * MIB;
    char path[PATH_LEN];
    struct xfer x;
    glfs_fd_t *fd;

    mkpath(path, "%s/data-%d", dir, (int)getpid());
    fd = create_file(fs, path, O_RDWR | O_TRUNC);
    x = write_pattern(fd, path, size, o->seed);
    result(mibps(size, x.ns), "write128k_mibps");
    result((double)x.busy_ns / 1e6 / ((double)size / MIB), "write128k_cpu_ms_per_mib");
    /* verified as it is read, outside the timed calls */
    x = read_pattern(fd, path, size, o->seed);
    result(mibps(size, x.ns), "read1m_mibps");

    /* a benchmark of wrong data is worthless: check before timing */
    random_reads_verified(fd, path, size, o->seed, BENCH_VERIFY_READS);
    bench_random_reads(fd, path, size, o->seed, 1, o->reads);
    /* with one thread the second run would repeat the first's names */
    if (o->threads > 1)
        bench_random_reads(fd, path, size, o->seed, o->threads, o->reads);
    close_file(fd, path);
    unlink_file(fs, path);
}

enum meta_op { META_CREATE, META_STAT, META_UNLINK, META_OPS };

static const char *const meta_op_name[META_OPS] = {
    [META_CREATE] = "create",
    [META_STAT] = "stat",
    [META_UNLINK] = "unlink",
};

/* op on the files first .. first+count-1 of directory sub, one call each,
 * each call's latency into us. */
static void timed_metadata(glfs_t *fs, const char *sub, enum meta_op op,
                           unsigned first, unsigned count, double *us)
{
    char path[PATH_LEN];
    struct stat st;

    for (unsigned i = first; i < first + count; i++) {
        uint64_t t0;

        mkpath(path, "%s/f%05u", sub, i);
        t0 = now_ns();
        switch (op) {
        case META_CREATE:
            close_file(create_file(fs, path, O_WRONLY | O_EXCL), path);
            break;
        case META_STAT:
            if (glfs_stat(fs, path, &st))
                fail("stat %s: %s", path, strerror(errno));
            break;
        case META_UNLINK:
            unlink_file(fs, path);
            break;
        case META_OPS:
            abort();
        }
        us[i - first] = (double)(now_ns() - t0) / 1000.0;
    }
}

static void bench_metadata(glfs_t *fs, const struct opts *o, const char *dir)
{
    double *us = xmalloc(o->files * sizeof(*us));
    char sub[PATH_LEN];

    mkpath(sub, "%s/bench-%d", dir, (int)getpid());
    make_dir(fs, sub, false);
    for (enum meta_op op = 0; op < META_OPS; op++) {
        timed_metadata(fs, sub, op, 0, o->files, us);
        result_latency(us, o->files, meta_op_name[op]);
    }
    remove_dir(fs, sub);
    free(us);
}

static int run_bench(glfs_t *fs, const struct opts *o, const char *dir)
{
    bench_data(fs, o, dir);
    bench_metadata(fs, o, dir);
    fflush(stdout);
    say("%-24s %12s", "result", "value");
    for (unsigned i = 0; i < nresults; i++)
        say("%-24s %12.1f", results[i].name, results[i].value);
    volume_unmount(fs, o);
    return 0;
}

/* ---- pair mode ----------------------------------------------------------- */

/* One volume of a pair: its file and its samples. */
struct side {
    glfs_t *fs;
    const char *volname;
    glfs_fd_t *fd;
    char path[PATH_LEN];
    uint64_t rng;
    double *lat_us;
    char meta_dir[PATH_LEN];
    double *meta_us;
};

static void side_open(struct side *sd, const struct opts *o, const char *dir)
{
    uint64_t size = (uint64_t)o->size_mib * MIB;

    mkpath(sd->path, "%s/pair-%d", dir, (int)getpid());
    sd->fd = create_file(sd->fs, sd->path, O_RDWR | O_TRUNC);
    write_pattern(sd->fd, sd->path, size, o->seed);
    random_reads_verified(sd->fd, sd->path, size, o->seed, BENCH_VERIFY_READS);
    sd->rng = mix64(o->seed + 1);
    sd->lat_us = xmalloc(o->reads * sizeof(*sd->lat_us));
    mkpath(sd->meta_dir, "%s/pair-%d.d", dir, (int)getpid());
    if (o->files) {
        make_dir(sd->fs, sd->meta_dir, false);
        sd->meta_us = xmalloc(o->files * sizeof(*sd->meta_us));
    }
}

/* One side's turn: calls first .. first+count-1 of a run, their latencies
 * into that side's samples from first on. */
typedef void (*turn_fn)(struct side *sd, const struct opts *o, enum meta_op op,
                        unsigned first, unsigned count);

static void read_turn(struct side *sd, const struct opts *o, enum meta_op op,
                      unsigned first, unsigned count)
{
    (void)op;
    timed_random_reads(sd->fd, sd->path, (uint64_t)o->size_mib * MIB, &sd->rng,
                       count, sd->lat_us + first);
}

static void metadata_turn(struct side *sd, const struct opts *o, enum meta_op op,
                          unsigned first, unsigned count)
{
    (void)o;
    timed_metadata(sd->fs, sd->meta_dir, op, first, count, sd->meta_us + first);
}

/* total calls on each side in turns of `block`, the first side alternating,
 * so that both see the same moments of a noisy machine. */
static void take_turns(struct side *sides, const struct opts *o, turn_fn fn,
                       enum meta_op op, unsigned total)
{
    unsigned count;

    for (unsigned first = 0, turn = 0; first < total; first += count, turn++) {
        count = total - first < o->block ? total - first : o->block;
        fn(&sides[turn & 1], o, op, first, count);
        fn(&sides[!(turn & 1)], o, op, first, count);
    }
}

static void side_close(struct side *sd, const struct opts *o)
{
    char prefix[PATH_LEN];

    mkpath(prefix, "%s.read4k_turns", sd->volname);
    result_latency(sd->lat_us, o->reads, prefix);
    close_file(sd->fd, sd->path);
    unlink_file(sd->fs, sd->path);
    free(sd->lat_us);
    if (o->files) {
        remove_dir(sd->fs, sd->meta_dir);
        free(sd->meta_us);
    }
    volume_unmount(sd->fs, o);
}

/* op on each side's `files` files in turns, then each side's latencies as
 * VOLNAME.OP_turns_p50_us and _p99_us.  Creates come first, unlinks last,
 * so every call finds the files the previous op left. */
static void pair_metadata(struct side *sides, const struct opts *o, enum meta_op op)
{
    char prefix[PATH_LEN];

    take_turns(sides, o, metadata_turn, op, o->files);
    for (int i = 0; i < 2; i++) {
        mkpath(prefix, "%s.%s_turns", sides[i].volname, meta_op_name[op]);
        result_latency(sides[i].meta_us, o->files, prefix);
    }
}

/* Mounts the second volume, then turns of `block` reads, the first side
 * alternating, until each side has `reads`; then, with --files, the
 * metadata calls in turns too. */
static int run_pair(glfs_t *fs, const struct opts *o, const char *dir)
{
    /* the same log: one process, and the lines name their volume */
    struct side sides[2] = {
        { .fs = fs, .volname = o->volname },
        { .fs = volume_mount(o->volfile2, o->volname2, o->log),
          .volname = o->volname2 },
    };

    make_dir(sides[1].fs, dir, true);
    for (int i = 0; i < 2; i++)
        side_open(&sides[i], o, dir);
    take_turns(sides, o, read_turn, META_OPS /* no metadata op */, o->reads);
    for (enum meta_op op = 0; o->files && op < META_OPS; op++)
        pair_metadata(sides, o, op);
    for (int i = 0; i < 2; i++)
        side_close(&sides[i], o);
    return 0;
}

/* ---- io mode ------------------------------------------------------------- */

static void *watchdog_run(void *arg)
{
    const struct opts *o = arg;
    const struct timespec tick = { 0, 100 * 1000000 };

    for (;;) {
        uint64_t started = atomic_load(&op_started_ns);

        if (started && now_ns() - started > o->max_op_seconds * NSEC)
            fail("hang: %s has not returned after %u s",
                 atomic_load(&op_name), o->max_op_seconds);
        nanosleep(&tick, NULL);
    }
    return NULL;
}

/* One creat/pwrite/pread/close cycle with a fresh pattern.  Returns NULL if
 * every call worked, else the name of the first that failed, with errno set.
 * Wrong or short data is not an outage but a failure of the test. */
struct io_bufs {
    size_t size;
    uint8_t *wbuf, *rbuf, *scratch;
};

static const char *io_cycle(glfs_t *fs, const char *path, uint64_t seed,
                            const struct io_bufs *b)
{
    const char *failed = NULL;
    glfs_fd_t *fd;
    ssize_t n;
    int err;

    fd = GUARDED("creat", glfs_creat(fs, path, O_RDWR, 0644));
    if (!fd)
        return "creat";
    fill_pattern(b->wbuf, b->size, seed, 0);
    n = GUARDED("pwrite",
                glfs_pwrite(fd, b->wbuf, b->size, 0, 0, NULL, NULL));
    if (n < 0) {
        failed = "pwrite";
    } else {
        check_io("pwrite", path, 0, b->size, n);
        memset(b->rbuf, 0, b->size);
        n = GUARDED("pread", glfs_pread(fd, b->rbuf, b->size, 0, 0, NULL));
        if (n < 0) {
            failed = "pread";
        } else {
            check_io("pread", path, 0, b->size, n);
            verify(b->rbuf, b->scratch, b->size, seed, 0, path);
        }
    }
    err = errno;
    if (GUARDED("close", glfs_close(fd)) && !failed)
        return "close";
    errno = err;
    return failed;
}

static int run_io(glfs_t *fs, const struct opts *o, const char *dir)
{
    unsigned long ok = 0, errors = 0, outage_errors = 0;
    unsigned outages = 0;
    uint64_t start = now_ns(), outage_start = 0, iter = 0;
    bool failing = false;
    char path[PATH_LEN];
    struct io_bufs b = { .size = (size_t)o->io_kib * KIB };

    b.wbuf = xmalloc(b.size);
    b.rbuf = xmalloc(b.size);
    b.scratch = xmalloc(b.size);
    mkpath(path, "%s/io-%d", dir, (int)getpid());
    while (now_ns() - start < o->seconds * NSEC &&
           !(o->stop_file && access(o->stop_file, F_OK) == 0)) {
        const char *step = io_cycle(fs, path, mix64(o->seed + iter++), &b);
        uint64_t now = now_ns();

        if (!step) {
            ok++;
            if (failing)
                say("t=%.1f I/O resumed after %.1f s and %lu failed cycles",
                    secs(now - start), secs(now - outage_start),
                    outage_errors);
            failing = false;
            continue;
        }
        if (!failing) {
            say("t=%.1f errors begin: %s: %s", secs(now - start), step,
                strerror(errno));
            failing = true;
            outages++;
            outage_start = now;
            outage_errors = 0;
        }
        errors++;
        outage_errors++;
        nanosleep(&(struct timespec){ 0, IO_RETRY_DELAY_NS }, NULL);
    }
    say("ok=%lu errors=%lu outages=%u resumed=%d", ok, errors, outages,
        !failing);
    free(b.wbuf);
    free(b.rbuf);
    free(b.scratch);
    if (!failing && GUARDED("unlink", glfs_unlink(fs, path)))
        fail("unlink %s: %s", path, strerror(errno));
    volume_unmount(fs, o);
    return failing ? 2 : 0;
}

/* ---- hold mode ----------------------------------------------------------- */

/* Creates DIR/name. */
static void hold_signal(const struct opts *o, const char *name)
{
    char path[PATH_LEN];
    int fd;

    mkpath(path, "%s/%s", o->sync_dir, name);
    fd = open(path, O_CREAT | O_WRONLY | O_CLOEXEC, 0644);
    if (fd < 0)
        fail("create %s: %s", path, strerror(errno));
    close(fd);
}

/* Waits up to o->seconds for DIR/name.  It sleeps on inotify rather than
 * looking every few milliseconds: the benchmarks measure what an idle
 * client costs while it waits here (perf/compare-gluster's idle_cpu_pct). */
static void hold_wait(const struct opts *o, const char *name)
{
    char path[PATH_LEN];
    uint64_t start = now_ns();
    int ifd = inotify_init1(IN_CLOEXEC | IN_NONBLOCK);

    if (ifd >= 0 && inotify_add_watch(ifd, o->sync_dir, IN_CREATE | IN_MOVED_TO) < 0) {
        close(ifd);
        ifd = -1;
    }
    mkpath(path, "%s/%s", o->sync_dir, name);
    while (access(path, F_OK) != 0) {
        uint64_t waited = now_ns() - start;
        char events[4096];

        if (waited > o->seconds * NSEC)
            fail("hold: %s did not appear within %u s", path, o->seconds);
        if (ifd < 0) {
            nanosleep(&(struct timespec){ 0, 50 * 1000000 }, NULL);
            continue;
        }
        poll(&(struct pollfd){ .fd = ifd, .events = POLLIN }, 1,
             (int)((o->seconds * NSEC - waited) / 1000000 + 1));
        while (read(ifd, events, sizeof(events)) > 0)
            ;
    }
    if (ifd >= 0)
        close(ifd);
}

/* Writes count latencies to SYNC-DIR/lat-us and reports their mean, p50
 * and p99 as hold.OP_*_us. */
static void hold_report(const struct opts *o, const char *op, double *lat_us,
                        unsigned count)
{
    char prefix[32], lat_path[PATH_LEN];
    double sum = 0;
    FILE *lat;

    mkpath(lat_path, "%s/lat-us", o->sync_dir);
    lat = fopen(lat_path, "w");
    if (!lat)
        fail("create %s: %s", lat_path, strerror(errno));
    for (unsigned i = 0; i < count; i++) {
        fprintf(lat, "%.1f\n", lat_us[i]);
        sum += lat_us[i];
    }
    if (fclose(lat))
        fail("write %s: %s", lat_path, strerror(errno));
    result(sum / count, "hold.%s_mean_us", op);
    snprintf(prefix, sizeof(prefix), "hold.%s", op);
    result_latency(lat_us, count, prefix);
}

/* Times count K KiB preads (compared) or pwrites of path, one at a time,
 * and reports them (hold_report). */
static void hold_ops(glfs_fd_t *fd, const char *path, const struct opts *o,
                     bool writing, unsigned count, uint8_t *wbuf, uint8_t *rbuf,
                     uint8_t *scratch)
{
    size_t size = (size_t)o->io_kib * KIB;
    double *lat_us = xmalloc(count * sizeof(*lat_us));
    const char *op = writing ? "write" : "read";

    for (unsigned i = 0; i < count; i++) {
        uint64_t t0 = now_ns();

        if (writing) {
            check_io("pwrite", path, 0, size, glfs_pwrite(fd, wbuf, size, 0, 0, NULL, NULL));
        } else {
            memset(rbuf, 0, size);
            check_io("pread", path, 0, size, glfs_pread(fd, rbuf, size, 0, 0, NULL));
        }
        lat_us[i] = (double)(now_ns() - t0) / 1e3;
        if (!writing)
            verify(rbuf, scratch, size, o->seed, 0, path);
    }
    say("hold: %u %ss of %u KiB done", count, op, o->io_kib);
    hold_report(o, op, lat_us, count);
    free(lat_us);
}

/* hold with --creates or --unlinks: the step creates (and closes) N files
 * in a directory of its own, or unlinks N files made before "ready"; the
 * files left are removed after "stop". */
static int run_hold_metadata(glfs_t *fs, const struct opts *o, const char *dir)
{
    enum meta_op op = o->creates ? META_CREATE : META_UNLINK;
    unsigned count = o->creates ? o->creates : o->unlinks;
    double *lat_us = xmalloc(count * sizeof(*lat_us));
    char sub[PATH_LEN];

    mkpath(sub, "%s/hold-%d.d", dir, (int)getpid());
    make_dir(fs, sub, false);
    if (op == META_UNLINK)
        timed_metadata(fs, sub, META_CREATE, 0, count, lat_us);
    hold_signal(o, "ready");
    hold_wait(o, "go");
    timed_metadata(fs, sub, op, 0, count, lat_us);
    say("hold: %u %ss done", count, meta_op_name[op]);
    hold_report(o, meta_op_name[op], lat_us, count);
    hold_signal(o, "done");
    hold_wait(o, "stop");
    if (op == META_CREATE)
        timed_metadata(fs, sub, META_UNLINK, 0, count, lat_us);
    remove_dir(fs, sub);
    free(lat_us);
    volume_unmount(fs, o);
    return 0;
}

static int run_hold(glfs_t *fs, const struct opts *o, const char *dir)
{
    if (o->creates || o->unlinks)
        return run_hold_metadata(fs, o, dir);

    size_t size = (size_t)o->io_kib * KIB;
    char path[PATH_LEN];
    uint8_t *wbuf = xmalloc(size), *rbuf = xmalloc(size), *scratch = xmalloc(size);
    glfs_fd_t *fd;

    mkpath(path, "%s/hold-%d", dir, (int)getpid());
    fd = glfs_creat(fs, path, O_RDWR, 0644);
    if (!fd)
        fail("creat %s: %s", path, strerror(errno));
    fill_pattern(wbuf, size, o->seed, 0);
    check_io("pwrite", path, 0, size, glfs_pwrite(fd, wbuf, size, 0, 0, NULL, NULL));
    hold_signal(o, "ready");
    hold_wait(o, "go");
    hold_ops(fd, path, o, o->writes > 0, o->writes ? o->writes : o->reads, wbuf, rbuf,
             scratch);
    hold_signal(o, "done");
    hold_wait(o, "stop");
    /* Compared only now: a read between done and stop would show in the
     * statistics the caller takes of the step. */
    if (o->writes) {
        check_io("pread", path, 0, size, glfs_pread(fd, rbuf, size, 0, 0, NULL));
        verify(rbuf, scratch, size, o->seed, 0, path);
    }
    if (glfs_close(fd))
        fail("close %s: %s", path, strerror(errno));
    if (glfs_unlink(fs, path))
        fail("unlink %s: %s", path, strerror(errno));
    free(wbuf);
    free(rbuf);
    free(scratch);
    volume_unmount(fs, o);
    return 0;
}

/* ---- flood mode ---------------------------------------------------------- */

struct flooder {
    glfs_t *fs;
    const struct opts *o;
    unsigned index;
    char path[PATH_LEN];
    unsigned long ops;
};

/* One thread of the flood: write a block, read it back, compare. */
static void *flooder_run(void *arg)
{
    struct flooder *f = arg;
    const struct opts *o = f->o;
    size_t size = (size_t)o->io_kib * KIB;
    uint8_t *wbuf = xmalloc(size), *rbuf = xmalloc(size), *scratch = xmalloc(size);
    uint64_t deadline = now_ns() + o->seconds * NSEC;
    glfs_fd_t *fd = glfs_creat(f->fs, f->path, O_RDWR, 0644);

    if (!fd)
        fail("creat %s: %s", f->path, strerror(errno));
    for (uint64_t i = 0; now_ns() < deadline; i++) {
        uint64_t off = (i % FLOOD_BLOCKS) * size;
        uint64_t seed = mix64(o->seed + ((uint64_t)f->index << 40) + i);

        fill_pattern(wbuf, size, seed, off);
        check_io("pwrite", f->path, off, size, glfs_pwrite(fd, wbuf, size, (off_t)off, 0,
                                                           NULL, NULL));
        memset(rbuf, 0, size);
        check_io("pread", f->path, off, size, glfs_pread(fd, rbuf, size, (off_t)off, 0, NULL));
        verify(rbuf, scratch, size, seed, off, f->path);
        f->ops += 2;
    }
    if (glfs_close(fd))
        fail("close %s: %s", f->path, strerror(errno));
    if (glfs_unlink(f->fs, f->path))
        fail("unlink %s: %s", f->path, strerror(errno));
    free(wbuf);
    free(rbuf);
    free(scratch);
    return NULL;
}

static int run_flood(glfs_t *fs, const struct opts *o, const char *dir)
{
    struct flooder *f = xmalloc(o->threads * sizeof(*f));
    pthread_t *tid = xmalloc(o->threads * sizeof(*tid));
    uint64_t start = now_ns(), ns;
    unsigned long ops = 0;

    for (unsigned t = 0; t < o->threads; t++) {
        f[t] = (struct flooder){ .fs = fs, .o = o, .index = t };
        mkpath(f[t].path, "%s/flood-%d-%u", dir, (int)getpid(), t);
        errno = pthread_create(&tid[t], NULL, flooder_run, &f[t]);
        if (errno)
            fail("pthread_create: %s", strerror(errno));
    }
    for (unsigned t = 0; t < o->threads; t++) {
        pthread_join(tid[t], NULL);
        ops += f[t].ops;
    }
    ns = now_ns() - start;
    say("flood: %lu calls of %u KiB on %u threads in %.1f s, every read compared", ops,
        o->io_kib, o->threads, secs(ns));
    result((double)ops, "flood.ops");
    result(mibps((uint64_t)ops * o->io_kib * KIB, ns), "flood.mibps");
    free(f);
    free(tid);
    volume_unmount(fs, o);
    return 0;
}

/* ---- serve mode ---------------------------------------------------------- */

/* What serve keeps between commands: the data file 4 KiB reads hit, the
 * file writes and 1 MiB reads move, and the directory of the metadata
 * calls. */
struct served {
    glfs_t *fs;
    const struct opts *o;
    glfs_fd_t *fd;
    char path[PATH_LEN];
    uint64_t size;
    uint64_t rng;
    char bulk_path[PATH_LEN];
    uint64_t bulk_size;
    uint64_t bulk_seed;
    char meta_dir[PATH_LEN];
};

/* Prints "lat" and the n samples, then "ok". */
static void serve_samples(const double *us, unsigned n)
{
    fputs("lat", stdout);
    for (unsigned i = 0; i < n; i++)
        printf(" %.1f", us[i]);
    fputs("\nok\n", stdout);
}

/* count 4 KiB random reads one at a time, each after gap_us of idling. */
static void serve_reads(struct served *s, unsigned count, unsigned gap_us)
{
    double *us = xmalloc(count * sizeof(*us));
    struct timespec gap = { gap_us / 1000000, (long)(gap_us % 1000000) * 1000 };

    for (unsigned i = 0; i < count; i++) {
        if (gap_us)
            nanosleep(&gap, NULL);
        timed_random_reads(s->fd, s->path, s->size, &s->rng, 1, &us[i]);
    }
    serve_samples(us, count);
    free(us);
}

/* threads threads, count 4 KiB random reads each, on the data file. */
static void serve_threads(struct served *s, unsigned threads, unsigned count)
{
    double *lat = xmalloc((size_t)threads * count * sizeof(*lat));
    uint64_t ns = threaded_random_reads(s->fd, s->path, s->size, rng_next(&s->rng),
                                        threads, count, lat);

    printf("iops %.1f\nok\n", (double)threads * count / secs(ns));
    free(lat);
}

/* Writes mib MiB of a fresh pattern in 128 KiB writes, timed to the fsync. */
static void serve_write(struct served *s, unsigned mib)
{
    glfs_fd_t *fd = create_file(s->fs, s->bulk_path, O_RDWR | O_TRUNC);
    struct xfer x;

    s->bulk_size = (uint64_t)mib * MIB;
    s->bulk_seed = rng_next(&s->rng);
    x = write_pattern(fd, s->bulk_path, s->bulk_size, s->bulk_seed);
    close_file(fd, s->bulk_path);
    printf("mibps %.1f\nok\n", mibps(s->bulk_size, x.ns));
}

/* Reads back, in 1 MiB reads compared, what the last write wrote. */
static void serve_read_bulk(struct served *s)
{
    glfs_fd_t *fd;
    struct xfer x;

    if (!s->bulk_size) {
        puts("error read1m before any write");
        return;
    }
    fd = glfs_open(s->fs, s->bulk_path, O_RDONLY);
    if (!fd)
        fail("open %s: %s", s->bulk_path, strerror(errno));
    x = read_pattern(fd, s->bulk_path, s->bulk_size, s->bulk_seed);
    close_file(fd, s->bulk_path);
    printf("mibps %.1f\nok\n", mibps(s->bulk_size, x.ns));
}

static void serve_metadata(struct served *s, enum meta_op op, unsigned count)
{
    double *us = xmalloc(count * sizeof(*us));

    timed_metadata(s->fs, s->meta_dir, op, 0, count, us);
    serve_samples(us, count);
    free(us);
}

/* One command line; false at "quit" and at the end of the input. */
static bool serve_command(struct served *s, const char *line)
{
    char word[16];
    unsigned a = 0, b = 0;
    int n = sscanf(line, "%15s %u %u", word, &a, &b);

    if (n < 1 || !strcmp(word, "quit"))
        return false;
    if (!strcmp(word, "reads") && n == 3 && a && a <= s->o->reads)
        serve_reads(s, a, b);
    else if (!strcmp(word, "threads") && n == 3 && a && a <= 256 && b && b <= s->o->reads)
        serve_threads(s, a, b);
    else if (!strcmp(word, "write") && n == 2 && a && a <= s->o->size_mib)
        serve_write(s, a);
    else if (!strcmp(word, "read1m") && n == 1)
        serve_read_bulk(s);
    else if (!strcmp(word, "create") && n == 2 && a && a <= s->o->files)
        serve_metadata(s, META_CREATE, a);
    else if (!strcmp(word, "stat") && n == 2 && a && a <= s->o->files)
        serve_metadata(s, META_STAT, a);
    else if (!strcmp(word, "unlink") && n == 2 && a && a <= s->o->files)
        serve_metadata(s, META_UNLINK, a);
    else
        printf("error not a command or out of range: %s\n", line);
    return true;
}

/* Mounts once, prepares the files, then runs the commands read from
 * standard input one at a time, each answered on standard output, until
 * "quit" or the end of the input; the rounds of perf/gluster-rounds drive
 * two of these, one per transport, so each is its own process with its
 * own CPU time and context switches. */
static int run_serve(glfs_t *fs, const struct opts *o, const char *dir)
{
    struct served s = { .fs = fs, .o = o, .size = (uint64_t)o->size_mib * MIB,
                        .rng = mix64(o->seed + 1) };
    char line[256];

    mkpath(s.path, "%s/serve-%d", dir, (int)getpid());
    mkpath(s.bulk_path, "%s/serve-%d.bulk", dir, (int)getpid());
    mkpath(s.meta_dir, "%s/serve-%d.d", dir, (int)getpid());
    s.fd = create_file(fs, s.path, O_RDWR | O_TRUNC);
    write_pattern(s.fd, s.path, s.size, o->seed);
    random_reads_verified(s.fd, s.path, s.size, o->seed, BENCH_VERIFY_READS);
    make_dir(fs, s.meta_dir, false);
    puts("ready");
    while (fgets(line, sizeof(line), stdin)) {
        line[strcspn(line, "\n")] = '\0';
        if (!serve_command(&s, line))
            break;
    }
    close_file(s.fd, s.path);
    unlink_file(fs, s.path);
    if (s.bulk_size)
        unlink_file(fs, s.bulk_path);
    remove_dir(fs, s.meta_dir);
    volume_unmount(fs, o);
    return 0;
}

/* ---- command line -------------------------------------------------------- */

enum opt_id {
    OPT_HELP = 1,
    OPT_LOG,
    OPT_DIR,
    OPT_SEED,
    OPT_NO_FINI,
    OPT_SIZE_MIB,
    OPT_FILES,
    OPT_RANDOM_READS,
    OPT_READS,
    OPT_THREADS,
    OPT_BLOCK,
    OPT_SECONDS,
    OPT_MAX_OP_SECONDS,
    OPT_IO_KIB,
    OPT_STOP_FILE,
    OPT_SYNC_DIR,
    OPT_WRITES,
    OPT_CREATES,
    OPT_UNLINKS,
    OPT_COUNT
};

static const struct option long_opts[] = {
    { "help", no_argument, NULL, OPT_HELP },
    { "log", required_argument, NULL, OPT_LOG },
    { "dir", required_argument, NULL, OPT_DIR },
    { "seed", required_argument, NULL, OPT_SEED },
    { "no-fini", no_argument, NULL, OPT_NO_FINI },
    { "size-mib", required_argument, NULL, OPT_SIZE_MIB },
    { "files", required_argument, NULL, OPT_FILES },
    { "random-reads", required_argument, NULL, OPT_RANDOM_READS },
    { "reads", required_argument, NULL, OPT_READS },
    { "threads", required_argument, NULL, OPT_THREADS },
    { "block", required_argument, NULL, OPT_BLOCK },
    { "seconds", required_argument, NULL, OPT_SECONDS },
    { "max-op-seconds", required_argument, NULL, OPT_MAX_OP_SECONDS },
    { "io-kib", required_argument, NULL, OPT_IO_KIB },
    { "stop-file", required_argument, NULL, OPT_STOP_FILE },
    { "sync-dir", required_argument, NULL, OPT_SYNC_DIR },
    { "writes", required_argument, NULL, OPT_WRITES },
    { "creates", required_argument, NULL, OPT_CREATES },
    { "unlinks", required_argument, NULL, OPT_UNLINKS },
    { NULL, 0, NULL, 0 },
};

/* The modes each option applies to. */
static const unsigned opt_modes[OPT_COUNT] = {
    [OPT_HELP] = ALL_MODES,
    [OPT_LOG] = ALL_MODES,
    [OPT_DIR] = ALL_MODES,
    [OPT_SEED] = ALL_MODES,
    [OPT_NO_FINI] = ALL_MODES,
    [OPT_SIZE_MIB] = MODE_CHECK | MODE_BENCH | MODE_PAIR | MODE_SERVE,
    [OPT_FILES] = MODE_CHECK | MODE_BENCH | MODE_PAIR | MODE_SERVE,
    [OPT_RANDOM_READS] = MODE_CHECK,
    [OPT_READS] = MODE_BENCH | MODE_PAIR | MODE_HOLD | MODE_SERVE,
    [OPT_THREADS] = MODE_BENCH | MODE_FLOOD,
    [OPT_BLOCK] = MODE_PAIR,
    [OPT_SECONDS] = MODE_IO | MODE_HOLD | MODE_FLOOD,
    [OPT_MAX_OP_SECONDS] = MODE_IO,
    [OPT_IO_KIB] = MODE_IO | MODE_HOLD | MODE_FLOOD,
    [OPT_STOP_FILE] = MODE_IO,
    [OPT_SYNC_DIR] = MODE_HOLD,
    [OPT_WRITES] = MODE_HOLD,
    [OPT_CREATES] = MODE_HOLD,
    [OPT_UNLINKS] = MODE_HOLD,
};

static void usage(FILE *f)
{
    fputs("usage: gfapi-io check VOLFILE VOLNAME [--size-mib N] [--files N] "
          "[--random-reads N]\n"
          "       gfapi-io bench VOLFILE VOLNAME [--size-mib N] [--reads N] "
          "[--files N] [--threads N]\n"
          "       gfapi-io pair VOLFILE VOLNAME VOLFILE2 VOLNAME2 [--size-mib N] "
          "[--reads N] [--block N] [--files N]\n"
          "       gfapi-io io VOLFILE VOLNAME --seconds N "
          "[--max-op-seconds S] [--io-kib K] [--stop-file FILE]\n"
          "       gfapi-io flood VOLFILE VOLNAME --seconds N [--threads N] "
          "[--io-kib K]\n"
          "       gfapi-io hold VOLFILE VOLNAME --sync-dir DIR [--reads N | --writes N | "
          "--creates N | --unlinks N] "
          "[--io-kib K] [--seconds N]\n"
          "       gfapi-io serve VOLFILE VOLNAME [--size-mib N] [--reads N] [--files N]\n"
          "common: [--log FILE] [--dir NAME] [--seed N] [--no-fini]\n",
          f);
}

static void usage_error(const char *fmt, ...)
    __attribute__((format(printf, 1, 2), noreturn));
static void usage_error(const char *fmt, ...)
{
    va_list ap;

    fputs("gfapi-io: ", stderr);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    usage(stderr);
    exit(EXIT_USAGE);
}

static unsigned long long parse_num(const char *opt, const char *s, int base,
                                    unsigned long long min,
                                    unsigned long long max)
{
    unsigned long long v;
    char *end;

    errno = 0;
    v = strtoull(s, &end, base);
    if (errno || end == s || *end || s[0] == '-' || v < min || v > max)
        usage_error("--%s: \"%s\" is not a number from %llu to %llu", opt, s,
                    min, max);
    return v;
}

static enum mode parse_mode(const char *s)
{
    if (!strcmp(s, "check"))
        return MODE_CHECK;
    if (!strcmp(s, "bench"))
        return MODE_BENCH;
    if (!strcmp(s, "io"))
        return MODE_IO;
    if (!strcmp(s, "pair"))
        return MODE_PAIR;
    if (!strcmp(s, "hold"))
        return MODE_HOLD;
    if (!strcmp(s, "flood"))
        return MODE_FLOOD;
    if (!strcmp(s, "serve"))
        return MODE_SERVE;
    usage_error("unknown mode \"%s\"", s);
}

static void set_option(struct opts *o, int id, const char *name,
                       const char *arg)
{
    switch (id) {
    case OPT_LOG:
        o->log = arg;
        break;
    case OPT_DIR:
        o->dir = arg;
        break;
    case OPT_SEED:
        o->seed = parse_num(name, arg, 0, 0, UINT64_MAX);
        break;
    case OPT_NO_FINI:
        o->no_fini = true;
        break;
    case OPT_SIZE_MIB:
        o->size_mib = parse_num(name, arg, 10, 1, 1u << 20);
        break;
    case OPT_FILES:
        o->files = parse_num(name, arg, 10, 1, MAX_FILES);
        break;
    case OPT_RANDOM_READS:
        o->random_reads = parse_num(name, arg, 10, 0, 100000000);
        break;
    case OPT_READS:
        o->reads = parse_num(name, arg, 10, 1, 10000000);
        break;
    case OPT_THREADS:
        o->threads = parse_num(name, arg, 10, 1, 256);
        break;
    case OPT_BLOCK:
        o->block = parse_num(name, arg, 10, 1, 10000000);
        break;
    case OPT_SECONDS:
        o->seconds = parse_num(name, arg, 10, 1, 1000000);
        break;
    case OPT_MAX_OP_SECONDS:
        o->max_op_seconds = parse_num(name, arg, 10, 1, 86400);
        break;
    case OPT_IO_KIB:
        o->io_kib = parse_num(name, arg, 10, 1, 16 * 1024);
        break;
    case OPT_STOP_FILE:
        o->stop_file = arg;
        break;
    case OPT_SYNC_DIR:
        o->sync_dir = arg;
        break;
    case OPT_WRITES:
        o->writes = parse_num(name, arg, 10, 1, 10000000);
        break;
    case OPT_CREATES:
        o->creates = parse_num(name, arg, 10, 1, MAX_FILES);
        break;
    case OPT_UNLINKS:
        o->unlinks = parse_num(name, arg, 10, 1, MAX_FILES);
        break;
    }
}

/* Differs from run to run, and between runs started in the same second. */
static uint64_t clock_seed(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_REALTIME, &ts);
    return mix64((uint64_t)ts.tv_sec * NSEC + (uint64_t)ts.tv_nsec +
                 ((uint64_t)getpid() << 32));
}

static void parse_args(int argc, char **argv, struct opts *o)
{
    enum mode mode;
    int id, idx;

    if (argc < 2)
        usage_error("no mode given");
    if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) {
        usage(stdout);
        exit(0);
    }
    mode = parse_mode(argv[1]);
    *o = (struct opts){
        .mode = mode,
        .log = "/dev/null",
        .dir = "gfapi-io",
        .seed = clock_seed(),
        .size_mib = mode == MODE_CHECK ? 256 : 64,
        .files = mode == MODE_BENCH ? 500 : mode == MODE_PAIR ? 0 : 2000,
        .random_reads = 4096,
        .reads = 2000,
        .threads = 4,
        .block = 50,
        .max_op_seconds = 60,
        .io_kib = SMALL_IO / KIB,
    };

    /* argv[1], the mode, stands in for the program name */
    while ((id = getopt_long(argc - 1, argv + 1, "", long_opts, &idx)) != -1) {
        if (id == '?')
            usage_error("bad option");
        if (id == OPT_HELP) {
            usage(stdout);
            exit(0);
        }
        if (!(opt_modes[id] & o->mode))
            usage_error("--%s does not apply to %s", long_opts[idx].name,
                        argv[1]);
        set_option(o, id, long_opts[idx].name, optarg);
    }
    if (o->mode == MODE_PAIR && argc - 1 - optind != 4)
        usage_error("pair needs VOLFILE VOLNAME VOLFILE2 VOLNAME2");
    if (o->mode != MODE_PAIR && argc - 1 - optind != 2)
        usage_error("%s needs VOLFILE VOLNAME", argv[1]);
    o->volfile = argv[1 + optind];
    o->volname = argv[2 + optind];
    if (o->mode == MODE_PAIR) {
        o->volfile2 = argv[3 + optind];
        o->volname2 = argv[4 + optind];
        if (!strcmp(o->volname, o->volname2))
            usage_error("pair needs two different volume names");
    }
    if ((o->mode == MODE_IO || o->mode == MODE_FLOOD) && !o->seconds)
        usage_error("%s needs --seconds N", argv[1]);
    if (o->mode == MODE_HOLD && !o->sync_dir)
        usage_error("hold needs --sync-dir DIR");
    if (o->mode == MODE_HOLD && !o->seconds)
        o->seconds = 300;
    if (!!o->writes + !!o->creates + !!o->unlinks > 1)
        usage_error("hold takes one of --writes, --creates and --unlinks");
}

int main(int argc, char **argv)
{
    char dir[PATH_LEN];
    struct opts o;
    glfs_t *fs;

    parse_args(argc, argv, &o);
    out = o.mode == MODE_BENCH || o.mode == MODE_PAIR || o.mode == MODE_SERVE ? stderr : stdout;
    /* the io test watches the output while it kills the brick */
    setvbuf(stdout, NULL, _IOLBF, 0);

    if (o.mode == MODE_IO) {
        pthread_t tid;
        int err = pthread_create(&tid, NULL, watchdog_run, &o);

        if (err)
            fail("pthread_create: %s", strerror(err));
    }
    say("seed 0x%016" PRIx64, o.seed);
    fs = volume_mount(o.volfile, o.volname, o.log);
    mkpath(dir, "/%s", o.dir + strspn(o.dir, "/"));
    make_dir(fs, dir, true);

    switch (o.mode) {
    case MODE_CHECK: return run_check(fs, &o, dir);
    case MODE_BENCH: return run_bench(fs, &o, dir);
    case MODE_IO: return run_io(fs, &o, dir);
    case MODE_PAIR: return run_pair(fs, &o, dir);
    case MODE_HOLD: return run_hold(fs, &o, dir);
    case MODE_FLOOD: return run_flood(fs, &o, dir);
    case MODE_SERVE: return run_serve(fs, &o, dir);
    }
    return EXIT_USAGE;
}
