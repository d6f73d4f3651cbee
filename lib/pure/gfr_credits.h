/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Credit-based flow control of one connection (docs/wire-protocol.md, "Flow
 * control").  A plain state machine: the connection that owns it serialises
 * every call (it is touched only under that connection's send lock).
 */
#ifndef GFR_CREDITS_H
#define GFR_CREDITS_H

#include <stdbool.h>
#include <stdint.h>

struct gfr_credits {
    uint32_t window;        /* negotiated credits */
    uint32_t send_avail;    /* SENDs we may still post */
    uint32_t peer_avail;    /* SENDs the peer may still post, as we know */
    uint32_t pending_grant; /* buffers reposted, not yet announced */
    bool withheld;          /* back-pressure: pending_grant is kept back */
};

/* window >= 2; both sides start with window credits.  0 or -EINVAL. */
int gfr_credits_init(struct gfr_credits *credits, uint32_t window);

/* May a data message (MSG, DONE, ERROR) be sent now?  One credit stays
 * reserved for a CREDIT message. */
bool gfr_credits_can_send_data(const struct gfr_credits *credits);

/* Spends one credit on a data message; returns the grant to put in its
 * header.  Only after gfr_credits_can_send_data said yes. */
uint16_t gfr_credits_take_data(struct gfr_credits *credits);

/* A message that took a credit and carried grant was never sent (its post
 * failed): the credit and the grant are as they were before. */
void gfr_credits_untake(struct gfr_credits *credits, uint16_t grant);

/* Should a CREDIT message go out now (the peer is down to its reserved
 * credit, or half the window waits to be announced)? */
bool gfr_credits_need_update(const struct gfr_credits *credits);

/* Spends one credit on a CREDIT message; returns its grant. */
uint16_t gfr_credits_take_update(struct gfr_credits *credits);

/*
 * A message arrived carrying grant: the peer spent one of its credits and
 * returned grant of ours.  Returns 0, or -EPROTO when the peer had no credit
 * left or the grant exceeds the window (the connection must be torn down).
 */
int gfr_credits_on_receive(struct gfr_credits *credits, uint16_t grant);

/* n receive buffers were reposted for the peer. */
void gfr_credits_on_repost(struct gfr_credits *credits, uint32_t n);

/*
 * Back-pressure.  While withheld, no grant leaves (data messages carry 0
 * and no CREDIT message is due), so the peer stops once it has spent the
 * credits it holds; its messages wait on its side, none is refused.  Once
 * released, the whole pending grant goes out as usual: gfr_credits_need_update
 * says whether a CREDIT message must carry it now.
 */
void gfr_credits_withhold(struct gfr_credits *credits, bool withhold);

#endif /* GFR_CREDITS_H */
