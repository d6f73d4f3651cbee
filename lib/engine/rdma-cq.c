/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Work completions, dispatched by the kind of work request: receives to
 * the receive side, SENDs (and the drain and keepalives) to the send
 * side, READs and WRITEs to their transfer.  A failed work request ends
 * its connection, with a message that says which one failed and how.
 * Poller threads; and the CM thread, for the connections of a CQ that
 * broke, whose work requests it completes as flushed.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdlib.h>

#include <urcu/uatomic.h>

#include "engine-conn.h"

/*
 * A flushed completion: the reason its connection ends with.  While the
 * connection is still up, the QP went to the error state without an
 * error completion of ours (the peer's close, the provider's responder
 * side, or the CM): when that cut RDMA READs of ours off, the
 * connection ends as reset (gfr_rdma_conn_cut_off_locked); otherwise this
 * says so, with what the QP reports, and it ends in order.
 */
static int
flush_reason(struct gfr_rdma_conn *conn)
{
    struct ibv_qp_attr attr;
    struct ibv_qp_init_attr init;
    int up, reason = 0;

    pthread_mutex_lock(&conn->lock);
    up = conn->state == GFR_CONN_ESTABLISHED || conn->state == GFR_CONN_CONNECTING;
    if (up)
        reason = gfr_rdma_conn_cut_off_locked(conn);
    pthread_mutex_unlock(&conn->lock);
    if (!up || reason)
        return reason;
    if (ibv_query_qp(conn->qp, &attr, IBV_QP_STATE | IBV_QP_MAX_QP_RD_ATOMIC |
                                          IBV_QP_MAX_DEST_RD_ATOMIC, &init) == 0)
        gfr_rdma_conn_log(conn, "QP %u went to the error state with no error completion of ours "
                          "(state %d, max_rd_atomic %u, max_dest_rd_atomic %u); disconnecting",
                          conn->qp->qp_num, attr.qp_state, attr.max_rd_atomic,
                          attr.max_dest_rd_atomic);
    else
        gfr_rdma_conn_log(conn, "QP %u went to the error state with no error completion of ours; "
                          "disconnecting", conn->qp->qp_num);
    return 0;
}

/*
 * The reason a failed work request ends its connection with.  A flush is
 * no fault of its own (flush_reason; a fault the connection recorded
 * first wins).  On
 * iWARP a local QP operation error is what siw gives a work request whose
 * TCP stream broke under it: the peer's close, whose FIN can even overtake
 * siw's completion of a SEND already handed to TCP, or a reset; so the
 * connection ends as reset (-ECONNRESET), as a server expects of a client
 * that goes away.  Anything else is a fault: -EIO.
 */
static int
failure_reason(struct gfr_rdma_conn *conn, const struct ibv_wc *wc)
{
    if (wc->status == IBV_WC_WR_FLUSH_ERR)
        return flush_reason(conn);
    if (wc->status == IBV_WC_LOC_QP_OP_ERR && conn->dev->iwarp)
        return -ECONNRESET;
    return -EIO;
}

/* Says which work request failed and how, unless it was flushed (whose
 * reason flush_reason gave); reason is what the connection ends with. */
static void
log_failed_wr(struct gfr_rdma_conn *conn, const struct gfr_rdma_wr *ctx,
              const struct ibv_wc *wc, int reason)
{
    if (wc->status != IBV_WC_WR_FLUSH_ERR)
        gfr_rdma_conn_log(conn, "%s work request failed: %s (vendor error %u)%s; disconnecting",
                          ctx->kind == GFR_WR_RDMA ? "an RDMA READ/WRITE"
                          : ctx->kind == GFR_WR_DRAIN ? "the drain"
                          : ctx->kind == GFR_WR_KEEPALIVE ? "a keepalive"
                          : ctx->kind == GFR_WR_SEND ? "a SEND" : "a receive",
                          ibv_wc_status_str(wc->status), wc->vendor_err,
                          reason == -ECONNRESET
                              ? ": on iWARP, the TCP connection under the QP closed or was reset"
                              : "");
}

/*
 * Did a successful receive completion deliver a SEND?  Anything else that
 * consumes a receive (an RDMA WRITE with immediate data) leaves the
 * buffer's old bytes in place, which must not be read as a message: this
 * protocol never uses immediate data, so such a peer is broken or
 * hostile, and its connection ends.
 */
static int
received_a_send(struct gfr_rdma_conn *conn, const struct ibv_wc *wc)
{
    if (wc->opcode == IBV_WC_RECV)
        return 1;
    gfr_rdma_conn_log(conn, "a receive completed with opcode %d (%s), not a SEND: the peer "
                      "broke the protocol; disconnecting", wc->opcode,
                      wc->opcode == IBV_WC_RECV_RDMA_WITH_IMM ? "RDMA WRITE with immediate"
                                                               : "unexpected");
    gfr_rdma_conn_fail(conn, -EPROTO);
    return 0;
}

/* A completion of a buffer of the device's SRQ: find the connection by QP
 * number; a connection that is gone only gets the buffer back.  A buffer
 * completed again without a repost in between is a provider's duplicate:
 * said, and nothing else done. */
static void
srq_complete(struct gfr_rdma_dev *dev, struct gfr_rdma_rbuf *rb, struct ibv_wc *wc)
{
    struct gfr_rdma_conn *conn;

    if (!uatomic_read(&rb->wr.posted)) {
        gfr_rdma_log("%s: QP %u completed a shared receive buffer that was not posted (%s): "
                     "a duplicate completion; ignored", ibv_get_device_name(dev->verbs->device),
                     wc->qp_num, ibv_wc_status_str(wc->status));
        return;
    }
    uatomic_set(&rb->wr.posted, 0);
    gfr_rdma_srq_taken(dev);
    conn = gfr_rdma_conn_table_get(dev, wc->qp_num);
    if (!conn) {
        gfr_rdma_srq_post(dev, rb);
        return;
    }
    if (wc->status == IBV_WC_SUCCESS && received_a_send(conn, wc)) {
        gfr_rdma_rx_handle(conn, rb->addr, 0, rb, wc);
    } else if (wc->status == IBV_WC_SUCCESS) {
        gfr_rdma_srq_post(dev, rb);
    } else {
        int reason = failure_reason(conn, wc);

        log_failed_wr(conn, &rb->wr, wc, reason);
        gfr_rdma_conn_fail(conn, reason);
        gfr_rdma_srq_post(dev, rb);
    }
    gfr_rdma_conn_put(conn);
}

/*
 * Is ctx a work request conn has posted and not yet seen complete?  Its
 * own receives are told by address and their posted flag, send-queue work
 * requests by their entry in the ring.  Nothing is read through ctx until
 * it is known to be one of them.  The poller that owns conn's CQ (or the
 * CM thread holding its poll_lock); takes conn->lock.
 */
static int
posted_on(struct gfr_rdma_conn *conn, const struct gfr_rdma_wr *ctx)
{
    uintptr_t at = (uintptr_t)ctx;
    uintptr_t first = (uintptr_t)conn->recv_wr;
    int held;

    if (conn->recv_wr && at >= first && at < first + conn->nrecv * sizeof(*conn->recv_wr))
        return (at - first) % sizeof(*conn->recv_wr) == 0 && uatomic_read(&ctx->posted);
    pthread_mutex_lock(&conn->lock);
    held = gfr_rdma_sq_holds_locked(conn, ctx);
    pthread_mutex_unlock(&conn->lock);
    return held;
}

/*
 * A completion whose work request is not posted on any live connection of
 * the device: a provider completed it twice, or after its connection
 * ended.  Said, and ignored: its wr_id may point at freed memory, and the
 * work request's reference was dropped by its first completion.
 */
static void
ignore_stray(struct gfr_rdma_dev *dev, struct gfr_rdma_conn *conn, const struct ibv_wc *wc)
{
    if (conn)
        gfr_rdma_conn_log(conn, "QP %u completed a work request that is not posted (%s): "
                          "a duplicate completion; ignored", wc->qp_num,
                          ibv_wc_status_str(wc->status));
    else
        gfr_rdma_log("%s: a completion of QP %u (%s) arrived after its connection ended; "
                     "ignored", ibv_get_device_name(dev->verbs->device), wc->qp_num,
                     ibv_wc_status_str(wc->status));
}

/* One work completion, from a poller (the engine's on_wc): its connection
 * found by QP number (rdma-conn-table.c) and its work request checked
 * against what that connection posted, then handed on by the kind of work
 * request; a send-side one that completed well counts as the rail's
 * progress (rail-timeout-ms).  The lookup's reference keeps the
 * connection alive until the end; the work request's own is dropped with
 * it. */
void
gfr_rdma_cq_complete(struct gfr_rdma_poller *poller, struct ibv_wc *wc)
{
    struct gfr_rdma_wr *ctx = (struct gfr_rdma_wr *)(uintptr_t)wc->wr_id;
    struct gfr_rdma_conn *conn;
    int ok = wc->status == IBV_WC_SUCCESS;
    int is_recv;

    if (wc->wr_id & GFR_WR_ID_SRQ) {
        srq_complete(poller->dev, (struct gfr_rdma_rbuf *)(uintptr_t)(wc->wr_id ^ GFR_WR_ID_SRQ),
                     wc);
        return;
    }
    conn = gfr_rdma_conn_table_get(poller->dev, wc->qp_num);
    if (!conn || !posted_on(conn, ctx)) {
        ignore_stray(poller->dev, conn, wc);
        if (conn)
            gfr_rdma_conn_put(conn);
        return;
    }
    if (!ok) {
        int reason = failure_reason(conn, wc);

        log_failed_wr(conn, ctx, wc, reason);
        gfr_rdma_conn_fail(conn, reason);
    }
    is_recv = ctx->kind == GFR_WR_RECV; /* ctx may be reused once handed on */
    switch (ctx->kind) {
    case GFR_WR_RECV:
        uatomic_set(&ctx->posted, 0);
        if (ok && received_a_send(conn, wc))
            gfr_rdma_rx_handle(conn, conn->recv_buf +
                                  (size_t)ctx->slot * conn->opts.inline_max,
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
    if (ok && !is_recv) /* only conn's poller completes a work request well */
        CMM_STORE_SHARED(conn->sends_done, conn->sends_done + 1);
    gfr_rdma_conn_put(conn); /* the work request's */
    gfr_rdma_conn_put(conn); /* the lookup's */
}

/*
 * The work requests conn has posted and not seen complete, as flushed
 * completions: its send-queue entries in the order they were posted (each
 * retires itself), then its own posted receives.  *wcs is the caller's to
 * free (NULL on -ENOMEM).  Takes conn->lock.  The count, or -ENOMEM.
 */
static int
unfinished_as_flushed(struct gfr_rdma_conn *conn, struct ibv_wc **wcs)
{
    unsigned n = 0;

    pthread_mutex_lock(&conn->lock);
    *wcs = calloc((size_t)conn->sq_count + conn->nrecv + 1, sizeof(**wcs));
    if (*wcs) {
        for (uint32_t i = 0; i < conn->sq_count; i++) {
            uint32_t at = (conn->sq_head + i) % conn->sq_size;

            if (!(conn->sq_state[at] & GFR_SQ_DONE)) /* not completed out of order */
                (*wcs)[n++].wr_id = (uintptr_t)conn->sq_ring[at];
        }
        for (uint32_t i = 0; conn->recv_wr && i < conn->nrecv; i++)
            if (uatomic_read(&conn->recv_wr[i].posted))
                (*wcs)[n++].wr_id = (uintptr_t)&conn->recv_wr[i];
    }
    pthread_mutex_unlock(&conn->lock);
    if (!*wcs)
        return -ENOMEM;
    for (unsigned i = 0; i < n; i++) {
        (*wcs)[i].status = IBV_WC_WR_FLUSH_ERR;
        (*wcs)[i].qp_num = conn->qp_num;
    }
    return (int)n;
}

/*
 * Completes every work request of conn as flushed, through the usual path
 * (gfr_rdma_cq_complete).  For a connection whose CQ is broken, which will
 * never deliver them.  CM thread, holding the poller's poll_lock (no
 * completion of this CQ is being handled meanwhile).  0 or -ENOMEM
 * (nothing done).
 */
static int
complete_as_flushed(struct gfr_rdma_poller *p, struct gfr_rdma_conn *conn)
{
    struct ibv_wc *wcs;
    int n = unfinished_as_flushed(conn, &wcs);

    for (int i = 0; i < n; i++)
        gfr_rdma_cq_complete(p, &wcs[i]);
    free(wcs);
    return n < 0 ? n : 0;
}

/*
 * A connection that ended, whose CM side is done and whose QP has been in
 * the error state since its failure connect-timeout-ms ago, still has work
 * requests the provider never completed: siw leaves one posted to a QP
 * already in error (its peer had closed) in its user-mapped ring, where no
 * flush reaches it, and the connection could never be freed.  Each is
 * completed as flushed by conn's poller (gfr_rdma_poller_inject), and a
 * completion the provider still gives later is ignored as a duplicate.
 * Once per connection.  CM thread.
 */
void
gfr_rdma_cq_flush_stranded(struct gfr_rdma_conn *conn)
{
    struct ibv_wc *wcs;
    int n;

    conn->stranded_flushed = 1;
    n = unfinished_as_flushed(conn, &wcs);
    if (n <= 0) {
        free(wcs);
        return;
    }
    gfr_rdma_conn_log(conn, "QP %u: %d work request(s) not completed %u ms after the "
                      "connection failed, its QP in the error state: the provider will not "
                      "complete them; completing them as flushed", conn->qp_num, n,
                      conn->opts.connect_timeout_ms);
    if (gfr_rdma_poller_inject(conn->poller, wcs, (unsigned)n) != 0)
        conn->stranded_flushed = 0; /* no memory: the next tick tries again */
    free(wcs);
}

static int
on_poller(const struct gfr_rdma_conn *conn, const void *arg)
{
    return conn->poller == arg;
}

/*
 * Ends the connections on a broken CQ and completes their work requests
 * as flushed, so that each ends and is reported to its owner instead of
 * waiting for completions that cannot come.  Receive buffers of the SRQ
 * its QPs had taken are lost with the CQ (said).  1 when done, 0 to try
 * again (the poller still holds poll_lock, or no memory).  CM thread.
 */
static int
abandon(struct gfr_rdma *engine, struct gfr_rdma_poller *p)
{
    struct gfr_rdma_conn *batch[64];
    const unsigned max = sizeof(batch) / sizeof(batch[0]);
    unsigned ended = 0, n;
    int done = 1;

    if (pthread_mutex_trylock(&p->poll_lock) != 0)
        return 0;
    do {
        n = gfr_rdma_conns_collect(engine, on_poller, p, ended, batch, max);
        for (unsigned i = 0; i < n; i++) {
            gfr_rdma_conn_fail(batch[i], -EIO);
            if (complete_as_flushed(p, batch[i]) != 0)
                done = 0;
        }
        ended += n;
    } while (n == max);
    pthread_mutex_unlock(&p->poll_lock);
    if (done)
        gfr_rdma_log("%s poller %u: %u connection(s) on its broken completion queue ended; "
                     "shared receive buffers their QPs had taken are lost with it",
                     ibv_get_device_name(p->dev->verbs->device), p->index, ended);
    return done;
}

/* Looks for pollers whose CQ broke (gfr_rdma_poller_broken) and abandons
 * each once.  CM thread, on every turn; it alone frees devices and
 * connections, so what it collects stays valid. */
void
gfr_rdma_cq_abandon_broken(struct gfr_rdma *engine)
{
    struct gfr_rdma_dev *dev;
    struct gfr_rdma_poller *broken[16];
    unsigned n = 0;

    pthread_mutex_lock(&engine->lock);
    cds_list_for_each_entry(dev, &engine->devices, link)
        for (unsigned i = 0; i < dev->npollers && n < 16; i++)
            if (uatomic_read(&dev->pollers[i].broken) && !dev->pollers[i].abandoned)
                broken[n++] = &dev->pollers[i];
    pthread_mutex_unlock(&engine->lock);
    for (unsigned i = 0; i < n; i++)
        if (abandon(engine, broken[i]))
            uatomic_set(&broken[i]->abandoned, 1);
}
