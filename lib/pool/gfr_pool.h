/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * gfr_pool: the process-wide worker pool.
 *
 * Producers (CQ pollers, any thread) hand jobs to the pool with one
 * wait-free enqueue; workers run them.  The pool
 *  - runs only as many threads as the load needs: it adds a thread when work
 *    is queued and no worker is free and fewer than `concurrency` workers are
 *    running (a worker inside gfr_pool_block_begin/end does not count), and
 *    a thread idle for `idle_ms` exits, down to `min_threads`;
 *  - keeps three priority classes, and never skips a non-empty class more
 *    than `starvation_limit` picks in a row;
 *  - serves clients (connections) round-robin within a class, one job per
 *    turn, so a client with thousands of queued jobs delays another client's
 *    job by at most `batch` jobs per running worker;
 *  - lets a worker take up to `batch` jobs (in scheduler order) per visit
 *    to the scheduler's lock when work is queued; a job that blocks
 *    (gfr_pool_block_begin) hands the rest of its batch back at once;
 *  - queues each job on its own client's wait-free queue, so a job is
 *    touched once by the producer and once by the worker that takes it;
 *  - runs per-thread timers: a job arms a timer that later fires on the same
 *    worker thread, so state touched only by that thread needs no lock.
 *
 * Every function returns 0 or a negative errno unless it says otherwise.
 * Ownership: jobs, timers and their memory belong to the caller; the pool
 * only links them.  Clients belong to the pool (created and freed by it).
 */
#ifndef GFR_POOL_H
#define GFR_POOL_H

#include <stdint.h>

#include <urcu/list.h>
#include <urcu/wfcqueue.h>

#include "gfr_hist.h"

struct gfr_pool;
struct gfr_pool_client;
struct gfr_pool_job;
struct gfr_pool_timer;

/* Scheduling classes, highest first. */
enum gfr_pool_prio {
    GFR_POOL_PRIO_HIGH,   /* small metadata operations */
    GFR_POOL_PRIO_NORMAL, /* everything else */
    GFR_POOL_PRIO_LOW,    /* bulk and background work */
    GFR_POOL_NR_PRIO,
};

/* What gfr_pool_destroy does with jobs that are still queued. */
enum gfr_pool_drain {
    GFR_POOL_DRAIN_RUN,    /* run them, status 0 */
    GFR_POOL_DRAIN_CANCEL, /* call them with status -ECANCELED */
};

/*
 * A job's callback runs exactly once: with status 0 when the pool runs it, or
 * with -ECANCELED when gfr_pool_destroy(GFR_POOL_DRAIN_CANCEL) discards it.
 * From the moment it is called, the job belongs to the callback again (it may
 * free it or submit it anew).
 */
typedef void (*gfr_pool_job_fn)(struct gfr_pool_job *job, void *cb_arg,
                                int status);

/* Where a job is: QUEUED from gfr_pool_submit until the pool calls its
 * callback, IDLE otherwise (the callback may resubmit it). */
enum gfr_pool_job_state {
    GFR_POOL_JOB_IDLE,
    GFR_POOL_JOB_QUEUED,
};

/*
 * Embedded in the caller's object, so that submitting allocates nothing.
 * Initialise with gfr_pool_job_init; the fields are the pool's.  40 bytes:
 * with a few fields of the caller's, a job fits one cache line.
 */
struct gfr_pool_job {
    struct cds_wfcq_node node; /* in its client's queue for its class */
    gfr_pool_job_fn fn;
    void *cb_arg;
    uint64_t enqueued_ns; /* sampled jobs only, else 0 */
    uint8_t state;        /* enum gfr_pool_job_state */
    uint8_t prio;         /* its class, from its submission */
};

/* A timer fires (status 0) or is cancelled by destroy (status -ECANCELED) on
 * the worker thread that armed it. */
typedef void (*gfr_pool_timer_fn)(struct gfr_pool_timer *timer, void *cb_arg,
                                  int status);

/* Embedded in the caller's object; the fields are the pool's. */
struct gfr_pool_timer {
    struct cds_list_head link;
    uint64_t deadline_ms;
    gfr_pool_timer_fn fn;
    void *cb_arg;
    void *owner; /* the arming worker while armed, else NULL */
};

struct gfr_pool_opts {
    const char *name;          /* thread names are "<name>/<n>"; 7 chars used */
    unsigned min_threads;      /* kept even when idle; >= 1 */
    unsigned max_threads;      /* >= min_threads, <= GFR_POOL_MAX_THREADS */
    unsigned concurrency;      /* running workers wanted; 0: online CPUs */
    unsigned idle_ms;          /* idle time before a thread above min exits */
    unsigned spin_us;          /* one idle worker polls this long before
                                * sleeping; 0: sleep at once */
    unsigned starvation_limit; /* picks a non-empty class may be skipped */
    unsigned batch;            /* jobs a worker takes per visit to the
                                * scheduler, 1..GFR_POOL_MAX_BATCH */
    /* Optional: called on a worker's own thread just before it exits (idle
     * above min_threads, or pool destruction), outside every pool lock.
     * For code that keeps state per calling thread: GlusterFS's rpcsvc
     * gives each thread that hands it requests a queue and a thread of its
     * own until told that thread died. */
    void (*thread_exit)(void *cb_arg);
    void *thread_exit_arg;
};

#define GFR_POOL_MAX_THREADS 1024
#define GFR_POOL_MAX_BATCH 64

/* Time in queue (submit to start) is sampled: one job in
 * GFR_POOL_HIST_SAMPLE of each producer thread, since two clock reads per
 * job would cost as much as the rest of a hand-off. */
#define GFR_POOL_HIST_SAMPLE 16

struct gfr_pool_stats {
    uint64_t submitted;
    /* Both raised after the callback returns: a job's effects can be
     * seen a moment before it is counted here. */
    uint64_t executed;  /* callbacks run with status 0 */
    uint64_t cancelled; /* callbacks run with -ECANCELED */
    uint64_t queued;    /* submitted, not yet started */
    uint64_t queued_by_prio[GFR_POOL_NR_PRIO]; /* the same, per class */
    uint64_t wakeups;   /* futex wake-ups of sleeping workers */
    uint64_t threads_started;
    /* A retiring worker leaves `threads` when it decides to exit, then
     * runs thread_exit, then counts in threads_exited: the fields are read
     * one by one, so threads_started - threads_exited can briefly exceed
     * threads. */
    uint64_t threads_exited;
    uint64_t timers_fired;
    unsigned threads;
    unsigned running;  /* taking or running jobs, not blocked */
    unsigned sleeping;
    unsigned spinning;
    unsigned blocked;  /* inside gfr_pool_block_begin/end */
    unsigned peak_threads;
    struct gfr_hist queue_ns; /* the sampled jobs' time in queue */
};

/* Fills opts with the defaults: 1..2*CPUs threads, concurrency = CPUs,
 * idle_ms 1000, spin_us 20, starvation_limit 8, batch 8. */
void gfr_pool_opts_init(struct gfr_pool_opts *opts);

/*
 * Creates a pool and starts min_threads workers.
 * Returns -EINVAL for a NULL argument, min_threads 0, max < min or max over
 * GFR_POOL_MAX_THREADS; -ENOMEM; or the error of pthread_create.
 */
int gfr_pool_create(const struct gfr_pool_opts *opts, struct gfr_pool **pool);

/*
 * Stops the pool: submits fail with -ESHUTDOWN from now on, queued jobs run
 * or are cancelled as `drain` says, armed timers are cancelled on their
 * threads, every thread is joined and every client freed.  Jobs already
 * running finish normally.  No job is dropped: each callback runs once.
 * Returns -EINVAL (NULL pool), -EDEADLK when called from one of the pool's
 * own workers.  Must be called once, and after every submit has returned.
 */
int gfr_pool_destroy(struct gfr_pool *pool, enum gfr_pool_drain drain);

/* A client: jobs of different clients are served round-robin. */
int gfr_pool_client_create(struct gfr_pool *pool,
                           struct gfr_pool_client **client);

/*
 * The caller will submit no more jobs for this client.  Its queued jobs
 * still run; the pool frees the client after the last one has started.
 * Every submit for the client must have returned before the call, and the
 * call must come before gfr_pool_destroy.  Takes the scheduler's mutex.
 */
void gfr_pool_client_release(struct gfr_pool_client *client);

void gfr_pool_job_init(struct gfr_pool_job *job, gfr_pool_job_fn fn,
                       void *cb_arg);

/*
 * Queues a job (wait-free: one atomic exchange on the client's queue; when
 * that queue was empty, one more to schedule the client, and a futex wake
 * when no worker is polling).  client NULL: the pool's
 * default client.  If every worker is busy or blocked and the pool may grow,
 * the caller's thread starts one more worker.
 * Memory ordering: everything written before the submit is visible to the
 * job's callback.
 * Returns -EINVAL (NULL pool or job, no callback, bad prio, job not IDLE),
 * -ESHUTDOWN once destroy has begun.
 */
int gfr_pool_submit(struct gfr_pool *pool, struct gfr_pool_job *job,
                    struct gfr_pool_client *client, enum gfr_pool_prio prio);

/*
 * Brackets a blocking call inside a job, so the pool can start another
 * worker meanwhile; the jobs this worker had taken after the current one go
 * back to the scheduler, ahead of everything else.  No effect outside the
 * pool's workers.
 */
void gfr_pool_block_begin(void);
void gfr_pool_block_end(void);

/*
 * For a thread that runs handlers but is not one of the pool's workers
 * (an RDMA poller with dispatch=direct): fn(cb_arg) is called on this
 * thread at the start of every gfr_pool_block_begin made on it, so that it
 * can hand its own duties to another thread before the call blocks.
 * NULL removes it.  Per thread; no locking.
 */
void gfr_pool_set_block_hook(void (*fn)(void *cb_arg), void *cb_arg);

/*
 * Arms a timer that fires on the calling worker thread after delay_ms
 * (millisecond resolution; 0 fires after the current job).  Only from a job
 * or timer callback.  Returns -EINVAL (NULL timer or fn), -EPERM (not on a
 * worker thread), -EBUSY (already armed), -ESHUTDOWN.
 */
int gfr_pool_timer_arm(struct gfr_pool_timer *timer, unsigned delay_ms,
                       gfr_pool_timer_fn fn, void *cb_arg);

/* Disarms a timer of the calling worker thread; its callback does not run.
 * Returns -EINVAL, -EPERM (not the arming thread's), -ENOENT (not armed). */
int gfr_pool_timer_cancel(struct gfr_pool_timer *timer);

/* A snapshot; the counters are read one by one, not all at one instant. */
int gfr_pool_stats_get(struct gfr_pool *pool, struct gfr_pool_stats *stats);

#endif /* GFR_POOL_H */
