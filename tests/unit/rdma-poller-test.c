/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * lib/engine/rdma-poller.c over a fake CQ and completion channel (this file's
 * ibv_create_cq, ibv_get_cq_event and friends replace libibverbs' for the
 * objects linked here), with a real worker pool:
 *  - dispatch=direct: the deliveries of a batch run on the poller thread,
 *    after every completion of the batch was handled, in their order;
 *  - a handler that calls gfr_pool_block_begin gets a relay: completions
 *    keep being reaped, on another thread, and their deliveries go to the
 *    pool; afterwards the poller thread polls again;
 *  - a handler that blocks without saying so gets a relay from the CM
 *    thread's watch (gfr_rdma_pollers_watch) once it has run
 *    GFR_RELAY_AFTER_MS;
 *  - a sender kicks a sleeping poller awake when it expects a reply, and
 *    the poller polls instead of sleeping until the reply came;
 *  - a reply that cannot come yet is slept for: the sender sets the
 *    sleeping poller's timer instead of kicking it, and the poller polls
 *    once the timer fired;
 *  - with rails=auto the pollers of two devices share one thread, which
 *    sleeps on both, reaps both, has one relay poll both while a handler
 *    blocks, wakes for a kick of either, and goes on with one when the
 *    other device leaves; with rails off each has its own.
 */
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>
#include <urcu/uatomic.h>

#include "gfr_clock.h"
#include "engine-conn.h"

/* Waits (up to 10 s) until cond(); fails the test otherwise. */
#define WAIT_UNTIL(cond)                                                       \
    do {                                                                       \
        uint64_t deadline_ = gfr_deadline_ns(10000);                           \
        while (!(cond) && gfr_now_ns() < deadline_)                            \
            usleep(1000);                                                      \
        assert_true(cond);                                                     \
    } while (0)

/* The fake CQs, one per fake device: completions the test queues, and
 * the channel's eventfd, written when one is queued while the CQ is
 * armed.  fakes[0] is the device most tests use, fakes[1] a second one
 * (rails). */
struct fake {
    struct ibv_device device;
    struct ibv_context ctx;
    struct ibv_cq cq;
    struct ibv_comp_channel channel;
    struct ibv_wc queued[64];
    unsigned nqueued;
    int armed;
};
static pthread_mutex_t cq_lock = PTHREAD_MUTEX_INITIALIZER;
static struct fake fakes[2];
static int last_comp_vector = -1;
static unsigned start_index; /* the index start() gives its poller */

static int poll_fails; /* the next poll returns -1 (a broken CQ) */
/* Every poll finds a completion (wr_id 50) when none is queued: a CQ never
 * found empty, as a poller busy with other rails' traffic sees it. */
static int never_empty;

static struct fake *
fake_of(struct ibv_context *ctx)
{
    return ctx == &fakes[1].ctx ? &fakes[1] : &fakes[0];
}

static int
fake_poll_cq(struct ibv_cq *cq, int num, struct ibv_wc *wc)
{
    struct fake *f = fake_of(cq->context);
    int n = 0;

    pthread_mutex_lock(&cq_lock);
    if (poll_fails) {
        poll_fails = 0;
        pthread_mutex_unlock(&cq_lock);
        return -1;
    }
    while (n < num && (unsigned)n < f->nqueued) {
        wc[n] = f->queued[n];
        n++;
    }
    memmove(f->queued, f->queued + n, (f->nqueued - (unsigned)n) * sizeof(f->queued[0]));
    f->nqueued -= (unsigned)n;
    if (!n && never_empty && num > 0)
        wc[n++] = (struct ibv_wc){.wr_id = 50, .status = IBV_WC_SUCCESS};
    pthread_mutex_unlock(&cq_lock);
    return n;
}

static int
fake_req_notify_cq(struct ibv_cq *cq, int solicited_only)
{
    (void)solicited_only;
    pthread_mutex_lock(&cq_lock);
    fake_of(cq->context)->armed = 1;
    pthread_mutex_unlock(&cq_lock);
    return 0;
}

struct ibv_comp_channel *
ibv_create_comp_channel(struct ibv_context *context)
{
    struct fake *f = fake_of(context);

    f->channel.context = context;
    f->channel.fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    return &f->channel;
}

int
ibv_destroy_comp_channel(struct ibv_comp_channel *channel)
{
    close(channel->fd);
    return 0;
}

struct ibv_cq *
ibv_create_cq(struct ibv_context *context, int cqe, void *cq_context,
              struct ibv_comp_channel *channel, int comp_vector)
{
    struct fake *f = fake_of(context);

    (void)cqe;
    last_comp_vector = comp_vector;
    f->cq.context = context;
    f->cq.cq_context = cq_context;
    f->cq.channel = channel;
    return &f->cq;
}

int
ibv_destroy_cq(struct ibv_cq *cq)
{
    (void)cq;
    return 0;
}

int
ibv_get_cq_event(struct ibv_comp_channel *channel, struct ibv_cq **cq, void **cq_context)
{
    struct fake *f = fake_of(channel->context);
    uint64_t count;

    if (read(channel->fd, &count, sizeof(count)) != sizeof(count))
        return -1;
    *cq = &f->cq;
    *cq_context = f->cq.cq_context;
    return 0;
}

void
ibv_ack_cq_events(struct ibv_cq *cq, unsigned int nevents)
{
    (void)cq;
    (void)nevents;
}

/* Queues a completion whose wr_id is what on device d's CQ; an armed CQ
 * raises an event unless silent. */
static void
complete_on(unsigned d, uint64_t what, int silent)
{
    struct fake *f = &fakes[d];
    uint64_t one = 1;
    int fire;

    pthread_mutex_lock(&cq_lock);
    f->queued[f->nqueued++] = (struct ibv_wc){.wr_id = what, .status = IBV_WC_SUCCESS};
    fire = f->armed && !silent;
    if (!silent)
        f->armed = 0;
    pthread_mutex_unlock(&cq_lock);
    if (fire)
        assert_int_equal(write(f->channel.fd, &one, sizeof(one)), sizeof(one));
}

static void
complete(uint64_t what)
{
    complete_on(0, what, 0);
}

/* What happened, in order: "w<N>" for completion N handled, "j<N>" for
 * its delivery run, with the thread each ran on. */
#define EVENTS 64
static pthread_mutex_t log_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t log_cond = PTHREAD_COND_INITIALIZER;
static char events[EVENTS][8];
static pthread_t event_thread[EVENTS];
static int event_relaying[EVENTS];
static unsigned nevents;
static int block_mode; /* 0: none; 1: block_begin and wait; 2: wait only */
static int blocked, released;

static void
note(const char *what, uint64_t n, int relaying)
{
    pthread_mutex_lock(&log_lock);
    if (nevents < EVENTS) {
        snprintf(events[nevents], sizeof(events[0]), "%s%u", what, (unsigned)n);
        event_thread[nevents] = pthread_self();
        event_relaying[nevents] = relaying;
        nevents++;
    }
    pthread_cond_broadcast(&log_cond);
    pthread_mutex_unlock(&log_lock);
}

/* Waits (up to 10 s) until an event named what was logged; its index. */
static int
wait_for_event_named(const char *what)
{
    uint64_t deadline = gfr_deadline_ns(10000);
    int found = -1;

    pthread_mutex_lock(&log_lock);
    while (found < 0 && gfr_now_ns() < deadline) {
        for (unsigned i = 0; i < nevents; i++)
            if (strcmp(events[i], what) == 0)
                found = (int)i;
        if (found < 0) {
            struct timespec ts;

            clock_gettime(CLOCK_REALTIME, &ts);
            ts.tv_nsec += 10000000;
            if (ts.tv_nsec >= 1000000000) {
                ts.tv_sec++;
                ts.tv_nsec -= 1000000000;
            }
            pthread_cond_timedwait(&log_cond, &log_lock, &ts);
        }
    }
    pthread_mutex_unlock(&log_lock);
    assert_true(found >= 0);
    return found;
}

struct job {
    struct gfr_pool_job job;
    uint64_t n;
    int blocks;
};

static void
run_job(struct gfr_pool_job *job, void *cb_arg, int status)
{
    struct job *j = caa_container_of(job, struct job, job);

    (void)cb_arg;
    assert_int_equal(status, 0);
    note("j", j->n, 0);
    if (j->blocks) {
        if (block_mode == 1)
            gfr_pool_block_begin();
        pthread_mutex_lock(&log_lock);
        blocked = 1;
        pthread_cond_broadcast(&log_cond);
        while (!released)
            pthread_cond_wait(&log_cond, &log_lock);
        pthread_mutex_unlock(&log_lock);
        if (block_mode == 1)
            gfr_pool_block_end();
    }
    free(j);
}

static struct gfr_rdma engine;
static struct gfr_rdma_dev dev, dev2;
static struct gfr_rdma_poller poller, poller2;

/* engine->on_wc: logs the completion and delivers it as rdma-rx.c does:
 * deferred on the poller, to the pool while a relay polls.  wr_id 100 and
 * up: a delivery that blocks. */
static void
on_wc(struct gfr_rdma_poller *p, struct ibv_wc *wc)
{
    struct job *j = calloc(1, sizeof(*j));

    note("w", wc->wr_id, p->relaying);
    j->n = wc->wr_id;
    j->blocks = wc->wr_id >= 100;
    gfr_pool_job_init(&j->job, run_job, NULL);
    if (p->relaying)
        assert_int_equal(gfr_pool_submit(engine.pool, &j->job, NULL, GFR_POOL_PRIO_NORMAL), 0);
    else
        gfr_rdma_poller_defer(p, &j->job);
}

static void start_with_window(enum gfr_poll_mode mode, unsigned spin_us);

static void
start(enum gfr_poll_mode mode)
{
    start_with_window(mode, 10);
}

/* d (dev or dev2) on fake device i, with its one poller p. */
static void
dev_init(struct gfr_rdma_dev *d, struct gfr_rdma_poller *p, unsigned i)
{
    struct fake *f = &fakes[i];

    memset(d, 0, sizeof(*d));
    snprintf(f->device.name, sizeof(f->device.name), "fake%u", i);
    f->ctx.device = &f->device;
    f->ctx.ops.poll_cq = fake_poll_cq;
    f->ctx.ops.req_notify_cq = fake_req_notify_cq;
    f->nqueued = 0;
    f->armed = 0;
    d->engine = &engine;
    d->verbs = &f->ctx;
    d->npollers = 1;
    d->pollers = p;
    cds_list_add_tail(&d->link, &engine.devices);
    memset(p, 0, sizeof(*p));
    p->index = start_index;
}

/* The engine, its pool and dev, with an adaptive window fixed at
 * spin_us; rails: transport.rdma.rails. */
static void
engine_init(enum gfr_poll_mode mode, unsigned spin_us, enum gfr_rails rails)
{
    struct gfr_pool_opts popts;

    memset(&engine, 0, sizeof(engine));
    gfr_rdma_opts_init(&engine.opts);
    engine.opts.poll_mode = mode;
    engine.opts.spin_us = spin_us;
    engine.opts.spin_max_us = spin_us;
    assert_int_equal(gfr_rdma_opts_set(&engine.opts, "rails",
                                       rails == GFR_RAILS_OFF ? "off" : "auto", NULL, 0), 0);
    engine.on_wc = on_wc;
    engine.wake_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    pthread_mutex_init(&engine.lock, NULL);
    pthread_mutex_init(&engine.threads_lock, NULL);
    CDS_INIT_LIST_HEAD(&engine.devices);
    CDS_INIT_LIST_HEAD(&engine.removed);
    gfr_pool_opts_init(&popts);
    popts.name = "test";
    assert_int_equal(gfr_pool_create(&popts, &engine.pool), 0);
    nevents = 0;
    blocked = released = 0;
    block_mode = 0;
    dev_init(&dev, &poller, 0);
}

/* Starts the poller with an adaptive window fixed at spin_us. */
static void
start_with_window(enum gfr_poll_mode mode, unsigned spin_us)
{
    engine_init(mode, spin_us, GFR_RAILS_OFF);
    assert_int_equal(gfr_rdma_poller_start(&dev, &poller, 64, "fake0"), 0);
}

/* Two devices, each with one poller, started in turn. */
static void
start_two(enum gfr_poll_mode mode, enum gfr_rails rails)
{
    engine_init(mode, 10, rails);
    dev_init(&dev2, &poller2, 1);
    assert_int_equal(gfr_rdma_poller_start(&dev, &poller, 64, "fake0"), 0);
    assert_int_equal(gfr_rdma_poller_start(&dev2, &poller2, 64, "fake1"), 0);
}

static void
stop(void)
{
    gfr_rdma_poller_stop(&poller);
    if (poller2.dev)
        gfr_rdma_poller_stop(&poller2);
    memset(&poller2, 0, sizeof(poller2));
    assert_int_equal(gfr_pool_destroy(engine.pool, GFR_POOL_DRAIN_RUN), 0);
    close(engine.wake_fd);
    pthread_mutex_destroy(&engine.threads_lock);
    pthread_mutex_destroy(&engine.lock);
}

static void
wait_until_blocked(void)
{
    pthread_mutex_lock(&log_lock);
    while (!blocked)
        pthread_cond_wait(&log_cond, &log_lock);
    pthread_mutex_unlock(&log_lock);
}

static void
release(void)
{
    pthread_mutex_lock(&log_lock);
    released = 1;
    pthread_cond_broadcast(&log_cond);
    pthread_mutex_unlock(&log_lock);
}


static void
test_direct_runs_after_the_batch_in_order(void **state)
{
    (void)state;
    start(GFR_POLL_EVENT);
    WAIT_UNTIL(uatomic_read(&poller.asleep)); /* then all four come in one batch */
    for (uint64_t i = 1; i <= 3; i++)
        complete_on(0, i, 1);
    complete(4);
    wait_for_event_named("j4");
    pthread_mutex_lock(&log_lock);
    assert_int_equal(nevents, 8);
    assert_string_equal(events[0], "w1");
    assert_string_equal(events[1], "w2");
    assert_string_equal(events[2], "w3");
    assert_string_equal(events[3], "w4");
    assert_string_equal(events[4], "j1");
    assert_string_equal(events[5], "j2");
    assert_string_equal(events[6], "j3");
    assert_string_equal(events[7], "j4");
    for (unsigned i = 0; i < 8; i++)
        assert_true(pthread_equal(event_thread[i], poller.thread->thread));
    pthread_mutex_unlock(&log_lock);
    assert_int_equal(uatomic_read(&poller.st_direct), 4);
    assert_int_equal(uatomic_read(&poller.st_relays), 0);
    stop();
}

/* A relay reaps w2 while j100 blocks, w2's delivery runs in the pool, and
 * the poller thread polls again afterwards (w3). */
static void
expect_relay_then_poller_again(void)
{
    int w2, j2, w3, j3;

    complete(2);
    w2 = wait_for_event_named("w2");
    j2 = wait_for_event_named("j2");
    pthread_mutex_lock(&log_lock);
    assert_false(pthread_equal(event_thread[w2], poller.thread->thread));
    assert_true(event_relaying[w2]);
    assert_false(pthread_equal(event_thread[j2], poller.thread->thread));
    pthread_mutex_unlock(&log_lock);
    assert_int_equal(uatomic_read(&poller.st_relays), 1);
    release();
    WAIT_UNTIL(!uatomic_read(&poller.handling) && !uatomic_read(&poller.thread->relay_asked));
    complete(3);
    j3 = wait_for_event_named("j3");
    w3 = wait_for_event_named("w3");
    pthread_mutex_lock(&log_lock);
    assert_true(pthread_equal(event_thread[w3], poller.thread->thread));
    assert_true(pthread_equal(event_thread[j3], poller.thread->thread));
    pthread_mutex_unlock(&log_lock);
}

static void
test_a_blocking_handler_gets_a_relay(void **state)
{
    (void)state;
    start(GFR_POLL_EVENT);
    block_mode = 1;
    complete(100);
    wait_until_blocked();
    expect_relay_then_poller_again();
    stop();
}

static void
test_a_long_handler_gets_a_relay_from_the_watch(void **state)
{
    uint64_t now;

    (void)state;
    start(GFR_POLL_EVENT);
    block_mode = 2; /* blocks without gfr_pool_block_begin */
    complete(100);
    wait_until_blocked();
    now = gfr_now_ns();
    assert_int_equal(gfr_rdma_pollers_watch(&engine, now), 1); /* first look */
    assert_int_equal(uatomic_read(&poller.thread->relay_asked), 0);
    assert_int_equal(gfr_rdma_pollers_watch(&engine, now + GFR_RELAY_AFTER_MS * 1000000ull), 1);
    assert_int_equal(uatomic_read(&poller.thread->relay_asked), 1);
    expect_relay_then_poller_again();
    /* Nothing ran since the last look: the watch can slow down. */
    WAIT_UNTIL(gfr_rdma_pollers_watch(&engine, gfr_now_ns()) == 0);
    stop();
}

static void
test_a_sender_kicks_a_sleeping_poller(void **state)
{
    uint64_t sleeps;

    (void)state;
    start(GFR_POLL_ADAPTIVE);
    WAIT_UNTIL(uatomic_read(&poller.asleep));
    /* A spin for a reply lasts until the reply's bound (here 1 s, well
     * within WAIT_UNTIL's 10 s, so that the sleep after it is seen even
     * on a loaded machine). */
    gfr_rdma_poller_expect(&poller, 0, 1000000000ull);
    assert_int_equal(uatomic_read(&poller.st_kicks), 1);
    /* It polls for the reply instead of sleeping. */
    WAIT_UNTIL(CMM_LOAD_SHARED(poller.st_spin_ns) > 0 && !uatomic_read(&poller.asleep));
    sleeps = CMM_LOAD_SHARED(poller.st_sleeps);
    usleep(50000);
    assert_int_equal(CMM_LOAD_SHARED(poller.st_sleeps), sleeps);
    /* A second request while it polls needs no kick. */
    gfr_rdma_poller_expect(&poller, 0, 1000000000ull);
    assert_int_equal(uatomic_read(&poller.st_kicks), 1);
    /* Both replies came: it sleeps again. */
    gfr_rdma_poller_replied(&poller, 2);
    WAIT_UNTIL(CMM_LOAD_SHARED(poller.st_sleeps) > sleeps);
    complete(1);
    wait_for_event_named("j1");
    stop();
}

static void
test_a_reply_not_due_sets_the_timer(void **state)
{
    uint64_t sent, polls;

    (void)state;
    start(GFR_POLL_ADAPTIVE);
    WAIT_UNTIL(uatomic_read(&poller.asleep));
    sent = gfr_now_ns();
    gfr_rdma_poller_expect(&poller, 200ull * 1000000, 10ull * 1000000000);
    /* Not kicked: its timer is set for the reply's earliest arrival. */
    assert_int_equal(uatomic_read(&poller.st_kicks), 0);
    assert_true(uatomic_read(&poller.timer_at_ns) >= sent + 200ull * 1000000);
    assert_int_equal(CMM_LOAD_SHARED(poller.st_timer_wakeups), 0);
    /* The timer wakes it, and it polls. */
    WAIT_UNTIL(CMM_LOAD_SHARED(poller.st_timer_wakeups) == 1);
    assert_true(gfr_now_ns() >= sent + 200ull * 1000000);
    polls = CMM_LOAD_SHARED(poller.st_polls);
    WAIT_UNTIL(CMM_LOAD_SHARED(poller.st_polls) >= polls + 1000);
    assert_false(uatomic_read(&poller.asleep));
    gfr_rdma_poller_replied(&poller, 1);
    complete(1);
    wait_for_event_named("j1");
    stop();
}

static void
test_a_spinning_poller_sleeps_until_the_reply_is_due(void **state)
{
    uint64_t sent;

    (void)state;
    start_with_window(GFR_POLL_ADAPTIVE, 1000000); /* polls for a second */
    WAIT_UNTIL(CMM_LOAD_SHARED(poller.st_polls) >= 1000);
    assert_false(uatomic_read(&poller.asleep));
    sent = gfr_now_ns();
    gfr_rdma_poller_expect(&poller, 300ull * 1000000, 10ull * 1000000000);
    /* It stops polling and sleeps until the reply may come. */
    WAIT_UNTIL(CMM_LOAD_SHARED(poller.st_timed_sleeps) == 1 && uatomic_read(&poller.asleep));
    assert_true(gfr_now_ns() < sent + 300ull * 1000000);
    assert_true(uatomic_read(&poller.timer_at_ns) >= sent + 300ull * 1000000);
    WAIT_UNTIL(CMM_LOAD_SHARED(poller.st_timer_wakeups) == 1);
    gfr_rdma_poller_replied(&poller, 1);
    complete(1);
    wait_for_event_named("j1");
    stop();
}

/* A pass over the CQ (before a QP on the SRQ is destroyed): completions
 * in the CQ when it was asked for have been handed on once it is done,
 * even on a poller asleep with no event to wake it. */
static void
test_a_cq_pass_hands_on_what_was_in_the_cq(void **state)
{
    unsigned long from;
    int seen1 = 0, seen2 = 0;

    (void)state;
    start(GFR_POLL_EVENT);
    WAIT_UNTIL(uatomic_read(&poller.asleep));
    complete_on(0, 1, 1); /* no event: only the pass's kick wakes the poller */
    complete_on(0, 2, 1);
    from = gfr_rdma_poller_pass_begin(&poller);
    WAIT_UNTIL(gfr_rdma_poller_passed(&poller, from));
    pthread_mutex_lock(&log_lock);
    for (unsigned i = 0; i < nevents; i++) {
        seen1 |= strcmp(events[i], "w1") == 0;
        seen2 |= strcmp(events[i], "w2") == 0;
    }
    pthread_mutex_unlock(&log_lock);
    assert_true(seen1 && seen2);
    stop();
}

/* A pass over a CQ that is never found empty (the poller busy with other
 * rails' completions, the stalled rail's judge waiting on it): the polls
 * that drain it, returning fewer completions than they asked for, make the
 * pass. */
static void
test_a_cq_pass_ends_on_a_cq_never_found_empty(void **state)
{
    unsigned long from;

    (void)state;
    start(GFR_POLL_EVENT);
    WAIT_UNTIL(uatomic_read(&poller.asleep));
    pthread_mutex_lock(&cq_lock);
    never_empty = 1;
    pthread_mutex_unlock(&cq_lock);
    complete_on(0, 1, 1);
    from = gfr_rdma_poller_pass_begin(&poller);
    WAIT_UNTIL(gfr_rdma_poller_passed(&poller, from));
    wait_for_event_named("w1");
    pthread_mutex_lock(&cq_lock);
    never_empty = 0;
    pthread_mutex_unlock(&cq_lock);
    stop();
}

/* Completions injected for work requests the provider will never complete
 * are handed on by the poller, as the CQ's own, in order: a poller asleep
 * with no event is kicked awake for them. */
static void
test_injected_completions_are_handed_on_by_the_poller(void **state)
{
    struct ibv_wc made[2] = {{.wr_id = 7, .status = IBV_WC_WR_FLUSH_ERR},
                             {.wr_id = 8, .status = IBV_WC_WR_FLUSH_ERR}};
    int first, second;

    (void)state;
    start(GFR_POLL_EVENT);
    WAIT_UNTIL(uatomic_read(&poller.asleep));
    assert_int_equal(gfr_rdma_poller_inject(&poller, made, 2), 0);
    second = wait_for_event_named("w8");
    first = wait_for_event_named("w7");
    assert_true(first >= 0 && first < second);
    stop();
}

/* A poll that fails means the CQ is broken: the poller says so, wakes the
 * CM thread (which ends the connections on it), stops polling and lets go
 * of poll_lock, and takes no new connection. */
static void
test_a_broken_cq_is_reported_and_polled_no_more(void **state)
{
    struct gfr_rdma_dev *d;
    struct gfr_rdma_poller *got;
    uint64_t count;
    unsigned long polls;
    int woke = 0, locked = 0;

    (void)state;
    start(GFR_POLL_EVENT);
    WAIT_UNTIL(uatomic_read(&poller.asleep));
    while (read(engine.wake_fd, &count, sizeof(count)) > 0)
        ;
    pthread_mutex_lock(&cq_lock);
    poll_fails = 1;
    pthread_mutex_unlock(&cq_lock);
    complete(1); /* wakes it: its next poll fails */
    WAIT_UNTIL(uatomic_read(&poller.broken));
    WAIT_UNTIL(woke || (woke = read(engine.wake_fd, &count, sizeof(count)) == sizeof(count)));
    WAIT_UNTIL(locked || (locked = pthread_mutex_trylock(&poller.poll_lock) == 0));
    polls = poller.st_polls;
    pthread_mutex_unlock(&poller.poll_lock);
    complete(2);
    usleep(20000);
    assert_int_equal(poller.st_polls, polls);
    assert_int_equal(gfr_rdma_dev_get(&engine, &fakes[0].ctx, 4, &d, &got), -ENOSPC);
    stop();
}

/* Each poller's CQ takes its own completion vector, round the device's
 * vectors, so that their interrupts do not all land on one core. */
static void
test_cqs_spread_over_completion_vectors(void **state)
{
    (void)state;
    fakes[0].ctx.num_comp_vectors = 4;
    for (start_index = 0; start_index < 6; start_index++) {
        start(GFR_POLL_EVENT);
        assert_int_equal(last_comp_vector, (int)(start_index % 4));
        stop();
    }
    fakes[0].ctx.num_comp_vectors = 0; /* none reported: vector 0 */
    start_index = 5;
    start(GFR_POLL_EVENT);
    assert_int_equal(last_comp_vector, 0);
    stop();
    start_index = 0;
}

/* With rails off each device's poller has a thread of its own. */
static void
test_without_rails_each_device_has_its_own_thread(void **state)
{
    (void)state;
    start_two(GFR_POLL_EVENT, GFR_RAILS_OFF);
    assert_ptr_not_equal(poller.thread, poller2.thread);
    assert_null(engine.shared_threads[0]);
    stop();
}

/* With rails=auto the pollers of both devices share one thread: it sleeps
 * on both channels at once, and reaps and delivers what either CQ gives. */
static void
test_rails_share_one_thread_for_every_device(void **state)
{
    int w1, w2, j1, j2;

    (void)state;
    start_two(GFR_POLL_EVENT, GFR_RAILS_AUTO);
    assert_ptr_equal(poller.thread, poller2.thread);
    assert_ptr_equal(engine.shared_threads[0], poller.thread);
    WAIT_UNTIL(uatomic_read(&poller.asleep) && uatomic_read(&poller2.asleep));
    complete_on(1, 2, 0);
    j2 = wait_for_event_named("j2");
    WAIT_UNTIL(uatomic_read(&poller.asleep) && uatomic_read(&poller2.asleep));
    complete_on(0, 1, 0);
    j1 = wait_for_event_named("j1");
    w1 = wait_for_event_named("w1");
    w2 = wait_for_event_named("w2");
    pthread_mutex_lock(&log_lock);
    for (unsigned i = 0; i < nevents; i++)
        assert_true(pthread_equal(event_thread[i], poller.thread->thread));
    assert_true(w2 < j2 && j2 < w1 && w1 < j1);
    pthread_mutex_unlock(&log_lock);
    /* Each device counts its own wake-ups; the thread's sleeps count on
     * its first poller alone. */
    assert_int_equal(CMM_LOAD_SHARED(poller2.st_wakeups), 1);
    assert_int_equal(CMM_LOAD_SHARED(poller.st_wakeups), 1);
    assert_int_equal(CMM_LOAD_SHARED(poller2.st_sleeps), 0);
    stop();
    assert_null(engine.shared_threads[0]);
}

/* A device that leaves a shared thread (its removal) is polled no more,
 * and its poll_lock is let go of; the other device's completions are
 * still reaped by the thread. */
static void
test_a_device_leaves_a_shared_thread(void **state)
{
    struct gfr_rdma_poll_thread *t;

    (void)state;
    start_two(GFR_POLL_ADAPTIVE, GFR_RAILS_AUTO);
    t = poller.thread;
    gfr_rdma_poller_stop(&poller2);
    memset(&poller2, 0, sizeof(poller2));
    assert_ptr_equal(engine.shared_threads[0], t);
    complete(3);
    wait_for_event_named("j3");
    stop();
}

/* A blocking handler on a shared thread: its relay polls every device of
 * the thread, so the other device's completions are reaped meanwhile. */
static void
test_a_blocking_handler_gets_a_relay_for_every_device_of_its_thread(void **state)
{
    int w2;

    (void)state;
    start_two(GFR_POLL_EVENT, GFR_RAILS_AUTO);
    block_mode = 1;
    complete(100);
    wait_until_blocked();
    WAIT_UNTIL(uatomic_read(&poller.st_relays) == 1);
    assert_int_equal(uatomic_read(&poller2.st_relays), 0); /* one relay for both */
    complete_on(1, 2, 0);
    w2 = wait_for_event_named("w2");
    wait_for_event_named("j2");
    pthread_mutex_lock(&log_lock);
    assert_true(event_relaying[w2]);
    assert_false(pthread_equal(event_thread[w2], poller.thread->thread));
    pthread_mutex_unlock(&log_lock);
    release();
    WAIT_UNTIL(!uatomic_read(&poller2.handling) && !uatomic_read(&poller.thread->relay_asked));
    complete_on(1, 3, 0);
    wait_for_event_named("j3");
    stop();
}

/* A sender's kick for the second device wakes the shared thread, which
 * then polls both instead of sleeping. */
static void
test_a_sender_kicks_a_shared_thread_awake(void **state)
{
    (void)state;
    start_two(GFR_POLL_ADAPTIVE, GFR_RAILS_AUTO);
    WAIT_UNTIL(uatomic_read(&poller.asleep) && uatomic_read(&poller2.asleep));
    gfr_rdma_poller_expect(&poller2, 0, 1000000000ull); /* as in the test above */
    assert_int_equal(uatomic_read(&poller2.st_kicks), 1);
    WAIT_UNTIL(CMM_LOAD_SHARED(poller.st_spin_ns) > 0 && !uatomic_read(&poller.asleep));
    complete(1);
    wait_for_event_named("j1");
    gfr_rdma_poller_replied(&poller2, 1);
    WAIT_UNTIL(uatomic_read(&poller.asleep) && uatomic_read(&poller2.asleep));
    stop();
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_direct_runs_after_the_batch_in_order),
        cmocka_unit_test(test_a_blocking_handler_gets_a_relay),
        cmocka_unit_test(test_a_long_handler_gets_a_relay_from_the_watch),
        cmocka_unit_test(test_a_sender_kicks_a_sleeping_poller),
        cmocka_unit_test(test_a_reply_not_due_sets_the_timer),
        cmocka_unit_test(test_a_spinning_poller_sleeps_until_the_reply_is_due),
        cmocka_unit_test(test_cqs_spread_over_completion_vectors),
        cmocka_unit_test(test_a_cq_pass_hands_on_what_was_in_the_cq),
        cmocka_unit_test(test_a_cq_pass_ends_on_a_cq_never_found_empty),
        cmocka_unit_test(test_injected_completions_are_handed_on_by_the_poller),
        cmocka_unit_test(test_a_broken_cq_is_reported_and_polled_no_more),
        cmocka_unit_test(test_without_rails_each_device_has_its_own_thread),
        cmocka_unit_test(test_rails_share_one_thread_for_every_device),
        cmocka_unit_test(test_a_device_leaves_a_shared_thread),
        cmocka_unit_test(test_a_blocking_handler_gets_a_relay_for_every_device_of_its_thread),
        cmocka_unit_test(test_a_sender_kicks_a_shared_thread_awake),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
