/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The send side of a connection: send slots, credits and the queue of
 * encoded messages waiting for them, CREDIT messages, and SEND
 * completions.  How a message travels is chosen above, in rdma-submit.c.
 * Locking and lifetime rules: engine-state.h.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <urcu/uatomic.h>

#include "gfr_be.h"
#include "engine-msg.h"

static uint8_t *
slot_buf(const struct gfr_rdma_conn *conn, uint32_t slot)
{
    return conn->send_buf + (size_t)slot * conn->opts.inline_max;
}

/* Writes the header, the lists and the iovecs' bytes into dst.  Returns
 * the length, or -EMSGSIZE when cap is too small. */
static ssize_t
encode_into(const struct gfr_wire_hdr *hdr, const struct gfr_wire_seg *read,
            const struct gfr_wire_seg *write, const struct iovec *iov,
            unsigned iovcnt, uint8_t *dst, size_t cap)
{
    ssize_t n = gfr_wire_encode(hdr, read, write, dst, cap);
    size_t off;

    if (n < 0)
        return n;
    off = (size_t)n;
    for (unsigned i = 0; i < iovcnt; i++) {
        if (iov[i].iov_len > cap - off)
            return -EMSGSIZE;
        if (iov[i].iov_len)
            memcpy(dst + off, iov[i].iov_base, iov[i].iov_len);
        off += iov[i].iov_len;
    }
    return (ssize_t)off;
}

/* The bytes of n iovecs.  No state; any thread. */
size_t
gfr_rdma_iov_total(const struct iovec *iov, unsigned n)
{
    size_t total = 0;

    for (unsigned i = 0; i < n; i++)
        total += iov[i].iov_len;
    return total;
}

/*
 * The most a SEND of conn may carry: what the peer agreed to receive, and
 * never more than a send slot holds (slots are spaced by our own
 * inline-max, which the agreement cannot exceed, but a connection's
 * agreement is not this function's to trust).  Caller holds conn->lock.
 */
size_t
gfr_rdma_send_cap(const struct gfr_rdma_conn *conn)
{
    uint32_t agreed = conn->agreed.inline_max;
    uint32_t slot = conn->opts.inline_max;

    return agreed && agreed < slot ? agreed : slot;
}

/*
 * Encodes a message into a pending entry (malloc'd; *pp, the caller owns
 * it) of at most cap bytes.  0, -EMSGSIZE (larger than cap: nothing is
 * allocated) or -ENOMEM.  No lock needed.
 */
int
gfr_rdma_encode(const struct gfr_wire_hdr *hdr, const struct gfr_wire_seg *read,
                const struct gfr_wire_seg *write, const struct iovec *iov,
                unsigned iovcnt, size_t cap, struct gfr_rdma_pending **pp)
{
    size_t len = gfr_wire_hdr_len(hdr->n_read, hdr->n_write) + gfr_rdma_iov_total(iov, iovcnt);
    struct gfr_rdma_pending *p;

    if (len > cap)
        return -EMSGSIZE;
    p = malloc(sizeof(*p) + len);
    if (!p)
        return -ENOMEM;
    p->offer = NULL;
    if (encode_into(hdr, read, write, iov, iovcnt, p->data, len) != (ssize_t)len) {
        free(p);
        return -EMSGSIZE;
    }
    p->len = len;
    *pp = p;
    return 0;
}

/*
 * Posts the message already in slot's buffer, stamping its credit grant.
 * It is signaled when the slot's completion must release offer's part, or
 * when half the slots have gone unsignaled (so slots come back while the
 * peer keeps the queue busy), or always on iWARP (no drain can follow an
 * error there: rdma-qp.c's flush_qp); the others are retired by a later
 * completion.  Caller holds conn->lock, has taken the slot and the credit.
 * 0 or -ENOTCONN: the post failed (what the provider said is logged), and
 * the slot, the credit and the grant are given back (so the accounting
 * stays exact for whatever still looks at it) and the connection ends,
 * since a QP that refuses a post takes no further one (in order when the
 * QP was in error already: gfr_rdma_post_failed_locked).  Not the provider's
 * errno: cxgb4 refuses a post on a QP in error with EINVAL, which a caller
 * would read as a fault of its message.
 */
static int
post_slot_locked(struct gfr_rdma_conn *conn, uint32_t slot, size_t len, uint16_t grant,
                 struct gfr_rdma_offer *offer)
{
    uint8_t *buf = slot_buf(conn, slot);
    struct gfr_rdma_wr *ctx = &conn->send_wr[slot];
    struct ibv_sge sge = {.addr = (uintptr_t)buf, .length = (uint32_t)len,
                          .lkey = conn->send_mr->lkey};
    struct ibv_send_wr wr;
    uint64_t posted_ns;
    int err;

    gfr_put_be16(buf + 4, grant);
    memset(&wr, 0, sizeof(wr));
    wr.wr_id = (uintptr_t)ctx;
    wr.sg_list = &sge;
    wr.num_sge = 1;
    wr.opcode = IBV_WR_SEND;
    if (offer || conn->dev->iwarp || conn->unsignaled + 1 >= conn->nsend / 2) {
        wr.send_flags = IBV_SEND_SIGNALED;
        conn->unsignaled = 0;
    } else {
        conn->unsignaled++;
    }
    if (len <= conn->max_inline)
        wr.send_flags |= IBV_SEND_INLINE;
    ctx->offer = offer;
    posted_ns = gfr_rdma_trace_stamp(conn->engine, buf);
    err = gfr_rdma_qp_post_locked(conn, ctx, &wr);
    if (err) {
        ctx->offer = NULL;
        conn->free_slots[conn->nfree++] = slot;
        gfr_credits_untake(&conn->credits, grant);
        gfr_rdma_post_failed_locked(conn, "ibv_post_send", err);
        return -ENOTCONN;
    }
    gfr_rdma_trace_posted_locked(conn, ctx, buf, posted_ns);
    if (buf[1] == GFR_WIRE_CREDIT)
        conn->stats.credit_updates++;
    else
        conn->stats.sent++;
    conn->stats.bytes_sent += len;
    return 0;
}

static int
can_send_data_locked(struct gfr_rdma_conn *conn)
{
    return conn->state == GFR_CONN_ESTABLISHED && cds_list_empty(&conn->pending) &&
           conn->nfree && gfr_credits_can_send_data(&conn->credits);
}

/*
 * Sends what waits for credits or slots, in order, then a CREDIT message
 * if one is due.  A failing post leaves the message queued and ends the
 * connection (post_slot_locked; the end of the connection releases the
 * queue).  Caller holds conn->lock.
 */
void
gfr_rdma_flush_locked(struct gfr_rdma_conn *conn)
{
    while (conn->state == GFR_CONN_ESTABLISHED && !cds_list_empty(&conn->pending) &&
           conn->nfree && gfr_credits_can_send_data(&conn->credits)) {
        struct gfr_rdma_pending *p =
            cds_list_first_entry(&conn->pending, struct gfr_rdma_pending, link);
        uint32_t slot = conn->free_slots[--conn->nfree];

        memcpy(slot_buf(conn, slot), p->data, p->len);
        gfr_rdma_count_copied(conn, p->len);
        if (post_slot_locked(conn, slot, p->len, gfr_credits_take_data(&conn->credits),
                             p->offer) != 0)
            return;
        cds_list_del(&p->link);
        free(p);
    }
    if (conn->state == GFR_CONN_ESTABLISHED && conn->nfree &&
        gfr_credits_need_update(&conn->credits)) {
        struct gfr_wire_hdr hdr = {.type = GFR_WIRE_CREDIT, .xid = conn->xid};
        uint32_t slot = conn->free_slots[--conn->nfree];

        gfr_wire_encode(&hdr, NULL, NULL, slot_buf(conn, slot), GFR_WIRE_HDR_SIZE);
        post_slot_locked(conn, slot, GFR_WIRE_HDR_SIZE, gfr_credits_take_update(&conn->credits),
                         NULL);
    }
}

void
gfr_rdma_send_flush(struct gfr_rdma_conn *conn)
{
    pthread_mutex_lock(&conn->lock);
    gfr_rdma_flush_locked(conn);
    pthread_mutex_unlock(&conn->lock);
}

/* Queues p (whose offer part it carries) behind what already waits.
 * Caller holds conn->lock. */
void
gfr_rdma_queue_locked(struct gfr_rdma_conn *conn, struct gfr_rdma_pending *p)
{
    cds_list_add_tail(&p->link, &conn->pending);
    conn->stats.queued_for_credits++;
    gfr_rdma_flush_locked(conn);
}

/*
 * Sends a data message now if a slot and a credit allow and nothing waits
 * before it, else queues an encoded copy.  Either way the message carries
 * one part of offer (may be NULL) until its SEND completes.  Caller holds
 * conn->lock.  0, -EMSGSIZE (larger than the peer agreed to receive, or
 * than a send slot), -ENOMEM, or the post's error (which has ended the
 * connection).
 */
int
gfr_rdma_send_locked(struct gfr_rdma_conn *conn, const struct gfr_wire_hdr *hdr,
                     const struct gfr_wire_seg *read, const struct gfr_wire_seg *write,
                     const struct iovec *iov, unsigned iovcnt,
                     struct gfr_rdma_offer *offer)
{
    struct gfr_rdma_pending *p;
    int err;

    if (can_send_data_locked(conn)) {
        uint32_t slot = conn->free_slots[--conn->nfree];
        ssize_t len = encode_into(hdr, read, write, iov, iovcnt, slot_buf(conn, slot),
                                  gfr_rdma_send_cap(conn));

        if (len < 0) {
            conn->free_slots[conn->nfree++] = slot;
            return (int)len;
        }
        gfr_rdma_count_copied(conn, gfr_rdma_iov_total(iov, iovcnt));
        return post_slot_locked(conn, slot, (size_t)len,
                                gfr_credits_take_data(&conn->credits), offer);
    }
    /* The same cap as a message sent at once: whether a credit was free
     * must not decide whether a message fits. */
    err = gfr_rdma_encode(hdr, read, write, iov, iovcnt, gfr_rdma_send_cap(conn), &p);
    if (err)
        return err;
    gfr_rdma_count_copied(conn, gfr_rdma_iov_total(iov, iovcnt));
    p->offer = offer;
    gfr_rdma_queue_locked(conn, p);
    return 0;
}

/* A SEND (or the drain or a keepalive) completed (ok) or was flushed: its slot and
 * those of the unsignaled SENDs before it are free again, its offer part
 * released.  Poller thread. */
void
gfr_rdma_send_complete(struct gfr_rdma_wr *ctx, int ok)
{
    struct gfr_rdma_conn *conn = ctx->conn;
    struct gfr_rdma_offer *offer;
    unsigned retired;

    pthread_mutex_lock(&conn->lock);
    offer = ctx->offer;
    ctx->offer = NULL;
    if (ok && ctx->kind == GFR_WR_SEND)
        gfr_rdma_trace_send_done_locked(conn, ctx);
    retired = gfr_rdma_sq_retire_locked(conn, ctx);
    if (ctx->kind == GFR_WR_SEND)
        conn->free_slots[conn->nfree++] = ctx->slot;
    else if (ctx->kind == GFR_WR_KEEPALIVE) {
        conn->keepalive_posted = 0;
        conn->stats.keepalives += (unsigned long)ok;
    }
    gfr_rdma_flush_locked(conn);
    pthread_mutex_unlock(&conn->lock);
    gfr_rdma_sq_put(conn, retired);
    if (offer)
        gfr_rdma_offer_settle(conn, offer, GFR_OFFER_SEND, ok ? 0 : -ENOTCONN);
}

/*
 * Back-pressure (gfr_rdma.h): the credits withhold their grant, and
 * lifting it flushes, which sends a CREDIT message when the peer is short.
 * Takes conn->lock: not with it held.
 */
int
gfr_rdma_conn_throttle(struct gfr_rdma_conn *conn, int on)
{
    int err = 0;

    if (!conn)
        return -EINVAL;
    pthread_mutex_lock(&conn->lock);
    if (conn->state == GFR_CONN_DISCONNECTING) {
        err = -ENOTCONN;
    } else if (on && !conn->credits.withheld) {
        gfr_credits_withhold(&conn->credits, true);
        conn->stats.throttles++;
    } else if (!on && conn->credits.withheld) {
        gfr_credits_withhold(&conn->credits, false);
        gfr_rdma_flush_locked(conn);
    }
    pthread_mutex_unlock(&conn->lock);
    return err;
}

size_t
gfr_rdma_max_inline(const struct gfr_rdma_conn *conn)
{
    uint32_t limit = conn->agreed.inline_max ? conn->agreed.inline_max
                                             : conn->opts.inline_max;

    return limit - GFR_WIRE_HDR_SIZE;
}

size_t
gfr_rdma_max_msg(const struct gfr_rdma_conn *conn)
{
    return conn->agreed.max_msg ? conn->agreed.max_msg : conn->opts.max_msg;
}

/* The end of the connection (CM thread): frees the messages still waiting
 * for credits (their offers end with the others).  Takes conn->lock. */
void
gfr_rdma_tx_release_all(struct gfr_rdma_conn *conn)
{
    pthread_mutex_lock(&conn->lock);
    while (!cds_list_empty(&conn->pending)) {
        struct gfr_rdma_pending *p =
            cds_list_first_entry(&conn->pending, struct gfr_rdma_pending, link);

        cds_list_del(&p->link);
        free(p);
    }
    pthread_mutex_unlock(&conn->lock);
}
