/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * An adaptive polling window: how long a thread that found nothing to do
 * polls before it sleeps.  The rule is KVM's halt polling: when the thread
 * slept and was woken less than `max` after it began polling, a longer
 * window would have caught the event without the sleep and its wake-up,
 * so the window grows to cover that wait; when it slept longer than `max`,
 * polling bought nothing and the window halves, down to `min`.  A window
 * that caught its event is kept.  So the poll follows the gap between
 * messages while they come in reach, and falls back to `min` when they
 * stop (docs/engine.md, "Adaptive polling").
 *
 * Not thread-safe: one window per polling thread.
 */
#ifndef GFR_SPIN_WINDOW_H
#define GFR_SPIN_WINDOW_H

#include <stdint.h>

struct gfr_spin_window {
    uint64_t min_ns; /* the window never shrinks below this */
    uint64_t max_ns; /* nor grows above this; <= min_ns: fixed at min_ns */
    uint64_t cur_ns; /* poll this long next time */
};

/* Starts at min_ns. */
void gfr_spin_window_init(struct gfr_spin_window *w, uint64_t min_ns,
                          uint64_t max_ns);

/* After a poll of cur_ns found nothing and the thread slept: waited_ns is
 * the time from the start of that poll to the wake-up. */
void gfr_spin_window_slept(struct gfr_spin_window *w, uint64_t waited_ns);

#endif /* GFR_SPIN_WINDOW_H */
