/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Layer 5 of the engine: receiving messages (checking, pulling,
 * delivering) and submitting them.
 */
#ifndef GFR_ENGINE_RX_H
#define GFR_ENGINE_RX_H

#include "engine-msg.h"

/* A received message off the poller's stack: while it is pulled, and as a
 * pool job (one unit of conn->outstanding until it has been handled).
 * m.rx.head points into data (a copy of the inline part) or into the
 * message's pull buffer. */
struct gfr_rdma_delivery {
    struct gfr_pool_job job;
    struct gfr_rdma_rxmsg m;
    uint8_t data[];
};

/* rdma-rx.c: checking, pulling and delivering received messages */
struct gfr_rdma_rx_plan {
    struct gfr_rdma_offer *done_for; /* DONE/ERROR: our read list is free */
    int done_status;
    struct gfr_rdma_offer *reply_to; /* REPLY: our request it answers */
    int pulling;                     /* a transfer took the message (rdma-rx.c) */
    int refuse;                      /* could not pull it: answer ERROR (rdma-rx.c) */
    int dropped;                     /* the connection ended before its pull began */
    int refused_copy;                /* ERROR EALREADY ended reply_to's write list */
    int fence;                       /* a FENCE named the peer's rail fence_id */
    uint8_t fence_id;
};
int gfr_rdma_rx_accept_locked(struct gfr_rdma_conn *conn, const struct gfr_wire_msg *msg,
                              struct gfr_rdma_rx_plan *plan, const char **reason);
void gfr_rdma_rx_handle(struct gfr_rdma_conn *conn, const uint8_t *buf, uint32_t slot,
                        struct gfr_rdma_rbuf *rb, struct ibv_wc *wc);
int gfr_rdma_rx_advance(struct gfr_rdma_rxmsg *m, enum gfr_rx_state to);
const char *gfr_rdma_rx_state_str(enum gfr_rx_state state);

/* rdma-submit.c: gfr_rdma_submit and gfr_rdma_send on one connection (the
 * public ones choose a bundle's rail first: rdma-bundle.c) */
/* A request that will be answered: one that says so, or offers buffers
 * for its reply. */
static inline int
gfr_rdma_msg_awaits_reply(const struct gfr_rdma_msg *msg)
{
    return !msg->is_reply && (msg->expects_reply || msg->reply_cnt);
}
int gfr_rdma_conn_submit(struct gfr_rdma_conn *conn, const struct gfr_rdma_msg *msg);

/* What a bundle's client puts in the header of a request it awaits a
 * reply to (docs/multi-rail.md): AWAITS_REPLY, its mark (the oldest xid
 * it awaits) and whether the request is a resend. */
struct gfr_rdma_tag {
    uint32_t mark;
    int resend;
};

/* gfr_rdma_conn_submit of an awaited request with tag (-EINVAL for any
 * other message). */
int gfr_rdma_conn_submit_tagged(struct gfr_rdma_conn *conn, const struct gfr_rdma_msg *msg,
                                const struct gfr_rdma_tag *tag);

/* Sends a control message of the bundle's (docs/multi-rail.md) on conn:
 * FENCE naming the peer's rail rail_id; or, for a dropped copy of request
 * xid whose write list conn still keeps for a reply, ERROR EALREADY, which
 * ends it at the peer (the list is forgotten here).  A copy's read list
 * needs nothing: a resend waives no DONE, and its DONE went when it was
 * pulled.  0 or -ENOTCONN.  Any thread, no lock held. */
int gfr_rdma_conn_send_fence(struct gfr_rdma_conn *conn, uint8_t rail_id);
int gfr_rdma_conn_refuse_copy(struct gfr_rdma_conn *conn, uint32_t xid);
int gfr_rdma_conn_send(struct gfr_rdma_conn *conn, const void *data, size_t len);

#endif /* GFR_ENGINE_RX_H */
