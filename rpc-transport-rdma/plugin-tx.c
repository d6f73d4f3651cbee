/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * submit_request and submit_reply: one RPC record becomes one engine
 * message, framed as rpc-frame.h says, zero-copy.
 *
 * A record that fits inline is copied into a send buffer before
 * gfr_rdma_submit returns, so nothing is kept.  Otherwise the engine reads
 * GlusterFS's buffers later (the peer pulls the payload, or the reply is
 * written into what the request offered), and the record's iobref stays
 * referenced until the engine's done callback: the caller drops its own
 * references as soon as submit returns.
 *
 * A READ request offers its reply buffer (rsp_payload) to the server when
 * the data and the reply's headers (REPLY_HEADER_ROOM) would not fit
 * inline anyway; the server then RDMA-writes the data straight into it.
 * Smaller READ replies, 4 KiB reads with the default inline-max of 8 KiB
 * among them, come inline: copying 4 KiB costs about a microsecond, while
 * registering and deregistering the buffer cost 160-190 us a read in the
 * VM (docs/performance.md).  A reply whose headers turn out larger than the
 * room left still arrives, as a read list.
 *
 * Called by rpc-clnt with its conn->lock held and by rpcsvc from any
 * thread; takes priv->lock to find the connection and count itself a
 * submitter, and calls the engine without it (see plugin-conn.c).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "gfr_plugin.h"
#include "rpc-frame.h"

/* Room for a READ reply's RPC and program headers (rpc reply, gfx_read_rsp
 * with its iatt: about 200 bytes, more with xdata). */
#define REPLY_HEADER_ROOM 1024

/* What a record keeps alive until the engine is done with its buffers. */
struct gfr_tx {
    struct gfr_trans *priv;
    struct iobref *iobref;
    struct iobref *rsp_iobref;
    uint8_t prefix[GFR_FRAME_PREFIX];
    /* A READ's offered reply buffer: on priv->offered while listed. */
    struct cds_list_head link;
    uint32_t xid;
    struct iovec offered;
    int listed;
};

/* The engine calls done after the reply of a request that offered
 * buffers has been received, so the entry outlives its lookup. */
static void
tx_done(void *cb_arg, int status)
{
    struct gfr_tx *tx = cb_arg;

    (void)status; /* a failed send has ended its connection (the engine ends a
                   * connection whose post fails): rpc-clnt sees it */
    if (tx->listed) {
        pthread_mutex_lock(&tx->priv->lock);
        cds_list_del(&tx->link);
        pthread_mutex_unlock(&tx->priv->lock);
    }
    if (tx->iobref)
        iobref_unref(tx->iobref);
    if (tx->rsp_iobref)
        iobref_unref(tx->rsp_iobref);
    free(tx);
}

int
gfr_plugin_offered_find(struct gfr_trans *priv, uint32_t xid, struct iovec *buf,
                        struct iobref **iobref)
{
    struct gfr_tx *tx;
    int err = -ENOENT;

    pthread_mutex_lock(&priv->lock);
    cds_list_for_each_entry(tx, &priv->offered, link) {
        if (tx->xid == xid) {
            *buf = tx->offered;
            *iobref = tx->rsp_iobref ? iobref_ref(tx->rsp_iobref) : NULL;
            err = 0;
            break;
        }
    }
    pthread_mutex_unlock(&priv->lock);
    return err;
}

static size_t
iov_bytes(const struct iovec *iov, int count)
{
    size_t n = 0;

    for (int i = 0; i < count; i++)
        n += iov[i].iov_len;
    return n;
}

struct record {
    const rpc_transport_msg_t *msg;
    int is_reply;
    const struct iovec *offer; /* request: reply buffers to offer */
    int offer_cnt;
    struct iobref *offer_iobref;
};

static int
submit_record(rpc_transport_t *this, const struct record *r)
{
    struct gfr_trans *priv = this->private;
    const rpc_transport_msg_t *msg = r->msg;
    struct iovec head[1 + 2 * MAX_IOVEC];
    uint8_t inline_prefix[GFR_FRAME_PREFIX];
    struct gfr_rdma_msg m = {.is_reply = r->is_reply};
    struct gfr_rdma_conn *conn;
    struct gfr_tx *tx = NULL;
    size_t header_len, payload_len;
    int offer, err;

    if (msg->rpchdrcount < 1 || msg->rpchdr[0].iov_len < 4 ||
        msg->rpchdrcount > MAX_IOVEC || msg->proghdrcount > MAX_IOVEC)
        return -EINVAL;
    m.xid = gfr_get_be32(msg->rpchdr[0].iov_base);
    header_len = iov_bytes(msg->rpchdr, msg->rpchdrcount) +
                 iov_bytes(msg->proghdr, msg->proghdrcount);
    payload_len = iov_bytes(msg->progpayload, msg->progpayloadcount);
    head[0].iov_len = GFR_FRAME_PREFIX;
    memcpy(head + 1, msg->rpchdr, msg->rpchdrcount * sizeof(*head));
    if (msg->proghdrcount) /* a portmap query has none, and proghdr is NULL */
        memcpy(head + 1 + msg->rpchdrcount, msg->proghdr,
               msg->proghdrcount * sizeof(*head));
    m.head = head;
    m.head_cnt = 1 + (unsigned)msg->rpchdrcount + (unsigned)msg->proghdrcount;
    m.bulk = msg->progpayload;
    m.bulk_cnt = (unsigned)msg->progpayloadcount;
    /* rpc-clnt's calls are answered; a brick's callbacks are not. */
    m.expects_reply = !r->is_reply && priv->role == GFR_TRANS_CLIENT;

    pthread_mutex_lock(&priv->lock);
    conn = priv->conn;
    if (!conn) {
        pthread_mutex_unlock(&priv->lock);
        return -ENOTCONN;
    }
    /* Only READ offers a reply buffer, and only one. */
    offer = r->offer_cnt == 1 &&
            r->offer->iov_len + REPLY_HEADER_ROOM > gfr_rdma_max_inline(conn);
    if (!offer && GFR_FRAME_PREFIX + header_len + payload_len <=
                      gfr_rdma_max_inline(conn)) {
        head[0].iov_base = inline_prefix; /* copied before submit returns */
    } else {
        tx = calloc(1, sizeof(*tx));
        if (!tx) {
            pthread_mutex_unlock(&priv->lock);
            return -ENOMEM;
        }
        tx->priv = priv;
        head[0].iov_base = tx->prefix;
        tx->iobref = msg->iobref ? iobref_ref(msg->iobref) : NULL;
        if (offer) {
            m.reply = r->offer;
            m.reply_cnt = 1;
            tx->rsp_iobref = r->offer_iobref ? iobref_ref(r->offer_iobref) : NULL;
            tx->xid = m.xid;
            tx->offered = *r->offer;
            tx->listed = 1;
            cds_list_add(&tx->link, &priv->offered);
        }
        m.done = tx_done;
        m.cb_arg = tx;
    }
    gfr_frame_prefix(head[0].iov_base, (uint32_t)header_len);
    /* The engine registers memory in submit: not under priv->lock, which
     * the pollers' tx_done and every other submission need. */
    priv->submitting++;
    pthread_mutex_unlock(&priv->lock);
    err = gfr_rdma_submit(conn, &m);
    if (!err) /* statedump's bytes written (GlusterFS reads it unlocked) */
        __atomic_fetch_add(&this->total_bytes_write, (uint64_t)(header_len + payload_len),
                           __ATOMIC_RELAXED);
    pthread_mutex_lock(&priv->lock);
    if (err && tx && tx->listed) {
        cds_list_del(&tx->link);
        tx->listed = 0;
    }
    if (--priv->submitting == 0)
        pthread_cond_broadcast(&priv->no_submitter);
    pthread_mutex_unlock(&priv->lock);
    if (err && tx)
        tx_done(tx, err); /* never called by the engine for a failed submit */
    return err;
}

static int32_t
report(rpc_transport_t *this, const char *what, int err)
{
    struct gfr_trans *priv = this->private;

    if (!err) {
        if (priv->role == GFR_TRANS_CLIENT)
            rpc_transport_notify(this, RPC_TRANSPORT_MSG_SENT, NULL);
        return 0;
    }
    if (err == -ENOTCONN)
        gf_msg_debug(this->name, 0, "%s to %s: not connected", what,
                     this->peerinfo.identifier);
    else
        gf_msg(this->name, GF_LOG_ERROR, -err, GFR_MSG_SUBMIT_FAILED,
               "cannot send %s to %s: %s", what, this->peerinfo.identifier,
               err == -EMSGSIZE ? "larger than transport.rdma.max-msg" : strerror(-err));
    return -1;
}

int32_t
gfr_plugin_submit_request(rpc_transport_t *this, rpc_transport_req_t *req)
{
    struct record r = {.msg = &req->msg,
                       .offer = req->rsp.rsp_payload,
                       .offer_cnt = req->rsp.rsp_payload_count,
                       .offer_iobref = req->rsp.rsp_iobref};

    return report(this, "a request", submit_record(this, &r));
}

int32_t
gfr_plugin_submit_reply(rpc_transport_t *this, rpc_transport_reply_t *reply)
{
    struct record r = {.msg = &reply->msg, .is_reply = 1};
    int err = submit_record(this, &r);

    /* Submitted or not (a failed one has ended its connection), the call
     * is answered for the brick's outstanding limit. */
    if (reply->msg.rpchdrcount >= 1 && reply->msg.rpchdr[0].iov_len >= 4)
        gfr_plugin_call_replied(this->private, gfr_get_be32(reply->msg.rpchdr[0].iov_base));
    return report(this, "a reply", err);
}
