/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The receive side of a connection: decoding and checking every received
 * header against what this side offered, pulling a read list, answering
 * DONE, and delivering messages inline on the poller or through the
 * worker pool.  Completions reach it from rdma-cq.c.  Locking and
 * lifetime rules: rdma-internal.h.
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
        gfr_rdma_offer_settle(conn, reply_to, GFR_OFFER_DELIVERY, 0);
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
 * A pull ended (gfr_rdma_xfer_finished_fn).  With all its data, DONE goes
 * back and the message is delivered; failed, or on a connection that is
 * ending, the buffer goes back and the request it answers (if any) is
 * released with -ENOTCONN; cancelled at the end of the connection, only
 * the buffer goes back (the offers end with the others).  Poller thread,
 * or the CM thread at the end; no lock held.
 */
static void
pull_finished(struct gfr_rdma_xfer *x, int status)
{
    struct gfr_rdma_conn *conn = x->ctx.conn;
    struct gfr_wire_hdr done = {.type = GFR_WIRE_DONE, .xid = x->rx.xid};
    int deliver;

    if (status == -ECANCELED) {
        gfr_rdma_pbuf_put(x->pbuf);
        free(x);
        return;
    }
    pthread_mutex_lock(&conn->lock);
    deliver = status == 0 && conn->state != GFR_CONN_DISCONNECTING;
    if (deliver) {
        conn->stats.received++;
        if (gfr_rdma_send_locked(conn, &done, NULL, NULL, NULL, 0, NULL) != 0)
            gfr_rdma_conn_fail_locked(conn, -ENOMEM);
    }
    pthread_mutex_unlock(&conn->lock);
    if (deliver) {
        gfr_rdma_deliver(conn, &x->rx, x->pbuf, x->reply_to);
    } else {
        gfr_rdma_pbuf_put(x->pbuf);
        if (x->reply_to)
            gfr_rdma_offer_settle(conn, x->reply_to, GFR_OFFER_DELIVERY, -ENOTCONN);
    }
    free(x);
}

/*
 * Starts pulling the read list of msg into a pull buffer of this poller
 * (the inline part is copied in front, so the receive buffer can be
 * reposted at once).  reply_to: our request this message answers, whose
 * part the delivery will release.  The connection's poller thread, caller
 * holds conn->lock.  0, -ENOMEM, or -EPROTO.
 */
static int
pull_start_locked(struct gfr_rdma_conn *conn, const struct gfr_wire_msg *msg,
                  struct gfr_rdma_offer *reply_to)
{
    struct gfr_rdma_xfer *x = gfr_rdma_xfer_new(conn, 1, pull_finished);
    size_t head = msg->hdr.inline_len;
    size_t bulk = msg->hdr.read_len;
    uint8_t *buf;
    int err;

    if (!x)
        return -ENOMEM;
    x->pbuf = gfr_rdma_pbuf_get(conn->poller, head + bulk);
    if (!x->pbuf) {
        free(x);
        return -ENOMEM;
    }
    buf = x->pbuf->mem;
    memcpy(buf, msg->payload, head);
    memcpy(x->remote, msg->read, msg->hdr.n_read * sizeof(x->remote[0]));
    x->local[0] = (struct gfr_xfer_local){(uintptr_t)(buf + head), (uint32_t)bulk,
                                          x->pbuf->mr->lkey};
    err = gfr_xfer_init(&x->plan, x->local, 1, x->remote, msg->hdr.n_read, bulk,
                        conn->engine->opts.segment_size);
    if (err) {
        /* The decoder checked the lengths; only a wrapping segment is left. */
        gfr_rdma_pbuf_put(x->pbuf);
        free(x);
        return -EPROTO;
    }
    x->rx.xid = msg->hdr.xid;
    x->rx.is_reply = msg->hdr.type == GFR_WIRE_REPLY;
    x->rx.head = buf;
    x->rx.head_len = head;
    x->rx.bulk = buf + head;
    x->rx.bulk_len = bulk;
    x->rx.written = msg->hdr.written;
    x->reply_to = reply_to;
    conn->stats.bulk_pulled += bulk;
    gfr_rdma_xfer_start_locked(conn, x);
    return 0;
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
        offer = gfr_rdma_offer_find_locked(conn, hdr->xid, GFR_OFFER_DONE);
        if (!offer) {
            *reason = "DONE or ERROR for a message that offered no read list";
            return -EPROTO;
        }
        gfr_rdma_offer_arrived_locked(conn, offer, GFR_OFFER_DONE);
        plan->done_for = offer;
        plan->done_status = hdr->type == GFR_WIRE_ERROR ? -EREMOTEIO : 0;
        return 0;
    case GFR_WIRE_REPLY:
        offer = gfr_rdma_offer_find_locked(conn, hdr->xid, GFR_OFFER_REPLY);
        if (hdr->written && (!offer || hdr->written > offer->write_total)) {
            *reason = "reply claims more written bytes than its request offered";
            return -EPROTO;
        }
        if (offer) {
            gfr_rdma_offer_arrived_locked(conn, offer, GFR_OFFER_REPLY);
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
        if (pull_start_locked(conn, msg, plan->reply_to) == 0)
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
 * credit goes back to the peer.  Poller thread (rdma-cq.c), no lock held.
 */
void
gfr_rdma_rx_handle(struct gfr_rdma_conn *conn, const uint8_t *buf, uint32_t slot,
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
            gfr_rdma_offer_settle(conn, plan.reply_to, GFR_OFFER_DELIVERY, -ENOMEM);
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
