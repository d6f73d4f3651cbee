/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * A received message handed to GlusterFS (MSG_RECEIVED), on a pool worker
 * or, with dispatch=inline, on the poller thread.
 *
 * vector[0] is the RPC header from the XID on (rpc-clnt and rpcsvc decode
 * it there); the payload follows it in the same iobuf, except for the data
 * of a READ reply, which GlusterFS wants as vector[1] (socket.so does the
 * same).  MAP_XID_REQUEST says which request a reply answers; only its
 * program and procedure numbers are used (see gfr_trans.offered).
 * The pollin is destroyed when notify returns; GlusterFS keeps what it
 * needs by taking iobref references.
 */
#include <errno.h>
#include <limits.h> /* protocol-common.h needs PATH_MAX */
#include <string.h>

#include <glusterfs/rpc/protocol-common.h>
#include <glusterfs/glusterfs-fops.h>

#include "gfr_plugin.h"
#include "rpc-frame.h"

/* Copies [off, off + len) of the body to dst, counted as the connection's
 * copy (bytes.copied). */
static void
copy_out(struct gfr_rdma_conn *conn, const struct gfr_rdma_rx *rx, size_t off, size_t len,
         void *dst)
{
    gfr_frame_copy(rx, off, len, dst);
    gfr_rdma_conn_count_copied(conn, len);
}

/* Copies [off, off + len) of the body into a new iobuf added to iobref. */
static int
copy_to_iobuf(rpc_transport_t *this, struct gfr_rdma_conn *conn, const struct gfr_rdma_rx *rx,
              size_t off, size_t len, struct iobref *iobref, struct iovec *vec)
{
    struct iobuf *iob = iobuf_get2(this->ctx->iobuf_pool, len);

    if (!iob)
        return -ENOMEM;
    copy_out(conn, rx, off, len, iobuf_ptr(iob));
    if (iobref_add(iobref, iob) != 0) {
        iobuf_unref(iob);
        return -ENOMEM;
    }
    iobuf_unref(iob); /* iobref holds it */
    vec->iov_base = iobuf_ptr(iob);
    vec->iov_len = len;
    return 0;
}

static void
hand_up(rpc_transport_t *this, struct iovec *vec, int count, struct iobref *iobref,
        int is_reply)
{
    rpc_transport_pollin_t *pollin;

    pollin = rpc_transport_pollin_alloc(this, vec, count, NULL, iobref, NULL);
    if (!pollin) {
        gf_msg(this->name, GF_LOG_ERROR, ENOMEM, GFR_MSG_NO_MEMORY,
               "no memory to hand up a message from %s", this->peerinfo.identifier);
        return;
    }
    pollin->is_reply = (char)is_reply;
    rpc_transport_notify(this, RPC_TRANSPORT_MSG_RECEIVED, pollin);
    rpc_transport_pollin_destroy(pollin);
}

/*
 * A READ reply with data: header in vector[0], data in vector[1].  When the
 * request offered its reply buffer (rsp_payload; its iobref is what rpc-clnt
 * hands the READ callback), the data is there: RDMA-written by the server
 * (rx->written), or copied there now.  Otherwise it goes to an iobuf of its
 * own in the pollin's iobref, which rpc-clnt passes on instead.
 * -EPROTO: written bytes the request never offered room for.
 */
static int
hand_up_read_reply(struct gfr_trans *priv, struct gfr_rdma_conn *conn,
                   const struct gfr_rdma_rx *rx, const struct gfr_frame *f)
{
    rpc_transport_t *this = priv->trans;
    size_t data_len = f->payload_len ? f->payload_len : rx->written;
    struct iobref *iobref = NULL;
    struct iovec offered, vec[2];
    int into_offered, err;

    into_offered = gfr_plugin_offered_find(priv, rx->xid, &offered, &iobref) == 0 &&
                   iobref && data_len <= offered.iov_len;
    if (rx->written && (!into_offered || f->payload_len)) {
        if (iobref)
            iobref_unref(iobref);
        return -EPROTO;
    }
    if (!into_offered) {
        if (iobref)
            iobref_unref(iobref);
        iobref = iobref_new();
        if (!iobref)
            return -ENOMEM;
    }
    err = copy_to_iobuf(this, conn, rx, f->header_off, f->header_len, iobref, &vec[0]);
    if (!err && into_offered) {
        if (f->payload_len)
            copy_out(conn, rx, f->payload_off, f->payload_len, offered.iov_base);
        vec[1].iov_base = offered.iov_base;
        vec[1].iov_len = data_len;
    } else if (!err) {
        err = copy_to_iobuf(this, conn, rx, f->payload_off, f->payload_len, iobref, &vec[1]);
    }
    if (!err)
        hand_up(this, vec, 2, iobref, 1);
    iobref_unref(iobref);
    return err;
}

/* Everything else: header and payload in one iobuf. */
static int
hand_up_whole(rpc_transport_t *this, struct gfr_rdma_conn *conn, const struct gfr_rdma_rx *rx,
              const struct gfr_frame *f)
{
    struct iobref *iobref = iobref_new();
    struct iovec vec;
    int err;

    if (!iobref)
        return -ENOMEM;
    err = copy_to_iobuf(this, conn, rx, f->header_off, f->header_len + f->payload_len, iobref,
                        &vec);
    if (!err)
        hand_up(this, &vec, 1, iobref, rx->is_reply);
    iobref_unref(iobref);
    return err;
}

/*
 * Does a call count against the brick's outstanding limit (call-limit.h)?
 * The FOP program's calls do, but for the locks that may block: rpcsvc
 * exempts them for the same reason, though only for the program's old
 * version (330; clients since 4.0 send 400).  header: the RPC header from
 * the XID on (XDR: xid, type, rpcvers, prog, vers, proc).
 */
static int
call_counts(const struct gfr_rdma_rx *rx, const struct gfr_frame *f)
{
    uint8_t hdr[24];
    uint32_t proc;

    if (f->header_len < sizeof(hdr))
        return 0;
    gfr_frame_copy(rx, f->header_off, sizeof(hdr), hdr);
    if (gfr_get_be32(hdr + 4) != 0 /* CALL */ || gfr_get_be32(hdr + 12) != GLUSTER_FOP_PROGRAM)
        return 0;
    proc = gfr_get_be32(hdr + 20);
    return proc != GFS3_OP_INODELK && proc != GFS3_OP_FINODELK && proc != GFS3_OP_ENTRYLK &&
           proc != GFS3_OP_FENTRYLK && proc != GFS3_OP_LK;
}

static void
drop_peer(rpc_transport_t *this, struct gfr_rdma_conn *conn, const char *why)
{
    gf_msg(this->name, GF_LOG_ERROR, EPROTO, GFR_MSG_BAD_MESSAGE,
           "%s sent %s; disconnecting", this->peerinfo.identifier, why);
    gfr_rdma_disconnect(conn);
}

void
gfr_plugin_received(struct gfr_rdma_conn *conn, const struct gfr_rdma_rx *rx, void *cb_arg)
{
    struct gfr_trans *priv = cb_arg;
    rpc_transport_t *this = priv->trans;
    rpc_request_info_t info = {.xid = rx->xid};
    const char *why = NULL;
    struct gfr_frame f;
    int err;

    THIS = this->xl;
    if (gfr_frame_parse(rx, &f, &why) != 0) {
        drop_peer(this, conn, why);
        return;
    }
    /* What statedump and `gluster volume status VOLUME clients` show as
     * bytes read (GlusterFS reads it unlocked; several workers may add). */
    __atomic_fetch_add(&this->total_bytes_read,
                       (uint64_t)(f.header_len + f.payload_len + rx->written),
                       __ATOMIC_RELAXED);
    if (!rx->is_reply) {
        if (call_counts(rx, &f))
            gfr_plugin_call_arrived(priv, rx->xid);
        err = hand_up_whole(this, conn, rx, &f);
    } else if (!f.payload_len && !rx->written) {
        err = hand_up_whole(this, conn, rx, &f);
    } else if (rpc_transport_notify(this, RPC_TRANSPORT_MAP_XID_REQUEST, &info) != 0) {
        /* The request is gone (timed out, or its connection was reset):
         * socket.so drops such replies too. */
        gf_msg(this->name, GF_LOG_WARNING, 0, GFR_MSG_UNKNOWN_XID,
               "dropping a reply from %s to unknown request xid 0x%x",
               this->peerinfo.identifier, rx->xid);
        return;
    } else if (info.prognum == GLUSTER_FOP_PROGRAM && info.procnum == GF_FOP_READ) {
        err = hand_up_read_reply(priv, conn, rx, &f);
    } else if (rx->written) {
        err = -EPROTO; /* only READ requests offer buffers */
    } else {
        err = hand_up_whole(this, conn, rx, &f);
    }
    if (err == -EPROTO) {
        drop_peer(this, conn, "a reply that does not fit the buffers its request offered");
    } else if (err) {
        /* Not dropped quietly: ending the connection fails the peer's
         * outstanding calls at once instead of leaving them to time out. */
        gf_msg(this->name, GF_LOG_ERROR, -err, GFR_MSG_NO_MEMORY,
               "cannot hand up a message from %s (%s); disconnecting",
               this->peerinfo.identifier, strerror(-err));
        gfr_rdma_disconnect(conn);
    }
}
