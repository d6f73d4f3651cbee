/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * A latency histogram in nanoseconds: log2 buckets, each split into
 * GFR_HIST_SUB linear sub-buckets, so a percentile read from it is within
 * 1/GFR_HIST_SUB of an octave (12.5 %) of the true value.  Values below
 * 2^(GFR_HIST_OCTAVES + 2) ns (73 minutes) have buckets of their own;
 * longer ones count in the last.
 *
 * Concurrency: gfr_hist_add may run on any number of threads at once and
 * concurrently with gfr_hist_snapshot.  Each counter is one relaxed atomic
 * add (uatomic_add: a locked add on x86, no fence), so recording never
 * waits and never loses a count; a snapshot reads the counters one by one
 * with relaxed loads, so it may miss the values being added while it
 * reads, and its count is the sum of its buckets (recomputed, not read),
 * whatever it raced with.
 */
#ifndef GFR_HIST_H
#define GFR_HIST_H

#include <stdint.h>

#define GFR_HIST_SUB_BITS 3
#define GFR_HIST_SUB (1u << GFR_HIST_SUB_BITS)
#define GFR_HIST_OCTAVES 40
#define GFR_HIST_BUCKETS (GFR_HIST_OCTAVES * GFR_HIST_SUB)

struct gfr_hist {
    uint64_t count;
    uint64_t sum_ns;
    uint64_t max_ns;
    uint64_t bucket[GFR_HIST_BUCKETS];
};

/* The bucket ns falls into, and the lowest value of bucket b.  Pure. */
unsigned gfr_hist_bucket(uint64_t ns);
uint64_t gfr_hist_bucket_low(unsigned b);

/* Records one value.  Any thread; see above. */
void gfr_hist_add(struct gfr_hist *h, uint64_t ns);

/* Copies h into out (a private copy, then read without atomics).  Any
 * thread. */
void gfr_hist_snapshot(const struct gfr_hist *h, struct gfr_hist *out);

/* Adds snapshot from into snapshot to (merging engines or threads). */
void gfr_hist_merge(struct gfr_hist *to, const struct gfr_hist *from);

/* The value below which a fraction q (0..1) of a snapshot's values lie,
 * interpolated within its bucket and never above the largest value seen;
 * 0 for an empty histogram.  Pure. */
uint64_t gfr_hist_percentile(const struct gfr_hist *snap, double q);

/* The mean of a snapshot's values, 0 when empty.  Pure. */
uint64_t gfr_hist_mean(const struct gfr_hist *snap);

#endif /* GFR_HIST_H */
