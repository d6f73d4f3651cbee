/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Bulk data of one connection: our offers (memory registered per transfer,
 * with remote access only until the peer's DONE or reply ends it), the
 * write lists the peer offered with its requests, and the transfers that
 * pull a read list (RDMA READ) or fill a write list (RDMA WRITE), at most
 * rdma-depth operations in flight per connection, each at most
 * segment-size bytes (gfr_xfer plans them).  Locking and lifetime rules:
 * rdma-internal.h.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "gfr_clock.h"
#include "rdma-internal.h"

static void
count_registration(struct gfr_rdma_conn *conn, uint64_t start)
{
    uint64_t spent = gfr_now_ns() - start;

    pthread_mutex_lock(&conn->lock);
    conn->stats.registrations++;
    conn->stats.registration_ns += spent;
    pthread_mutex_unlock(&conn->lock);
}

/* Deregisters n MRs, counting the time.  Any thread, no lock held. */
static void
dereg_mrs(struct gfr_rdma_conn *conn, struct ibv_mr **mr, unsigned n)
{
    uint64_t start;

    if (!n)
        return;
    start = gfr_now_ns();
    for (unsigned i = 0; i < n; i++)
        ibv_dereg_mr(mr[i]);
    count_registration(conn, start);
}

struct gfr_rdma_offer *
gfr_rdma_offer_new(void)
{
    struct gfr_rdma_offer *offer = calloc(1, sizeof(*offer));

    if (offer)
        CDS_INIT_LIST_HEAD(&offer->link);
    return offer;
}

/*
 * Registers [addr, addr + len) for offer with access; the offer owns the
 * MR (deregistered when it ends, or earlier when the peer's DONE or reply
 * revokes remote access).  No lock held (registration is slow).
 */
int
gfr_rdma_offer_register(struct gfr_rdma_conn *conn, struct gfr_rdma_offer *offer,
                        void *addr, size_t len, int access, struct ibv_mr **mrp)
{
    int remote_write = access & IBV_ACCESS_REMOTE_WRITE;
    uint64_t start = gfr_now_ns();
    struct ibv_mr *mr;

    if (remote_write ? offer->n_write_mr >= GFR_WIRE_MAX_SEGS
                     : offer->n_mr >= 2 * GFR_WIRE_MAX_SEGS)
        return -E2BIG;
    mr = ibv_reg_mr(conn->dev->pd, addr, len, access);
    count_registration(conn, start);
    if (!mr) {
        int err = errno ? errno : ENOMEM;

        gfr_rdma_conn_log(conn, "registering %zu bytes at %p for a transfer failed: %s", len, addr,
                          strerror(err));
        return -err;
    }
    if (remote_write)
        offer->write_mr[offer->n_write_mr++] = mr;
    else
        offer->mr[offer->n_mr++] = mr;
    *mrp = mr;
    return 0;
}

/* The offer for xid that awaits a reply (want_reply) or a DONE.  Caller
 * holds conn->lock. */
struct gfr_rdma_offer *
gfr_rdma_offer_find_locked(struct gfr_rdma_conn *conn, uint32_t xid, int want_reply)
{
    struct gfr_rdma_offer *offer;

    cds_list_for_each_entry(offer, &conn->offers[xid % GFR_RDMA_XID_BUCKETS], link)
        if (offer->xid == xid && (want_reply ? offer->await_reply : offer->await_done))
            return offer;
    return NULL;
}

static void
offer_end(struct gfr_rdma_conn *conn, struct gfr_rdma_offer *offer, int status)
{
    dereg_mrs(conn, offer->write_mr, offer->n_write_mr);
    dereg_mrs(conn, offer->mr, offer->n_mr);
    free(offer->copy);
    if (offer->done)
        offer->done(offer->cb_arg, status);
    free(offer);
}

/*
 * Releases one part of offer; the first failure's status sticks.  The last
 * part deregisters everything, frees the copy and calls done.  Takes
 * conn->lock: not with it held.
 */
void
gfr_rdma_offer_put(struct gfr_rdma_conn *conn, struct gfr_rdma_offer *offer, int status)
{
    int last;

    pthread_mutex_lock(&conn->lock);
    if (status && !offer->status)
        offer->status = status;
    last = --offer->parts == 0;
    if (last)
        cds_list_del_init(&offer->link);
    pthread_mutex_unlock(&conn->lock);
    if (last)
        offer_end(conn, offer, offer->status);
}

/* Deregisters the retired MRs whose grace has passed (all with all set).
 * No lock held. */
static void
reap_retired(struct gfr_rdma_conn *conn, int all)
{
    uint64_t now = gfr_now_ns();

    for (;;) {
        struct gfr_rdma_retired *r = NULL;

        pthread_mutex_lock(&conn->lock);
        if (!cds_list_empty(&conn->retired)) {
            r = cds_list_first_entry(&conn->retired, struct gfr_rdma_retired, link);
            if (all || r->expire_ns <= now)
                cds_list_del(&r->link);
            else
                r = NULL;
        }
        pthread_mutex_unlock(&conn->lock);
        if (!r)
            return;
        dereg_mrs(conn, r->mr, r->n);
        free(r);
    }
}

/*
 * Ends the peer's remote access to n MRs: deregisters them, or on a
 * provider that replays requests late (dev->revoke_grace_ns) keeps them on
 * the retired list for that long.  No lock held.
 */
static void
revoke(struct gfr_rdma_conn *conn, struct ibv_mr **mr, unsigned n)
{
    struct gfr_rdma_retired *r;

    if (!n)
        return;
    r = conn->dev->revoke_grace_ns ? malloc(sizeof(*r) + n * sizeof(r->mr[0])) : NULL;
    if (!r) {
        dereg_mrs(conn, mr, n);
        return;
    }
    r->expire_ns = gfr_now_ns() + conn->dev->revoke_grace_ns;
    r->n = n;
    memcpy(r->mr, mr, n * sizeof(r->mr[0]));
    pthread_mutex_lock(&conn->lock);
    cds_list_add_tail(&r->link, &conn->retired);
    pthread_mutex_unlock(&conn->lock);
    reap_retired(conn, 0);
}

/* The reply has arrived: the peer may write no more into our buffers.
 * Poller thread, no lock held; the reply's delivery still holds a part. */
void
gfr_rdma_offer_revoke_writes(struct gfr_rdma_conn *conn, struct gfr_rdma_offer *offer)
{
    unsigned n = offer->n_write_mr;

    offer->n_write_mr = 0;
    revoke(conn, offer->write_mr, n);
}

/* The peer's DONE: it has pulled our read list.  As above. */
static void
offer_revoke_reads(struct gfr_rdma_conn *conn, struct gfr_rdma_offer *offer)
{
    unsigned n = offer->n_mr;

    offer->n_mr = 0;
    revoke(conn, offer->mr, n);
}

/* DONE or ERROR arrived for offer (found and marked by the caller). */
void
gfr_rdma_offer_pulled(struct gfr_rdma_conn *conn, struct gfr_rdma_offer *offer,
                      int status)
{
    offer_revoke_reads(conn, offer);
    gfr_rdma_offer_put(conn, offer, status);
}

/*
 * Keeps the write list the peer offered with request msg for our reply.
 * -EPROTO when another request with this xid still waits for its reply.
 * Caller holds conn->lock.
 */
int
gfr_rdma_peer_wl_add_locked(struct gfr_rdma_conn *conn, const struct gfr_wire_msg *msg)
{
    struct cds_list_head *bucket = &conn->peer_wl[msg->hdr.xid % GFR_RDMA_XID_BUCKETS];
    struct gfr_rdma_peer_wl *wl;

    cds_list_for_each_entry(wl, bucket, link)
        if (wl->xid == msg->hdr.xid)
            return -EPROTO;
    wl = malloc(sizeof(*wl));
    if (!wl)
        return -ENOMEM;
    wl->xid = msg->hdr.xid;
    wl->n = msg->hdr.n_write;
    wl->total = 0;
    for (unsigned i = 0; i < wl->n; i++) {
        wl->seg[i] = msg->write[i];
        wl->total += msg->write[i].length;
    }
    cds_list_add_tail(&wl->link, bucket);
    return 0;
}

/* Takes the write list of request xid (the caller frees it), or NULL.
 * Caller holds conn->lock. */
struct gfr_rdma_peer_wl *
gfr_rdma_peer_wl_take_locked(struct gfr_rdma_conn *conn, uint32_t xid)
{
    struct gfr_rdma_peer_wl *wl;

    cds_list_for_each_entry(wl, &conn->peer_wl[xid % GFR_RDMA_XID_BUCKETS], link)
        if (wl->xid == xid) {
            cds_list_del(&wl->link);
            return wl;
        }
    return NULL;
}

static struct gfr_rdma_xfer *
xfer_new(struct gfr_rdma_conn *conn, int is_pull)
{
    struct gfr_rdma_xfer *x = calloc(1, sizeof(*x));

    if (!x)
        return NULL;
    x->ctx.conn = conn;
    x->ctx.kind = GFR_WR_RDMA;
    x->ctx.xfer = x;
    x->is_pull = is_pull;
    x->state = GFR_XFER_POSTING;
    return x;
}

/*
 * Posts READs and WRITEs of the queued transfers while fewer than
 * rdma-depth are in flight.  A failing post ends the connection.  Caller
 * holds conn->lock.
 */
void
gfr_rdma_xfers_post_locked(struct gfr_rdma_conn *conn)
{
    uint32_t depth = conn->engine->opts.rdma_depth;

    while (conn->state != GFR_CONN_DISCONNECTING && conn->rdma_inflight < depth &&
           !cds_list_empty(&conn->xfers)) {
        struct gfr_rdma_xfer *x =
            cds_list_first_entry(&conn->xfers, struct gfr_rdma_xfer, link);
        struct gfr_xfer_op op;
        struct ibv_sge sge;
        struct ibv_send_wr wr;
        int err;

        if (gfr_xfer_next(&x->plan, &op) != 1) {
            cds_list_del(&x->link);
            x->state = GFR_XFER_DRAINING;
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
        gfr_rdma_conn_get(conn);
        err = gfr_rdma_dev_post_send(conn->dev, conn->qp, &wr);
        if (err) {
            gfr_rdma_conn_log(conn, "posting an RDMA %s of %u bytes failed: %s",
                              x->is_pull ? "READ" : "WRITE", op.length, strerror(err));
            gfr_rdma_conn_put(conn);
            gfr_rdma_conn_fail_locked(conn, -EIO);
            return;
        }
        gfr_rdma_sq_push_locked(conn, &x->ctx);
        x->inflight++;
        conn->rdma_inflight++;
        if (x->plan.left == 0) {
            cds_list_del(&x->link);
            x->state = GFR_XFER_DRAINING;
        }
    }
}

/*
 * Starts pulling the read list of msg into a pull buffer of this poller
 * (the inline part is copied in front, so the receive buffer can be
 * reposted at once).  reply_to: our request this message answers, whose
 * part the delivery will release.  The connection's poller thread, caller
 * holds conn->lock.  0, -ENOMEM, or -EPROTO.
 */
int
gfr_rdma_pull_start_locked(struct gfr_rdma_conn *conn, const struct gfr_wire_msg *msg,
                           struct gfr_rdma_offer *reply_to)
{
    struct gfr_rdma_xfer *x = xfer_new(conn, 1);
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
    cds_list_add_tail(&x->link, &conn->xfers);
    gfr_rdma_xfers_post_locked(conn);
    return 0;
}

/*
 * Starts writing total bytes from local into the peer's write list wl;
 * reply (carrying one part of offer) is sent once they are written.
 * Caller holds conn->lock.  0, -ENOMEM, -EMSGSIZE, -EPROTO.
 */
int
gfr_rdma_push_start_locked(struct gfr_rdma_conn *conn, const struct gfr_rdma_peer_wl *wl,
                           const struct gfr_xfer_local *local, unsigned n_local,
                           uint64_t total, struct gfr_rdma_pending *reply,
                           struct gfr_rdma_offer *offer)
{
    struct gfr_rdma_xfer *x = xfer_new(conn, 0);
    int err;

    if (!x)
        return -ENOMEM;
    memcpy(x->local, local, n_local * sizeof(*local));
    memcpy(x->remote, wl->seg, wl->n * sizeof(wl->seg[0]));
    err = gfr_xfer_init(&x->plan, x->local, n_local, x->remote, wl->n, total,
                        conn->engine->opts.segment_size);
    if (err) {
        free(x);
        return err;
    }
    x->reply = reply;
    x->offer = offer;
    reply->offer = offer;
    cds_list_add_tail(&x->link, &conn->xfers);
    gfr_rdma_xfers_post_locked(conn);
    return 0;
}

/* A pull has all its data (or failed): DONE goes back, the message is
 * delivered.  Poller thread, no lock held. */
static void
pull_finished(struct gfr_rdma_conn *conn, struct gfr_rdma_xfer *x)
{
    struct gfr_wire_hdr done = {.type = GFR_WIRE_DONE, .xid = x->rx.xid};
    int deliver;

    pthread_mutex_lock(&conn->lock);
    deliver = !x->failed && conn->state != GFR_CONN_DISCONNECTING;
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
            gfr_rdma_offer_put(conn, x->reply_to, -ENOTCONN);
    }
    free(x);
}

/*
 * A READ or WRITE of a transfer completed (ok) or was flushed.  The last
 * one of a transfer finishes it: a pull delivers, a push sends its reply.
 * Poller thread.
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
    if (!ok)
        x->failed = 1;
    finished = x->state == GFR_XFER_DRAINING && x->inflight == 0;
    if (finished && !x->is_pull && !x->failed) {
        gfr_rdma_queue_locked(conn, x->reply);
        x->reply = NULL;
    }
    gfr_rdma_xfers_post_locked(conn);
    pthread_mutex_unlock(&conn->lock);
    gfr_rdma_sq_put(conn, retired);
    if (!finished)
        return;
    if (x->is_pull) {
        pull_finished(conn, x);
        return;
    }
    if (x->reply) {
        free(x->reply);
        gfr_rdma_offer_put(conn, x->offer, -ENOTCONN);
    }
    free(x);
}

/*
 * The end of the connection (CM thread, nothing in flight any more):
 * frees transfers that never finished, the queue, the peer's write lists,
 * and ends every offer (done with -ENOTCONN unless an earlier failure was
 * recorded).  Before disconnected is called.
 */
void
gfr_rdma_bulk_release_all(struct gfr_rdma_conn *conn)
{
    struct gfr_rdma_offer *offer;
    struct gfr_rdma_offer *tmp;
    CDS_LIST_HEAD(ended);

    pthread_mutex_lock(&conn->lock);
    while (!cds_list_empty(&conn->xfers)) {
        struct gfr_rdma_xfer *x =
            cds_list_first_entry(&conn->xfers, struct gfr_rdma_xfer, link);

        cds_list_del(&x->link);
        if (x->is_pull) {
            gfr_rdma_pbuf_put(x->pbuf);
        } else {
            free(x->reply);
        }
        free(x);
    }
    while (!cds_list_empty(&conn->pending)) {
        struct gfr_rdma_pending *p =
            cds_list_first_entry(&conn->pending, struct gfr_rdma_pending, link);

        cds_list_del(&p->link);
        free(p);
    }
    for (unsigned b = 0; b < GFR_RDMA_XID_BUCKETS; b++) {
        while (!cds_list_empty(&conn->peer_wl[b])) {
            struct gfr_rdma_peer_wl *wl =
                cds_list_first_entry(&conn->peer_wl[b], struct gfr_rdma_peer_wl, link);

            cds_list_del(&wl->link);
            free(wl);
        }
        cds_list_splice(&conn->offers[b], &ended);
        CDS_INIT_LIST_HEAD(&conn->offers[b]);
    }
    pthread_mutex_unlock(&conn->lock);
    cds_list_for_each_entry_safe(offer, tmp, &ended, link)
        offer_end(conn, offer, offer->status ? offer->status : -ENOTCONN);
    reap_retired(conn, 1); /* the QP is in error: it serves nothing now */
}
