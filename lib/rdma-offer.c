/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Offers: our memory a sent message uses until the engine is done with it
 * (the caller's buffers registered for it, or a copy), counted in parts
 * (rdma-internal.h), with remote access only until the peer's DONE or
 * reply ends it; and the write lists the peer offered with its requests,
 * kept for our replies.  Locking: conn->lock, as each function says.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "rdma-internal.h"

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
    int err;

    if (remote_write ? offer->n_write_mr >= GFR_WIRE_MAX_SEGS
                     : offer->n_mr >= 2 * GFR_WIRE_MAX_SEGS)
        return -E2BIG;
    err = gfr_rdma_mr_register(conn, addr, len, access, mrp);
    if (err)
        return err;
    if (remote_write)
        offer->write_mr[offer->n_write_mr++] = *mrp;
    else
        offer->mr[offer->n_mr++] = *mrp;
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
    gfr_rdma_mr_deregister(conn, offer->write_mr, offer->n_write_mr);
    gfr_rdma_mr_deregister(conn, offer->mr, offer->n_mr);
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

/* The reply has arrived: the peer may write no more into our buffers.
 * Poller thread, no lock held; the reply's delivery still holds a part. */
void
gfr_rdma_offer_revoke_writes(struct gfr_rdma_conn *conn, struct gfr_rdma_offer *offer)
{
    unsigned n = offer->n_write_mr;

    offer->n_write_mr = 0;
    gfr_rdma_mr_revoke(conn, offer->write_mr, n);
}

/* The peer's DONE: it has pulled our read list.  As above. */
static void
offer_revoke_reads(struct gfr_rdma_conn *conn, struct gfr_rdma_offer *offer)
{
    unsigned n = offer->n_mr;

    offer->n_mr = 0;
    gfr_rdma_mr_revoke(conn, offer->mr, n);
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

/*
 * The end of the connection (CM thread, nothing in flight any more):
 * frees the peer's write lists and ends every offer (done with -ENOTCONN
 * unless an earlier failure was recorded), then deregisters what revoking
 * kept.  Before disconnected is called.  Takes conn->lock.
 */
void
gfr_rdma_offers_release_all(struct gfr_rdma_conn *conn)
{
    struct gfr_rdma_offer *offer;
    struct gfr_rdma_offer *tmp;
    CDS_LIST_HEAD(ended);

    pthread_mutex_lock(&conn->lock);
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
    gfr_rdma_mr_reap_retired(conn, 1); /* the QP is in error: it serves nothing now */
}
