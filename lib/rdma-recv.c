/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The receive side of a connection: work completions, decoding and
 * checking every received header against what this side offered, and
 * delivering messages inline on the poller or through the worker pool.
 * Locking and lifetime rules: rdma-internal.h.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <urcu/uatomic.h>

#include "rdma-internal.h"

static void
delivered(struct gfr_rdma_conn *conn, struct gfr_rdma_pbuf *owned,
          struct gfr_rdma_offer *reply_to)
{
    if (owned)
        gfr_rdma_pbuf_put(owned);
    if (reply_to)
        gfr_rdma_offer_put(conn, reply_to, 0);
}

static void
run_delivery(struct gfr_pool_job *job, void *cb_arg, int status)
{
    struct gfr_rdma_delivery *d = caa_container_of(job, struct gfr_rdma_delivery, job);
    struct gfr_rdma_conn *conn = d->conn;

    (void)cb_arg;
    /* A pool being destroyed cancels: the message dies with the process. */
    if (status == 0)
        conn->ops->received(conn, &d->rx, conn->cb_arg);
    delivered(conn, d->owned, d->reply_to);
    free(d);
    gfr_rdma_conn_put(conn);
}

/*
 * Hands rx to its received callback: on this thread with dispatch=inline
 * (or when the pool cannot take it: handled late rather than dropped), else
 * as a pool job, one pool client per connection.  owned (a pull's buffer,
 * may be NULL) is given back and reply_to's part released once received has
 * returned.  Without owned, rx->head points into a receive buffer and is
 * copied for the pool.  Poller thread, no lock held.
 */
void
gfr_rdma_deliver(struct gfr_rdma_conn *conn, const struct gfr_rdma_rx *rx,
                 struct gfr_rdma_pbuf *owned, struct gfr_rdma_offer *reply_to)
{
    struct gfr_rdma_delivery *d = NULL;

    if (conn->pool_client)
        d = malloc(sizeof(*d) + (owned ? 0 : rx->head_len));
    if (d) {
        d->conn = conn;
        d->rx = *rx;
        d->owned = owned;
        d->reply_to = reply_to;
        if (!owned) {
            memcpy(d->data, rx->head, rx->head_len);
            d->rx.head = d->data;
        }
        gfr_pool_job_init(&d->job, run_delivery, NULL);
        gfr_rdma_conn_get(conn);
        if (gfr_pool_submit(conn->engine->pool, &d->job, conn->pool_client,
                            GFR_POOL_PRIO_NORMAL) == 0)
            return;
        gfr_rdma_conn_put(conn);
        free(d);
    }
    conn->ops->received(conn, rx, conn->cb_arg);
    delivered(conn, owned, reply_to);
}

/*
 * Checks a decoded msg against the connection's credits and this side's
 * offers, and records what it needs: the offer a DONE/ERROR releases, the
 * request a REPLY answers, a pull started.  Caller holds conn->lock.  0,
 * or -EPROTO with *reason (the connection must be torn down).
 */
int
gfr_rdma_rx_accept_locked(struct gfr_rdma_conn *conn, const struct gfr_wire_msg *msg,
                          struct gfr_rdma_rx_plan *plan, const char **reason)
{
    const struct gfr_wire_hdr *hdr = &msg->hdr;
    struct gfr_rdma_offer *offer;
    int err;

    if (gfr_credits_on_receive(&conn->credits, hdr->credits) != 0) {
        *reason = "peer sent without a credit, or granted more than the window";
        return -EPROTO;
    }
    switch (hdr->type) {
    case GFR_WIRE_CREDIT:
        return 0;
    case GFR_WIRE_DONE:
    case GFR_WIRE_ERROR:
        offer = gfr_rdma_offer_find_locked(conn, hdr->xid, 0);
        if (!offer) {
            *reason = "DONE or ERROR for a message that offered no read list";
            return -EPROTO;
        }
        offer->await_done = 0;
        plan->done_for = offer;
        plan->done_status = hdr->type == GFR_WIRE_ERROR ? -EREMOTEIO : 0;
        return 0;
    case GFR_WIRE_REPLY:
        offer = gfr_rdma_offer_find_locked(conn, hdr->xid, 1);
        if (hdr->written && (!offer || hdr->written > offer->write_total)) {
            *reason = "reply claims more written bytes than its request offered";
            return -EPROTO;
        }
        if (offer) {
            offer->await_reply = 0;
            plan->reply_to = offer;
        }
        break;
    default: /* GFR_WIRE_MSG */
        if (hdr->n_write) {
            err = gfr_rdma_peer_wl_add_locked(conn, msg);
            if (err == -EPROTO) {
                *reason = "a second request with the xid of one not yet answered";
                return err;
            }
            if (err)
                gfr_rdma_conn_log(conn, "no memory to keep a request's write list: its reply "
                                  "will travel as a read list");
        }
        break;
    }
    if (hdr->n_read) {
        if (gfr_rdma_pull_start_locked(conn, msg, plan->reply_to) == 0)
            plan->pulling = 1;
        else
            plan->refuse = 1;
    }
    return 0;
}

/*
 * A message arrived for conn in buf (a buffer of its own at slot, or rb of
 * the device's SRQ).  The buffer is reposted once the message no longer
 * needs it (copied for the pool or a pull, or handled inline), and one
 * credit goes back to the peer.  Poller thread.
 */
static void
handle_recv(struct gfr_rdma_conn *conn, const uint8_t *buf, uint32_t slot,
            struct gfr_rdma_rbuf *rb, struct ibv_wc *wc)
{
    struct gfr_wire_msg msg;
    struct gfr_rdma_rx_plan plan = {0};
    const char *reason = "invalid message";
    int open;
    int err = 0;

    pthread_mutex_lock(&conn->lock);
    open = conn->state == GFR_CONN_ESTABLISHED || conn->state == GFR_CONN_CONNECTING;
    if (open) {
        err = gfr_wire_decode(buf, wc->byte_len, &conn->limits, &msg, &reason);
        if (!err)
            err = gfr_rdma_rx_accept_locked(conn, &msg, &plan, &reason);
        /* Counted here, under the lock already held, when it will be
         * delivered below (a pulled message is counted when its pull ends). */
        if (!err && !plan.refuse && !plan.pulling &&
            (msg.hdr.type == GFR_WIRE_MSG || msg.hdr.type == GFR_WIRE_REPLY))
            conn->stats.received++;
    }
    pthread_mutex_unlock(&conn->lock);
    if (!open)
        goto repost; /* arrived while closing: dropped with the connection */
    if (err) {
        gfr_rdma_conn_log(conn, "peer broke the protocol (%s); disconnecting", reason);
        gfr_rdma_conn_fail(conn, -EPROTO);
        goto repost;
    }
    if (plan.done_for)
        gfr_rdma_offer_pulled(conn, plan.done_for, plan.done_status);
    if (plan.reply_to)
        gfr_rdma_offer_revoke_writes(conn, plan.reply_to);
    if (plan.refuse) {
        struct gfr_wire_hdr hdr = {.type = GFR_WIRE_ERROR, .xid = msg.hdr.xid,
                                   .written = ENOMEM};

        gfr_rdma_conn_log(conn, "no memory to receive a message of %u bytes; refusing it",
                          msg.hdr.read_len + msg.hdr.inline_len);
        if (plan.reply_to)
            gfr_rdma_offer_put(conn, plan.reply_to, -ENOMEM);
        pthread_mutex_lock(&conn->lock);
        if (gfr_rdma_send_locked(conn, &hdr, NULL, NULL, NULL, 0, NULL) != 0)
            gfr_rdma_conn_fail_locked(conn, -ENOMEM);
        pthread_mutex_unlock(&conn->lock);
    } else if (!plan.pulling &&
               (msg.hdr.type == GFR_WIRE_MSG || msg.hdr.type == GFR_WIRE_REPLY)) {
        struct gfr_rdma_rx rx = {.xid = msg.hdr.xid,
                                 .is_reply = msg.hdr.type == GFR_WIRE_REPLY,
                                 .head = msg.payload, .head_len = msg.hdr.inline_len,
                                 .written = msg.hdr.written};

        gfr_rdma_deliver(conn, &rx, NULL, plan.reply_to);
    }
repost:
    if (rb)
        gfr_rdma_srq_post(conn->dev, rb);
    pthread_mutex_lock(&conn->lock);
    if (conn->state != GFR_CONN_DISCONNECTING &&
        (rb || gfr_rdma_post_recv(conn, slot) == 0))
        gfr_credits_on_repost(&conn->credits, 1);
    gfr_rdma_flush_locked(conn);
    pthread_mutex_unlock(&conn->lock);
}

/*
 * A flushed completion while the connection is still up: the QP went to
 * the error state without an error completion of ours (the provider's
 * responder side, or the CM).  Says so, with what the QP reports.
 */
static void
log_unexpected_flush(struct gfr_rdma_conn *conn)
{
    struct ibv_qp_attr attr;
    struct ibv_qp_init_attr init;
    int up;

    pthread_mutex_lock(&conn->lock);
    up = conn->state == GFR_CONN_ESTABLISHED || conn->state == GFR_CONN_CONNECTING;
    pthread_mutex_unlock(&conn->lock);
    if (!up)
        return;
    if (ibv_query_qp(conn->qp, &attr, IBV_QP_STATE | IBV_QP_MAX_QP_RD_ATOMIC |
                                          IBV_QP_MAX_DEST_RD_ATOMIC, &init) == 0)
        gfr_rdma_conn_log(conn, "QP %u went to the error state with no error completion of ours "
                          "(state %d, max_rd_atomic %u, max_dest_rd_atomic %u, %u READ/WRITE "
                          "in flight); disconnecting", conn->qp->qp_num, attr.qp_state,
                          attr.max_rd_atomic, attr.max_dest_rd_atomic, conn->rdma_inflight);
    else
        gfr_rdma_conn_log(conn, "QP %u went to the error state with no error completion of ours; "
                          "disconnecting", conn->qp->qp_num);
}

static void
log_failed_wr(const struct gfr_rdma_conn *conn, const struct gfr_rdma_wr *ctx,
              const struct ibv_wc *wc)
{
    if (wc->status != IBV_WC_WR_FLUSH_ERR)
        gfr_rdma_conn_log(conn, "%s work request failed: %s (vendor error %u); disconnecting",
                          ctx->kind == GFR_WR_RDMA ? "an RDMA READ/WRITE"
                          : ctx->kind == GFR_WR_DRAIN ? "the drain"
                          : ctx->kind == GFR_WR_KEEPALIVE ? "a keepalive"
                          : ctx->kind == GFR_WR_SEND ? "a SEND" : "a receive",
                          ibv_wc_status_str(wc->status), wc->vendor_err);
}

/* A completion of a buffer of the device's SRQ: find the connection by QP
 * number; a connection that is gone only gets the buffer back. */
static void
srq_complete(struct gfr_rdma_dev *dev, struct gfr_rdma_wr *ctx, struct ibv_wc *wc)
{
    struct gfr_rdma_rbuf *rb = caa_container_of(ctx, struct gfr_rdma_rbuf, wr);
    struct gfr_rdma_conn *conn;

    gfr_rdma_srq_taken(dev);
    conn = gfr_rdma_srq_lookup_get(dev, wc->qp_num);
    if (!conn) {
        gfr_rdma_srq_post(dev, rb);
        return;
    }
    if (wc->status == IBV_WC_SUCCESS) {
        handle_recv(conn, rb->addr, 0, rb, wc);
    } else {
        if (wc->status == IBV_WC_WR_FLUSH_ERR)
            log_unexpected_flush(conn);
        log_failed_wr(conn, ctx, wc);
        gfr_rdma_conn_fail(conn, wc->status == IBV_WC_WR_FLUSH_ERR ? 0 : -EIO);
        gfr_rdma_srq_post(dev, rb);
    }
    gfr_rdma_conn_put(conn);
}

/* One work completion, from a poller.  The work request's reference (or,
 * for an SRQ buffer, the one the lookup takes) keeps the connection alive
 * until the end. */
void
gfr_rdma_conn_complete(struct gfr_rdma_poller *poller, struct ibv_wc *wc)
{
    struct gfr_rdma_wr *ctx = (struct gfr_rdma_wr *)(uintptr_t)wc->wr_id;
    struct gfr_rdma_conn *conn = ctx->conn;
    int ok = wc->status == IBV_WC_SUCCESS;

    if (!conn) {
        srq_complete(poller->dev, ctx, wc);
        return;
    }
    if (!ok) {
        if (wc->status == IBV_WC_WR_FLUSH_ERR)
            log_unexpected_flush(conn);
        log_failed_wr(conn, ctx, wc);
        gfr_rdma_conn_fail(conn, wc->status == IBV_WC_WR_FLUSH_ERR ? 0 : -EIO);
    }
    switch (ctx->kind) {
    case GFR_WR_RECV:
        if (ok)
            handle_recv(conn, conn->recv_buf +
                                  (size_t)ctx->slot * conn->engine->opts.inline_max,
                        ctx->slot, NULL, wc);
        break;
    case GFR_WR_SEND:
    case GFR_WR_DRAIN:
    case GFR_WR_KEEPALIVE:
        gfr_rdma_send_complete(ctx, ok);
        break;
    default:
        gfr_rdma_xfer_complete(ctx, ok);
        break;
    }
    gfr_rdma_conn_put(conn);
}
