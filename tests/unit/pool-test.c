/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * gfr_pool with real threads: no job lost or run twice, order, priorities
 * and fairness through the whole pool, scaling up and down, destroy with
 * jobs pending, per-thread timers, bad arguments.  No timing thresholds:
 * waits are bounded only to turn a hang into a failure.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <pthread.h>
#include <semaphore.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>
#include <urcu/uatomic.h>

#include "gfr_pool.h"

/* Generous bound for "eventually": a hang becomes a failure, not a CI stall. */
#define EVENTUALLY_MS 30000

static uint64_t
now_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

#define WAIT_UNTIL(cond)                                                   \
    do {                                                                   \
        uint64_t deadline_ = now_ms() + EVENTUALLY_MS;                     \
        while (!(cond)) {                                                  \
            if (now_ms() > deadline_)                                      \
                fail_msg("timed out waiting for: %s", #cond);              \
            usleep(1000);                                                  \
        }                                                                  \
    } while (0)

static struct gfr_pool *
new_pool(unsigned min, unsigned max, unsigned idle_ms)
{
    struct gfr_pool_opts opts;
    struct gfr_pool *pool;

    gfr_pool_opts_init(&opts);
    opts.name = "test";
    opts.min_threads = min;
    opts.max_threads = max;
    opts.idle_ms = idle_ms;
    assert_int_equal(gfr_pool_create(&opts, &pool), 0);
    return pool;
}

/* --- no job lost or run twice ------------------------------------------ */

#define PRODUCERS 4
#define JOBS_PER_PRODUCER 20000

struct counted_job {
    struct gfr_pool_job job;
    unsigned long runs;
};

struct producer {
    struct gfr_pool *pool;
    struct gfr_pool_client *client;
    struct counted_job *jobs;
    int errors;
};

static void
count_run(struct gfr_pool_job *job, void *cb_arg, int status)
{
    struct counted_job *cj = caa_container_of(job, struct counted_job, job);
    unsigned long *done = cb_arg;

    if (status == 0)
        uatomic_inc(&cj->runs);
    uatomic_inc(done);
}

static unsigned long jobs_done;

static void *
produce(void *arg)
{
    struct producer *p = arg;

    for (int i = 0; i < JOBS_PER_PRODUCER; i++) {
        gfr_pool_job_init(&p->jobs[i].job, count_run, &jobs_done);
        if (gfr_pool_submit(p->pool, &p->jobs[i].job, p->client,
                            (enum gfr_pool_prio)(i % GFR_POOL_NR_PRIO)) != 0)
            p->errors++;
    }
    return NULL;
}

static void
test_no_job_lost_or_run_twice(void **state)
{
    struct gfr_pool *pool = new_pool(1, 4, 1000);
    struct producer producers[PRODUCERS];
    pthread_t threads[PRODUCERS];
    struct gfr_pool_stats stats;

    uatomic_set(&jobs_done, 0);
    for (int p = 0; p < PRODUCERS; p++) {
        producers[p].pool = pool;
        producers[p].errors = 0;
        producers[p].jobs = calloc(JOBS_PER_PRODUCER, sizeof(struct counted_job));
        assert_non_null(producers[p].jobs);
        producers[p].client = NULL;
        if (p % 2)
            assert_int_equal(gfr_pool_client_create(pool, &producers[p].client), 0);
        assert_int_equal(pthread_create(&threads[p], NULL, produce, &producers[p]), 0);
    }
    for (int p = 0; p < PRODUCERS; p++)
        pthread_join(threads[p], NULL);
    WAIT_UNTIL(uatomic_read(&jobs_done) == PRODUCERS * JOBS_PER_PRODUCER);
    /* A worker counts a job as executed after its callback returns, so
     * the last callbacks' counts may trail their effects briefly. */
    WAIT_UNTIL(gfr_pool_stats_get(pool, &stats) == 0 &&
               stats.executed == PRODUCERS * JOBS_PER_PRODUCER);

    assert_int_equal(stats.submitted, PRODUCERS * JOBS_PER_PRODUCER);
    assert_int_equal(stats.queued, 0);
    for (int p = 0; p < PRODUCERS; p++) {
        assert_int_equal(producers[p].errors, 0);
        for (int i = 0; i < JOBS_PER_PRODUCER; i++)
            assert_int_equal(producers[p].jobs[i].runs, 1);
        if (producers[p].client)
            gfr_pool_client_release(producers[p].client);
    }
    assert_int_equal(gfr_pool_destroy(pool, GFR_POOL_DRAIN_RUN), 0);
    for (int p = 0; p < PRODUCERS; p++)
        free(producers[p].jobs);
}

/* --- order, priorities and fairness through the pool ------------------- */

#define LOG_MAX 4096

/* next reserves a slot; done counts the entries written, so that a test
 * waiting for done reads no slot a worker is still writing. */
struct order_log {
    unsigned long next;
    unsigned long done;
    int entries[LOG_MAX];
};

struct logged_job {
    struct gfr_pool_job job;
    int id;
    struct order_log *log;
};

static void
log_run(struct gfr_pool_job *job, void *cb_arg, int status)
{
    struct logged_job *lj = caa_container_of(job, struct logged_job, job);
    unsigned long slot = uatomic_add_return(&lj->log->next, 1) - 1;

    if (slot < LOG_MAX)
        lj->log->entries[slot] = lj->id;
    cmm_smp_mb__before_uatomic_inc();
    uatomic_inc(&lj->log->done);
}

/* A job that holds the pool's only worker until the test lets it go. */
struct gate {
    struct gfr_pool_job job;
    sem_t entered;
    sem_t release;
};

static void
gate_run(struct gfr_pool_job *job, void *cb_arg, int status)
{
    struct gate *gate = caa_container_of(job, struct gate, job);

    sem_post(&gate->entered);
    sem_wait(&gate->release);
}

static void
close_gate(struct gfr_pool *pool, struct gate *gate)
{
    sem_init(&gate->entered, 0, 0);
    sem_init(&gate->release, 0, 0);
    gfr_pool_job_init(&gate->job, gate_run, NULL);
    assert_int_equal(gfr_pool_submit(pool, &gate->job, NULL, GFR_POOL_PRIO_HIGH), 0);
    sem_wait(&gate->entered);
}

static struct gfr_pool *
single_worker_pool(unsigned starvation_limit)
{
    struct gfr_pool_opts opts;
    struct gfr_pool *pool;

    gfr_pool_opts_init(&opts);
    opts.min_threads = 1;
    opts.max_threads = 1;
    opts.starvation_limit = starvation_limit;
    assert_int_equal(gfr_pool_create(&opts, &pool), 0);
    return pool;
}

static void
test_fifo_within_client_and_class(void **state)
{
    struct gfr_pool *pool = single_worker_pool(8);
    struct gfr_pool_client *client;
    static struct logged_job jobs[1000];
    static struct order_log log;

    memset(&log, 0, sizeof(log));
    assert_int_equal(gfr_pool_client_create(pool, &client), 0);
    for (int i = 0; i < 1000; i++) {
        jobs[i].id = i;
        jobs[i].log = &log;
        gfr_pool_job_init(&jobs[i].job, log_run, NULL);
        assert_int_equal(gfr_pool_submit(pool, &jobs[i].job, client, GFR_POOL_PRIO_NORMAL), 0);
    }
    WAIT_UNTIL(uatomic_read(&log.done) == 1000);
    cmm_smp_rmb();
    for (int i = 0; i < 1000; i++)
        assert_int_equal(log.entries[i], i);
    gfr_pool_client_release(client);
    assert_int_equal(gfr_pool_destroy(pool, GFR_POOL_DRAIN_RUN), 0);
}

static void
test_priorities_respected(void **state)
{
    struct gfr_pool *pool = single_worker_pool(1000);
    static struct logged_job jobs[30];
    static struct order_log log;
    struct gate gate;

    memset(&log, 0, sizeof(log));
    close_gate(pool, &gate);
    for (int i = 0; i < 30; i++) {
        /* ids 0-9 low, 10-19 normal, 20-29 high, submitted low first */
        jobs[i].id = i;
        jobs[i].log = &log;
        gfr_pool_job_init(&jobs[i].job, log_run, NULL);
        assert_int_equal(gfr_pool_submit(pool, &jobs[i].job, NULL,
                                         i < 10 ? GFR_POOL_PRIO_LOW
                                         : i < 20 ? GFR_POOL_PRIO_NORMAL
                                                  : GFR_POOL_PRIO_HIGH), 0);
    }
    /* The gate holds the one worker: all 30 wait, 10 in each class. */
    struct gfr_pool_stats stats;
    assert_int_equal(gfr_pool_stats_get(pool, &stats), 0);
    assert_int_equal(stats.queued, 30);
    for (int p = 0; p < GFR_POOL_NR_PRIO; p++)
        assert_int_equal(stats.queued_by_prio[p], 10);
    sem_post(&gate.release);
    WAIT_UNTIL(uatomic_read(&log.done) == 30);
    assert_int_equal(gfr_pool_stats_get(pool, &stats), 0);
    for (int p = 0; p < GFR_POOL_NR_PRIO; p++)
        assert_int_equal(stats.queued_by_prio[p], 0);
    cmm_smp_rmb();
    for (int i = 0; i < 10; i++) {
        assert_int_equal(log.entries[i], 20 + i);
        assert_int_equal(log.entries[10 + i], 10 + i);
        assert_int_equal(log.entries[20 + i], i);
    }
    assert_int_equal(gfr_pool_destroy(pool, GFR_POOL_DRAIN_RUN), 0);
}

static void
test_low_class_not_starved(void **state)
{
    struct gfr_pool *pool = single_worker_pool(8);
    static struct logged_job jobs[201];
    static struct order_log log;
    struct gate gate;
    int position = -1;

    memset(&log, 0, sizeof(log));
    close_gate(pool, &gate);
    jobs[200].id = 200;
    jobs[200].log = &log;
    gfr_pool_job_init(&jobs[200].job, log_run, NULL);
    assert_int_equal(gfr_pool_submit(pool, &jobs[200].job, NULL, GFR_POOL_PRIO_LOW), 0);
    for (int i = 0; i < 200; i++) {
        jobs[i].id = i;
        jobs[i].log = &log;
        gfr_pool_job_init(&jobs[i].job, log_run, NULL);
        assert_int_equal(gfr_pool_submit(pool, &jobs[i].job, NULL, GFR_POOL_PRIO_HIGH), 0);
    }
    sem_post(&gate.release);
    WAIT_UNTIL(uatomic_read(&log.done) == 201);
    cmm_smp_rmb();
    for (int i = 0; i < 201; i++)
        if (log.entries[i] == 200)
            position = i;
    /* At most starvation_limit (8) high jobs before it. */
    assert_in_range(position, 0, 8);
    assert_int_equal(gfr_pool_destroy(pool, GFR_POOL_DRAIN_RUN), 0);
}

static void
test_busy_client_cannot_delay_another_by_more_than_one_job(void **state)
{
    struct gfr_pool *pool = single_worker_pool(8);
    struct gfr_pool_client *busy;
    struct gfr_pool_client *quiet;
    static struct logged_job jobs[3001];
    static struct order_log log;
    struct gate gate;
    int position = -1;

    memset(&log, 0, sizeof(log));
    assert_int_equal(gfr_pool_client_create(pool, &busy), 0);
    assert_int_equal(gfr_pool_client_create(pool, &quiet), 0);
    close_gate(pool, &gate);
    for (int i = 0; i <= 3000; i++) {
        jobs[i].id = i;
        jobs[i].log = &log;
        gfr_pool_job_init(&jobs[i].job, log_run, NULL);
        assert_int_equal(gfr_pool_submit(pool, &jobs[i].job,
                                         i == 3000 ? quiet : busy,
                                         GFR_POOL_PRIO_NORMAL), 0);
    }
    sem_post(&gate.release);
    WAIT_UNTIL(uatomic_read(&log.done) == 3001);
    cmm_smp_rmb();
    for (int i = 0; i < LOG_MAX && i < 3001; i++)
        if (log.entries[i] == 3000)
            position = i;
    assert_in_range(position, 0, 1);
    gfr_pool_client_release(busy);
    gfr_pool_client_release(quiet);
    assert_int_equal(gfr_pool_destroy(pool, GFR_POOL_DRAIN_RUN), 0);
}

/* --- scaling ------------------------------------------------------------ */

struct blocking_job {
    struct gfr_pool_job job;
    sem_t *release;
    unsigned long *done;
};

static void
blocking_run(struct gfr_pool_job *job, void *cb_arg, int status)
{
    struct blocking_job *bj = caa_container_of(job, struct blocking_job, job);

    gfr_pool_block_begin();
    sem_wait(bj->release);
    gfr_pool_block_end();
    uatomic_inc(bj->done);
}

static void
test_scales_up_when_workers_block_and_down_after_idle(void **state)
{
    struct gfr_pool *pool = new_pool(1, 6, 50);
    struct blocking_job jobs[6];
    unsigned long done = 0;
    struct gfr_pool_stats stats;
    sem_t release;

    sem_init(&release, 0, 0);
    for (int i = 0; i < 6; i++) {
        jobs[i].release = &release;
        jobs[i].done = &done;
        gfr_pool_job_init(&jobs[i].job, blocking_run, NULL);
        assert_int_equal(gfr_pool_submit(pool, &jobs[i].job, NULL, GFR_POOL_PRIO_NORMAL), 0);
    }
    /* Every job blocks, so the pool grows until all six are blocked. */
    WAIT_UNTIL(gfr_pool_stats_get(pool, &stats) == 0 && stats.blocked == 6);
    assert_int_equal(stats.threads, 6);
    assert_int_equal(stats.peak_threads, 6);
    for (int i = 0; i < 6; i++)
        sem_post(&release);
    WAIT_UNTIL(uatomic_read(&done) == 6);
    /* Idle for 50 ms: back down to min_threads.  A worker leaves
     * `threads` before it counts in threads_exited (gfr_pool.h).  A worker
     * started while the jobs were handed round may find none and idle out
     * before the last job blocks (a stall of idle_ms under load): then
     * more than six started, and all but one exit. */
    WAIT_UNTIL(gfr_pool_stats_get(pool, &stats) == 0 && stats.threads == 1);
    WAIT_UNTIL(gfr_pool_stats_get(pool, &stats) == 0 &&
               stats.threads_exited == stats.threads_started - 1);
    assert_true(stats.threads_started >= 6);
    assert_int_equal(stats.threads, 1);
    assert_int_equal(gfr_pool_destroy(pool, GFR_POOL_DRAIN_RUN), 0);
}

/* Which threads ran the thread_exit hook, by kernel thread id (a joined
 * thread's pthread_t is handed to the next one started), with room for
 * every worker of test_thread_exit_runs_on_each_exiting_worker, also those
 * started while its jobs were handed round that idled out without one. */
#define EXIT_LOG_MAX 64
struct exit_log {
    pthread_mutex_t lock;
    pid_t threads[EXIT_LOG_MAX];
    unsigned n;
};

static void
log_thread_exit(void *cb_arg)
{
    struct exit_log *log = cb_arg;

    pthread_mutex_lock(&log->lock);
    if (log->n < EXIT_LOG_MAX)
        log->threads[log->n] = gettid();
    log->n++;
    pthread_mutex_unlock(&log->lock);
}

struct thread_noting_job {
    struct gfr_pool_job job;
    sem_t *release;
    unsigned long *done;
    pid_t ran_on;
};

static void
note_thread_and_block(struct gfr_pool_job *job, void *cb_arg, int status)
{
    struct thread_noting_job *tj = caa_container_of(job, struct thread_noting_job, job);

    tj->ran_on = gettid();
    gfr_pool_block_begin();
    sem_wait(tj->release);
    gfr_pool_block_end();
    uatomic_inc(tj->done);
}

static int
logged(const struct exit_log *log, pid_t thread)
{
    for (unsigned i = 0; i < log->n; i++)
        if (log->threads[i] == thread)
            return 1;
    return 0;
}

static void
test_thread_exit_runs_on_each_exiting_worker(void **state)
{
    struct exit_log log = {.lock = PTHREAD_MUTEX_INITIALIZER};
    struct thread_noting_job jobs[6];
    struct gfr_pool_opts opts;
    struct gfr_pool_stats stats;
    struct gfr_pool *pool;
    unsigned long done = 0;
    sem_t release;

    gfr_pool_opts_init(&opts);
    opts.name = "test";
    opts.max_threads = 6;
    opts.idle_ms = 50;
    opts.thread_exit = log_thread_exit;
    opts.thread_exit_arg = &log;
    assert_int_equal(gfr_pool_create(&opts, &pool), 0);
    sem_init(&release, 0, 0);
    for (int i = 0; i < 6; i++) {
        jobs[i] = (struct thread_noting_job){.release = &release, .done = &done};
        gfr_pool_job_init(&jobs[i].job, note_thread_and_block, NULL);
        assert_int_equal(gfr_pool_submit(pool, &jobs[i].job, NULL, GFR_POOL_PRIO_NORMAL), 0);
    }
    /* Six blocked jobs: six threads, each ran one. */
    WAIT_UNTIL(gfr_pool_stats_get(pool, &stats) == 0 && stats.blocked == 6);
    for (int i = 0; i < 6; i++)
        sem_post(&release);
    WAIT_UNTIL(uatomic_read(&done) == 6);
    /* threads_exited counts a worker after its thread_exit returned.  More
     * than six may have started: see test_scales_up_when_workers_block_... */
    WAIT_UNTIL(gfr_pool_stats_get(pool, &stats) == 0 && stats.threads == 1 &&
               stats.threads_exited == stats.threads_started - 1);
    assert_in_range(stats.threads_started, 6, EXIT_LOG_MAX);
    pthread_mutex_lock(&log.lock);
    assert_int_equal(log.n, stats.threads_exited);
    pthread_mutex_unlock(&log.lock);
    assert_int_equal(gfr_pool_destroy(pool, GFR_POOL_DRAIN_RUN), 0);
    /* The last one exits at destruction; every thread that ran a job
     * ran the hook, and no thread ran it twice. */
    assert_int_equal(log.n, stats.threads_started);
    for (int i = 0; i < 6; i++)
        assert_true(logged(&log, jobs[i].ran_on));
    for (unsigned i = 0; i < log.n; i++)
        for (unsigned j = 0; j < i; j++)
            assert_int_not_equal(log.threads[i], log.threads[j]);
    sem_destroy(&release);
}

static void
test_cpu_bound_load_stays_within_concurrency(void **state)
{
    struct gfr_pool_opts opts;
    struct gfr_pool *pool;
    static struct counted_job jobs[20000];
    struct gfr_pool_stats stats;

    gfr_pool_opts_init(&opts);
    opts.min_threads = 1;
    opts.max_threads = 16;
    opts.concurrency = 2;
    assert_int_equal(gfr_pool_create(&opts, &pool), 0);
    uatomic_set(&jobs_done, 0);
    for (int i = 0; i < 20000; i++) {
        jobs[i].runs = 0;
        gfr_pool_job_init(&jobs[i].job, count_run, &jobs_done);
        assert_int_equal(gfr_pool_submit(pool, &jobs[i].job, NULL, GFR_POOL_PRIO_NORMAL), 0);
    }
    WAIT_UNTIL(uatomic_read(&jobs_done) == 20000);
    assert_int_equal(gfr_pool_stats_get(pool, &stats), 0);
    /* Nobody blocks: never more threads than the concurrency wanted, even
     * when a producer and a worker both see a free slot at once. */
    assert_in_range(stats.peak_threads, 1, 2);
    assert_int_equal(gfr_pool_destroy(pool, GFR_POOL_DRAIN_RUN), 0);
}

/* --- destroy with jobs pending ------------------------------------------ */

struct status_job {
    struct gfr_pool_job job;
    int status;
    int calls;
};

static void
status_run(struct gfr_pool_job *job, void *cb_arg, int status)
{
    struct status_job *sj = caa_container_of(job, struct status_job, job);

    sj->status = status;
    sj->calls++;
}

static void
destroy_with_pending(enum gfr_pool_drain drain, int expected_status)
{
    struct gfr_pool *pool = single_worker_pool(8);
    static struct status_job jobs[500];
    struct gate gate;

    close_gate(pool, &gate);
    for (int i = 0; i < 500; i++) {
        jobs[i].calls = 0;
        jobs[i].status = 1;
        gfr_pool_job_init(&jobs[i].job, status_run, NULL);
        assert_int_equal(gfr_pool_submit(pool, &jobs[i].job, NULL, GFR_POOL_PRIO_LOW), 0);
    }
    /* Some jobs may run before destroy begins; each is called once. */
    sem_post(&gate.release);
    assert_int_equal(gfr_pool_destroy(pool, drain), 0);
    for (int i = 0; i < 500; i++) {
        assert_int_equal(jobs[i].calls, 1);
        if (drain == GFR_POOL_DRAIN_RUN)
            assert_int_equal(jobs[i].status, 0);
        else
            assert_true(jobs[i].status == 0 || jobs[i].status == expected_status);
    }
}

static void
test_destroy_runs_pending_jobs(void **state)
{
    destroy_with_pending(GFR_POOL_DRAIN_RUN, 0);
}

static void
test_destroy_cancels_pending_jobs_through_their_callback(void **state)
{
    destroy_with_pending(GFR_POOL_DRAIN_CANCEL, -ECANCELED);
}

struct destroy_race {
    struct gfr_pool *pool;
    struct gate gate;
};

static void *
destroy_thread(void *arg)
{
    struct destroy_race *race = arg;

    gfr_pool_destroy(race->pool, GFR_POOL_DRAIN_CANCEL);
    return NULL;
}

static void
test_destroy_cancels_every_job_queued_behind_a_running_one(void **state)
{
    struct destroy_race race;
    static struct status_job jobs[100];
    static struct status_job probes[100000];
    pthread_t thread;
    int submitted = 0;
    int err;

    race.pool = single_worker_pool(8);
    close_gate(race.pool, &race.gate);
    for (int i = 0; i < 100; i++) {
        jobs[i].calls = 0;
        gfr_pool_job_init(&jobs[i].job, status_run, NULL);
        assert_int_equal(gfr_pool_submit(race.pool, &jobs[i].job, NULL, GFR_POOL_PRIO_NORMAL), 0);
    }
    assert_int_equal(pthread_create(&thread, NULL, destroy_thread, &race), 0);
    /* Submit until destroy refuses; every accepted job is queued behind
     * the gate, so each must be cancelled.  After the first thousand,
     * sleep between submits: where threads take turns (valgrind runs one
     * at a time) the destroying thread must get to run before the probes
     * run out. */
    do {
        assert_true(submitted < 100000);
        probes[submitted].calls = 0;
        gfr_pool_job_init(&probes[submitted].job, status_run, NULL);
        err = gfr_pool_submit(race.pool, &probes[submitted].job, NULL, GFR_POOL_PRIO_NORMAL);
        if (err == 0 && ++submitted > 1000)
            usleep(1000);
    } while (err == 0);
    assert_int_equal(err, -ESHUTDOWN);
    sem_post(&race.gate.release);
    pthread_join(thread, NULL);
    for (int i = 0; i < 100; i++) {
        assert_int_equal(jobs[i].calls, 1);
        assert_int_equal(jobs[i].status, -ECANCELED);
    }
    for (int i = 0; i < submitted; i++) {
        assert_int_equal(probes[i].calls, 1);
        assert_int_equal(probes[i].status, -ECANCELED);
    }
}

/* --- timers ------------------------------------------------------------- */

struct timer_probe {
    struct gfr_pool_job job;
    struct gfr_pool_timer timer;
    struct gfr_pool_timer cancelled;
    pthread_t armed_on;
    pthread_t fired_on;
    uint64_t armed_ms;
    uint64_t fired_ms;
    int arm_result;
    int cancel_result;
    int status;
    unsigned long fired;
};

static void
timer_fired(struct gfr_pool_timer *timer, void *cb_arg, int status)
{
    struct timer_probe *probe = cb_arg;

    probe->fired_on = pthread_self();
    probe->fired_ms = now_ms();
    probe->status = status;
    cmm_smp_mb__before_uatomic_inc();
    uatomic_inc(&probe->fired);
}

static void
never_fires(struct gfr_pool_timer *timer, void *cb_arg, int status)
{
    fail_msg("a cancelled timer fired");
}

static void
arm_timer(struct gfr_pool_job *job, void *cb_arg, int status)
{
    struct timer_probe *probe = caa_container_of(job, struct timer_probe, job);

    probe->armed_on = pthread_self();
    probe->armed_ms = now_ms();
    probe->arm_result = gfr_pool_timer_arm(&probe->timer, 30, timer_fired, probe);
    gfr_pool_timer_arm(&probe->cancelled, 10, never_fires, probe);
    probe->cancel_result = gfr_pool_timer_cancel(&probe->cancelled);
}

static void
test_timer_fires_on_arming_thread(void **state)
{
    struct gfr_pool *pool = new_pool(3, 3, 1000);
    struct timer_probe probe;

    memset(&probe, 0, sizeof(probe));
    gfr_pool_job_init(&probe.job, arm_timer, NULL);
    assert_int_equal(gfr_pool_submit(pool, &probe.job, NULL, GFR_POOL_PRIO_NORMAL), 0);
    WAIT_UNTIL(uatomic_read(&probe.fired) == 1);
    cmm_smp_rmb();
    assert_int_equal(probe.arm_result, 0);
    assert_int_equal(probe.cancel_result, 0);
    assert_int_equal(probe.status, 0);
    assert_true(pthread_equal(probe.armed_on, probe.fired_on));
    assert_true(probe.fired_ms >= probe.armed_ms + 30);
    assert_int_equal(gfr_pool_destroy(pool, GFR_POOL_DRAIN_RUN), 0);
}

static void
arm_long_timer(struct gfr_pool_job *job, void *cb_arg, int status)
{
    struct timer_probe *probe = caa_container_of(job, struct timer_probe, job);

    probe->arm_result = gfr_pool_timer_arm(&probe->timer, 3600 * 1000, timer_fired, probe);
}

static void
test_destroy_cancels_armed_timers(void **state)
{
    struct gfr_pool *pool = new_pool(1, 1, 1000);
    struct timer_probe probe;
    struct gfr_pool_stats stats;

    memset(&probe, 0, sizeof(probe));
    gfr_pool_job_init(&probe.job, arm_long_timer, NULL);
    assert_int_equal(gfr_pool_submit(pool, &probe.job, NULL, GFR_POOL_PRIO_NORMAL), 0);
    WAIT_UNTIL(gfr_pool_stats_get(pool, &stats) == 0 && stats.executed == 1);
    assert_int_equal(probe.arm_result, 0);
    assert_int_equal(gfr_pool_destroy(pool, GFR_POOL_DRAIN_RUN), 0);
    assert_int_equal(probe.fired, 1);
    assert_int_equal(probe.status, -ECANCELED);
}

/* --- bad arguments ------------------------------------------------------ */

static void
noop(struct gfr_pool_job *job, void *cb_arg, int status)
{
}

static void
noop_timer(struct gfr_pool_timer *timer, void *cb_arg, int status)
{
}

static void
test_bad_arguments(void **state)
{
    struct gfr_pool_opts opts;
    struct gfr_pool *pool;
    struct gfr_pool_client *client;
    struct gfr_pool_job job;
    struct gfr_pool_timer timer;
    struct gfr_pool_stats stats;

    gfr_pool_opts_init(&opts);
    assert_int_equal(gfr_pool_create(NULL, &pool), -EINVAL);
    assert_int_equal(gfr_pool_create(&opts, NULL), -EINVAL);
    opts.max_threads = 0;
    assert_int_equal(gfr_pool_create(&opts, &pool), -EINVAL);
    opts.max_threads = 2;
    opts.min_threads = 3;
    assert_int_equal(gfr_pool_create(&opts, &pool), -EINVAL);
    opts.min_threads = 0;
    assert_int_equal(gfr_pool_create(&opts, &pool), -EINVAL);
    opts.min_threads = 1;
    opts.max_threads = GFR_POOL_MAX_THREADS + 1;
    assert_int_equal(gfr_pool_create(&opts, &pool), -EINVAL);
    opts.max_threads = 2;
    assert_int_equal(gfr_pool_create(&opts, &pool), 0);

    gfr_pool_job_init(&job, noop, NULL);
    assert_int_equal(gfr_pool_submit(NULL, &job, NULL, GFR_POOL_PRIO_HIGH), -EINVAL);
    assert_int_equal(gfr_pool_submit(pool, NULL, NULL, GFR_POOL_PRIO_HIGH), -EINVAL);
    assert_int_equal(gfr_pool_submit(pool, &job, NULL, GFR_POOL_NR_PRIO), -EINVAL);
    gfr_pool_job_init(&job, NULL, NULL);
    assert_int_equal(gfr_pool_submit(pool, &job, NULL, GFR_POOL_PRIO_HIGH), -EINVAL);
    gfr_pool_job_init(&job, noop, NULL);
    job.state = GFR_POOL_JOB_QUEUED; /* as if submitted twice */
    assert_int_equal(gfr_pool_submit(pool, &job, NULL, GFR_POOL_PRIO_HIGH), -EINVAL);

    assert_int_equal(gfr_pool_client_create(NULL, &client), -EINVAL);
    assert_int_equal(gfr_pool_client_create(pool, NULL), -EINVAL);
    assert_int_equal(gfr_pool_stats_get(NULL, &stats), -EINVAL);
    assert_int_equal(gfr_pool_stats_get(pool, NULL), -EINVAL);

    memset(&timer, 0, sizeof(timer));
    assert_int_equal(gfr_pool_timer_arm(NULL, 1, noop_timer, NULL), -EINVAL);
    assert_int_equal(gfr_pool_timer_arm(&timer, 1, NULL, NULL), -EINVAL);
    assert_int_equal(gfr_pool_timer_arm(&timer, 1, noop_timer, NULL), -EPERM);
    assert_int_equal(gfr_pool_timer_cancel(&timer), -ENOENT);
    assert_int_equal(gfr_pool_timer_cancel(NULL), -EINVAL);
    gfr_pool_block_begin(); /* outside a worker: no effect */
    gfr_pool_block_end();

    assert_int_equal(gfr_pool_destroy(NULL, GFR_POOL_DRAIN_RUN), -EINVAL);
    assert_int_equal(gfr_pool_destroy(pool, (enum gfr_pool_drain)7), -EINVAL);
    assert_int_equal(gfr_pool_destroy(pool, GFR_POOL_DRAIN_RUN), 0);
}

static int destroy_from_worker_result;

static void
destroy_own_pool(struct gfr_pool_job *job, void *cb_arg, int status)
{
    destroy_from_worker_result = gfr_pool_destroy(cb_arg, GFR_POOL_DRAIN_RUN);
}

static void
test_destroy_from_own_worker_refused(void **state)
{
    struct gfr_pool *pool = new_pool(1, 1, 1000);
    struct gfr_pool_stats stats;
    struct gfr_pool_job job;

    gfr_pool_job_init(&job, destroy_own_pool, pool);
    assert_int_equal(gfr_pool_submit(pool, &job, NULL, GFR_POOL_PRIO_NORMAL), 0);
    WAIT_UNTIL(gfr_pool_stats_get(pool, &stats) == 0 && stats.executed == 1);
    assert_int_equal(destroy_from_worker_result, -EDEADLK);
    assert_int_equal(gfr_pool_destroy(pool, GFR_POOL_DRAIN_RUN), 0);
}

static void
test_stats_histogram_counts_every_job(void **state)
{
    struct gfr_pool *pool = new_pool(1, 2, 1000);
    static struct counted_job jobs[1000];
    struct gfr_pool_stats stats;

    uatomic_set(&jobs_done, 0);
    for (int i = 0; i < 1000; i++) {
        gfr_pool_job_init(&jobs[i].job, count_run, &jobs_done);
        assert_int_equal(gfr_pool_submit(pool, &jobs[i].job, NULL, GFR_POOL_PRIO_NORMAL), 0);
    }
    WAIT_UNTIL(uatomic_read(&jobs_done) == 1000);
    WAIT_UNTIL(gfr_pool_stats_get(pool, &stats) == 0 && stats.executed == 1000);
    /* One producer thread, a new pool: jobs 16, 32, ... 992 are sampled. */
    assert_int_equal(stats.queue_ns.count, 1000 / GFR_POOL_HIST_SAMPLE);
    assert_true(gfr_hist_percentile(&stats.queue_ns, 0.5) <=
                gfr_hist_percentile(&stats.queue_ns, 0.99));
    assert_true(stats.queue_ns.max_ns >= gfr_hist_percentile(&stats.queue_ns, 0.99));
    assert_true(stats.threads >= 1);
    assert_int_equal(gfr_pool_destroy(pool, GFR_POOL_DRAIN_RUN), 0);
}

static int
thread_named(const char *name)
{
    DIR *dir = opendir("/proc/self/task");
    struct dirent *entry;
    int found = 0;

    assert_non_null(dir);
    while (!found && (entry = readdir(dir))) {
        char path[300];
        char comm[32] = "";
        FILE *f;

        snprintf(path, sizeof(path), "/proc/self/task/%s/comm", entry->d_name);
        f = fopen(path, "r");
        if (!f)
            continue;
        if (fgets(comm, sizeof(comm), f))
            comm[strcspn(comm, "\n")] = 0;
        found = strcmp(comm, name) == 0;
        fclose(f);
    }
    closedir(dir);
    return found;
}

static void
test_worker_threads_are_named(void **state)
{
    struct gfr_pool *pool = new_pool(2, 2, 1000);

    assert_true(thread_named("test/0"));
    assert_true(thread_named("test/1"));
    assert_int_equal(gfr_pool_destroy(pool, GFR_POOL_DRAIN_RUN), 0);
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_no_job_lost_or_run_twice),
        cmocka_unit_test(test_fifo_within_client_and_class),
        cmocka_unit_test(test_priorities_respected),
        cmocka_unit_test(test_low_class_not_starved),
        cmocka_unit_test(test_busy_client_cannot_delay_another_by_more_than_one_job),
        cmocka_unit_test(test_scales_up_when_workers_block_and_down_after_idle),
        cmocka_unit_test(test_thread_exit_runs_on_each_exiting_worker),
        cmocka_unit_test(test_cpu_bound_load_stays_within_concurrency),
        cmocka_unit_test(test_destroy_runs_pending_jobs),
        cmocka_unit_test(test_destroy_cancels_pending_jobs_through_their_callback),
        cmocka_unit_test(test_destroy_cancels_every_job_queued_behind_a_running_one),
        cmocka_unit_test(test_timer_fires_on_arming_thread),
        cmocka_unit_test(test_destroy_cancels_armed_timers),
        cmocka_unit_test(test_bad_arguments),
        cmocka_unit_test(test_destroy_from_own_worker_refused),
        cmocka_unit_test(test_stats_histogram_counts_every_job),
        cmocka_unit_test(test_worker_threads_are_named),
    };

    return cmocka_run_group_tests_name("pool", tests, NULL, NULL);
}
