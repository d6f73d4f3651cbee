/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * A connection's round-trip estimate, by the rule TCP uses for its
 * retransmission timer (RFC 6298): a smoothed mean and a smoothed mean
 * deviation, and a bound of mean + 4 deviations, which covers nearly
 * every round trip of a steady stream without a histogram.  The poller
 * polls that long for an expected reply before it sleeps (rdma-poller.c,
 * docs/engine.md "Polling where a reply is expected").
 *
 * Pure arithmetic, no locking: the caller owns the estimate.
 */
#ifndef GFR_RTT_H
#define GFR_RTT_H

#include <stdint.h>

struct gfr_rtt {
    uint64_t srtt_ns;   /* 0: no sample yet */
    uint64_t rttvar_ns;
};

void gfr_rtt_init(struct gfr_rtt *r);

/* Takes one round trip's time. */
void gfr_rtt_sample(struct gfr_rtt *r, uint64_t rtt_ns);

/* How long to wait for a reply: mean + 4 deviations within [min_ns,
 * max_ns]; max_ns before the first sample. */
uint64_t gfr_rtt_bound(const struct gfr_rtt *r, uint64_t min_ns, uint64_t max_ns);

/* How soon a reply may come: mean - 2 deviations, at least 0; 0 before
 * the first sample. */
uint64_t gfr_rtt_early(const struct gfr_rtt *r);

#endif /* GFR_RTT_H */
