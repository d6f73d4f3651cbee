/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The pool's scheduler: which queued job runs next.  Priority classes with a
 * starvation limit, and round-robin between clients within a class, one job
 * per turn.  A plain data structure: the caller serialises every call (the
 * pool holds its scheduler mutex), so nothing here is atomic.
 */
#ifndef GFR_POOL_SCHED_H
#define GFR_POOL_SCHED_H

#include <stdint.h>

#include <urcu/list.h>

#include "gfr_pool.h"

struct gfr_pool_client {
    struct gfr_pool *pool;
    struct cds_list_head jobs[GFR_POOL_NR_PRIO];       /* FIFO per class */
    struct cds_list_head ready_link[GFR_POOL_NR_PRIO]; /* in sched ready[] */
    struct cds_list_head all_link;                     /* in sched clients */
    uint64_t queued;
    int released;
    struct gfr_pool_job release_marker;
};

struct gfr_sched {
    struct cds_list_head ready[GFR_POOL_NR_PRIO]; /* clients with jobs */
    struct cds_list_head clients;                 /* every live client */
    uint64_t queued;
    unsigned skipped[GFR_POOL_NR_PRIO];
    unsigned starvation_limit;
};

void gfr_sched_init(struct gfr_sched *sched, unsigned starvation_limit);

/* Links a new client (allocated by the caller, owned by the scheduler). */
void gfr_sched_client_init(struct gfr_sched *sched,
                           struct gfr_pool_client *client,
                           struct gfr_pool *pool);

/* Queues a job at the tail of its client's class list, or processes a
 * client's release marker (the client is freed once it has no jobs). */
void gfr_sched_add(struct gfr_sched *sched, struct gfr_pool_job *job);

/* Dequeues the next job to run, or NULL when none is queued. */
struct gfr_pool_job *gfr_sched_take(struct gfr_sched *sched);

/* Frees every client; the scheduler must hold no jobs. */
void gfr_sched_fini(struct gfr_sched *sched);

#endif /* GFR_POOL_SCHED_H */
