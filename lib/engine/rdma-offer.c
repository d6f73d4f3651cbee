/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Offers: our memory a sent message uses until the engine is done with it
 * (the caller's buffers registered for it, or a copy), until every event
 * it waits for has been dealt with (enum gfr_offer_wait, engine-msg.h),
 * with remote access only until the peer's DONE or reply ends it; and the write lists the peer offered with its requests,
 * kept for our replies.  Locking: conn->lock, as each function says.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine-msg.h"

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

static const char *const wait_names[] = {"SEND", "DONE", "REVOKE", "REPLY", "DELIVERY"};

/* waits as "SEND|DELIVERY" ("none" when empty), in buf.  No state. */
const char *
gfr_rdma_offer_waits_str(unsigned waits, char buf[GFR_OFFER_WAITS_STR_MAX])
{
    size_t used = 0;

    buf[0] = 0;
    for (unsigned i = 0; i < sizeof(wait_names) / sizeof(wait_names[0]); i++)
        if (waits & (1u << i))
            used += (size_t)snprintf(buf + used, GFR_OFFER_WAITS_STR_MAX - used, "%s%s",
                                     used ? "|" : "", wait_names[i]);
    if (waits >> (sizeof(wait_names) / sizeof(wait_names[0])))
        snprintf(buf + used, GFR_OFFER_WAITS_STR_MAX - used, "%s0x%x", used ? "|" : "",
                 waits & ~((1u << (sizeof(wait_names) / sizeof(wait_names[0]))) - 1));
    return buf[0] ? buf : "none";
}

/* The offer for xid that waits for event (GFR_OFFER_DONE or
 * GFR_OFFER_REPLY).  Caller holds conn->lock. */
struct gfr_rdma_offer *
gfr_rdma_offer_find_locked(struct gfr_rdma_conn *conn, uint32_t xid, enum gfr_offer_wait event)
{
    struct gfr_rdma_offer *offer;

    cds_list_for_each_entry(offer, &conn->offers[xid % GFR_RDMA_XID_BUCKETS], link)
        if (offer->xid == xid && (offer->waits & event))
            return offer;
    return NULL;
}

/* An event that was not awaited: a bug of ours, logged with what the
 * offer does wait for. */
static int
not_awaited(struct gfr_rdma_conn *conn, const struct gfr_rdma_offer *offer, unsigned event)
{
    char got[GFR_OFFER_WAITS_STR_MAX], waits[GFR_OFFER_WAITS_STR_MAX];

    gfr_rdma_conn_log(conn, "internal error: the offer of xid %u got %s but waits for %s",
                      offer->xid, gfr_rdma_offer_waits_str(event, got),
                      gfr_rdma_offer_waits_str(offer->waits, waits));
    return -EINVAL;
}

/*
 * The peer's DONE (event GFR_OFFER_DONE) or reply (GFR_OFFER_REPLY) has
 * arrived for offer: it now waits for that event to be handled (REVOKE or
 * DELIVERY), so the offer stays and a second one for its xid finds
 * nothing.  Caller holds conn->lock.  0, or -EINVAL when the offer did not
 * wait for it (logged).
 */
int
gfr_rdma_offer_arrived_locked(struct gfr_rdma_conn *conn, struct gfr_rdma_offer *offer,
                              enum gfr_offer_wait event)
{
    unsigned next = event == GFR_OFFER_DONE ? GFR_OFFER_REVOKE : GFR_OFFER_DELIVERY;

    if ((event != GFR_OFFER_DONE && event != GFR_OFFER_REPLY) || !(offer->waits & event))
        return not_awaited(conn, offer, event);
    offer->waits = (offer->waits & ~(unsigned)event) | next;
    return 0;
}

static void
offer_end(struct gfr_rdma_conn *conn, struct gfr_rdma_offer *offer, int status)
{
    gfr_rdma_mr_deregister(conn, offer->write_mr, offer->n_write_mr);
    gfr_rdma_mr_deregister(conn, offer->mr, offer->n_mr);
    if (offer->staged)
        gfr_rdma_sbuf_put(conn, offer->staged);
    if (offer->landing)
        gfr_rdma_sbuf_put(conn, offer->landing);
    free(offer->copy);
    if (offer->done)
        offer->done(offer->cb_arg, status);
    free(offer);
}

/*
 * event has been dealt with (any thread); the first failure's status
 * sticks.  When the offer waits for nothing more it is unlinked, and
 * everything is deregistered, the copy freed and done called.  Takes
 * conn->lock: not with it held.  An event the offer did not wait for is
 * logged and changes nothing.
 */
void
gfr_rdma_offer_settle(struct gfr_rdma_conn *conn, struct gfr_rdma_offer *offer,
                      enum gfr_offer_wait event, int status)
{
    int last;

    pthread_mutex_lock(&conn->lock);
    if (!(offer->waits & event)) {
        not_awaited(conn, offer, event);
        pthread_mutex_unlock(&conn->lock);
        return;
    }
    if (status && !offer->status)
        offer->status = status;
    offer->waits &= ~(unsigned)event;
    last = offer->waits == 0;
    if (last)
        cds_list_del_init(&offer->link);
    pthread_mutex_unlock(&conn->lock);
    if (last)
        offer_end(conn, offer, offer->status);
}

/* A submission that failed before its offer went on conn->offers: it
 * ends now, with status, its done callback cleared by the caller.  No
 * lock held. */
void
gfr_rdma_offer_abandon(struct gfr_rdma_conn *conn, struct gfr_rdma_offer *offer, int status)
{
    offer_end(conn, offer, status);
}

/* The reply has arrived: the peer may write no more into our buffers,
 * and what it wrote into a staging buffer (written bytes, checked against
 * what was offered) is copied out into the caller's before delivery.
 * Poller thread, no lock held; the offer waits for the reply's delivery. */
void
gfr_rdma_offer_revoke_writes(struct gfr_rdma_conn *conn, struct gfr_rdma_offer *offer,
                             uint32_t written)
{
    unsigned n = offer->n_write_mr;

    if (offer->landing && written) {
        gfr_rdma_sbuf_copy_out(offer->landing, written, offer->reply, offer->reply_cnt);
        gfr_rdma_count_copied(conn, written);
        pthread_mutex_lock(&conn->lock);
        conn->stats.staged_bytes += written;
        pthread_mutex_unlock(&conn->lock);
    }
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

/* DONE or ERROR arrived for offer (gfr_rdma_offer_arrived_locked): the
 * read list is revoked, and REVOKE settled with status.  No lock held. */
void
gfr_rdma_offer_pulled(struct gfr_rdma_conn *conn, struct gfr_rdma_offer *offer,
                      int status)
{
    offer_revoke_reads(conn, offer);
    gfr_rdma_offer_settle(conn, offer, GFR_OFFER_REVOKE, status);
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
