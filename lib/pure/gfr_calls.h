/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * A server's calls by xid within one bundle of rails (docs/multi-rail.md,
 * "Failover without loss"): on which rail each came, whether its reply is
 * still to be sent, on its way, or known to be held by the client, and
 * the client's acknowledgement mark (the oldest xid it still awaits), past
 * which answers are forgotten.  It decides what a request that arrives is:
 * new, a duplicate, a stale copy, or a resend it can no longer judge.
 *
 * xids compare in serial-number order (RFC 1982): GlusterFS's wrap.
 * A plain state machine: its owner serialises every call (the bundle's
 * lock).  Open addressing with linear probes and backward-shift deletion.
 */
#ifndef GFR_CALLS_H
#define GFR_CALLS_H

#include <stdbool.h>
#include <stdint.h>

/* Is xid a before b in serial-number order? */
static inline bool
gfr_xid_before(uint32_t a, uint32_t b)
{
    return (int32_t)(a - b) < 0;
}

enum gfr_call_state {
    GFR_CALL_RUNNING = 1, /* delivered, not answered yet */
    GFR_CALL_REPLYING,    /* its reply submitted, not known to have arrived */
    GFR_CALL_ANSWERED,    /* its reply arrived: the client holds it */
};

/* What an arriving request is (gfr_calls_arrived). */
enum gfr_call_verdict {
    GFR_CALL_NEW,       /* recorded RUNNING: deliver it */
    GFR_CALL_DUPLICATE, /* known: drop it, its reply goes or went elsewhere */
    GFR_CALL_STALE,     /* before the mark: the client holds its reply */
    GFR_CALL_AMBIGUOUS, /* a resend into what was evicted: cannot tell */
};

struct gfr_call {
    uint32_t xid;
    uint8_t state; /* enum gfr_call_state; 0: a free slot */
    uint8_t rail;
};

struct gfr_calls {
    struct gfr_call *slots;
    uint32_t size; /* a power of two, or 0 */
    uint32_t used;
    uint32_t max;      /* entries held at most */
    uint32_t answered; /* of used */
    bool marked;       /* mark is the client's */
    uint32_t mark;     /* the oldest xid the client awaits */
    bool evicted;      /* answers were evicted: resends up to evicted_to */
    uint32_t evicted_to;
    uint64_t evictions; /* answers evicted, for the log */
};

/* An empty table of at most max entries (max >= 2).  0 or -EINVAL. */
int gfr_calls_init(struct gfr_calls *calls, uint32_t max);

/* Frees the table's memory. */
void gfr_calls_fini(struct gfr_calls *calls);

/*
 * A request awaiting a reply arrived on rail, carrying the client's mark
 * (the oldest xid it awaits: never after xid).  Moves the mark on (never
 * back).  *verdict says what the request is:
 *  - DUPLICATE: xid is known (a RUNNING one takes rail as the rail its
 *    reply goes on);
 *  - STALE: a resend before the mark (the client has its reply);
 *  - AMBIGUOUS: a resend of an unknown xid in the range of evicted answers;
 *  - NEW: recorded RUNNING on rail.  An original the table does not know
 *    is new even before the mark: GlusterFS takes xids before it submits
 *    (rpc_clnt_submit), so requests may come out of their xids' order.
 * Answers the mark has passed are forgotten when room is needed; when the
 * table holds max entries and none is such an answer, every answer is
 * evicted (counted in evictions, their range remembered).  0, -EPROTO (a
 * mark after xid), -ENOMEM, or -ENOSPC (max calls not yet answered: more
 * than the client may have outstanding).
 */
int gfr_calls_arrived(struct gfr_calls *calls, uint32_t xid, uint32_t mark, bool resend,
                      unsigned rail, enum gfr_call_verdict *verdict);

/* xid's state (0: unknown) and, through rail (may be NULL), its rail. */
enum gfr_call_state gfr_calls_state(const struct gfr_calls *calls, uint32_t xid,
                                    unsigned *rail);

/* xid's reply is submitted (on rail): RUNNING or REPLYING -> REPLYING.
 * 0, or -ENOENT when xid is not a call awaiting its reply. */
int gfr_calls_replying(struct gfr_calls *calls, uint32_t xid, unsigned rail);

/* xid's reply arrived (its offer ended well): REPLYING -> ANSWERED, or
 * forgotten at once when the mark has passed it.  0 or -ENOENT. */
int gfr_calls_answered(struct gfr_calls *calls, uint32_t xid);

#endif /* GFR_CALLS_H */
