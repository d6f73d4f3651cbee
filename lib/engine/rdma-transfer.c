/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Transfers: the RDMA READs that pull a received message's read list and
 * the RDMA WRITEs that fill a write list the peer offered, at most
 * rdma-depth operations in flight per connection, each at most
 * segment-size bytes (gfr_xfer plans them).  A transfer knows nothing of
 * what it moves: it ends through its finished callback, which the
 * receive side (a pull) or the submission (a push) gave it.  Locking and
 * lifetime rules: engine-state.h.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine-msg.h"

/*
 * A transfer for conn (calloc'd, owned by the caller until
 * gfr_rdma_xfer_start_locked), a pull (RDMA READ) or a push (RDMA WRITE).
 * finished is called once with the transfer when it ends; see
 * gfr_rdma_xfer_finished_fn.  Any thread, no lock needed.
 */
struct gfr_rdma_xfer *
gfr_rdma_xfer_new(struct gfr_rdma_conn *conn, int is_pull, gfr_rdma_xfer_finished_fn finished)
{
    struct gfr_rdma_xfer *x = calloc(1, sizeof(*x));

    if (!x)
        return NULL;
    x->ctx.conn = conn;
    x->ctx.kind = GFR_WR_RDMA;
    x->ctx.xfer = x;
    x->is_pull = is_pull;
    x->state = GFR_XFER_POSTING;
    x->finished = finished;
    return x;
}

/* x has posted its last operation.  Caller holds conn->lock. */
static void
all_posted_locked(struct gfr_rdma_xfer *x)
{
    cds_list_del(&x->link);
    x->state = GFR_XFER_DRAINING;
    if (x->posted)
        x->posted(x);
}

/*
 * Posts READs and WRITEs of the queued transfers while fewer than
 * rdma-depth are in flight.  A failing post ends the connection.  Caller
 * holds conn->lock.
 */
void
gfr_rdma_xfers_post_locked(struct gfr_rdma_conn *conn)
{
    uint32_t depth = conn->opts.rdma_depth;

    while (conn->state != GFR_CONN_DISCONNECTING && conn->rdma_inflight < depth &&
           !cds_list_empty(&conn->xfers)) {
        struct gfr_rdma_xfer *x =
            cds_list_first_entry(&conn->xfers, struct gfr_rdma_xfer, link);
        struct gfr_xfer_op op;
        struct ibv_sge sge;
        struct ibv_send_wr wr;
        int err;

        if (gfr_xfer_next(&x->plan, &op) != 1) {
            all_posted_locked(x);
            continue;
        }
        sge = (struct ibv_sge){.addr = op.local_addr, .length = op.length, .lkey = op.lkey};
        memset(&wr, 0, sizeof(wr));
        wr.wr_id = (uintptr_t)&x->ctx;
        wr.sg_list = &sge;
        wr.num_sge = 1;
        wr.opcode = x->is_pull ? IBV_WR_RDMA_READ : IBV_WR_RDMA_WRITE;
        wr.send_flags = IBV_SEND_SIGNALED;
        wr.wr.rdma.remote_addr = op.remote_addr;
        wr.wr.rdma.rkey = op.rkey;
        err = gfr_rdma_qp_post_locked(conn, &x->ctx, &wr);
        if (err) {
            char what[48];

            snprintf(what, sizeof(what), "posting an RDMA %s of %u bytes",
                     x->is_pull ? "READ" : "WRITE", op.length);
            gfr_rdma_post_failed_locked(conn, what, err);
            return;
        }
        x->inflight++;
        conn->rdma_inflight++;
        conn->reads_inflight += (uint32_t)x->is_pull;
        if (x->is_pull)
            conn->stats.rdma_reads++;
        else
            conn->stats.rdma_writes++;
        if (x->plan.left == 0)
            all_posted_locked(x);
    }
}

/* Queues a prepared transfer (its plan set) and posts what rdma-depth
 * allows.  The connection owns it from here until finished is called.
 * Caller holds conn->lock. */
void
gfr_rdma_xfer_start_locked(struct gfr_rdma_conn *conn, struct gfr_rdma_xfer *x)
{
    cds_list_add_tail(&x->link, &conn->xfers);
    gfr_rdma_xfers_post_locked(conn);
}

/*
 * A READ or WRITE of a transfer completed (ok) or was flushed.  The last
 * one of a transfer ends it: finished is called, with 0 or -EIO (one of
 * its operations failed), after conn->lock is dropped.  Poller thread.
 */
void
gfr_rdma_xfer_complete(struct gfr_rdma_wr *ctx, int ok)
{
    struct gfr_rdma_conn *conn = ctx->conn;
    struct gfr_rdma_xfer *x = ctx->xfer;
    unsigned retired;
    int finished;

    pthread_mutex_lock(&conn->lock);
    retired = gfr_rdma_sq_retire_locked(conn, ctx);
    x->inflight--;
    conn->rdma_inflight--;
    conn->reads_inflight -= (uint32_t)x->is_pull;
    if (!ok)
        x->failed = 1;
    finished = x->state == GFR_XFER_DRAINING && x->inflight == 0;
    gfr_rdma_xfers_post_locked(conn);
    pthread_mutex_unlock(&conn->lock);
    gfr_rdma_sq_put(conn, retired);
    if (finished)
        x->finished(x, x->failed ? -EIO : 0);
}

/*
 * The end of the connection (CM thread, nothing in flight any more):
 * transfers that never finished end with -ECANCELED.  Before the offers
 * are ended.  Takes conn->lock.
 */
void
gfr_rdma_xfers_release_all(struct gfr_rdma_conn *conn)
{
    struct gfr_rdma_xfer *x;
    struct gfr_rdma_xfer *tmp;
    CDS_LIST_HEAD(left);

    pthread_mutex_lock(&conn->lock);
    cds_list_splice(&conn->xfers, &left);
    CDS_INIT_LIST_HEAD(&conn->xfers);
    pthread_mutex_unlock(&conn->lock);
    cds_list_for_each_entry_safe(x, tmp, &left, link)
        x->finished(x, -ECANCELED);
}
