/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * gfr_pool's workers: taking jobs, running them, spinning, sleeping on a
 * futex, waking one another, starting and retiring threads.
 *
 * The lost-wake-up rule: a worker publishes that it stops looking for work
 * (nr_idle or nr_spinning raised, full barrier) before it checks for work one
 * last time; whoever adds work (a producer's enqueue, a worker leaving jobs
 * in the scheduler) does so before it reads those counts (full barrier).
 * One of the two always sees the other.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <limits.h>
#include <linux/futex.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <urcu/futex.h>
#include <urcu/uatomic.h>

#include "pool-internal.h"

__thread struct gfr_pool_worker *gfr_pool_current_worker;

/* gfr_pool_set_block_hook's, per thread. */
static __thread void (*block_hook)(void *cb_arg);
static __thread void *block_hook_arg;

static void more_workers(struct gfr_pool *pool);
static int spawn_if_short(struct gfr_pool *pool);

/* Lock-free hint: is there work a worker could take? */
static int
work_available(struct gfr_pool *pool)
{
    return gfr_sched_has_work(&pool->sched);
}

/*
 * Takes up to opts.batch jobs into worker->batch under sched_lock, stopping
 * early when nothing more is queued.  *more tells whether work is left for
 * another worker, or hidden for a moment by a half-finished enqueue.
 */
static void
take_batch(struct gfr_pool_worker *worker, int *more)
{
    struct gfr_pool *pool = worker->pool;
    unsigned n = 0;
    int blocked = 0;

    pthread_mutex_lock(&pool->sched_lock);
    while (n < pool->opts.batch) {
        struct gfr_pool_job *job = gfr_sched_take(&pool->sched, &blocked);

        if (!job)
            break;
        worker->batch[n++] = job;
    }
    pthread_mutex_unlock(&pool->sched_lock);
    worker->batch_next = 0;
    worker->batch_len = n;
    *more = blocked || work_available(pool);
}

static void
run_job(struct gfr_pool_worker *worker, struct gfr_pool_job *job)
{
    struct gfr_pool *pool = worker->pool;
    int cancel = 0;
    uint64_t now = job->enqueued_ns ? gfr_now_ns() : 0;

    if (CMM_LOAD_SHARED(pool->shutdown)) {
        cmm_smp_rmb(); /* drain is written before shutdown */
        cancel = pool->drain == GFR_POOL_DRAIN_CANCEL;
    }

    if (job->enqueued_ns)
        gfr_hist_add(&worker->counts.queue_ns,
                     now > job->enqueued_ns ? now - job->enqueued_ns : 0);
    CMM_STORE_SHARED(worker->counts.started[job->prio], worker->counts.started[job->prio] + 1);
    /* From here on the job is the callback's: it may free or resubmit it. */
    job->state = GFR_POOL_JOB_IDLE;
    job->fn(job, job->cb_arg, cancel ? -ECANCELED : 0);
    if (cancel)
        CMM_STORE_SHARED(worker->counts.cancelled, worker->counts.cancelled + 1);
    else
        CMM_STORE_SHARED(worker->counts.executed, worker->counts.executed + 1);
}

/* Pops the most recently idled worker (LIFO, so the others can time out)
 * and wakes it; it is counted as running from here on. */
static int
wake_one(struct gfr_pool *pool)
{
    struct gfr_pool_worker *worker = NULL;

    pthread_mutex_lock(&pool->idle_lock);
    if (!cds_list_empty(&pool->idle_stack)) {
        worker = cds_list_first_entry(&pool->idle_stack,
                                      struct gfr_pool_worker, idle_link);
        cds_list_del(&worker->idle_link);
        worker->idle = 0;
        uatomic_inc(&pool->nr_running);
        uatomic_dec(&pool->nr_idle);
        uatomic_set(&worker->futex, 0);
        futex_noasync(&worker->futex, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
    }
    pthread_mutex_unlock(&pool->idle_lock);
    if (!worker)
        return 0;
    uatomic_inc(&pool->wakeups);
    return 1;
}

void
gfr_pool_wake_all(struct gfr_pool *pool)
{
    while (wake_one(pool))
        ;
}

/*
 * Called after adding work.  A spinning worker will find it; else wake a
 * sleeping one; else, if fewer than `concurrency` workers run (the others
 * are blocked), start one.
 */
void
gfr_pool_ensure_worker(struct gfr_pool *pool)
{
    cmm_smp_mb();
    more_workers(pool);
}

/*
 * ensure_worker without the barrier, for a worker that leaves jobs behind
 * in the scheduler and goes on draining them itself: should it miss a
 * worker going to sleep at that instant, no job waits on that sleeper, only
 * parallelism is lost until the next wake-up.
 */
static void
chain_worker(struct gfr_pool *pool)
{
    if (CMM_LOAD_SHARED(pool->nr_spinning) == 0 &&
        (CMM_LOAD_SHARED(pool->nr_idle) != 0 ||
         CMM_LOAD_SHARED(pool->nr_running) < pool->opts.concurrency))
        more_workers(pool);
}

/*
 * Called by a producer whose job landed behind others: if workers sleep
 * while fewer than `concurrency` run and none spins, wake one more now
 * rather than wait for the chain.  A burst thus wakes up to `concurrency`
 * workers from the producer, and each wake-up is a system call that lets a
 * woken worker queued on the producer's own CPU preempt it (on the 2-vCPU
 * machine of docs/pool.md, pool-bench's burst p50 went from 55-61 us to
 * 34 us).  No barrier: the worker that took the earlier job chains anyway,
 * this only saves time.
 */
void
gfr_pool_more_workers_if_idle(struct gfr_pool *pool)
{
    if (CMM_LOAD_SHARED(pool->nr_idle) != 0 &&
        CMM_LOAD_SHARED(pool->nr_spinning) == 0 &&
        CMM_LOAD_SHARED(pool->nr_running) < pool->opts.concurrency)
        wake_one(pool);
}

static void
more_workers(struct gfr_pool *pool)
{
    if (uatomic_read(&pool->nr_spinning) != 0)
        return;
    if (uatomic_read(&pool->nr_idle) != 0 && wake_one(pool))
        return;
    if (uatomic_read(&pool->nr_running) < pool->opts.concurrency)
        spawn_if_short(pool);
}

/* Polls for work up to spin_us; only one worker spins at a time. */
static int
spin_for_work(struct gfr_pool_worker *worker)
{
    struct gfr_pool *pool = worker->pool;
    uint64_t deadline;
    int found = 0;

    if (pool->opts.spin_us == 0 ||
        uatomic_cmpxchg(&pool->nr_spinning, 0, 1) != 0)
        return 0;
    uatomic_dec(&pool->nr_running);
    deadline = gfr_now_ns() + (uint64_t)pool->opts.spin_us * 1000;
    for (unsigned i = 0;; i++) {
        if (work_available(pool) || CMM_LOAD_SHARED(pool->shutdown)) {
            found = 1;
            break;
        }
        if ((i & 63) == 63 && gfr_now_ns() >= deadline)
            break;
        caa_cpu_relax();
    }
    /* Running again before no longer spinning: never counted in neither. */
    uatomic_inc(&pool->nr_running);
    uatomic_dec(&pool->nr_spinning);
    return found;
}

/* Leaves the idle stack if still on it; returns whether it was. */
static int
leave_idle_stack(struct gfr_pool_worker *worker)
{
    struct gfr_pool *pool = worker->pool;
    int was_idle;

    pthread_mutex_lock(&pool->idle_lock);
    was_idle = worker->idle;
    if (was_idle) {
        cds_list_del(&worker->idle_link);
        worker->idle = 0;
        uatomic_inc(&pool->nr_running);
        uatomic_dec(&pool->nr_idle);
    }
    pthread_mutex_unlock(&pool->idle_lock);
    return was_idle;
}

/* Lowers nr_threads unless that would go below min_threads. */
static int
may_retire(struct gfr_pool *pool)
{
    unsigned long n = uatomic_read(&pool->nr_threads);

    while (n > pool->opts.min_threads) {
        unsigned long seen = uatomic_cmpxchg(&pool->nr_threads, n, n - 1);
        if (seen == n)
            return 1;
        n = seen;
    }
    return 0;
}

/*
 * Sleeps until woken, until the next timer is due, or for idle_ms when
 * the pool has more than min_threads (a worker that could not retire
 * sleeps with no timeout: an idle pool wakes nobody).  Returns 1 when the
 * worker should exit (idle too long, above min_threads, no timer armed).
 */
static int
sleep_for_work(struct gfr_pool_worker *worker)
{
    struct gfr_pool *pool = worker->pool;
    int64_t timer_ms = gfr_pool_timers_next_ms(worker);
    int64_t wait_ms = pool->opts.idle_ms;
    int timer_bound = 0;
    struct timespec timeout;
    int ret;

    if (timer_ms >= 0 && timer_ms < wait_ms) {
        wait_ms = timer_ms;
        timer_bound = 1;
    } else if (uatomic_read(&pool->nr_threads) <= pool->opts.min_threads) {
        wait_ms = -1;
    }

    pthread_mutex_lock(&pool->idle_lock);
    uatomic_set(&worker->futex, -1);
    cds_list_add(&worker->idle_link, &pool->idle_stack);
    worker->idle = 1;
    uatomic_inc(&pool->nr_idle);
    uatomic_dec(&pool->nr_running);
    pthread_mutex_unlock(&pool->idle_lock);

    cmm_smp_mb();
    if (work_available(pool) || CMM_LOAD_SHARED(pool->shutdown) ||
        wait_ms == 0) {
        leave_idle_stack(worker);
        return 0;
    }

    timeout.tv_sec = wait_ms / 1000;
    timeout.tv_nsec = (wait_ms % 1000) * 1000000;
    do {
        ret = futex_noasync(&worker->futex, FUTEX_WAIT_PRIVATE, -1,
                            wait_ms < 0 ? NULL : &timeout, NULL, 0);
    } while (ret < 0 && errno == EINTR && uatomic_read(&worker->futex) == -1);

    /* wake_one set the word to 0 after taking us off the stack: no need
     * for idle_lock, which the waker may still hold (taking it here would
     * cost a second sleep and wake-up). */
    if (uatomic_read(&worker->futex) == 0)
        return 0;
    if (!leave_idle_stack(worker))
        return 0; /* woken by wake_one: counted as running already */
    if (ret < 0 && errno == ETIMEDOUT && !timer_bound &&
        cds_list_empty(&worker->timers) && !CMM_LOAD_SHARED(pool->shutdown) &&
        may_retire(pool))
        return 1;
    return 0;
}

/*
 * Until its nr_running count drops here, a retiring worker still counts as
 * one that will take work, so a producer may have started nobody for a job
 * queued since the worker last looked: it looks once more (full barrier,
 * the lost-wake-up rule) and hands such a job on.  Before it joins the
 * zombies, so that a worker it starts cannot try to join it.
 */
static void
retire(struct gfr_pool_worker *worker)
{
    struct gfr_pool *pool = worker->pool;

    uatomic_dec(&pool->nr_running);
    cmm_smp_mb();
    if (work_available(pool))
        more_workers(pool);
    uatomic_inc(&pool->threads_exited);
    pthread_mutex_lock(&pool->threads_lock);
    gfr_pool_counts_add(&pool->retired, &worker->counts);
    cds_list_del(&worker->link);
    cds_list_add_tail(&worker->link, &pool->zombies);
    pthread_mutex_unlock(&pool->threads_lock);
}

static void *
worker_main(void *arg)
{
    struct gfr_pool_worker *worker = arg;
    struct gfr_pool *pool = worker->pool;

    gfr_pool_current_worker = worker;

    for (;;) {
        int more;

        if (!cds_list_empty(&worker->timers))
            gfr_pool_timers_fire(worker);
        take_batch(worker, &more);
        if (worker->batch_len) {
            if (more)
                chain_worker(pool);
            /* batch_len shrinks if a job blocks and hands the rest back. */
            while (worker->batch_next < worker->batch_len)
                run_job(worker, worker->batch[worker->batch_next++]);
            continue;
        }
        if (more) {
            /* Only a half-linked node is left: its producer is one
             * store away from finishing. */
            sched_yield();
            continue;
        }
        if (CMM_LOAD_SHARED(pool->shutdown))
            break;
        if (spin_for_work(worker))
            continue;
        if (sleep_for_work(worker)) {
            if (pool->opts.thread_exit)
                pool->opts.thread_exit(pool->opts.thread_exit_arg);
            retire(worker);
            return NULL;
        }
    }

    /* Shutting down with nothing left to run. */
    gfr_pool_timers_cancel_all(worker);
    if (pool->opts.thread_exit)
        pool->opts.thread_exit(pool->opts.thread_exit_arg);
    uatomic_dec(&pool->nr_running);
    uatomic_dec(&pool->nr_threads);
    pthread_mutex_lock(&pool->threads_lock);
    gfr_pool_counts_add(&pool->retired, &worker->counts);
    pthread_mutex_unlock(&pool->threads_lock);
    return NULL;
}

/* Joins workers that retired.  Caller holds threads_lock. */
static void
reap_zombies(struct gfr_pool *pool)
{
    struct gfr_pool_worker *worker;
    struct gfr_pool_worker *tmp;

    cds_list_for_each_entry_safe(worker, tmp, &pool->zombies, link) {
        pthread_join(worker->thread, NULL);
        cds_list_del(&worker->link);
        free(worker);
    }
}

/*
 * Starts one worker unless the pool is at max_threads or shutting down.
 * Caller holds threads_lock.  Returns 0, -EAGAIN (no room), -ESHUTDOWN,
 * -ENOMEM or pthread_create's error.
 */
static int
spawn_locked(struct gfr_pool *pool)
{
    struct gfr_pool_worker *worker;
    unsigned long threads;
    char name[16];
    int err;

    /* Once shutting down, destroy joins the zombies, not us. */
    if (CMM_LOAD_SHARED(pool->shutdown))
        return -ESHUTDOWN;
    reap_zombies(pool);
    threads = uatomic_read(&pool->nr_threads);
    if (threads >= pool->opts.max_threads)
        return -EAGAIN;
    worker = calloc(1, sizeof(*worker));
    if (!worker)
        return -ENOMEM;
    worker->pool = pool;
    worker->index = pool->next_index++;
    CDS_INIT_LIST_HEAD(&worker->timers);
    /* The peak first: gfr_pool_stats_get reads nr_threads, then the peak,
     * and must never see more threads than the peak (the new worker may
     * run, and be counted, before pthread_create returns here).  A failed
     * create leaves the peak one too high. */
    if (threads + 1 > uatomic_read(&pool->peak_threads))
        uatomic_set(&pool->peak_threads, threads + 1);
    cmm_smp_wmb();
    uatomic_inc(&pool->nr_threads);
    uatomic_inc(&pool->nr_running);
    err = -pthread_create(&worker->thread, NULL, worker_main, worker);
    if (err) {
        uatomic_dec(&pool->nr_running);
        uatomic_dec(&pool->nr_threads);
        free(worker);
        return err;
    }
    /* Named by its creator, so it has its name before it runs. */
    snprintf(name, sizeof(name), "%s/%u", pool->name, worker->index);
    pthread_setname_np(worker->thread, name);
    cds_list_add_tail(&worker->link, &pool->workers);
    uatomic_inc(&pool->threads_started);
    return 0;
}

/* gfr_pool_create's: starts one worker, see spawn_locked.  Takes threads_lock. */
int
gfr_pool_spawn_worker(struct gfr_pool *pool)
{
    int err;

    pthread_mutex_lock(&pool->threads_lock);
    err = spawn_locked(pool);
    pthread_mutex_unlock(&pool->threads_lock);
    return err;
}

/*
 * more_workers': starts a worker only while fewer than `concurrency`
 * threads are not blocked.  Only a start raises nr_threads, under
 * threads_lock, so two callers that both saw a free slot cannot both fill
 * it (a sum of the running, idle and spinning counts would not do: a worker
 * can move from one to the next and back between two reads).  A start
 * refused here leaves the job to a thread that will look for work again:
 * one running, spinning, or gone idle after wake_one found nobody, and so
 * after the job was queued; a retiring one has left nr_threads and looks
 * once more in retire().
 */
static int
spawn_if_short(struct gfr_pool *pool)
{
    int err = -EAGAIN;

    pthread_mutex_lock(&pool->threads_lock);
    if (uatomic_read(&pool->nr_threads) <
        uatomic_read(&pool->nr_blocked) + pool->opts.concurrency)
        err = spawn_locked(pool);
    pthread_mutex_unlock(&pool->threads_lock);
    return err;
}

void
gfr_pool_set_block_hook(void (*fn)(void *cb_arg), void *cb_arg)
{
    block_hook = fn;
    block_hook_arg = cb_arg;
}

void
gfr_pool_block_begin(void)
{
    struct gfr_pool_worker *worker = gfr_pool_current_worker;

    if (block_hook)
        block_hook(block_hook_arg);
    if (!worker || worker->blocked)
        return;
    worker->blocked = 1;
    uatomic_inc(&worker->pool->nr_blocked);
    uatomic_dec(&worker->pool->nr_running);
    if (worker->batch_next < worker->batch_len) {
        gfr_sched_return(&worker->pool->sched,
                         &worker->batch[worker->batch_next],
                         worker->batch_len - worker->batch_next);
        worker->batch_len = worker->batch_next;
    }
    if (work_available(worker->pool))
        gfr_pool_ensure_worker(worker->pool);
}

void
gfr_pool_block_end(void)
{
    struct gfr_pool_worker *worker = gfr_pool_current_worker;

    if (!worker || !worker->blocked)
        return;
    worker->blocked = 0;
    uatomic_inc(&worker->pool->nr_running);
    uatomic_dec(&worker->pool->nr_blocked);
}

/* Timers belong to the calling worker's thread (pool-timer.c). */
int
gfr_pool_timer_arm(struct gfr_pool_timer *timer, unsigned delay_ms, gfr_pool_timer_fn fn,
                   void *cb_arg)
{
    return gfr_pool_timers_add(gfr_pool_current_worker, timer, delay_ms, fn, cb_arg);
}

int
gfr_pool_timer_cancel(struct gfr_pool_timer *timer)
{
    return gfr_pool_timers_remove(gfr_pool_current_worker, timer);
}
