/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Work completions, dispatched by the kind of work request: receives to
 * the receive side, SENDs (and the drain and keepalives) to the send
 * side, READs and WRITEs to their transfer.  A failed work request ends
 * its connection, with a message that says which one failed and how.
 * Poller threads.
 */
#define _GNU_SOURCE
#include <errno.h>

#include "rdma-internal.h"

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
log_failed_wr(struct gfr_rdma_conn *conn, const struct gfr_rdma_wr *ctx,
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
    if (wc->status == IBV_WC_SUCCESS && received_a_send(conn, wc)) {
        gfr_rdma_rx_handle(conn, rb->addr, 0, rb, wc);
    } else if (wc->status == IBV_WC_SUCCESS) {
        gfr_rdma_srq_post(dev, rb);
    } else {
        if (wc->status == IBV_WC_WR_FLUSH_ERR)
            log_unexpected_flush(conn);
        log_failed_wr(conn, ctx, wc);
        gfr_rdma_conn_fail(conn, wc->status == IBV_WC_WR_FLUSH_ERR ? 0 : -EIO);
        gfr_rdma_srq_post(dev, rb);
    }
    gfr_rdma_conn_put(conn);
}

/* One work completion, from a poller (the engine's on_wc): handed on by
 * the kind of work request.  The work request's reference (or, for an SRQ
 * buffer, the one the lookup takes) keeps the connection alive until the
 * end. */
void
gfr_rdma_cq_complete(struct gfr_rdma_poller *poller, struct ibv_wc *wc)
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
        if (ok && received_a_send(conn, wc))
            gfr_rdma_rx_handle(conn, conn->recv_buf +
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
