/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Round-trip estimate (gfr_rtt.h): RFC 6298's gains, 1/8 for the mean and
 * 1/4 for the deviation.  No locking: the caller owns the estimate.
 */
#include "gfr_rtt.h"

void
gfr_rtt_init(struct gfr_rtt *r)
{
    r->srtt_ns = 0;
    r->rttvar_ns = 0;
}

void
gfr_rtt_sample(struct gfr_rtt *r, uint64_t rtt_ns)
{
    uint64_t dev;

    if (rtt_ns == 0)
        rtt_ns = 1; /* srtt 0 means "no sample" */
    if (r->srtt_ns == 0) {
        r->srtt_ns = rtt_ns;
        r->rttvar_ns = rtt_ns / 2;
        return;
    }
    dev = rtt_ns > r->srtt_ns ? rtt_ns - r->srtt_ns : r->srtt_ns - rtt_ns;
    r->rttvar_ns = r->rttvar_ns - r->rttvar_ns / 4 + dev / 4;
    r->srtt_ns = r->srtt_ns - r->srtt_ns / 8 + rtt_ns / 8;
    if (r->srtt_ns == 0)
        r->srtt_ns = 1;
}

uint64_t
gfr_rtt_bound(const struct gfr_rtt *r, uint64_t min_ns, uint64_t max_ns)
{
    uint64_t b;

    if (r->srtt_ns == 0)
        return max_ns;
    b = r->srtt_ns + 4 * r->rttvar_ns;
    if (b < min_ns)
        b = min_ns;
    return b < max_ns ? b : max_ns;
}

uint64_t
gfr_rtt_early(const struct gfr_rtt *r)
{
    return r->srtt_ns > 2 * r->rttvar_ns ? r->srtt_ns - 2 * r->rttvar_ns : 0;
}
