/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * How many calls a brick lets one connection have outstanding: handed to
 * GlusterFS, their reply not yet submitted.  Above the limit the plugin
 * throttles the connection (gfr_rdma_throttle: the client gets no credits
 * back and stops sending) until replies bring the count back down; that is
 * what rpc.outstanding-rpc-limit promises and what stock protocol/server
 * never asks rpcsvc to do (docs/plugin.md, "Back-pressure").
 *
 * Which calls count is the caller's choice: a call that may wait for
 * another call of the same client (a blocking lock, which may wait for an
 * unlock sent after it) must not, or the throttle could stop the call that
 * would let it go.
 *
 * Not thread-safe: the owner serialises every call (rdma.so holds its
 * transport's priv->lock).  GlusterFS-independent, for the host unit tests.
 */
#ifndef GFR_CALL_LIMIT_H
#define GFR_CALL_LIMIT_H

#include <stdbool.h>
#include <stdint.h>

#include <urcu/list.h>

#define GFR_CALL_LIMIT_BUCKETS 64

struct gfr_call_limit {
    uint32_t limit;   /* 0: no limit, nothing tracked */
    uint32_t counted; /* counted calls outstanding */
    /* The counted calls' xids (a peer may repeat one: each is a call). */
    struct cds_list_head bucket[GFR_CALL_LIMIT_BUCKETS];
};

/*
 * rpc.outstanding-rpc-limit as rpcsvc reads it: rounded up to a multiple
 * of 8, at most 65536; 0 (no limit) stays 0; a negative value is no limit.
 */
uint32_t gfr_call_limit_round(int64_t value);

void gfr_call_limit_init(struct gfr_call_limit *cl, uint32_t limit);

/* Forgets every call (the connection ended), freeing what it kept. */
void gfr_call_limit_clear(struct gfr_call_limit *cl);

/*
 * A counting call with this xid was handed to GlusterFS.  0, or -ENOMEM:
 * then it is not counted (the call itself goes on).
 */
int gfr_call_limit_called(struct gfr_call_limit *cl, uint32_t xid);

/* The reply to xid was submitted; a reply to a call not counted (not
 * counting, or unknown) changes nothing. */
void gfr_call_limit_replied(struct gfr_call_limit *cl, uint32_t xid);

static inline bool
gfr_call_limit_over(const struct gfr_call_limit *cl)
{
    return cl->limit && cl->counted > cl->limit;
}

#endif /* GFR_CALL_LIMIT_H */
