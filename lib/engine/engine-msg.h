/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Layer 4 of the engine: our offers and the peer's write lists, the send
 * queue's slots, credits and pending messages, and RDMA transfers (which
 * end through their finished callback).
 */
#ifndef GFR_ENGINE_MSG_H
#define GFR_ENGINE_MSG_H

#include "engine-qp.h"

/* An encoded message waiting for credits or a send slot; its credits
 * field is filled in when it is posted.  Owns one part of offer. */
struct gfr_rdma_pending {
    struct cds_list_head link;
    struct gfr_rdma_offer *offer;
    size_t len;
    uint8_t data[];
};

/*
 * What an offer still waits for, one bit each (offer->waits).  A bit is
 * set when the message is submitted and cleared once, when its event has
 * been dealt with; the offer ends when none is left.  The peer's DONE and
 * reply each move on to a second bit when they arrive (under conn->lock),
 * so that a second one for the same xid finds nothing while the first is
 * still being handled:
 *
 *   SEND      its SEND completed (or was flushed, or never went out);
 *   DONE      a read list was offered: the peer's DONE or ERROR  -> REVOKE
 *   REVOKE    DONE came: our read list's registrations are revoked;
 *   REPLY     a write list was offered: the reply                -> DELIVERY
 *   DELIVERY  the reply came: it has been handed to the owner.
 */
enum gfr_offer_wait {
    GFR_OFFER_SEND = 1u << 0,
    GFR_OFFER_DONE = 1u << 1,
    GFR_OFFER_REVOKE = 1u << 2,
    GFR_OFFER_REPLY = 1u << 3,
    GFR_OFFER_DELIVERY = 1u << 4,
};

/* "SEND|DELIVERY", for log messages. */
#define GFR_OFFER_WAITS_STR_MAX 40

/*
 * Our memory a message uses until the engine is done with it: the caller's
 * buffers (registered per transfer) or a copy, until every event in waits
 * has been dealt with.  Lives in conn->offers from submission to its done
 * callback, so the end of a connection finds every one of them.  Owner:
 * the connection; waits and status under conn->lock.
 */
struct gfr_rdma_offer {
    struct cds_list_head link; /* conn->offers[xid % GFR_RDMA_XID_BUCKETS] */
    uint32_t xid;
    unsigned waits; /* enum gfr_offer_wait bits */
    int status;
    unsigned n_mr;
    struct ibv_mr *mr[2 * GFR_WIRE_MAX_SEGS];
    struct ibv_mr *write_mr[GFR_WIRE_MAX_SEGS]; /* revoked when the reply comes */
    unsigned n_write_mr;
    uint64_t write_total;
    void *copy; /* owned copy of the body (gfr_rdma_send, too many iovecs) */
    /* The request asked its peer to let the reply end its read list
     * (GFR_WIRE_F_REPLY_ENDS_READS): the REPLY to xid settles DONE. */
    int reply_ends_reads;
    /* Staging buffers (rdma-sbuf.c) the offer holds until it ends: its
     * bulk's copy (a read list or a push source), and the write list its
     * request offered, copied out into the caller's reply buffers when the
     * reply comes. */
    struct gfr_rdma_sbuf *staged;
    struct gfr_rdma_sbuf *landing;
    struct iovec reply[GFR_WIRE_MAX_SEGS]; /* the caller's reply buffers */
    unsigned reply_cnt;
    gfr_rdma_done_fn done;
    void *cb_arg;
};

/* A write list the peer offered with request xid, kept for our reply. */
struct gfr_rdma_peer_wl {
    struct cds_list_head link; /* conn->peer_wl[xid % GFR_RDMA_XID_BUCKETS] */
    uint32_t xid;
    unsigned n;
    uint64_t total;
    struct gfr_wire_seg seg[GFR_WIRE_MAX_SEGS];
};

/* A transfer's stage (conn->lock). */
enum gfr_xfer_state {
    GFR_XFER_POSTING,  /* on conn->xfers: operations left to post */
    GFR_XFER_DRAINING, /* all posted; waiting for their completions */
};

struct gfr_rdma_xfer;

/*
 * How a transfer ends, called once: status 0 (all moved), -EIO (an
 * operation failed or was flushed) or -ECANCELED (the connection ended
 * before it was all posted: its offers end with the others).  It owns x
 * and frees it.  No lock held.
 */
typedef void (*gfr_rdma_xfer_finished_fn)(struct gfr_rdma_xfer *x, int status);

/*
 * Called once, when the last operation of a transfer has been posted (it
 * may still be in flight): what must follow it on the queue pair can be
 * posted now, RC keeps the order.  Caller holds conn->lock.
 */
typedef void (*gfr_rdma_xfer_posted_fn)(struct gfr_rdma_xfer *x);

/*
 * A bulk transfer (rdma-transfer.c): PULL reads a received message's read
 * list into buf, then (rdma-rx.c) sends DONE and delivers the message;
 * PUSH writes our reply's bulk into the peer's write list, then
 * (rdma-submit.c) sends the reply.  At most rdma-depth READs and WRITEs
 * are in flight per connection.  Owner: its starter until
 * gfr_rdma_xfer_start_locked, the connection until it ends, then its
 * finished callback.
 */
struct gfr_rdma_xfer {
    struct cds_list_head link; /* conn->xfers while POSTING */
    struct gfr_rdma_wr ctx;
    enum gfr_xfer_state state;
    int is_pull;
    int failed;
    uint32_t inflight;
    gfr_rdma_xfer_finished_fn finished;
    gfr_rdma_xfer_posted_fn posted; /* may be NULL */
    struct gfr_xfer plan;
    struct gfr_xfer_local local[GFR_WIRE_MAX_SEGS];
    struct gfr_wire_seg remote[GFR_WIRE_MAX_SEGS];
    /* PULL: the delivery the pulled message goes into (rdma-rx.c) */
    void *owner;
    /* PUSH: the reply to send behind the WRITEs (NULL once handed to the
     * send queue), and its offer */
    struct gfr_rdma_pending *reply;
    struct gfr_rdma_offer *offer;
};

/* rdma-offer.c: our offers and the peer's write lists */
struct gfr_rdma_offer *gfr_rdma_offer_new(void);
int gfr_rdma_offer_register(struct gfr_rdma_conn *conn, struct gfr_rdma_offer *offer,
                            void *addr, size_t len, int access, struct ibv_mr **mr);
const char *gfr_rdma_offer_waits_str(unsigned waits, char buf[GFR_OFFER_WAITS_STR_MAX]);
struct gfr_rdma_offer *gfr_rdma_offer_find_locked(struct gfr_rdma_conn *conn, uint32_t xid,
                                                  enum gfr_offer_wait event);
int gfr_rdma_offer_arrived_locked(struct gfr_rdma_conn *conn, struct gfr_rdma_offer *offer,
                                  enum gfr_offer_wait event);
void gfr_rdma_offer_settle(struct gfr_rdma_conn *conn, struct gfr_rdma_offer *offer,
                           enum gfr_offer_wait event, int status);
void gfr_rdma_offer_abandon(struct gfr_rdma_conn *conn, struct gfr_rdma_offer *offer, int status);
void gfr_rdma_offer_revoke_writes(struct gfr_rdma_conn *conn, struct gfr_rdma_offer *offer,
                                  uint32_t written);
void gfr_rdma_offer_pulled(struct gfr_rdma_conn *conn, struct gfr_rdma_offer *offer,
                           int status);
int gfr_rdma_peer_wl_add_locked(struct gfr_rdma_conn *conn, const struct gfr_wire_msg *msg);
struct gfr_rdma_peer_wl *gfr_rdma_peer_wl_take_locked(struct gfr_rdma_conn *conn,
                                                      uint32_t xid);
void gfr_rdma_offers_release_all(struct gfr_rdma_conn *conn);

/* rdma-tx.c: slots, credits and the pending queue */
size_t gfr_rdma_iov_total(const struct iovec *iov, unsigned n);
int gfr_rdma_send_locked(struct gfr_rdma_conn *conn, const struct gfr_wire_hdr *hdr,
                         const struct gfr_wire_seg *read, const struct gfr_wire_seg *write,
                         const struct iovec *iov, unsigned iovcnt,
                         struct gfr_rdma_offer *offer);
int gfr_rdma_encode(const struct gfr_wire_hdr *hdr, const struct gfr_wire_seg *read,
                    const struct gfr_wire_seg *write, const struct iovec *iov, unsigned iovcnt,
                    size_t cap, struct gfr_rdma_pending **pp);
size_t gfr_rdma_send_cap(const struct gfr_rdma_conn *conn);
void gfr_rdma_queue_locked(struct gfr_rdma_conn *conn, struct gfr_rdma_pending *p);
void gfr_rdma_flush_locked(struct gfr_rdma_conn *conn);
void gfr_rdma_send_flush(struct gfr_rdma_conn *conn);
void gfr_rdma_send_complete(struct gfr_rdma_wr *ctx, int ok);
void gfr_rdma_tx_release_all(struct gfr_rdma_conn *conn);
/* gfr_rdma_throttle on one connection (the public one: every rail) */
int gfr_rdma_conn_throttle(struct gfr_rdma_conn *conn, int on);

/* rdma-transfer.c: RDMA READs and WRITEs within rdma-depth */
struct gfr_rdma_xfer *gfr_rdma_xfer_new(struct gfr_rdma_conn *conn, int is_pull,
                                        gfr_rdma_xfer_finished_fn finished);
void gfr_rdma_xfer_start_locked(struct gfr_rdma_conn *conn, struct gfr_rdma_xfer *x);
void gfr_rdma_xfers_post_locked(struct gfr_rdma_conn *conn);
void gfr_rdma_xfer_complete(struct gfr_rdma_wr *ctx, int ok);
void gfr_rdma_xfers_release_all(struct gfr_rdma_conn *conn);

#endif /* GFR_ENGINE_MSG_H */
