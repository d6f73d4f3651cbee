/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Pollers and their threads.  A poller is one CQ with its completion
 * channel; a poller thread polls the CQs of its members and hands every
 * work completion up through engine->on_wc.  With rails off each poller
 * has a thread of its own; with rails=auto the pollers of one index on
 * every device share one, so that a bundle's rails are reaped by one
 * thread that stays hot (struct gfr_rdma_poll_thread; docs/engine.md,
 * "Poller threads and rails").  How a thread waits (docs/engine.md):
 *  - poll-mode adaptive: a window that follows the gap between
 *    completions (gfr_spin_window.h), and beyond it, while requests of its
 *    members' client connections wait for replies, as long as a reply is
 *    expected (gfr_rtt.h, "Polling where a reply is expected"), sleeping
 *    until shortly before a reply may come when that is later than a
 *    timer's lateness (gfr_spin_policy.h, "Spin or sleep"); a submitter
 *    kicks a sleeping poller awake, or sets its timer, so the wake-up
 *    overlaps the round trip instead of following it;
 *  - busy: never sleeps; event: sleeps after every empty poll.
 * With dispatch=direct the thread runs the handlers of what it reaped
 * itself, after each batch; while it does, a relay (a pool job) may poll
 * a member in its place: asked for by gfr_pool_block_begin in a handler,
 * or by the CM thread when one handler run lasts GFR_RELAY_AFTER_MS
 * (gfr_rdma_pollers_watch).
 *
 * Locking: a poller's poll_lock is held by whoever polls its CQ (its
 * thread, which holds the locks of all the members it polls except while
 * it runs handlers, or the relay meanwhile); it alone touches the CQ, the
 * channel and the poller's own state (counters written with POLLER_ADD,
 * pull-buffer lists, direct[]).  The fields a submitter or the CM thread
 * read are uatomic, with the barriers their functions name.  A thread's
 * member list: see struct gfr_rdma_poll_thread.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <poll.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

#include <urcu/arch.h>
#include <urcu/uatomic.h>
#include <urcu/urcu-memb.h>

#include "gfr_atomic.h"
#include "gfr_clock.h"
#include "gfr_spin_window.h"
#include "engine-dev.h"

/* Adds to one of the poller's own counters (the poll_lock holder is their
 * only writer). */
#define POLLER_ADD(p, field, n) CMM_STORE_SHARED((p)->field, (p)->field + (n))

/* How many empty polls between two looks at the clock while spinning. */
#define GFR_SPIN_CHECK_POLLS 64

/* A spinning poller yields its CPU at least this often: a thread waiting
 * for that CPU waits no longer.  In the TCG VM 64 polls take longer, so
 * it yields at every look at the clock; on hardware one in several. */
#define GFR_SPIN_YIELD_NS 10000ull

/* Is a reply expected now?  Any thread; a hint: a stale answer costs one
 * poll more or one sleep early. */
static int
expecting(struct gfr_rdma_poller *p, uint64_t now)
{
    return uatomic_read(&p->awaiting) > 0 && now < uatomic_read(&p->expect_until_ns);
}

/* Until when a reply is expected; 0: none.  Any thread, a hint as above. */
static uint64_t
reply_until(struct gfr_rdma_poller *p)
{
    return uatomic_read(&p->awaiting) > 0 ? uatomic_read(&p->expect_until_ns) : 0;
}


/* Does any poller of s expect a reply now?  A hint, as expecting. */
static int
set_expecting(const struct gfr_rdma_reap_set *s, uint64_t now)
{
    for (unsigned i = 0; i < s->n; i++)
        if (expecting(s->m[i], now))
            return 1;
    return 0;
}

/* Sets p's timer to fire at at_ns (CLOCK_MONOTONIC, as gfr_now_ns; 0:
 * stops it).  Any thread: the poller before a timed sleep, a submitter for
 * a poller asleep; a race between two leaves one of their times, and
 * costs at most a wake-up early or a reply found by its completion
 * event. */
static void
arm_timer(struct gfr_rdma_poller *p, uint64_t at_ns)
{
    struct itimerspec its = {.it_value = {.tv_sec = (time_t)(at_ns / 1000000000u),
                                          .tv_nsec = (long)(at_ns % 1000000000u)}};

    if (timerfd_settime(p->timer_fd, TFD_TIMER_ABSTIME, &its, NULL) != 0) {
        gfr_rdma_log("poller %u: cannot set its timer: %s", p->index, strerror(errno));
        return;
    }
    uatomic_set(&p->timer_at_ns, at_ns);
}

/* Sets p's timer to fire at at_ns unless it already fires earlier (and
 * has not fired yet, or was not read since).  Any thread, as arm_timer. */
static void
arm_timer_by(struct gfr_rdma_poller *p, uint64_t at_ns)
{
    uint64_t timer_at = uatomic_read(&p->timer_at_ns);

    if (!timer_at || timer_at > at_ns)
        arm_timer(p, at_ns);
}

static void
kick(struct gfr_rdma_poller *p)
{
    uint64_t one = 1;

    if (write(p->kick_fd, &one, sizeof(one)) < 0 && errno != EAGAIN)
        gfr_rdma_log("poller %u: cannot wake it: %s", p->index, strerror(errno));
}

static void
kick_thread(struct gfr_rdma_poll_thread *t)
{
    uint64_t one = 1;

    if (write(t->kick_fd, &one, sizeof(one)) < 0 && errno != EAGAIN)
        gfr_rdma_log("poller thread %u: cannot wake it: %s", t->index, strerror(errno));
}


/*
 * p's thread runs handlers and needs someone to poll in its place: queues
 * the thread's relay once (relay_asked), at high priority, counted on p.
 * Any thread (p's poller thread, or the CM thread holding engine->lock,
 * under which p is listed and so still has its thread).
 */
static void relay_run(struct gfr_pool_job *job, void *cb_arg, int status);

static void
relay_ask(struct gfr_rdma_poller *p)
{
    struct gfr_rdma_poll_thread *t = p->thread;

    if (uatomic_cmpxchg(&t->relay_asked, 0, 1) != 0)
        return;
    gfr_pool_job_init(&t->relay_job, relay_run, NULL);
    if (gfr_pool_submit(p->dev->engine->pool, &t->relay_job, NULL, GFR_POOL_PRIO_HIGH) != 0) {
        uatomic_set(&t->relay_asked, 0); /* the pool is going: nothing to relay to */
        return;
    }
    uatomic_inc(&p->st_relays);
}

/* gfr_pool_block_begin on a poller thread: a handler is about to block;
 * the relay polls the members meanwhile. */
static void
poller_blocking(void *cb_arg)
{
    struct gfr_rdma_poll_thread *t = cb_arg;

    if (uatomic_read(&t->handling) && t->cur.n)
        relay_ask(t->cur.m[0]);
}

/*
 * Runs the deliveries p's batch deferred (dispatch=direct), in the order
 * their completions came, with the poll_lock of every member of s
 * released so that the relay can poll them meanwhile; takes them back, in
 * order, before returning, waiting for the relay to stop.  Each member's
 * handling is published after its handling_since_ns and handling_seq (for
 * gfr_rdma_pollers_watch), the thread's after them; after the run a relay
 * still asked for is kicked, as it may sleep on the members' channels.
 * The poller thread (s its own).
 */
static void
run_direct(struct gfr_rdma_reap_set *s, struct gfr_rdma_poller *p)
{
    struct gfr_rdma *engine = p->dev->engine;
    struct gfr_rdma_poll_thread *t = s->thread;
    struct gfr_pool_job *jobs[GFR_POLL_BATCH];
    unsigned n = p->ndirect;
    uint64_t now = gfr_now_ns();

    memcpy(jobs, p->direct, n * sizeof(jobs[0]));
    p->ndirect = 0;
    uatomic_add(&p->st_direct, n);
    for (unsigned i = 0; i < s->n; i++) {
        uatomic_set(&s->m[i]->handling_since_ns, now);
        uatomic_inc(&s->m[i]->handling_seq);
    }
    cmm_smp_wmb();
    for (unsigned i = 0; i < s->n; i++)
        uatomic_set(&s->m[i]->handling, 1);
    uatomic_set(&t->handling, 1);
    if (!uatomic_read(&engine->watching) && uatomic_cmpxchg(&engine->watching, 0, 1) == 0) {
        uint64_t one = 1;

        /* The CM thread ticks slowly while no handler runs: make it look. */
        if (write(engine->wake_fd, &one, sizeof(one)) < 0 && errno != EAGAIN)
            gfr_rdma_log("poller %u: cannot wake the CM thread: %s", p->index,
                         strerror(errno));
    }
    for (unsigned i = 0; i < s->n; i++)
        pthread_mutex_unlock(&s->m[i]->poll_lock);
    for (unsigned i = 0; i < n; i++)
        jobs[i]->fn(jobs[i], jobs[i]->cb_arg, 0);
    uatomic_set(&t->handling, 0);
    for (unsigned i = 0; i < s->n; i++)
        uatomic_set(&s->m[i]->handling, 0);
    cmm_smp_mb();
    if (uatomic_read(&t->relay_asked))
        for (unsigned i = 0; i < s->n; i++)
            kick(s->m[i]);
    for (unsigned i = 0; i < s->n; i++)
        pthread_mutex_lock(&s->m[i]->poll_lock);
}

/*
 * p's CQ is broken: no completion will come out of it again.  Marks it
 * once, says so, kicks the poller (which stops polling) and wakes the CM
 * thread, which ends the connections on it (rdma-cq.c).  Any thread.
 */
void
gfr_rdma_poller_broken(struct gfr_rdma_poller *p, const char *why)
{
    uint64_t one = 1;

    if (uatomic_cmpxchg(&p->broken, 0, 1) != 0)
        return;
    gfr_rdma_log("%s poller %u: its completion queue is broken (%s): the connections on it "
                 "end, and it takes no new ones", ibv_get_device_name(p->dev->verbs->device),
                 p->index, why);
    kick(p);
    if (write(p->dev->engine->wake_fd, &one, sizeof(one)) < 0 && errno != EAGAIN)
        gfr_rdma_log("poller %u: cannot wake the CM thread: %s", p->index, strerror(errno));
}


/* A completion made for the provider (gfr_rdma_poller_inject). */
struct injected_wc {
    struct cds_wfcq_node node;
    struct ibv_wc wc;
};

/* Hands on the injected completions, as the CQ's own; how many.  Caller
 * holds poll_lock (the queue's one consumer). */
int
gfr_rdma_poller_run_injected(struct gfr_rdma_poller *p)
{
    struct cds_wfcq_node *node;
    int n = 0;

    while ((node = __cds_wfcq_dequeue_nonblocking(&p->injected_head, &p->injected_tail)) != NULL &&
           node != CDS_WFCQ_WOULDBLOCK) {
        struct injected_wc *in = caa_container_of(node, struct injected_wc, node);

        p->dev->engine->on_wc(p, &in->wc);
        free(in);
        n++;
    }
    return n;
}

/* One poll of p's CQ (and what was injected), every completion handed
 * on, then the deliveries they deferred run (dispatch=direct).  How many,
 * or a negative count when the CQ broke.  Caller holds the poll_lock of
 * every poller of s, p among them. */
static int
poll_once(struct gfr_rdma_reap_set *s, struct gfr_rdma_poller *p)
{
    struct ibv_wc wcs[GFR_POLL_BATCH];
    int injected = 0;
    int n;

    if (uatomic_read(&p->broken)) /* polled no more: its thread lets it go */
        return 0;
    if (!cds_wfcq_empty(&p->injected_head, &p->injected_tail))
        injected = gfr_rdma_poller_run_injected(p);
    n = ibv_poll_cq(p->cq, GFR_POLL_BATCH, wcs);
    POLLER_ADD(p, st_polls, 1);
    /* fewer than asked for: what was in the CQ has been taken */
    if (n >= 0 && n < GFR_POLL_BATCH)
        POLLER_ADD(p, drained_polls, 1);
    if (n < 0) {
        char why[48];

        snprintf(why, sizeof(why), "ibv_poll_cq returned %d", n);
        gfr_rdma_poller_broken(p, why);
    }
    if (n > 0) {
        POLLER_ADD(p, st_completions, (uint64_t)n);
        if (p->woke)
            POLLER_ADD(p, st_reaped_after_sleep, (uint64_t)n);
        for (int i = 0; i < n; i++)
            p->dev->engine->on_wc(p, &wcs[i]);
        p->woke = 0;
    }
    if (p->ndirect)
        run_direct(s, p);
    return n < 0 ? n : n + injected;
}

/* One poll of every poller of s; how many completions in all.  Caller
 * holds their poll_locks. */
static int
poll_set(struct gfr_rdma_reap_set *s)
{
    int found = 0;

    for (unsigned i = 0; i < s->n; i++) {
        int n = poll_once(s, s->m[i]);

        if (n > 0)
            found += n;
    }
    return found;
}

/* Whether s's holder is to stop polling it as it is: the thread stops,
 * or its members changed (one joined, left or broke); for a relay, one
 * of its pollers leaves or broke.  Any hint is taken up by the caller's
 * next look. */
static int
set_changed(const struct gfr_rdma_reap_set *s)
{
    if (s->thread && (uatomic_read(&s->thread->stopping) ||
                      uatomic_read(&s->thread->members_gen) != s->gen))
        return 1;
    for (unsigned i = 0; i < s->n; i++)
        if (uatomic_read(&s->m[i]->broken) || uatomic_read(&s->m[i]->stopping))
            return 1;
    return 0;
}

/* The spin-or-sleep rule at now (gfr_spin_policy.h), over the replies
 * every poller of s expects: its first poller's rule, which the holder
 * of s keeps.  window_ns: the adaptive window (0: none).  Caller holds
 * the first's poll_lock. */
static enum gfr_spin_why
decide(const struct gfr_rdma_reap_set *s, uint64_t now, uint64_t window_ns, uint64_t *until,
       uint64_t *wake)
{
    uint64_t from = 0, last = 0;

    for (unsigned i = 0; i < s->n; i++) {
        struct gfr_rdma_poller *p = s->m[i];
        uint64_t f = uatomic_read(&p->expect_from_ns), u = reply_until(p);

        if (!u)
            continue;
        if (!from || f < from)
            from = f;
        if (u > last)
            last = u;
    }
    return gfr_spin_policy_decide(&s->m[0]->spin_policy, now, window_ns, from, last, until, wake);
}

/*
 * Sleeps on every poller of s at once: their completion channels, kick
 * eventfds and timers (the first's set for wake_ns, 0: none), and the
 * thread's own eventfd.  The CQs are armed and polled once more before
 * sleeping, so a completion that arrived between the last empty poll and
 * the arming is not left waiting for the next one (perftest#137).  Each
 * poller's asleep is set before the last look at the replies expected
 * with a full barrier between, and a submitter sets awaiting before it
 * reads asleep (gfr_rdma_poller_expect): one of the two sees the other,
 * and a reply that came to be expected meanwhile is decided for again:
 * polled for at once, or its timer set.  Without a timer it sleeps for as
 * long as nothing happens: an idle thread costs nothing, and stopping or
 * a member's leave kicks it.  The completions the next poll of a poller
 * finds after its channel's event count as reaped after a sleep
 * (p->woke); the sleep itself counts on the first poller.  Caller holds
 * the poll_lock of every poller of s.
 */
static void
wait_for_event(struct gfr_rdma_reap_set *s, uint64_t wake_ns)
{
    struct pollfd pfd[3 * GFR_POLL_THREAD_MAX + 1];
    struct gfr_rdma_poller *first = s->m[0];
    struct ibv_cq *cq;
    uint64_t start, count, until, wake, timer_at;
    unsigned nfd = 0;
    void *ctx;
    int ready;

    for (unsigned i = 0; i < s->n; i++)
        if (ibv_req_notify_cq(s->m[i]->cq, 0) != 0) {
            gfr_rdma_log("poller %u: ibv_req_notify_cq failed: %s", s->m[i]->index,
                         strerror(errno));
            return;
        }
    if (poll_set(s) > 0)
        return;
    for (unsigned i = 0; i < s->n; i++) {
        struct gfr_rdma_poller *p = s->m[i];

        /* A timer left from a reply that came early would wake it for
         * nothing; one a submitter sets from now on is seen (asleep). */
        if ((!wake_ns || p != first) && uatomic_read(&p->timer_at_ns))
            arm_timer(p, 0);
        uatomic_set(&p->asleep, 1);
        pfd[nfd++] = (struct pollfd){.fd = p->channel->fd, .events = POLLIN};
        pfd[nfd++] = (struct pollfd){.fd = p->kick_fd, .events = POLLIN};
        pfd[nfd++] = (struct pollfd){.fd = p->timer_fd, .events = POLLIN};
    }
    if (s->thread)
        pfd[nfd++] = (struct pollfd){.fd = s->thread->kick_fd, .events = POLLIN};
    cmm_smp_mb();
    start = gfr_now_ns();
    if (set_expecting(s, start)) {
        enum gfr_spin_why why = decide(s, start, 0, &until, &wake);

        if (why == GFR_SPIN_REPLY) {
            for (unsigned i = 0; i < s->n; i++)
                uatomic_set(&s->m[i]->asleep, 0);
            return;
        }
        if (why == GFR_SLEEP_UNTIL_DUE && (!wake_ns || wake < wake_ns))
            wake_ns = wake;
    }
    if (wake_ns) {
        arm_timer_by(first, wake_ns);
        POLLER_ADD(first, st_timed_sleeps, 1);
    }
    POLLER_ADD(first, st_sleeps, 1);
    ready = set_changed(s) ? 0 : poll(pfd, nfd, -1);
    POLLER_ADD(first, st_asleep_ns, gfr_now_ns() - start);
    for (unsigned i = 0; i < s->n; i++)
        uatomic_set(&s->m[i]->asleep, 0);
    if (ready <= 0)
        return;
    for (unsigned i = 0; i < s->n; i++) {
        struct gfr_rdma_poller *p = s->m[i];
        struct pollfd *fds = &pfd[3 * i];

        if ((fds[2].revents & POLLIN) && read(p->timer_fd, &count, sizeof(count)) == sizeof(count)) {
            timer_at = uatomic_read(&p->timer_at_ns);
            uatomic_set(&p->timer_at_ns, 0);
            POLLER_ADD(p, st_timer_wakeups, 1);
            /* How late it woke, when it slept through the time set: a
             * timer that fired while the thread was awake says nothing. */
            if (timer_at && timer_at >= start) {
                uint64_t lead;

                gfr_spin_policy_woke(&first->spin_policy, timer_at, gfr_now_ns());
                lead = gfr_spin_policy_lead(&first->spin_policy);
                for (unsigned j = 0; j < s->n; j++)
                    uatomic_set(&s->m[j]->lead_ns, lead);
            }
        }
        if ((fds[1].revents & POLLIN) && read(p->kick_fd, &count, sizeof(count)) < 0 &&
            errno != EAGAIN)
            gfr_rdma_log("poller %u: reading its eventfd: %s", p->index, strerror(errno));
        if ((fds[0].revents & POLLIN) && ibv_get_cq_event(p->channel, &cq, &ctx) == 0) {
            ibv_ack_cq_events(cq, 1);
            POLLER_ADD(p, st_wakeups, 1);
            p->woke = 1;
        }
    }
    if (s->thread && (pfd[nfd - 1].revents & POLLIN) &&
        read(s->thread->kick_fd, &count, sizeof(count)) < 0 && errno != EAGAIN)
        gfr_rdma_log("poller thread %u: reading its eventfd: %s", s->thread->index,
                     strerror(errno));
}

/*
 * Polls every poller of s until until_ns, and on while a reply is
 * expected; 1 when something completed.  Every GFR_SPIN_CHECK_POLLS empty
 * polls it reads the clock, and yields the CPU when GFR_SPIN_YIELD_NS
 * have passed since it last did: on a machine with few cores the threads
 * that produce what it waits for (the worker serving the request, the
 * application thread, rxe's kernel work) share its CPU, and a yield runs
 * the one waiting on its run queue at once, which the kernel's preemption
 * does not.  A load sample instead (the machine's runnable tasks from
 * /proc/loadavg, every 200 us, the spin cut short when no CPU was free),
 * a spin at SCHED_IDLE, or another system call in the yield's place
 * measured worse in the TCG VM (docs/performance-log.md, 2026-11-28).
 * The spin counts on the first poller.  Caller holds the poll_lock of
 * every poller of s.
 */
static int
spin(struct gfr_rdma_reap_set *s, uint64_t until_ns)
{
    uint64_t start = gfr_now_ns();
    uint64_t yielded = start;
    uint64_t now, until, wake;
    int found = 0;

    for (unsigned i = 1; !set_changed(s); i++) {
        if (poll_set(s) > 0) {
            found = 1;
            break;
        }
        caa_cpu_relax();
        if (i % GFR_SPIN_CHECK_POLLS)
            continue;
        now = gfr_now_ns();
        if (now - yielded >= GFR_SPIN_YIELD_NS) {
            sched_yield();
            yielded = now;
        }
        if (now >= until_ns && !set_expecting(s, now))
            break;
        /* A request sent meanwhile whose reply cannot come yet: sleep
         * until it may (spin_or_sleep sets the timer). */
        if (decide(s, now, 0, &until, &wake) == GFR_SLEEP_UNTIL_DUE)
            break;
    }
    POLLER_ADD(s->m[0], st_spin_ns, gfr_now_ns() - start);
    return found;
}

/*
 * The spin-or-sleep decision (gfr_spin_policy.h) after an empty poll:
 * spins for what it allows, or for nothing, and then sleeps.  window_ns:
 * the adaptive window (0: none).  1 when the spin found a completion, 0
 * after the sleep.  Caller holds the poll_lock of every poller of s.
 */
static int
spin_or_sleep(struct gfr_rdma_reap_set *s, uint64_t window_ns)
{
    uint64_t until, wake;

    decide(s, gfr_now_ns(), window_ns, &until, &wake);
    if (until) {
        if (spin(s, until))
            return 1;
        /* What ended the spin: nothing due any more, or a reply not due
         * yet (then wake is when it may be). */
        decide(s, gfr_now_ns(), 0, &until, &wake);
    }
    if (!set_changed(s))
        wait_for_event(s, wake);
    return 0;
}

/*
 * The relay: polls the CQs of t's members while t runs handlers, then
 * lets go.  It does not start when t no longer runs handlers; it polls
 * the members whose poll_lock it gets (t let go of all of them); what it
 * reaps goes to the pool (relaying), so no handler runs on it.  t's member
 * list does not change while t runs handlers; it is copied under
 * members_lock all the same.  A pool worker thread.
 */
static void
relay_run(struct gfr_pool_job *job, void *cb_arg, int status)
{
    struct gfr_rdma_poll_thread *t = caa_container_of(job, struct gfr_rdma_poll_thread,
                                                      relay_job);
    struct gfr_rdma_reap_set mine = {.n = 0};
    struct gfr_rdma_reap_set listed;

    (void)cb_arg;
    if (status == 0 && uatomic_read(&t->handling)) {
        pthread_mutex_lock(&t->members_lock);
        listed = t->cur;
        pthread_mutex_unlock(&t->members_lock);
        for (unsigned i = 0; i < listed.n; i++)
            if (pthread_mutex_trylock(&listed.m[i]->poll_lock) == 0)
                mine.m[mine.n++] = listed.m[i];
    }
    if (mine.n) {
        urcu_memb_register_thread(); /* finds connections by QP number */
        for (unsigned i = 0; i < mine.n; i++)
            mine.m[i]->relaying = 1;
        while (uatomic_read(&t->handling) && !set_changed(&mine))
            if (poll_set(&mine) <= 0 && uatomic_read(&t->handling))
                spin_or_sleep(&mine, 0);
        for (unsigned i = 0; i < mine.n; i++) {
            mine.m[i]->relaying = 0;
            pthread_mutex_unlock(&mine.m[i]->poll_lock);
        }
        urcu_memb_unregister_thread();
    }
    uatomic_set(&t->relay_asked, 0);
}

/*
 * Takes up t's member list when it changed or a member broke: a broken
 * CQ is polled no more, and its poll_lock is let go for the CM thread,
 * which completes its connections' work requests (rdma-cq.c); a member
 * that leaves (stopping) or left is let go of, one that joined taken.  Then publishes the
 * list's generation (seen_gen) for gfr_rdma_poller_stop.  The thread.
 */
static void
refresh(struct gfr_rdma_poll_thread *t)
{
    struct gfr_rdma_reap_set *s = &t->cur;
    struct gfr_rdma_poller *want[GFR_POLL_THREAD_MAX];
    unsigned long gen;
    unsigned n = 0;

    if (!set_changed(s))
        return;
    pthread_mutex_lock(&t->members_lock);
    gen = t->members_gen;
    for (unsigned i = 0; i < t->nmembers; i++)
        if (!uatomic_read(&t->members[i]->broken) && !uatomic_read(&t->members[i]->stopping))
            want[n++] = t->members[i];
    pthread_mutex_unlock(&t->members_lock);
    for (unsigned i = 0; i < s->n; i++) {
        unsigned j = 0;

        while (j < n && want[j] != s->m[i])
            j++;
        if (j == n)
            pthread_mutex_unlock(&s->m[i]->poll_lock);
    }
    for (unsigned j = 0; j < n; j++) {
        unsigned i = 0;

        while (i < s->n && s->m[i] != want[j])
            i++;
        if (i == s->n)
            pthread_mutex_lock(&want[j]->poll_lock);
    }
    pthread_mutex_lock(&t->members_lock);
    memcpy(s->m, want, n * sizeof(want[0]));
    s->n = n;
    s->gen = gen;
    pthread_mutex_unlock(&t->members_lock);
    uatomic_set(&t->seen_gen, gen);
}

/* A thread with nothing to poll (every member broke) sleeps until its
 * members change or it is to stop.  The thread. */
static void
wait_for_members(struct gfr_rdma_poll_thread *t)
{
    struct pollfd pfd = {.fd = t->kick_fd, .events = POLLIN};
    uint64_t count;

    if (poll(&pfd, 1, -1) > 0 && read(t->kick_fd, &count, sizeof(count)) < 0 &&
        errno != EAGAIN)
        gfr_rdma_log("poller thread %u: reading its eventfd: %s", t->index, strerror(errno));
}

/*
 * A poller thread.  In adaptive mode the poll before sleeping follows
 * the gap between completions (gfr_spin_window.h) and goes on while a
 * reply may come (gfr_spin_policy.h): in the VM a GlusterFS RPC's
 * messages come 1-3 ms apart, and every sleep there costs a wake-up of
 * 0.5-1 ms (docs/performance.md).  The window is the thread's, shown on
 * each member.
 */
static void *
poller_main(void *arg)
{
    struct gfr_rdma_poll_thread *t = arg;
    const struct gfr_rdma_opts *opts = &t->engine->opts;
    struct gfr_rdma_reap_set *s = &t->cur;
    struct gfr_spin_window window;
    uint64_t start;

    gfr_spin_window_init(&window, (uint64_t)opts->spin_us * 1000,
                         (uint64_t)opts->spin_max_us * 1000);
    urcu_memb_register_thread(); /* finds connections by QP number */
    gfr_pool_set_block_hook(poller_blocking, t);
    while (!uatomic_read(&t->stopping)) {
        refresh(t);
        if (!s->n) {
            wait_for_members(t);
            continue;
        }
        for (unsigned i = 0; i < s->n; i++)
            CMM_STORE_SHARED(s->m[i]->st_window_ns, window.cur_ns);
        if (poll_set(s) > 0)
            continue;
        switch (opts->poll_mode) {
        case GFR_POLL_BUSY:
            caa_cpu_relax();
            break;
        case GFR_POLL_ADAPTIVE:
            start = gfr_now_ns();
            if (spin_or_sleep(s, window.cur_ns))
                break;
            gfr_spin_window_slept(&window, gfr_now_ns() - start);
            break;
        case GFR_POLL_EVENT:
            if (!set_changed(s))
                wait_for_event(s, 0);
            break;
        }
    }
    for (unsigned i = 0; i < s->n; i++)
        pthread_mutex_unlock(&s->m[i]->poll_lock);
    pthread_mutex_lock(&t->members_lock);
    s->n = 0;
    pthread_mutex_unlock(&t->members_lock);
    gfr_pool_set_block_hook(NULL, NULL);
    urcu_memb_unregister_thread();
    return NULL;
}


/*
 * A request of one of p's client connections waits for its reply, which
 * is expected between early_ns and bound_ns from now: the poller polls
 * then rather than sleep.  A sleeping poller is woken in time to be
 * polling when the reply may come: its timer set for then, or kicked at
 * once when that is now (so the wake-up overlaps the round trip instead
 * of following the reply).  awaiting is raised before asleep is read,
 * with a full barrier between (see wait_for_event).  Any thread, no lock
 * needed.
 */
void
gfr_rdma_poller_expect(struct gfr_rdma_poller *p, uint64_t early_ns, uint64_t bound_ns)
{
    uint64_t now = gfr_now_ns();
    uint64_t from = now + early_ns, lead;

    /* The first awaited request sets the earliest arrival, later ones
     * only bring it forward. */
    if (uatomic_add_return(&p->awaiting, 1) == 1)
        uatomic_set(&p->expect_from_ns, from);
    else
        gfr_uatomic_min_u64(&p->expect_from_ns, from);
    gfr_uatomic_max_u64(&p->expect_until_ns, now + bound_ns);
    cmm_smp_mb();
    if (!uatomic_read(&p->asleep))
        return;
    from = uatomic_read(&p->expect_from_ns);
    lead = uatomic_read(&p->lead_ns);
    if (from > now + lead) {
        arm_timer_by(p, from - lead);
        return;
    }
    if (uatomic_xchg(&p->asleep, 0)) {
        uatomic_inc(&p->st_kicks);
        kick(p);
    }
}

/* n requests gfr_rdma_poller_expect counted got their replies, or never
 * will (their connection ended).  Any thread. */
void
gfr_rdma_poller_replied(struct gfr_rdma_poller *p, unsigned long n)
{
    uatomic_sub(&p->awaiting, n);
}

/* dispatch=direct: job runs on this thread once the current batch of
 * completions is handled.  The poll_lock holder, never the relay (whose
 * deliveries go to the pool). */
void
gfr_rdma_poller_defer(struct gfr_rdma_poller *p, struct gfr_pool_job *job)
{
    p->direct[p->ndirect++] = job;
}

/*
 * The CM thread's look at every poller, every tick while handlers run: a
 * handler run that began at least GFR_RELAY_AFTER_MS ago and was already
 * under way at the last look gets a relay.  Returns whether any poller
 * ran handlers since the last look or runs them now (the CM thread then
 * keeps ticking every GFR_RELAY_AFTER_MS).  Takes engine->lock.
 */
int
gfr_rdma_pollers_watch(struct gfr_rdma *engine, uint64_t now_ns)
{
    struct gfr_rdma_dev *dev;
    int active = 0;

    pthread_mutex_lock(&engine->lock);
    cds_list_for_each_entry(dev, &engine->devices, link) {
        for (unsigned i = 0; i < dev->npollers; i++) {
            struct gfr_rdma_poller *p = &dev->pollers[i];
            int handling = uatomic_read(&p->handling);
            unsigned long seq;
            uint64_t since;

            cmm_smp_rmb();
            seq = uatomic_read(&p->handling_seq);
            since = uatomic_read(&p->handling_since_ns);
            if (seq != p->watch_seq || handling)
                active = 1;
            if (handling && seq == p->watch_seq && now_ns > since &&
                now_ns - since >= GFR_RELAY_AFTER_MS * 1000000ull)
                relay_ask(p);
            p->watch_seq = seq;
        }
    }
    pthread_mutex_unlock(&engine->lock);
    return active;
}

/*
 * Has p hand on n completions as if its CQ had given them, on its next
 * poll: for work requests the provider will never complete (siw leaves
 * one posted to a QP already in error in its ring), so that they go the
 * one way every completion goes, serialized with the CQ's own.  The
 * poller is kicked, so that one asleep polls at once.  Any thread (the CM
 * thread).  0, or -ENOMEM with none injected.
 */
int
gfr_rdma_poller_inject(struct gfr_rdma_poller *p, const struct ibv_wc *wcs, unsigned n)
{
    struct injected_wc **in = calloc(n ? n : 1, sizeof(*in));

    if (!in)
        return -ENOMEM;
    for (unsigned i = 0; i < n; i++) {
        in[i] = malloc(sizeof(*in[i]));
        if (!in[i]) {
            while (i--)
                free(in[i]);
            free(in);
            return -ENOMEM;
        }
        cds_wfcq_node_init(&in[i]->node);
        in[i]->wc = wcs[i];
    }
    for (unsigned i = 0; i < n; i++)
        cds_wfcq_enqueue(&p->injected_head, &p->injected_tail, &in[i]->node);
    free(in);
    kick(p);
    return 0;
}

/*
 * A pass over p's CQ: every completion in the CQ now is handed on before
 * gfr_rdma_poller_passed(p, the returned value) is true.  A poll that
 * drains the CQ (returns fewer completions than it asked for) counts
 * (drained_polls); the second one after this began after it, so what was
 * in the CQ now has been taken, even on a CQ that is never found empty.
 * The poller is kicked, so that one asleep polls at once.  Any thread
 * (the CM thread, before destroying a QP whose completions must not be
 * lost).
 */
unsigned long
gfr_rdma_poller_pass_begin(struct gfr_rdma_poller *p)
{
    unsigned long from = CMM_LOAD_SHARED(p->drained_polls);

    cmm_smp_mb();
    kick(p);
    return from;
}

int
gfr_rdma_poller_passed(struct gfr_rdma_poller *p, unsigned long from)
{
    /* A broken CQ gives nothing more: its connections' work requests were
     * completed as flushed (rdma-cq.c). */
    return CMM_LOAD_SHARED(p->drained_polls) - from >= 2 || uatomic_read(&p->abandoned);
}


/* Stops t's thread and frees t.  The thread sleeps without a timeout, so
 * it is kicked until it has gone.  t has no member left. */
static void
thread_free(struct gfr_rdma_poll_thread *t)
{
    struct timespec deadline;

    uatomic_set(&t->stopping, 1);
    do {
        kick_thread(t);
        clock_gettime(CLOCK_REALTIME, &deadline);
        deadline.tv_nsec += 10000000;
        if (deadline.tv_nsec >= 1000000000) {
            deadline.tv_sec++;
            deadline.tv_nsec -= 1000000000;
        }
    } while (pthread_timedjoin_np(t->thread, NULL, &deadline) == ETIMEDOUT);
    /* A relay still queued finds t running no handlers, and ends. */
    while (uatomic_read(&t->relay_asked))
        usleep(1000);
    close(t->kick_fd);
    pthread_mutex_destroy(&t->members_lock);
    free(t);
}

/* A new poller thread for poller index `index`, polling p alone so far
 * (shared: the engine's for that index, under engine->threads_lock).
 * name names it, with the index.  0, or -errno with nothing left. */
static int
thread_start(struct gfr_rdma *engine, struct gfr_rdma_poller *p, int shared, const char *name,
             struct gfr_rdma_poll_thread **tp)
{
    struct gfr_rdma_poll_thread *t = calloc(1, sizeof(*t));
    char thread_name[16];
    int err;

    if (!t)
        return -ENOMEM;
    t->engine = engine;
    t->index = p->index;
    t->shared = shared;
    t->cur.thread = t;
    t->kick_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (t->kick_fd < 0) {
        err = -errno;
        gfr_rdma_log("%s: cannot create an eventfd for poller thread %u: %s", name, p->index,
                     strerror(-err));
        free(t);
        return err;
    }
    pthread_mutex_init(&t->members_lock, NULL);
    t->members[t->nmembers++] = p;
    t->members_gen = 1;
    *tp = t; /* before the thread may reap, and relay_ask look it up */
    err = -pthread_create(&t->thread, NULL, poller_main, t);
    if (err) {
        gfr_rdma_log("%s: cannot start poller thread %u: %s", name, p->index, strerror(-err));
        *tp = NULL;
        close(t->kick_fd);
        pthread_mutex_destroy(&t->members_lock);
        free(t);
        return err;
    }
    snprintf(thread_name, sizeof(thread_name), "gfr-p%u/%.8s", p->index, name);
    pthread_setname_np(t->thread, thread_name);
    return 0;
}

/*
 * Has p polled by a thread: with rails=auto the engine's thread for its
 * index (made by the first device, joined by the others, while it has
 * room), else a thread of its own.  Takes engine->threads_lock (a leaf:
 * the caller may hold engine->lock).  0, or -errno.
 */
static int
thread_join(struct gfr_rdma_poller *p, const char *name)
{
    struct gfr_rdma *engine = p->dev->engine;
    struct gfr_rdma_poll_thread *t;
    int err = 0;

    if (gfr_rdma_opts_rails(&engine->opts) == GFR_RAILS_OFF)
        return thread_start(engine, p, 0, name, &p->thread);
    pthread_mutex_lock(&engine->threads_lock);
    t = engine->shared_threads[p->index];
    if (!t) {
        err = thread_start(engine, p, 1, "rails", &p->thread);
        if (!err)
            engine->shared_threads[p->index] = p->thread;
    } else if (t->nmembers < GFR_POLL_THREAD_MAX) {
        p->thread = t;
        pthread_mutex_lock(&t->members_lock);
        t->members[t->nmembers++] = p;
        uatomic_inc(&t->members_gen);
        pthread_mutex_unlock(&t->members_lock);
        kick_thread(t);
    } else {
        err = thread_start(engine, p, 0, name, &p->thread);
    }
    pthread_mutex_unlock(&engine->threads_lock);
    return err;
}

/*
 * p leaves its thread: once this returns the thread holds p's poll_lock
 * no more and never polls p again.  The last member stops the thread and
 * frees it.  The thread is kicked until it has taken the change up
 * (seen_gen); no lock is held meanwhile, since its handlers may take
 * engine->lock.  Takes engine->threads_lock.
 */
static void
thread_leave(struct gfr_rdma_poller *p)
{
    struct gfr_rdma *engine = p->dev->engine;
    struct gfr_rdma_poll_thread *t = p->thread;
    unsigned long gen;
    int last;

    pthread_mutex_lock(&engine->threads_lock);
    pthread_mutex_lock(&t->members_lock);
    for (unsigned i = 0; i < t->nmembers; i++)
        if (t->members[i] == p) {
            t->members[i] = t->members[--t->nmembers];
            break;
        }
    gen = uatomic_add_return(&t->members_gen, 1);
    last = t->nmembers == 0;
    pthread_mutex_unlock(&t->members_lock);
    if (last && t->shared)
        engine->shared_threads[t->index] = NULL;
    pthread_mutex_unlock(&engine->threads_lock);
    if (last)
        thread_free(t);
    else
        while ((long)(uatomic_read(&t->seen_gen) - gen) < 0) {
            kick_thread(t);
            usleep(1000);
        }
    p->thread = NULL; /* the thread looks it up no more (relay_ask) */
}

/* Takes p off its thread (after which neither the thread nor a relay
 * polls it), and frees its CQ, channel and pull buffers.  Engine teardown, device removal, or a
 * device that could not be made. */
void
gfr_rdma_poller_stop(struct gfr_rdma_poller *p)
{
    if (p->started) {
        uatomic_set(&p->stopping, 1); /* a relay polling it lets go */
        thread_leave(p);
    }
    if (p->dev) { /* its queues were initialised */
        struct cds_wfcq_node *node;

        gfr_rdma_pbuf_drain(p);
        while ((node = __cds_wfcq_dequeue_blocking(&p->injected_head, &p->injected_tail)))
            free(caa_container_of(node, struct injected_wc, node));
    }
    if (p->cq)
        ibv_destroy_cq(p->cq);
    if (p->channel)
        ibv_destroy_comp_channel(p->channel);
    if (p->dev && p->kick_fd >= 0)
        close(p->kick_fd);
    if (p->dev && p->timer_fd >= 0)
        close(p->timer_fd);
    if (p->dev)
        pthread_mutex_destroy(&p->poll_lock);
}

int
gfr_rdma_poller_start(struct gfr_rdma_dev *dev, struct gfr_rdma_poller *p, int cq_size,
                      const char *name)
{
    int vector;
    int err;

    p->dev = dev;
    p->cq_size = cq_size;
    p->timer_fd = -1;
    pthread_mutex_init(&p->poll_lock, NULL);
    __cds_wfcq_init(&p->pbuf_returns_head, &p->pbuf_returns_tail);
    __cds_wfcq_init(&p->injected_head, &p->injected_tail);
    gfr_spin_policy_init(&p->spin_policy);
    p->kick_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (p->kick_fd < 0) {
        err = -errno;
        gfr_rdma_log("%s: cannot create an eventfd for poller %u: %s", name, p->index,
                     strerror(-err));
        return err;
    }
    p->timer_fd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
    if (p->timer_fd < 0) {
        err = -errno;
        gfr_rdma_log("%s: cannot create a timer for poller %u: %s", name, p->index,
                     strerror(-err));
        return err;
    }
    /* The device's pollers take its completion vectors in turn, so that
     * their interrupts spread over the cores the vectors are bound to. */
    vector = dev->verbs->num_comp_vectors > 0 ? (int)(p->index % dev->verbs->num_comp_vectors)
                                              : 0;
    p->channel = ibv_create_comp_channel(dev->verbs);
    p->cq = p->channel ? ibv_create_cq(dev->verbs, cq_size, p, p->channel, vector) : NULL;
    if (!p->cq) {
        err = -(errno ? errno : ENOMEM);
        gfr_rdma_log("%s: cannot create completion channel or a CQ of %d entries "
                     "for poller %u: %s", name, cq_size, p->index, strerror(-err));
        return err;
    }
    p->started_ns = gfr_now_ns();
    err = thread_join(p, name);
    if (err)
        return err;
    p->started = 1;
    return 0;
}
