/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Spin or sleep: the rule a poller that found its CQ empty follows
 * (docs/engine.md, "Spin or sleep").  It polls on only while something is
 * due soon:
 *  - a completion within the adaptive window (gfr_spin_window.h, which
 *    keeps the spin to what recently paid off: the window shrinks when the
 *    waits outgrow it);
 *  - the reply to a request, between its earliest and its latest expected
 *    arrival (gfr_rtt.h).
 * A reply that cannot come yet is slept for, with a timer set to end the
 * sleep shortly before its earliest arrival: by the lead, twice how late
 * such timers have fired, so that the poller is polling when the reply
 * comes without having spun through the round trip.  Where timers fire
 * late beside the round trip (0.4-2.9 ms in the TCG VM, against 1 ms round
 * trips) the lead covers the whole round trip and the poller spins as it
 * would without the rule.
 *
 * Pure arithmetic, no locking: one policy per polling thread, which owns
 * it.
 */
#ifndef GFR_SPIN_POLICY_H
#define GFR_SPIN_POLICY_H

#include <stdint.h>

/* What a poller does after an empty poll, and why. */
enum gfr_spin_why {
    GFR_SPIN_WINDOW,       /* spins: a completion may come within the window */
    GFR_SPIN_REPLY,        /* spins: a reply may come now */
    GFR_SLEEP_NOTHING_DUE, /* sleeps until an event: neither */
    GFR_SLEEP_UNTIL_DUE,   /* sleeps until shortly before a reply may come */
};

struct gfr_spin_policy {
    uint64_t late_ns; /* how late timed wake-ups came (a moving average) */
};

void gfr_spin_policy_init(struct gfr_spin_policy *sp);

/* A timed wake-up set for wake_ns came at now_ns. */
void gfr_spin_policy_woke(struct gfr_spin_policy *sp, uint64_t wake_ns, uint64_t now_ns);

/* How long before a reply's earliest arrival a timed sleep ends: twice
 * the average lateness of timed wake-ups, for their jitter. */
uint64_t gfr_spin_policy_lead(const struct gfr_spin_policy *sp);

/*
 * The decision at now_ns.  window_ns: how long the adaptive window polls
 * (0: not at all); reply_from_ns and reply_until_ns: the earliest and the
 * latest a reply is expected (reply_until_ns 0 or past: none).  When it
 * spins, *until_ns is when the spin ends (the later of the window's end
 * and reply_until_ns), else 0; when it sleeps until a reply may come,
 * *wake_ns is when to wake, else 0.
 */
enum gfr_spin_why gfr_spin_policy_decide(const struct gfr_spin_policy *sp, uint64_t now_ns,
                                         uint64_t window_ns, uint64_t reply_from_ns,
                                         uint64_t reply_until_ns, uint64_t *until_ns,
                                         uint64_t *wake_ns);

#endif /* GFR_SPIN_POLICY_H */
