/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The pools pool-bench compares:
 *  - gfr_pool (lib/): this project's pool, default options;
 *  - gf_async: GlusterFS's global thread pool from the installed
 *    libglusterfs, initialised the way glusterfsd does (mem_pools_init,
 *    global threading on, gf_async_init, then the thread limit);
 *  - mutex + condvar: one locked FIFO and a condition variable signalled per
 *    job, the way performance/io-threads queues requests.
 * Each pool runs in its own process (pool-bench forks), so their global
 * state never meets.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "config.h"

#include <glusterfs/globals.h>
#include <glusterfs/mem-pool.h>
#include <glusterfs/xlator.h>

#include "pool-bench.h"

uint64_t
bench_now_ns(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* --- gfr_pool ------------------------------------------------------------ */

static struct gfr_pool *gfr_bench_pool;

/* gfr_pool's defaults unless GFR_BENCH_BATCH / GFR_BENCH_SPIN_US say
 * otherwise (to measure what each option does). */
static unsigned
env_or(const char *name, unsigned fallback)
{
    const char *value = getenv(name);

    return value ? (unsigned)strtoul(value, NULL, 10) : fallback;
}

static void
gfr_run(struct gfr_pool_job *job, void *cb_arg, int status)
{
    struct bench_job *bj = caa_container_of(job, struct bench_job, u.gfr);

    bj->fn(bj);
}

static int
gfr_init(unsigned max_threads)
{
    struct gfr_pool_opts opts;

    gfr_pool_opts_init(&opts);
    opts.name = "bench";
    opts.max_threads = max_threads;
    opts.batch = env_or("GFR_BENCH_BATCH", opts.batch);
    opts.spin_us = env_or("GFR_BENCH_SPIN_US", opts.spin_us);
    return gfr_pool_create(&opts, &gfr_bench_pool);
}

static void
gfr_submit(struct bench_job *job)
{
    gfr_pool_job_init(&job->u.gfr, gfr_run, NULL);
    if (gfr_pool_submit(gfr_bench_pool, &job->u.gfr, NULL,
                        GFR_POOL_PRIO_NORMAL) != 0)
        abort();
}

static void
gfr_fini(void)
{
    gfr_pool_destroy(gfr_bench_pool, GFR_POOL_DRAIN_RUN);
}

const struct bench_pool_ops bench_gfr_pool_ops = {
    .name = "gfr_pool",
    .init = gfr_init,
    .submit = gfr_submit,
    .fini = gfr_fini,
};

/* --- gf_async (GlusterFS's own) --------------------------------------------- */

/* GlusterFS 11 dropped gf_async's xlator argument (configure probes it). */
#ifdef GFR_GF_ASYNC_TAKES_XLATOR
static void
gf_run(xlator_t *xl, gf_async_t *async)
#else
static void
gf_run(gf_async_t *async)
#endif
{
    struct bench_job *bj = caa_container_of(async, struct bench_job, u.gf);

#ifdef GFR_GF_ASYNC_TAKES_XLATOR
    (void)xl;
#endif
    bj->fn(bj);
}

static int
gf_init(unsigned max_threads)
{
    glusterfs_ctx_t *ctx = glusterfs_ctx_new();

    if (!ctx || glusterfs_globals_init(ctx) != 0)
        return -ENOMEM;
    THIS->ctx = ctx;
    mem_pools_init();
    ctx->cmd_args.global_threading = 1;
    if (gf_async_init(ctx) < 0)
        return -EIO;
    /* glusterfsd applies config.brick-threads after init; 0 is its
     * default of 2 x online CPUs, which is also our max_threads. */
    gf_async_adjust_threads((int32_t)max_threads);
    return 0;
}

static void
gf_submit(struct bench_job *job)
{
#ifdef GFR_GF_ASYNC_TAKES_XLATOR
    gf_async(&job->u.gf, THIS, gf_run);
#else
    gf_async(&job->u.gf, gf_run);
#endif
}

const struct bench_pool_ops bench_gf_async_ops = {
    .name = "gf_async",
    .init = gf_init,
    .submit = gf_submit,
    /* gf_async_fini() never returns here: it waits forever in its stop
     * barrier (seen with gdb).  Every job has finished when fini would be
     * called, and the child process exits right after. */
    .fini = NULL,
};

/* --- mutex + condvar (io-threads style) ---------------------------------- */

static struct {
    pthread_mutex_t lock;
    pthread_cond_t cond;
    struct bench_job *head;
    struct bench_job **tail;
    int stopping;
    unsigned nthreads;
    pthread_t threads[GFR_POOL_MAX_THREADS];
} mc = {
    .lock = PTHREAD_MUTEX_INITIALIZER,
    .cond = PTHREAD_COND_INITIALIZER,
};

static void *
mc_worker(void *arg)
{
    pthread_mutex_lock(&mc.lock);
    for (;;) {
        struct bench_job *job = mc.head;

        if (!job) {
            if (mc.stopping)
                break;
            pthread_cond_wait(&mc.cond, &mc.lock);
            continue;
        }
        mc.head = job->u.next;
        if (!mc.head)
            mc.tail = &mc.head;
        pthread_mutex_unlock(&mc.lock);
        job->fn(job);
        pthread_mutex_lock(&mc.lock);
    }
    pthread_mutex_unlock(&mc.lock);
    return NULL;
}

static int
mc_init(unsigned max_threads)
{
    mc.head = NULL;
    mc.tail = &mc.head;
    for (mc.nthreads = 0; mc.nthreads < max_threads; mc.nthreads++)
        if (pthread_create(&mc.threads[mc.nthreads], NULL, mc_worker, NULL))
            return -EAGAIN;
    return 0;
}

static void
mc_submit(struct bench_job *job)
{
    job->u.next = NULL;
    pthread_mutex_lock(&mc.lock);
    *mc.tail = job;
    mc.tail = &job->u.next;
    pthread_cond_signal(&mc.cond);
    pthread_mutex_unlock(&mc.lock);
}

static void
mc_fini(void)
{
    pthread_mutex_lock(&mc.lock);
    mc.stopping = 1;
    pthread_cond_broadcast(&mc.cond);
    pthread_mutex_unlock(&mc.lock);
    for (unsigned i = 0; i < mc.nthreads; i++)
        pthread_join(mc.threads[i], NULL);
}

const struct bench_pool_ops bench_mutex_cond_ops = {
    .name = "mutex+cond",
    .init = mc_init,
    .submit = mc_submit,
    .fini = mc_fini,
};
