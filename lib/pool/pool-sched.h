/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The pool's scheduler: per client and class, a wait-free FIFO of jobs; per
 * class, a wait-free FIFO of the clients that have jobs (the ready queue).
 *
 * Concurrency:
 *  - gfr_sched_enqueue: any thread, wait-free, concurrently with everything
 *    else except gfr_sched_release and gfr_sched_fini for the same client;
 *  - gfr_sched_take, gfr_sched_client_new, gfr_sched_release,
 *    gfr_sched_fini: serialised by the caller (the pool's sched_lock); they
 *    are the only consumers of every queue here.
 * A client is in ready[c] exactly when its `scheduled[c]` flag is set; the
 * flag goes 0 -> 1 by exchange, so exactly one thread (the producer that
 * made the queue non-empty, or the worker that found it non-empty again
 * after unscheduling it) links it.
 */
#ifndef GFR_POOL_SCHED_H
#define GFR_POOL_SCHED_H

#include <stdint.h>

#include <urcu/arch.h>
#include <urcu/list.h>
#include <urcu/wfcqueue.h>

#include "gfr_pool.h"

struct gfr_sched_fifo {
    struct cds_wfcq_head head;
    struct cds_wfcq_tail tail __attribute__((aligned(CAA_CACHE_LINE_SIZE)));
} __attribute__((aligned(CAA_CACHE_LINE_SIZE)));

struct gfr_pool_client {
    struct gfr_sched_fifo jobs[GFR_POOL_NR_PRIO];
    struct cds_wfcq_node ready_node[GFR_POOL_NR_PRIO];
    unsigned long scheduled[GFR_POOL_NR_PRIO];
    struct gfr_pool *pool;
    struct cds_list_head all_link; /* in sched clients, under the lock */
    int released;                  /* under the lock */
};

struct gfr_sched {
    struct gfr_sched_fifo ready[GFR_POOL_NR_PRIO];
    struct gfr_sched_fifo returned; /* handed back by a blocking worker */
    struct cds_list_head clients; /* every client not yet freed */
    unsigned skipped[GFR_POOL_NR_PRIO];
    unsigned starvation_limit;
};

void gfr_sched_init(struct gfr_sched *sched, unsigned starvation_limit);

/* Allocates and links a client (freed by gfr_sched_release or
 * gfr_sched_fini).  Returns NULL without memory. */
struct gfr_pool_client *gfr_sched_client_new(struct gfr_sched *sched,
                                             struct gfr_pool *pool);

/*
 * Queues job on client's queue for class c.  Returns 1 when the class's
 * ready queue went from empty to non-empty, so the caller must make sure a
 * worker will look (the returned transition is ordered after the enqueue by
 * a full barrier).
 */
int gfr_sched_enqueue(struct gfr_sched *sched, struct gfr_pool_client *client,
                      int c, struct gfr_pool_job *job);

/*
 * Dequeues the next job, or NULL.  *blocked is set when a producer's
 * half-finished enqueue (it is between its exchange and its link) hides
 * work that will be visible in a moment.
 */
struct gfr_pool_job *gfr_sched_take(struct gfr_sched *sched, int *blocked);

/*
 * Queues jobs that were taken but not started, ahead of every other job
 * (a worker's batch when its current job blocks).  Any thread, wait-free.
 */
void gfr_sched_return(struct gfr_sched *sched, struct gfr_pool_job **jobs,
                      unsigned n);

/* Lock-free hint: might a take find work? */
int gfr_sched_has_work(struct gfr_sched *sched);

/* No more jobs will be queued for client; freed once it has none left. */
void gfr_sched_release(struct gfr_sched *sched, struct gfr_pool_client *client);

/* Frees every client; no job may be queued and no producer active. */
void gfr_sched_fini(struct gfr_sched *sched);

#endif /* GFR_POOL_SCHED_H */
