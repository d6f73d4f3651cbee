/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The adaptive polling window (gfr_spin_window.h).  Pure arithmetic, no
 * locking: the caller owns the window.
 */
#include "gfr_spin_window.h"

void
gfr_spin_window_init(struct gfr_spin_window *w, uint64_t min_ns, uint64_t max_ns)
{
    w->min_ns = min_ns;
    w->max_ns = max_ns;
    w->cur_ns = min_ns;
}

void
gfr_spin_window_slept(struct gfr_spin_window *w, uint64_t waited_ns)
{
    uint64_t next;

    if (w->max_ns <= w->min_ns)
        return;
    if (waited_ns > w->max_ns) {
        next = w->cur_ns / 2;
        w->cur_ns = next > w->min_ns ? next : w->min_ns;
        return;
    }
    /* A quarter more than the wait seen, for its jitter; at least double,
     * so a window that starts at 0 or tiny gets there in a few steps. */
    next = waited_ns + waited_ns / 4;
    if (next < 2 * w->cur_ns)
        next = 2 * w->cur_ns;
    w->cur_ns = next < w->max_ns ? next : w->max_ns;
}
