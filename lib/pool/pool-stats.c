/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * gfr_pool statistics.  Counters live where they are written (producers'
 * stripes, each worker's own counts, the pool's atomics) and are summed on
 * read, so that recording costs no shared atomic on the job path.
 */
#include <errno.h>
#include <string.h>

#include <urcu/uatomic.h>

#include "pool-internal.h"

/* Adds counts (read with CMM_LOAD_SHARED: their owner may be writing). */
void
gfr_pool_counts_add(struct gfr_pool_worker_counts *sum,
                    const struct gfr_pool_worker_counts *counts)
{
    struct gfr_hist queue_ns;

    for (int p = 0; p < GFR_POOL_NR_PRIO; p++)
        sum->started[p] += CMM_LOAD_SHARED(counts->started[p]);
    sum->executed += CMM_LOAD_SHARED(counts->executed);
    sum->cancelled += CMM_LOAD_SHARED(counts->cancelled);
    sum->timers_fired += CMM_LOAD_SHARED(counts->timers_fired);
    gfr_hist_snapshot(&counts->queue_ns, &queue_ns);
    gfr_hist_merge(&sum->queue_ns, &queue_ns);
}

int
gfr_pool_stats_get(struct gfr_pool *pool, struct gfr_pool_stats *stats)
{
    uint64_t submitted[GFR_POOL_NR_PRIO] = {0};
    struct gfr_pool_worker_counts sum;
    struct gfr_pool_worker *worker;

    if (!pool || !stats)
        return -EINVAL;
    memset(stats, 0, sizeof(*stats));
    for (int i = 0; i < GFR_POOL_STRIPES; i++)
        for (int p = 0; p < GFR_POOL_NR_PRIO; p++)
            submitted[p] += uatomic_read(&pool->stripes[i].submitted[p]);

    pthread_mutex_lock(&pool->threads_lock);
    sum = pool->retired;
    cds_list_for_each_entry(worker, &pool->workers, link)
        gfr_pool_counts_add(&sum, &worker->counts);
    pthread_mutex_unlock(&pool->threads_lock);

    stats->executed = sum.executed;
    stats->cancelled = sum.cancelled;
    stats->timers_fired = sum.timers_fired;
    for (int p = 0; p < GFR_POOL_NR_PRIO; p++) {
        stats->submitted += submitted[p];
        /* Read apart, a job can be seen started and not yet submitted. */
        stats->queued_by_prio[p] = submitted[p] > sum.started[p]
                                       ? submitted[p] - sum.started[p]
                                       : 0;
        stats->queued += stats->queued_by_prio[p];
    }
    stats->queue_ns = sum.queue_ns;
    stats->wakeups = uatomic_read(&pool->wakeups);
    stats->threads_started = uatomic_read(&pool->threads_started);
    stats->threads_exited = uatomic_read(&pool->threads_exited);
    stats->threads = (unsigned)uatomic_read(&pool->nr_threads);
    cmm_smp_rmb(); /* the peak after the count: see gfr_pool_spawn_worker */
    stats->running = (unsigned)uatomic_read(&pool->nr_running);
    stats->sleeping = (unsigned)uatomic_read(&pool->nr_idle);
    stats->spinning = (unsigned)uatomic_read(&pool->nr_spinning);
    stats->blocked = (unsigned)uatomic_read(&pool->nr_blocked);
    stats->peak_threads = (unsigned)uatomic_read(&pool->peak_threads);
    return 0;
}
