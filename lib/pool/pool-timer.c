/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Per-thread timers of gfr_pool.  Each worker keeps its armed timers in a
 * list sorted by deadline; only that worker's thread touches the list, so
 * nothing here locks.  Lists are short (a worker's own timers): insertion is
 * linear.  The public gfr_pool_timer_arm and _cancel live in pool-worker.c,
 * which knows the calling thread's worker and passes it down.
 */
#include <errno.h>
#include <time.h>

#include <urcu/uatomic.h>

#include "pool-internal.h"

uint64_t
gfr_pool_now_ms(void)
{
    return gfr_now_ns() / 1000000u;
}

int
gfr_pool_timers_add(struct gfr_pool_worker *worker, struct gfr_pool_timer *timer,
                    unsigned delay_ms, gfr_pool_timer_fn fn, void *cb_arg)
{
    struct gfr_pool_timer *pos;

    if (!timer || !fn)
        return -EINVAL;
    if (!worker)
        return -EPERM;
    if (timer->owner)
        return -EBUSY;
    if (CMM_LOAD_SHARED(worker->pool->shutdown))
        return -ESHUTDOWN;
    timer->fn = fn;
    timer->cb_arg = cb_arg;
    timer->owner = worker;
    timer->deadline_ms = gfr_pool_now_ms() + delay_ms;
    /* After every timer with the same deadline: equal deadlines fire in
     * the order they were armed. */
    cds_list_for_each_entry(pos, &worker->timers, link) {
        if (pos->deadline_ms > timer->deadline_ms) {
            cds_list_add_tail(&timer->link, &pos->link);
            return 0;
        }
    }
    cds_list_add_tail(&timer->link, &worker->timers);
    return 0;
}

int
gfr_pool_timers_remove(struct gfr_pool_worker *worker, struct gfr_pool_timer *timer)
{
    if (!timer)
        return -EINVAL;
    if (!timer->owner)
        return -ENOENT;
    if (timer->owner != worker)
        return -EPERM;
    cds_list_del(&timer->link);
    timer->owner = NULL;
    return 0;
}

int64_t
gfr_pool_timers_next_ms(struct gfr_pool_worker *worker)
{
    struct gfr_pool_timer *first;
    uint64_t now;

    if (cds_list_empty(&worker->timers))
        return -1;
    first = cds_list_first_entry(&worker->timers, struct gfr_pool_timer, link);
    now = gfr_pool_now_ms();
    return first->deadline_ms > now ? (int64_t)(first->deadline_ms - now) : 0;
}

/* Fires every due timer; a callback may arm or cancel timers. */
void
gfr_pool_timers_fire(struct gfr_pool_worker *worker)
{
    uint64_t now = gfr_pool_now_ms();

    while (!cds_list_empty(&worker->timers)) {
        struct gfr_pool_timer *timer = cds_list_first_entry(
            &worker->timers, struct gfr_pool_timer, link);

        if (timer->deadline_ms > now)
            return;
        cds_list_del(&timer->link);
        timer->owner = NULL;
        CMM_STORE_SHARED(worker->counts.timers_fired,
                         worker->counts.timers_fired + 1);
        timer->fn(timer, timer->cb_arg, 0);
    }
}

void
gfr_pool_timers_cancel_all(struct gfr_pool_worker *worker)
{
    while (!cds_list_empty(&worker->timers)) {
        struct gfr_pool_timer *timer = cds_list_first_entry(
            &worker->timers, struct gfr_pool_timer, link);

        cds_list_del(&timer->link);
        timer->owner = NULL;
        timer->fn(timer, timer->cb_arg, -ECANCELED);
    }
}
