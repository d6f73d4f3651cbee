/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The pool's shared state.  Who may touch what:
 *  - sched: producers enqueue (wait-free, gfr_sched_enqueue); workers take
 *    under sched_lock (see pool-sched.h).
 *  - nr_* counters: uatomic; each worker is counted in exactly one of
 *    running, idle, spinning, blocked (briefly in two, never in none).
 *  - idle_stack and worker->idle: under idle_lock.
 *  - workers, zombies, retired, next_index: under threads_lock.
 *  - a worker's counters and timers: written by its own thread only.
 */
#ifndef GFR_POOL_INTERNAL_H
#define GFR_POOL_INTERNAL_H

#include <pthread.h>
#include <stdint.h>

#include <urcu/arch.h>
#include <urcu/list.h>
#include <urcu/wfcqueue.h>

#include "gfr_clock.h"
#include "gfr_pool.h"
#include "pool-sched.h"

/* Producer-side counters, striped over cache lines so that producers on
 * different CPUs rarely share one. */
#define GFR_POOL_STRIPES 16

struct gfr_pool_stripe {
    uint64_t entered;   /* submits that passed into the pool */
    uint64_t submitted[GFR_POOL_NR_PRIO]; /* of those, submits that finished */
} __attribute__((aligned(CAA_CACHE_LINE_SIZE)));



struct gfr_pool_worker_counts {
    uint64_t started[GFR_POOL_NR_PRIO]; /* jobs taken from the scheduler */
    uint64_t executed;
    uint64_t cancelled;
    uint64_t timers_fired;
    struct gfr_hist queue_ns; /* written by its worker, read by anyone */
};

struct gfr_pool_worker {
    struct gfr_pool *pool;
    pthread_t thread;
    unsigned index;
    int32_t futex;                /* -1: asleep or about to; 0: woken */
    int idle;                     /* on idle_stack */
    int blocked;                  /* inside block_begin/end */
    struct cds_list_head idle_link;
    struct cds_list_head link;    /* in workers or zombies */
    struct cds_list_head timers;  /* armed, by deadline */
    struct gfr_pool_worker_counts counts;
    /* Jobs taken in one visit to the scheduler; [next, len) not started. */
    struct gfr_pool_job *batch[GFR_POOL_MAX_BATCH];
    unsigned batch_next;
    unsigned batch_len;
};

struct gfr_pool {
    struct gfr_sched sched;
    struct gfr_pool_stripe stripes[GFR_POOL_STRIPES];
    int shutdown;

    unsigned long nr_threads __attribute__((aligned(CAA_CACHE_LINE_SIZE)));
    unsigned long nr_running;
    unsigned long nr_idle;
    unsigned long nr_spinning;
    unsigned long nr_blocked;
    unsigned long peak_threads;
    uint64_t wakeups;
    uint64_t threads_started;
    uint64_t threads_exited;

    pthread_mutex_t sched_lock __attribute__((aligned(CAA_CACHE_LINE_SIZE)));

    pthread_mutex_t idle_lock;
    struct cds_list_head idle_stack;

    pthread_mutex_t threads_lock;
    struct cds_list_head workers;
    struct cds_list_head zombies;
    struct gfr_pool_worker_counts retired;
    unsigned next_index;

    struct gfr_pool_client *default_client;
    struct gfr_pool_opts opts;
    char name[8];
    enum gfr_pool_drain drain;
};

/* The worker running on this thread, NULL on other threads. */
extern __thread struct gfr_pool_worker *gfr_pool_current_worker;

/* pool-worker.c */
int gfr_pool_spawn_worker(struct gfr_pool *pool);
void gfr_pool_ensure_worker(struct gfr_pool *pool);
void gfr_pool_more_workers_if_idle(struct gfr_pool *pool);
void gfr_pool_wake_all(struct gfr_pool *pool);

/* pool-timer.c: a worker's timer list, on that worker's thread (worker
 * NULL: not a worker thread, -EPERM); gfr_pool_timer_arm and _cancel with
 * the calling thread's worker. */
int gfr_pool_timers_add(struct gfr_pool_worker *worker, struct gfr_pool_timer *timer,
                        unsigned delay_ms, gfr_pool_timer_fn fn, void *cb_arg);
int gfr_pool_timers_remove(struct gfr_pool_worker *worker, struct gfr_pool_timer *timer);
uint64_t gfr_pool_now_ms(void);
void gfr_pool_timers_fire(struct gfr_pool_worker *worker);
void gfr_pool_timers_cancel_all(struct gfr_pool_worker *worker);
/* ms until the first deadline (0 if due), or -1 with no timer armed. */
int64_t gfr_pool_timers_next_ms(struct gfr_pool_worker *worker);

/* pool-stats.c */
void gfr_pool_counts_add(struct gfr_pool_worker_counts *sum,
                         const struct gfr_pool_worker_counts *counts);

#endif /* GFR_POOL_INTERNAL_H */
