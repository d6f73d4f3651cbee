/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Spin or sleep (gfr_spin_policy.h).  Pure arithmetic, no locking: the
 * polling thread owns its policy.
 */
#include "gfr_spin_policy.h"

void
gfr_spin_policy_init(struct gfr_spin_policy *sp)
{
    sp->late_ns = 0;
}

void
gfr_spin_policy_woke(struct gfr_spin_policy *sp, uint64_t wake_ns, uint64_t now_ns)
{
    uint64_t late = now_ns > wake_ns ? now_ns - wake_ns : 0;

    /* Gain 1/4: a few wake-ups follow a change of load. */
    sp->late_ns = sp->late_ns - sp->late_ns / 4 + late / 4;
}

uint64_t
gfr_spin_policy_lead(const struct gfr_spin_policy *sp)
{
    return 2 * sp->late_ns;
}

enum gfr_spin_why
gfr_spin_policy_decide(const struct gfr_spin_policy *sp, uint64_t now_ns, uint64_t window_ns,
                       uint64_t reply_from_ns, uint64_t reply_until_ns, uint64_t *until_ns,
                       uint64_t *wake_ns)
{
    uint64_t window_until = window_ns ? now_ns + window_ns : 0;
    uint64_t lead = gfr_spin_policy_lead(sp);
    int reply_due = reply_until_ns > now_ns;

    *until_ns = 0;
    *wake_ns = 0;
    /* A reply is more precise than the window: wait for it, not for the
     * window, when it cannot come yet. */
    if (reply_due && reply_from_ns > now_ns + lead) {
        *wake_ns = reply_from_ns - lead;
        return GFR_SLEEP_UNTIL_DUE;
    }
    if (!window_until && !reply_due)
        return GFR_SLEEP_NOTHING_DUE;
    if (reply_due && reply_until_ns > window_until) {
        *until_ns = reply_until_ns;
        return GFR_SPIN_REPLY;
    }
    *until_ns = window_until;
    return GFR_SPIN_WINDOW;
}
