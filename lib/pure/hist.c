/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Latency histograms (gfr_hist.h).  The bucket of a value v >= GFR_HIST_SUB
 * is its octave (the position of its top bit) times GFR_HIST_SUB plus the
 * GFR_HIST_SUB_BITS bits below the top one; smaller values index the
 * first octave directly, so buckets are exact there.
 */
#include <string.h>

#include <urcu/system.h>
#include <urcu/uatomic.h>

#include "gfr_atomic.h"
#include "gfr_hist.h"

unsigned
gfr_hist_bucket(uint64_t ns)
{
    unsigned top, b;

    if (ns < GFR_HIST_SUB)
        return (unsigned)ns;
    top = 63 - (unsigned)__builtin_clzll(ns);
    b = (top - GFR_HIST_SUB_BITS + 1) * GFR_HIST_SUB +
        (unsigned)((ns >> (top - GFR_HIST_SUB_BITS)) & (GFR_HIST_SUB - 1));
    return b < GFR_HIST_BUCKETS ? b : GFR_HIST_BUCKETS - 1;
}

uint64_t
gfr_hist_bucket_low(unsigned b)
{
    unsigned octave = b / GFR_HIST_SUB, sub = b % GFR_HIST_SUB;

    if (octave == 0)
        return sub;
    return (uint64_t)(GFR_HIST_SUB + sub) << (octave - 1);
}

void
gfr_hist_add(struct gfr_hist *h, uint64_t ns)
{
    uatomic_add(&h->bucket[gfr_hist_bucket(ns)], 1);
    uatomic_add(&h->sum_ns, ns);
    gfr_uatomic_max_u64(&h->max_ns, ns);
}

void
gfr_hist_snapshot(const struct gfr_hist *h, struct gfr_hist *out)
{
    uint64_t count = 0;

    for (unsigned b = 0; b < GFR_HIST_BUCKETS; b++) {
        out->bucket[b] = CMM_LOAD_SHARED(h->bucket[b]);
        count += out->bucket[b];
    }
    out->count = count;
    out->sum_ns = CMM_LOAD_SHARED(h->sum_ns);
    out->max_ns = CMM_LOAD_SHARED(h->max_ns);
}

void
gfr_hist_merge(struct gfr_hist *to, const struct gfr_hist *from)
{
    for (unsigned b = 0; b < GFR_HIST_BUCKETS; b++)
        to->bucket[b] += from->bucket[b];
    to->count += from->count;
    to->sum_ns += from->sum_ns;
    if (from->max_ns > to->max_ns)
        to->max_ns = from->max_ns;
}

uint64_t
gfr_hist_percentile(const struct gfr_hist *snap, double q)
{
    double rank;
    uint64_t seen = 0;

    if (!snap->count)
        return 0;
    if (q < 0)
        q = 0;
    if (q > 1)
        q = 1;
    rank = q * (double)snap->count;
    for (unsigned b = 0; b < GFR_HIST_BUCKETS; b++) {
        uint64_t n = snap->bucket[b];
        uint64_t low, high, v;

        if (!n || (double)(seen + n) < rank) {
            seen += n;
            continue;
        }
        low = gfr_hist_bucket_low(b);
        high = b + 1 < GFR_HIST_BUCKETS ? gfr_hist_bucket_low(b + 1) : snap->max_ns + 1;
        v = low + (uint64_t)((double)(high - low) * ((rank - (double)seen) / (double)n));
        return v < snap->max_ns ? v : snap->max_ns;
    }
    return snap->max_ns;
}

uint64_t
gfr_hist_mean(const struct gfr_hist *snap)
{
    return snap->count ? snap->sum_ns / snap->count : 0;
}
