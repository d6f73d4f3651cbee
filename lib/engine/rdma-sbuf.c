/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Staging buffers: where the bulk of our own messages goes when copying
 * it is cheaper than registering the caller's memory for one transfer
 * (up to copy-max bytes; docs/engine.md, "Bulk data without per-transfer
 * registration").  A staging buffer is registered once and kept, of one
 * of two kinds: the source of a push into the peer's write list needs no
 * remote access (GFR_SBUF_LOCAL); a read list the peer pulls from, or the
 * write list a request offers for its reply, needs remote read and write
 * (GFR_SBUF_REMOTE).
 *
 * A remote kind keeps its rkey valid for the connection's life, and RC
 * lets every queue pair of the device's protection domain use it: a peer
 * that guessed it could reach the buffer from another connection.  Its
 * own peer learns it and only ever finds data exchanged with it there, so
 * rdma-submit.c stages remotely only on connections we opened (a client's
 * peers are its servers) and never on a server, whose other connections
 * are other clients.
 *
 * Free lists by size class (those of the pull buffers, rdma-pbuf.c), at
 * most a few buffers each, under conn->lock; a miss registers a new buffer
 * without the lock (counted as a registration), and a buffer beyond what a
 * class keeps is deregistered when it comes back (a remote kind after the
 * provider's revoke grace, as a revoked read list: rdma-mr.c).
 * Ownership: the offer that took a buffer holds it until the offer ends
 * (rdma-offer.c); the free lists are the connection's, emptied at its end.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "engine-res.h"

static const unsigned class_keep[GFR_BUF_CLASSES] = {8, 4, 4, 1};

static const int kind_access[GFR_SBUF_KINDS] = {
    [GFR_SBUF_LOCAL] = IBV_ACCESS_LOCAL_WRITE,
    [GFR_SBUF_REMOTE] = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_WRITE,
};

/* The largest bulk a staging buffer holds. */
size_t
gfr_rdma_sbuf_max(void)
{
    return gfr_rdma_buf_class_size(GFR_BUF_CLASSES - 1);
}

/* A buffer the peer could reach (GFR_SBUF_REMOTE) goes through the
 * provider's revoke grace (rxe replays READs late: rdma-mr.c), memory and
 * all, while the connection lives; a push source, which no peer can
 * reach, or any buffer once the connection has ended (its QP serves
 * nothing more), at once. */
static void
sbuf_free(struct gfr_rdma_conn *conn, struct gfr_rdma_sbuf *b, int ended)
{
    if (b->kind == GFR_SBUF_REMOTE && !ended) {
        gfr_rdma_mr_revoke_buffer(conn, b->mr, b->mem);
    } else {
        gfr_rdma_mr_deregister(conn, &b->mr, 1);
        free(b->mem);
    }
    free(b);
}

/*
 * A staging buffer of kind and at least len bytes (len <=
 * gfr_rdma_sbuf_max()), from the connection's free list or newly
 * registered.  No lock held:
 * takes conn->lock, and registers without it.  0, -EINVAL, or the
 * allocation's or registration's error (logged by rdma-mr.c).
 */
int
gfr_rdma_sbuf_get(struct gfr_rdma_conn *conn, enum gfr_sbuf_kind kind, size_t len,
                  struct gfr_rdma_sbuf **bp)
{
    int cls = gfr_rdma_buf_class_of(len);
    struct gfr_rdma_sbuf *b;
    int err;

    if (cls < 0 || (unsigned)kind >= GFR_SBUF_KINDS)
        return -EINVAL;
    pthread_mutex_lock(&conn->lock);
    b = conn->sbuf_free[kind][cls];
    if (b) {
        conn->sbuf_free[kind][cls] = b->next_free;
        conn->sbuf_nfree[kind][cls]--;
    }
    pthread_mutex_unlock(&conn->lock);
    if (b) {
        *bp = b;
        return 0;
    }
    b = calloc(1, sizeof(*b));
    if (b)
        b->mem = aligned_alloc(4096, gfr_rdma_buf_class_size(cls));
    if (!b || !b->mem) {
        gfr_rdma_conn_log(conn, "no memory for a %zu-byte staging buffer", gfr_rdma_buf_class_size(cls));
        free(b);
        return -ENOMEM;
    }
    err = gfr_rdma_mr_register(conn, b->mem, gfr_rdma_buf_class_size(cls), kind_access[kind],
                               &b->mr);
    if (err) {
        free(b->mem);
        free(b);
        return err;
    }
    b->kind = kind;
    b->cls = cls;
    *bp = b;
    return 0;
}

/* Gives b back to its connection, or deregisters it when its class keeps
 * enough or the connection has ended (a submission that lost the race
 * with the end gives its buffer back after the drain).  Any thread, no
 * lock held (takes conn->lock). */
void
gfr_rdma_sbuf_put(struct gfr_rdma_conn *conn, struct gfr_rdma_sbuf *b)
{
    int keep, ended;

    pthread_mutex_lock(&conn->lock);
    ended = conn->sbuf_drained;
    keep = !ended && conn->sbuf_nfree[b->kind][b->cls] < class_keep[b->cls];
    if (keep) {
        b->next_free = conn->sbuf_free[b->kind][b->cls];
        conn->sbuf_free[b->kind][b->cls] = b;
        conn->sbuf_nfree[b->kind][b->cls]++;
    }
    pthread_mutex_unlock(&conn->lock);
    if (!keep)
        sbuf_free(conn, b, ended);
}

/* The end of the connection, once its offers have ended: deregisters and
 * frees the free lists, and what comes back later.  Takes conn->lock. */
void
gfr_rdma_sbuf_drain(struct gfr_rdma_conn *conn)
{
    for (int k = 0; k < GFR_SBUF_KINDS; k++) {
        for (int c = 0; c < GFR_BUF_CLASSES; c++) {
            struct gfr_rdma_sbuf *b;

            pthread_mutex_lock(&conn->lock);
            conn->sbuf_drained = 1;
            b = conn->sbuf_free[k][c];
            conn->sbuf_free[k][c] = NULL;
            conn->sbuf_nfree[k][c] = 0;
            pthread_mutex_unlock(&conn->lock);
            while (b) {
                struct gfr_rdma_sbuf *next = b->next_free;

                sbuf_free(conn, b, 1);
                b = next;
            }
        }
    }
}

/* Copies the n iovecs' bytes, in order, into b from offset off on (they
 * fit: the caller chose b's class by their total).  Returns the offset
 * after them.  No state. */
size_t
gfr_rdma_sbuf_copy_in(struct gfr_rdma_sbuf *b, size_t off, const struct iovec *iov, unsigned n)
{
    for (unsigned i = 0; i < n; i++) {
        if (iov[i].iov_len)
            memcpy((uint8_t *)b->mem + off, iov[i].iov_base, iov[i].iov_len);
        off += iov[i].iov_len;
    }
    return off;
}

/* Copies the first len bytes of b out into the n iovecs, in order (len is
 * at most their total).  No state. */
void
gfr_rdma_sbuf_copy_out(const struct gfr_rdma_sbuf *b, size_t len, const struct iovec *iov,
                         unsigned n)
{
    size_t off = 0;

    for (unsigned i = 0; i < n && off < len; i++) {
        size_t take = iov[i].iov_len < len - off ? iov[i].iov_len : len - off;

        memcpy(iov[i].iov_base, (const uint8_t *)b->mem + off, take);
        off += take;
    }
}
