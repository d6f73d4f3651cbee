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

void
gfr_pool_hist_record(struct gfr_pool_worker_counts *counts, uint64_t ns)
{
    unsigned bucket = ns ? 64 - (unsigned)__builtin_clzll(ns) : 0;

    if (bucket >= GFR_POOL_HIST_BUCKETS)
        bucket = GFR_POOL_HIST_BUCKETS - 1;
    CMM_STORE_SHARED(counts->hist[bucket], counts->hist[bucket] + 1);
}

/* Adds counts (read with CMM_LOAD_SHARED: their owner may be writing). */
void
gfr_pool_counts_add(struct gfr_pool_worker_counts *sum,
                    const struct gfr_pool_worker_counts *counts)
{
    for (int p = 0; p < GFR_POOL_NR_PRIO; p++)
        sum->started[p] += CMM_LOAD_SHARED(counts->started[p]);
    sum->executed += CMM_LOAD_SHARED(counts->executed);
    sum->cancelled += CMM_LOAD_SHARED(counts->cancelled);
    sum->timers_fired += CMM_LOAD_SHARED(counts->timers_fired);
    for (int b = 0; b < GFR_POOL_HIST_BUCKETS; b++)
        sum->hist[b] += CMM_LOAD_SHARED(counts->hist[b]);
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
    memcpy(stats->queue_ns_hist, sum.hist, sizeof(stats->queue_ns_hist));
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

uint64_t
gfr_pool_stats_queue_ns(const struct gfr_pool_stats *stats, double fraction)
{
    uint64_t total = 0;
    uint64_t seen = 0;

    for (int b = 0; b < GFR_POOL_HIST_BUCKETS; b++)
        total += stats->queue_ns_hist[b];
    if (total == 0)
        return 0;
    for (int b = 0; b < GFR_POOL_HIST_BUCKETS; b++) {
        seen += stats->queue_ns_hist[b];
        if ((double)seen >= fraction * (double)total)
            return b == 0 ? 1 : (uint64_t)1 << b;
    }
    return (uint64_t)1 << (GFR_POOL_HIST_BUCKETS - 1);
}
