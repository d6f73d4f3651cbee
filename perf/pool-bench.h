/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * pool-bench: the same job bodies handed to different worker pools.
 * Each pool is an ops table; a job embeds whatever node its pool links.
 */
#ifndef GFR_POOL_BENCH_H
#define GFR_POOL_BENCH_H

#include <stdint.h>

#include <glusterfs/glusterfs.h>
#include <glusterfs/async.h>

#include "gfr_pool.h"

struct bench_job;
typedef void (*bench_job_fn)(struct bench_job *job);

/* One cache line for every pool: the pool's node, then the job's own
 * fields (submit times live in a separate array). */
struct bench_job {
    union {
        struct gfr_pool_job gfr;
        gf_async_t gf;
        struct bench_job *next; /* mutex + condvar queue */
    } u;
    bench_job_fn fn;
    void *arg;
    uint32_t done;
} __attribute__((aligned(64)));

struct bench_pool_ops {
    const char *name;
    /* Starts the pool with at most max_threads workers. */
    int (*init)(unsigned max_threads);
    void (*submit)(struct bench_job *job);
    /* Stops and joins the workers once every job has run; NULL when the
     * pool cannot be stopped (the child process exits instead). */
    void (*fini)(void);
};

extern const struct bench_pool_ops bench_gfr_pool_ops;
extern const struct bench_pool_ops bench_gf_async_ops;
extern const struct bench_pool_ops bench_mutex_cond_ops;
#ifdef GFR_HAVE_DPDK
extern const struct bench_pool_ops bench_rte_ring_ops;
#endif

uint64_t bench_now_ns(void);

#endif /* GFR_POOL_BENCH_H */
