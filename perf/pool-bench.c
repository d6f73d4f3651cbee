/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * pool-bench: gfr_pool against GlusterFS's gf_async and a mutex + condvar
 * queue, same job bodies, same machine, one run.
 *
 * Scenarios:
 *  pingpong  one producer submits a job and waits for it to finish, N times;
 *  flood     two producers submit as fast as they can;
 *  burst     bursts of jobs separated by idle gaps long enough for workers
 *            to go to sleep (wake-up cost).
 * Job bodies: pingpong and burst jobs read the clock (hand-off latency) and
 * count themselves on a shared counter the producer waits on.  Flood jobs
 * only compute and set their own done flag: two clock reads and a shared
 * atomic per job would cap every pool below 10 M jobs/s on this harness
 * (measured with the jobs run inline by the producers) and hide the pools'
 * own costs.
 * Each (scenario, pool) runs `repeat` times, interleaved, each run in a
 * child process; the table shows medians.  Hand-off latency is submit to
 * job start.  Prints `ratio <name> <value>` lines at the end.
 *
 * Usage: pool-bench [--repeat N] [--threads N] [--smoke] [--only POOL]
 *                   [--scenario NAME]
 * (--only and --scenario run a part, for profiling; no ratios then.)
 */
#include <errno.h>
#include <getopt.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <urcu/arch.h>
#include <urcu/uatomic.h>

#include "config.h"
#include "pool-bench.h"

#define RUN_TIMEOUT_MS 120000

struct params {
    unsigned pingpong_jobs;
    unsigned flood_jobs; /* per producer */
    unsigned bursts;
    unsigned burst_jobs;
    unsigned gap_us;
    unsigned work_iterations;
    unsigned max_threads;
    unsigned repeat;
};

struct result {
    int ok;
    uint64_t jobs;
    uint64_t elapsed_ns;
    uint64_t p50_ns;
    uint64_t p99_ns;
};

/* Shared by the job bodies of one run. */
static struct {
    uint64_t *latency_ns;
    uint64_t *submit_ns;
    unsigned long done;
    unsigned long total;
    uint64_t end_ns;
    unsigned work_iterations;
} run;

static unsigned long work_sink;

/* The job body every pool runs: record the hand-off, do a little work,
 * count. */
static void
job_body(struct bench_job *job)
{
    uint64_t start = bench_now_ns();
    unsigned long x = (unsigned long)job->arg;

    run.latency_ns[(unsigned long)job->arg] =
        start - run.submit_ns[(unsigned long)job->arg];
    for (unsigned i = 0; i < run.work_iterations; i++)
        x = x * 6364136223846793005ul + 1442695040888963407ul;
    CMM_STORE_SHARED(work_sink, x);
    if (uatomic_add_return(&run.done, 1) == run.total)
        CMM_STORE_SHARED(run.end_ns, bench_now_ns());
}

/* The flood body: the same computation, no clock, no shared write. */
static void
flood_body(struct bench_job *job)
{
    unsigned long x = (unsigned long)job->arg;

    for (unsigned i = 0; i < run.work_iterations; i++)
        x = x * 6364136223846793005ul + 1442695040888963407ul;
    CMM_STORE_SHARED(work_sink, x);
    CMM_STORE_SHARED(job->done, 1);
}

static int
compare_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a;
    uint64_t y = *(const uint64_t *)b;

    return x < y ? -1 : x > y;
}

static void
percentiles(struct result *res, uint64_t *samples, size_t n)
{
    qsort(samples, n, sizeof(*samples), compare_u64);
    res->p50_ns = samples[n / 2];
    res->p99_ns = samples[(n * 99) / 100];
}

static void
prepare(struct bench_job *jobs, size_t n, unsigned long total)
{
    memset(jobs, 0, n * sizeof(*jobs));
    for (size_t i = 0; i < n; i++) {
        jobs[i].fn = job_body;
        jobs[i].arg = (void *)(unsigned long)i;
    }
    run.done = 0;
    run.total = total;
    run.end_ns = 0;
}

static void
wait_done(unsigned long target)
{
    for (unsigned spins = 0; uatomic_read(&run.done) < target; spins++) {
        if ((spins & 1023) == 1023)
            sched_yield();
        caa_cpu_relax();
    }
}

static void
scenario_pingpong(const struct bench_pool_ops *ops, const struct params *p,
                  struct bench_job *jobs, struct result *res)
{
    uint64_t start;

    prepare(jobs, p->pingpong_jobs, p->pingpong_jobs);
    start = bench_now_ns();
    for (unsigned i = 0; i < p->pingpong_jobs; i++) {
        run.submit_ns[i] = bench_now_ns();
        ops->submit(&jobs[i]);
        wait_done(i + 1);
    }
    res->jobs = p->pingpong_jobs;
    res->elapsed_ns = bench_now_ns() - start;
}

struct flood_producer {
    const struct bench_pool_ops *ops;
    struct bench_job *jobs;
    unsigned n;
};

static void *
flood_produce(void *arg)
{
    struct flood_producer *fp = arg;

    for (unsigned i = 0; i < fp->n; i++)
        fp->ops->submit(&fp->jobs[i]);
    return NULL;
}

/* Waits, without spinning a CPU away from the workers, until every flood
 * job is done; returns the time the last was seen done (within ~50 us). */
static uint64_t
wait_flood_done(struct bench_job *jobs, size_t n)
{
    size_t next = 0;

    for (;;) {
        while (next < n && CMM_LOAD_SHARED(jobs[next].done))
            next++;
        if (next == n)
            return bench_now_ns();
        usleep(50);
    }
}

static void
scenario_flood(const struct bench_pool_ops *ops, const struct params *p,
               struct bench_job *jobs, struct result *res)
{
    struct flood_producer producers[2];
    pthread_t threads[2];
    size_t n = 2 * (size_t)p->flood_jobs;
    uint64_t start;

    prepare(jobs, n, n);
    for (size_t i = 0; i < n; i++)
        jobs[i].fn = flood_body;
    start = bench_now_ns();
    for (int i = 0; i < 2; i++) {
        producers[i].ops = ops;
        producers[i].jobs = jobs + (size_t)i * p->flood_jobs;
        producers[i].n = p->flood_jobs;
        if (pthread_create(&threads[i], NULL, flood_produce, &producers[i]))
            abort();
    }
    for (int i = 0; i < 2; i++)
        pthread_join(threads[i], NULL);
    res->elapsed_ns = wait_flood_done(jobs, n) - start;
    res->jobs = n;
}

static void
scenario_burst(const struct bench_pool_ops *ops, const struct params *p,
               struct bench_job *jobs, struct result *res)
{
    uint64_t busy_ns = 0;
    unsigned long total = (unsigned long)p->bursts * p->burst_jobs;

    prepare(jobs, total, total);
    for (unsigned b = 0; b < p->bursts; b++) {
        uint64_t start = bench_now_ns();

        for (unsigned i = 0; i < p->burst_jobs; i++) {
            unsigned long k = (unsigned long)b * p->burst_jobs + i;
            run.submit_ns[k] = bench_now_ns();
            ops->submit(&jobs[k]);
        }
        wait_done((unsigned long)(b + 1) * p->burst_jobs);
        busy_ns += bench_now_ns() - start;
        usleep(p->gap_us);
    }
    res->jobs = total;
    res->elapsed_ns = busy_ns;
}

typedef void (*scenario_fn)(const struct bench_pool_ops *ops,
                            const struct params *p, struct bench_job *jobs,
                            struct result *res);

static const struct {
    const char *name;
    scenario_fn fn;
    int latency; /* reports hand-off latency */
} scenarios[] = {
    {"pingpong", scenario_pingpong, 1},
    {"flood", scenario_flood, 0},
    {"burst", scenario_burst, 1},
};
#define BENCH_NSCENARIOS (sizeof(scenarios) / sizeof(scenarios[0]))

static const struct bench_pool_ops *const pools[] = {
    &bench_gfr_pool_ops,
    &bench_gf_async_ops,
    &bench_mutex_cond_ops,
#ifdef GFR_HAVE_DPDK
    &bench_rte_ring_ops,
#endif
};
#define BENCH_NPOOLS (sizeof(pools) / sizeof(pools[0]))

static size_t
max_jobs(const struct params *p)
{
    size_t n = p->pingpong_jobs;

    if (2 * (size_t)p->flood_jobs > n)
        n = 2 * (size_t)p->flood_jobs;
    if ((size_t)p->bursts * p->burst_jobs > n)
        n = (size_t)p->bursts * p->burst_jobs;
    return n;
}

/* In the child: one pool, one scenario. */
static void
child_run(const struct bench_pool_ops *ops, size_t s, const struct params *p,
          int fd)
{
    struct result res = {0};
    size_t n = max_jobs(p);
    struct bench_job *jobs = aligned_alloc(64, n * sizeof(*jobs));

    run.latency_ns = calloc(n, sizeof(uint64_t));
    run.submit_ns = calloc(n, sizeof(uint64_t));
    if (!run.latency_ns || !run.submit_ns)
        _exit(2);
    /* Fault every page in before anything is timed. */
    memset(run.latency_ns, 0xff, n * sizeof(uint64_t));
    memset(run.submit_ns, 0xff, n * sizeof(uint64_t));
    run.work_iterations = p->work_iterations;
    if (!jobs || ops->init(p->max_threads) != 0)
        _exit(2);
    scenarios[s].fn(ops, p, jobs, &res);
    if (ops->fini)
        ops->fini();
    if (scenarios[s].latency)
        percentiles(&res, run.latency_ns, res.jobs);
    res.ok = 1;
    if (write(fd, &res, sizeof(res)) != sizeof(res))
        _exit(3);
    _exit(0);
}

static int
run_once(const struct bench_pool_ops *ops, size_t s, const struct params *p,
         struct result *res)
{
    struct pollfd pfd;
    int fds[2];
    pid_t pid;
    int status;
    ssize_t got = 0;

    if (pipe(fds) != 0)
        return -errno;
    fflush(stdout);
    pid = fork();
    if (pid < 0)
        return -errno;
    if (pid == 0) {
        close(fds[0]);
        child_run(ops, s, p, fds[1]);
    }
    close(fds[1]);
    pfd.fd = fds[0];
    pfd.events = POLLIN;
    if (poll(&pfd, 1, RUN_TIMEOUT_MS) == 1)
        got = read(fds[0], res, sizeof(*res));
    close(fds[0]);
    if (got != sizeof(*res)) {
        kill(pid, SIGKILL);
        waitpid(pid, &status, 0);
        fprintf(stderr, "pool-bench: %s %s failed or took over %d s\n",
                ops->name, scenarios[s].name, RUN_TIMEOUT_MS / 1000);
        return -ETIMEDOUT;
    }
    waitpid(pid, &status, 0);
    return 0;
}

static int
compare_double(const void *a, const void *b)
{
    double x = *(const double *)a;
    double y = *(const double *)b;

    return x < y ? -1 : x > y;
}

static double
median(double *values, unsigned n)
{
    qsort(values, n, sizeof(*values), compare_double);
    return values[n / 2];
}

struct summary {
    double jobs_per_s;
    double p50_us;
    double p99_us;
};

static void
usage(void)
{
    fprintf(stderr, "usage: pool-bench [--repeat N] [--threads N] [--smoke]\n");
    exit(2);
}

int
main(int argc, char **argv)
{
    static const struct option longopts[] = {
        {"repeat", required_argument, NULL, 'r'},
        {"threads", required_argument, NULL, 't'},
        {"smoke", no_argument, NULL, 's'},
        {"only", required_argument, NULL, 'o'},
        {"scenario", required_argument, NULL, 'c'},
        {NULL, 0, NULL, 0},
    };
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    struct params p = {
        .pingpong_jobs = 20000,
        .flood_jobs = 300000,
        .bursts = 300,
        .burst_jobs = 32,
        .gap_us = 2000,
        .work_iterations = 50,
        .max_threads = (unsigned)(cpus > 0 ? 2 * cpus : 2),
        .repeat = 3,
    };
    struct summary table[BENCH_NSCENARIOS][BENCH_NPOOLS];
    const char *only = NULL;
    const char *only_scenario = NULL;
    int opt;

    while ((opt = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
        switch (opt) {
        case 'r': p.repeat = (unsigned)strtoul(optarg, NULL, 10); break;
        case 't': p.max_threads = (unsigned)strtoul(optarg, NULL, 10); break;
        case 's':
            p.pingpong_jobs = 200;
            p.flood_jobs = 2000;
            p.bursts = 5;
            p.repeat = 1;
            break;
        case 'o': only = optarg; break;
        case 'c': only_scenario = optarg; break;
        default: usage();
        }
    }
    if (p.repeat == 0 || p.repeat > 99 || p.max_threads == 0 ||
        p.max_threads > GFR_POOL_MAX_THREADS)
        usage();

    printf("pool-bench: %ld CPUs, %u threads at most per pool, %u runs each "
           "(median), job body %u LCG steps\n",
           cpus, p.max_threads, p.repeat, p.work_iterations);
    printf("  pingpong %u jobs; flood 2 producers x %u jobs; burst %u x %u jobs, "
           "%u us gaps\n\n",
           p.pingpong_jobs, p.flood_jobs, p.bursts, p.burst_jobs, p.gap_us);

    memset(table, 0, sizeof(table));
    for (size_t s = 0; s < BENCH_NSCENARIOS; s++) {
        double tput[BENCH_NPOOLS][99], p50[BENCH_NPOOLS][99], p99[BENCH_NPOOLS][99];

        if (only_scenario && strcmp(only_scenario, scenarios[s].name) != 0)
            continue;
        for (unsigned r = 0; r < p.repeat; r++) {
            for (size_t k = 0; k < BENCH_NPOOLS; k++) {
                struct result res = {0};

                if (only && strcmp(only, pools[k]->name) != 0)
                    continue;

                if (run_once(pools[k], s, &p, &res) != 0)
                    return 1;
                tput[k][r] = (double)res.jobs * 1e9 / (double)res.elapsed_ns;
                p50[k][r] = (double)res.p50_ns / 1000.0;
                p99[k][r] = (double)res.p99_ns / 1000.0;
            }
        }
        for (size_t k = 0; k < BENCH_NPOOLS; k++) {
            table[s][k].jobs_per_s = median(tput[k], p.repeat);
            table[s][k].p50_us = median(p50[k], p.repeat);
            table[s][k].p99_us = median(p99[k], p.repeat);
        }
    }

    printf("%-10s %-12s %14s %12s %12s\n", "scenario", "pool", "jobs/s",
           "p50 us", "p99 us");
    for (size_t s = 0; s < BENCH_NSCENARIOS; s++)
        for (size_t k = 0; k < BENCH_NPOOLS; k++)
            if (table[s][k].jobs_per_s > 0 && !scenarios[s].latency)
                printf("%-10s %-12s %14.0f %12s %12s\n", scenarios[s].name,
                       pools[k]->name, table[s][k].jobs_per_s, "-", "-");
            else if (table[s][k].jobs_per_s > 0)
                printf("%-10s %-12s %14.0f %12.2f %12.2f\n", scenarios[s].name,
                       pools[k]->name, table[s][k].jobs_per_s,
                       table[s][k].p50_us, table[s][k].p99_us);
    printf("\n");

    if (!only && !only_scenario) {
        double best_flood = 0, best_burst = 1e300, best_ping = 1e300;

        for (size_t k = 1; k < BENCH_NPOOLS; k++) {
            if (table[1][k].jobs_per_s > best_flood)
                best_flood = table[1][k].jobs_per_s;
            if (table[2][k].p50_us < best_burst)
                best_burst = table[2][k].p50_us;
            if (table[0][k].p50_us < best_ping)
                best_ping = table[0][k].p50_us;
        }
        printf("ratio flood_throughput_vs_best_other %.3f\n",
               table[1][0].jobs_per_s / best_flood);
        printf("ratio burst_p50_latency_vs_best_other %.3f\n",
               table[2][0].p50_us / best_burst);
        printf("ratio pingpong_p50_latency_vs_best_other %.3f\n",
               table[0][0].p50_us / best_ping);
    }
    return 0;
}
