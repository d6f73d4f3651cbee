/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * gfr_pool: creation, submission, clients and destruction.  The workers'
 * loop is in pool-worker.c, the choice of the next job in pool-sched.c.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <urcu/uatomic.h>

#include "pool-internal.h"

void
gfr_pool_opts_init(struct gfr_pool_opts *opts)
{
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);

    if (cpus < 1)
        cpus = 1;
    memset(opts, 0, sizeof(*opts));
    opts->name = "gfrpool";
    opts->min_threads = 1;
    opts->max_threads = (unsigned)(2 * cpus);
    opts->concurrency = 0;
    opts->idle_ms = 1000;
    opts->spin_us = 20;
    opts->starvation_limit = 8;
    opts->batch = 8;
}

static int
opts_valid(const struct gfr_pool_opts *opts)
{
    return opts->min_threads >= 1 && opts->max_threads >= opts->min_threads &&
           opts->max_threads <= GFR_POOL_MAX_THREADS &&
           opts->starvation_limit >= 1 && opts->batch >= 1 &&
           opts->batch <= GFR_POOL_MAX_BATCH;
}

static void
pool_free(struct gfr_pool *pool)
{
    gfr_sched_fini(&pool->sched);
    pthread_mutex_destroy(&pool->sched_lock);
    pthread_mutex_destroy(&pool->idle_lock);
    pthread_mutex_destroy(&pool->threads_lock);
    free(pool);
}

/*
 * Joins every worker; the pool must be shutting down so none is started.
 * A worker stays on its list while it is joined: one retiring at this very
 * moment moves itself from workers to zombies under threads_lock, and is
 * unlinked only once it has exited.
 */
static void
join_all(struct gfr_pool *pool)
{
    for (;;) {
        struct gfr_pool_worker *worker = NULL;

        pthread_mutex_lock(&pool->threads_lock);
        if (!cds_list_empty(&pool->workers))
            worker = cds_list_first_entry(&pool->workers,
                                          struct gfr_pool_worker, link);
        else if (!cds_list_empty(&pool->zombies))
            worker = cds_list_first_entry(&pool->zombies,
                                          struct gfr_pool_worker, link);
        pthread_mutex_unlock(&pool->threads_lock);
        if (!worker)
            return;
        pthread_join(worker->thread, NULL);
        pthread_mutex_lock(&pool->threads_lock);
        cds_list_del(&worker->link);
        pthread_mutex_unlock(&pool->threads_lock);
        free(worker);
    }
}

int
gfr_pool_create(const struct gfr_pool_opts *opts, struct gfr_pool **poolp)
{
    struct gfr_pool *pool;
    pthread_mutexattr_t attr;
    long cpus;
    int err;

    if (!opts || !poolp || !opts_valid(opts))
        return -EINVAL;
    if (posix_memalign((void **)&pool, CAA_CACHE_LINE_SIZE, sizeof(*pool)))
        return -ENOMEM;
    memset(pool, 0, sizeof(*pool));
    pool->opts = *opts;
    snprintf(pool->name, sizeof(pool->name), "%s",
             opts->name ? opts->name : "gfrpool");
    cpus = sysconf(_SC_NPROCESSORS_ONLN);
    if (pool->opts.concurrency == 0)
        pool->opts.concurrency = cpus > 0 ? (unsigned)cpus : 1;

    /* Held for a few list operations at a time: spin briefly rather than
     * pay a futex sleep and wake-up when two workers meet on it. */
    pthread_mutexattr_init(&attr);
    pthread_mutexattr_settype(&attr, PTHREAD_MUTEX_ADAPTIVE_NP);
    pthread_mutex_init(&pool->sched_lock, &attr);
    pthread_mutexattr_destroy(&attr);
    pthread_mutex_init(&pool->idle_lock, NULL);
    pthread_mutex_init(&pool->threads_lock, NULL);
    CDS_INIT_LIST_HEAD(&pool->idle_stack);
    CDS_INIT_LIST_HEAD(&pool->workers);
    CDS_INIT_LIST_HEAD(&pool->zombies);
    gfr_sched_init(&pool->sched, pool->opts.starvation_limit);

    pool->default_client = gfr_sched_client_new(&pool->sched, pool);
    if (!pool->default_client) {
        pool_free(pool);
        return -ENOMEM;
    }

    for (unsigned i = 0; i < pool->opts.min_threads; i++) {
        err = gfr_pool_spawn_worker(pool);
        if (err) {
            uatomic_set(&pool->shutdown, 1);
            gfr_pool_wake_all(pool);
            join_all(pool);
            pool_free(pool);
            return err;
        }
    }
    *poolp = pool;
    return 0;
}

int
gfr_pool_client_create(struct gfr_pool *pool, struct gfr_pool_client **clientp)
{
    struct gfr_pool_client *client;

    if (!pool || !clientp)
        return -EINVAL;
    if (uatomic_read(&pool->shutdown))
        return -ESHUTDOWN;
    pthread_mutex_lock(&pool->sched_lock);
    client = gfr_sched_client_new(&pool->sched, pool);
    pthread_mutex_unlock(&pool->sched_lock);
    if (!client)
        return -ENOMEM;
    *clientp = client;
    return 0;
}

void
gfr_pool_job_init(struct gfr_pool_job *job, gfr_pool_job_fn fn, void *cb_arg)
{
    memset(job, 0, sizeof(*job));
    job->fn = fn;
    job->cb_arg = cb_arg;
    job->state = GFR_POOL_JOB_IDLE;
}

static unsigned
stripe_index(void)
{
    static unsigned long next_stripe;
    static __thread unsigned stripe = ~0u;

    if (stripe == ~0u)
        stripe = (unsigned)(uatomic_add_return(&next_stripe, 1) %
                            GFR_POOL_STRIPES);
    return stripe;
}

int
gfr_pool_submit(struct gfr_pool *pool, struct gfr_pool_job *job,
                struct gfr_pool_client *client, enum gfr_pool_prio prio)
{
    struct gfr_pool_stripe *stripe;
    uint64_t entered;

    if (!pool || !job || !job->fn || (unsigned)prio >= GFR_POOL_NR_PRIO ||
        job->state != GFR_POOL_JOB_IDLE || (client && client->pool != pool))
        return -EINVAL;

    /* Dekker with gfr_pool_destroy: `entered` is raised (a full barrier)
     * before shutdown is read, shutdown is set (full barrier) before the
     * stripes are read; one of the two sees the other. */
    stripe = &pool->stripes[stripe_index()];
    entered = uatomic_add_return(&stripe->entered, 1);
    cmm_smp_mb__after_uatomic_add();
    if (CMM_LOAD_SHARED(pool->shutdown)) {
        uatomic_dec(&stripe->entered);
        return -ESHUTDOWN;
    }
    job->state = GFR_POOL_JOB_QUEUED;
    job->prio = (uint8_t)prio;
    job->enqueued_ns = entered % GFR_POOL_HIST_SAMPLE ? 0 : gfr_now_ns();
    if (gfr_sched_enqueue(&pool->sched, client ? client : pool->default_client,
                          prio, job))
        gfr_pool_ensure_worker(pool);
    else
        gfr_pool_more_workers_if_idle(pool);
    uatomic_inc(&stripe->submitted[prio]);
    return 0;
}

void
gfr_pool_client_release(struct gfr_pool_client *client)
{
    struct gfr_pool *pool;

    if (!client)
        return;
    pool = client->pool;
    pthread_mutex_lock(&pool->sched_lock);
    gfr_sched_release(&pool->sched, client);
    pthread_mutex_unlock(&pool->sched_lock);
}

/* Submits between their shutdown check and their enqueue's end. */
static int
inflight_submits(struct gfr_pool *pool)
{
    for (int i = 0; i < GFR_POOL_STRIPES; i++) {
        uint64_t submitted = 0;

        for (int p = 0; p < GFR_POOL_NR_PRIO; p++)
            submitted += uatomic_read(&pool->stripes[i].submitted[p]);
        if (uatomic_read(&pool->stripes[i].entered) != submitted)
            return 1;
    }
    return 0;
}

int
gfr_pool_destroy(struct gfr_pool *pool, enum gfr_pool_drain drain)
{
    if (!pool || (drain != GFR_POOL_DRAIN_RUN && drain != GFR_POOL_DRAIN_CANCEL))
        return -EINVAL;
    if (gfr_pool_current_worker && gfr_pool_current_worker->pool == pool)
        return -EDEADLK;

    pool->drain = drain;
    cmm_smp_wmb();
    uatomic_set(&pool->shutdown, 1);
    cmm_smp_mb();
    /* A submit that missed the flag is between its check and its enqueue:
     * let it finish, so the workers' drain sees its job. */
    while (inflight_submits(pool))
        sched_yield();
    gfr_pool_wake_all(pool);
    join_all(pool);
    pool_free(pool);
    return 0;
}
