/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The send side of a connection: choosing how a message travels (inline,
 * as a read list the peer pulls, or written into the peer's write list),
 * send slots, credits and the queue of messages waiting for them.  Locking
 * and lifetime rules: rdma-internal.h.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <urcu/uatomic.h>

#include "gfr_be.h"
#include "rdma-internal.h"

static uint8_t *
slot_buf(const struct gfr_rdma_conn *conn, uint32_t slot)
{
    return conn->send_buf + (size_t)slot * conn->engine->opts.inline_max;
}

/* Writes the header, the lists and the iovecs' bytes into dst.  Returns
 * the length, or -EMSGSIZE when cap is too small. */
static ssize_t
encode_into(const struct gfr_wire_hdr *hdr, const struct gfr_wire_seg *read,
            const struct gfr_wire_seg *write, const struct iovec *iov,
            unsigned iovcnt, uint8_t *dst, size_t cap)
{
    ssize_t n = gfr_wire_encode(hdr, read, write, dst, cap);
    size_t off;

    if (n < 0)
        return n;
    off = (size_t)n;
    for (unsigned i = 0; i < iovcnt; i++) {
        if (iov[i].iov_len > cap - off)
            return -EMSGSIZE;
        if (iov[i].iov_len)
            memcpy(dst + off, iov[i].iov_base, iov[i].iov_len);
        off += iov[i].iov_len;
    }
    return (ssize_t)off;
}

static size_t
iov_total(const struct iovec *iov, unsigned n)
{
    size_t total = 0;

    for (unsigned i = 0; i < n; i++)
        total += iov[i].iov_len;
    return total;
}

/*
 * Encodes a message into a pending entry (malloc'd; the caller owns it).
 * Returns NULL without memory or when it does not encode.
 */
struct gfr_rdma_pending *
gfr_rdma_encode(const struct gfr_wire_hdr *hdr, const struct gfr_wire_seg *read,
                const struct gfr_wire_seg *write, const struct iovec *iov,
                unsigned iovcnt)
{
    size_t len = gfr_wire_hdr_len(hdr->n_read, hdr->n_write) + iov_total(iov, iovcnt);
    struct gfr_rdma_pending *p = malloc(sizeof(*p) + len);

    if (!p)
        return NULL;
    p->offer = NULL;
    if (encode_into(hdr, read, write, iov, iovcnt, p->data, len) != (ssize_t)len) {
        free(p);
        return NULL;
    }
    p->len = len;
    return p;
}

/* Records a posted send-queue work request.  Caller holds conn->lock. */
void
gfr_rdma_sq_push_locked(struct gfr_rdma_conn *conn, struct gfr_rdma_wr *ctx)
{
    conn->sq_ring[(conn->sq_head + conn->sq_count++) % conn->sq_size] = ctx;
}

/*
 * ctx completed: retires it and every send-queue entry posted before it
 * (unsignaled SENDs that completed without a completion of their own),
 * freeing their slots.  Returns how many entries other than ctx were
 * retired: the caller drops that many references (gfr_rdma_sq_put) once
 * it has let go of conn->lock.  Caller holds conn->lock.
 */
unsigned
gfr_rdma_sq_retire_locked(struct gfr_rdma_conn *conn, struct gfr_rdma_wr *ctx)
{
    unsigned earlier = 0;

    while (conn->sq_count) {
        struct gfr_rdma_wr *e = conn->sq_ring[conn->sq_head];

        conn->sq_head = (conn->sq_head + 1) % conn->sq_size;
        conn->sq_count--;
        if (e == ctx)
            return earlier;
        /* Only unsignaled SENDs can be passed over: every other entry has
         * a completion, which came before this one. */
        conn->free_slots[conn->nfree++] = e->slot;
        earlier++;
    }
    return earlier;
}

/* Drops the references of n retired work requests.  No lock held. */
void
gfr_rdma_sq_put(struct gfr_rdma_conn *conn, unsigned n)
{
    while (n--)
        gfr_rdma_conn_put(conn);
}

/*
 * Posts the message already in slot's buffer, stamping its credit grant.
 * It is signaled when the slot's completion must release offer's part, or
 * when half the slots have gone unsignaled (so slots come back while the
 * peer keeps the queue busy); the others are retired by a later
 * completion.  Caller holds conn->lock, has taken the slot and the credit.
 * 0 or a negative errno (the slot is free again then).
 */
static int
post_slot_locked(struct gfr_rdma_conn *conn, uint32_t slot, size_t len, uint16_t grant,
                 struct gfr_rdma_offer *offer)
{
    uint8_t *buf = slot_buf(conn, slot);
    struct gfr_rdma_wr *ctx = &conn->send_wr[slot];
    struct ibv_sge sge = {.addr = (uintptr_t)buf, .length = (uint32_t)len,
                          .lkey = conn->send_mr->lkey};
    struct ibv_send_wr wr;
    int err;

    gfr_put_be16(buf + 4, grant);
    memset(&wr, 0, sizeof(wr));
    wr.wr_id = (uintptr_t)ctx;
    wr.sg_list = &sge;
    wr.num_sge = 1;
    wr.opcode = IBV_WR_SEND;
    if (offer || conn->unsignaled + 1 >= conn->nsend / 2) {
        wr.send_flags = IBV_SEND_SIGNALED;
        conn->unsignaled = 0;
    } else {
        conn->unsignaled++;
    }
    if (len <= conn->dev->max_inline)
        wr.send_flags |= IBV_SEND_INLINE;
    ctx->offer = offer;
    gfr_rdma_conn_get(conn);
    err = gfr_rdma_dev_post_send(conn->dev, conn->qp, &wr);
    if (err) {
        ctx->offer = NULL;
        conn->free_slots[conn->nfree++] = slot;
        gfr_rdma_conn_log(conn, "ibv_post_send failed: %s", strerror(err));
        gfr_rdma_conn_put(conn);
        return -err;
    }
    gfr_rdma_sq_push_locked(conn, ctx);
    if (buf[1] == GFR_WIRE_CREDIT)
        conn->stats.credit_updates++;
    else
        conn->stats.sent++;
    return 0;
}

static int
can_send_data_locked(struct gfr_rdma_conn *conn)
{
    return conn->state == GFR_CONN_ESTABLISHED && cds_list_empty(&conn->pending) &&
           conn->nfree && gfr_credits_can_send_data(&conn->credits);
}

/*
 * Sends what waits for credits or slots, in order, then a CREDIT message
 * if one is due.  A failing post leaves the message queued and ends the
 * connection (the end of the connection releases the queue).  Caller holds
 * conn->lock.
 */
void
gfr_rdma_flush_locked(struct gfr_rdma_conn *conn)
{
    while (conn->state == GFR_CONN_ESTABLISHED && !cds_list_empty(&conn->pending) &&
           conn->nfree && gfr_credits_can_send_data(&conn->credits)) {
        struct gfr_rdma_pending *p =
            cds_list_first_entry(&conn->pending, struct gfr_rdma_pending, link);
        uint32_t slot = conn->free_slots[--conn->nfree];

        memcpy(slot_buf(conn, slot), p->data, p->len);
        if (post_slot_locked(conn, slot, p->len, gfr_credits_take_data(&conn->credits),
                             p->offer) != 0) {
            gfr_rdma_conn_fail_locked(conn, -EIO);
            return;
        }
        cds_list_del(&p->link);
        free(p);
    }
    if (conn->state == GFR_CONN_ESTABLISHED && conn->nfree &&
        gfr_credits_need_update(&conn->credits)) {
        struct gfr_wire_hdr hdr = {.type = GFR_WIRE_CREDIT, .xid = conn->xid};
        uint32_t slot = conn->free_slots[--conn->nfree];

        gfr_wire_encode(&hdr, NULL, NULL, slot_buf(conn, slot), GFR_WIRE_HDR_SIZE);
        if (post_slot_locked(conn, slot, GFR_WIRE_HDR_SIZE,
                             gfr_credits_take_update(&conn->credits), NULL) != 0)
            gfr_rdma_conn_fail_locked(conn, -EIO);
    }
}

void
gfr_rdma_send_flush(struct gfr_rdma_conn *conn)
{
    pthread_mutex_lock(&conn->lock);
    gfr_rdma_flush_locked(conn);
    pthread_mutex_unlock(&conn->lock);
}

/* Queues p (whose offer part it carries) behind what already waits.
 * Caller holds conn->lock. */
void
gfr_rdma_queue_locked(struct gfr_rdma_conn *conn, struct gfr_rdma_pending *p)
{
    cds_list_add_tail(&p->link, &conn->pending);
    conn->stats.queued_for_credits++;
    gfr_rdma_flush_locked(conn);
}

/*
 * Sends a data message now if a slot and a credit allow and nothing waits
 * before it, else queues an encoded copy.  Either way the message carries
 * one part of offer (may be NULL) until its SEND completes.  Caller holds
 * conn->lock.  0, -ENOMEM, or the post's error.
 */
int
gfr_rdma_send_locked(struct gfr_rdma_conn *conn, const struct gfr_wire_hdr *hdr,
                     const struct gfr_wire_seg *read, const struct gfr_wire_seg *write,
                     const struct iovec *iov, unsigned iovcnt,
                     struct gfr_rdma_offer *offer)
{
    struct gfr_rdma_pending *p;

    if (can_send_data_locked(conn)) {
        uint32_t slot = conn->free_slots[--conn->nfree];
        ssize_t len = encode_into(hdr, read, write, iov, iovcnt, slot_buf(conn, slot),
                                  conn->agreed.inline_max);

        if (len < 0) {
            conn->free_slots[conn->nfree++] = slot;
            return (int)len;
        }
        return post_slot_locked(conn, slot, (size_t)len,
                                gfr_credits_take_data(&conn->credits), offer);
    }
    p = gfr_rdma_encode(hdr, read, write, iov, iovcnt);
    if (!p)
        return -ENOMEM;
    p->offer = offer;
    gfr_rdma_queue_locked(conn, p);
    return 0;
}

/* A SEND (or the drain or a keepalive) completed (ok) or was flushed: its slot and
 * those of the unsignaled SENDs before it are free again, its offer part
 * released.  Poller thread. */
void
gfr_rdma_send_complete(struct gfr_rdma_wr *ctx, int ok)
{
    struct gfr_rdma_conn *conn = ctx->conn;
    struct gfr_rdma_offer *offer;
    unsigned retired;

    pthread_mutex_lock(&conn->lock);
    offer = ctx->offer;
    ctx->offer = NULL;
    retired = gfr_rdma_sq_retire_locked(conn, ctx);
    if (ctx->kind == GFR_WR_SEND)
        conn->free_slots[conn->nfree++] = ctx->slot;
    else if (ctx->kind == GFR_WR_KEEPALIVE)
        conn->keepalive_posted = 0;
    gfr_rdma_flush_locked(conn);
    pthread_mutex_unlock(&conn->lock);
    gfr_rdma_sq_put(conn, retired);
    if (offer)
        gfr_rdma_offer_put(conn, offer, ok ? 0 : -ENOTCONN);
}

size_t
gfr_rdma_max_inline(const struct gfr_rdma_conn *conn)
{
    uint32_t limit = conn->agreed.inline_max ? conn->agreed.inline_max
                                             : conn->engine->opts.inline_max;

    return limit - GFR_WIRE_HDR_SIZE;
}

size_t
gfr_rdma_max_msg(const struct gfr_rdma_conn *conn)
{
    return conn->agreed.max_msg ? conn->agreed.max_msg : conn->engine->opts.max_msg;
}

/* How a message travels (see gfr_rdma_msg). */
enum layout {
    LAYOUT_INLINE,    /* head and bulk copied into the SEND */
    LAYOUT_READ_LIST, /* head inline, bulk offered as a read list */
    LAYOUT_ALL_READ,  /* a copy of head and bulk offered as a read list */
    LAYOUT_PUSH,      /* bulk written into the peer's write list */
};

/* A submission being prepared: the caller's message plus what the engine
 * builds for it (registrations, lists, the joined iovecs of an inline
 * body). */
struct submission {
    const struct gfr_rdma_msg *msg;
    enum layout layout;
    size_t head_len, bulk_len;
    struct gfr_rdma_offer *offer;
    struct gfr_wire_seg read[GFR_WIRE_MAX_SEGS];
    struct gfr_wire_seg write[GFR_WIRE_MAX_SEGS];
    unsigned n_read, n_write;
    struct gfr_xfer_local local[GFR_WIRE_MAX_SEGS];
    unsigned n_local;
    struct gfr_rdma_peer_wl *wl; /* PUSH: the peer's list, taken */
};

/* Registers (or copies, when there are more than room) the body pieces as
 * read segments (REMOTE_READ) or as local sources of a push. */
static int
register_pieces(struct gfr_rdma_conn *conn, struct submission *s,
                const struct iovec *iov, unsigned cnt, size_t total, unsigned room,
                int for_push)
{
    int access = for_push ? 0 : IBV_ACCESS_REMOTE_READ;
    unsigned used = 0;
    struct iovec joined;

    for (unsigned i = 0; i < cnt; i++)
        used += iov[i].iov_len != 0;
    if (used > room) {
        /* Too many pieces for one header: offer one copy instead. */
        uint8_t *copy = malloc(total ? total : 1);
        size_t off = 0;

        if (!copy)
            return -ENOMEM;
        for (unsigned i = 0; i < cnt; i++) {
            memcpy(copy + off, iov[i].iov_base, iov[i].iov_len);
            off += iov[i].iov_len;
        }
        free(s->offer->copy);
        s->offer->copy = copy;
        joined.iov_base = copy;
        joined.iov_len = total;
        iov = &joined;
        cnt = 1;
    }
    for (unsigned i = 0; i < cnt; i++) {
        struct ibv_mr *mr;
        int err;

        if (!iov[i].iov_len)
            continue;
        err = gfr_rdma_offer_register(conn, s->offer, iov[i].iov_base, iov[i].iov_len,
                                      access, &mr);
        if (err)
            return err;
        if (for_push)
            s->local[s->n_local++] = (struct gfr_xfer_local){
                (uintptr_t)iov[i].iov_base, (uint32_t)iov[i].iov_len, mr->lkey};
        else
            s->read[s->n_read++] = (struct gfr_wire_seg){
                (uintptr_t)iov[i].iov_base, mr->rkey, (uint32_t)iov[i].iov_len};
    }
    return 0;
}

/* Registers the reply buffers a request offers (remote write access). */
static int
offer_reply_buffers(struct gfr_rdma_conn *conn, struct submission *s)
{
    const struct gfr_rdma_msg *msg = s->msg;

    for (unsigned i = 0; i < msg->reply_cnt; i++) {
        struct ibv_mr *mr;
        int err;

        if (!msg->reply[i].iov_len)
            continue;
        err = gfr_rdma_offer_register(conn, s->offer, msg->reply[i].iov_base,
                                      msg->reply[i].iov_len,
                                      IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE, &mr);
        if (err)
            return err;
        s->write[s->n_write++] = (struct gfr_wire_seg){
            (uintptr_t)msg->reply[i].iov_base, mr->rkey, (uint32_t)msg->reply[i].iov_len};
        s->offer->write_total += msg->reply[i].iov_len;
    }
    if (s->n_write) {
        s->offer->await_reply = 1;
        s->offer->parts++;
    }
    return 0;
}

/* Copies head and bulk into one buffer, offered as a one-segment read
 * list (LAYOUT_ALL_READ). */
static int
copy_and_register(struct gfr_rdma_conn *conn, struct submission *s)
{
    const struct gfr_rdma_msg *msg = s->msg;
    struct iovec all;
    uint8_t *copy = malloc(s->head_len + s->bulk_len);
    size_t off = 0;

    if (!copy)
        return -ENOMEM;
    for (unsigned i = 0; i < msg->head_cnt; i++) {
        memcpy(copy + off, msg->head[i].iov_base, msg->head[i].iov_len);
        off += msg->head[i].iov_len;
    }
    for (unsigned i = 0; i < msg->bulk_cnt; i++) {
        memcpy(copy + off, msg->bulk[i].iov_base, msg->bulk[i].iov_len);
        off += msg->bulk[i].iov_len;
    }
    free(s->offer->copy);
    s->offer->copy = copy;
    all.iov_base = copy;
    all.iov_len = off;
    return register_pieces(conn, s, &all, 1, off, 1, 0);
}

/* Chooses the layout and registers what it needs (no lock held: memory
 * registration is slow). */
static int
prepare(struct gfr_rdma_conn *conn, struct submission *s, uint32_t inline_max,
        uint16_t max_segs)
{
    const struct gfr_rdma_msg *msg = s->msg;
    size_t room;
    int err;

    err = offer_reply_buffers(conn, s);
    if (err)
        return err;
    room = inline_max - gfr_wire_hdr_len(0, s->n_write);
    if (s->head_len + s->bulk_len <= room) {
        s->layout = LAYOUT_INLINE;
        return 0;
    }
    if (msg->is_reply && s->wl && s->bulk_len <= s->wl->total &&
        s->head_len <= inline_max - GFR_WIRE_HDR_SIZE) {
        s->layout = LAYOUT_PUSH;
        return register_pieces(conn, s, msg->bulk, msg->bulk_cnt, s->bulk_len,
                               GFR_WIRE_MAX_SEGS, 1);
    }
    s->offer->await_done = 1;
    s->offer->parts++;
    conn->stats.bulk_offered++;
    if (s->head_len + gfr_wire_hdr_len(1, s->n_write) <= inline_max) {
        unsigned segs = (unsigned)max_segs - s->n_write;

        if (segs > GFR_WIRE_MAX_SEGS)
            segs = GFR_WIRE_MAX_SEGS;
        s->layout = LAYOUT_READ_LIST;
        return register_pieces(conn, s, msg->bulk, msg->bulk_cnt, s->bulk_len, segs, 0);
    }
    /* The head alone is too large to go inline: the peer pulls it all. */
    s->layout = LAYOUT_ALL_READ;
    return copy_and_register(conn, s);
}

/* Puts the prepared message on the wire.  Caller holds conn->lock. */
static int
transmit_locked(struct gfr_rdma_conn *conn, struct submission *s)
{
    const struct gfr_rdma_msg *msg = s->msg;
    struct gfr_wire_hdr hdr = {.type = msg->is_reply ? GFR_WIRE_REPLY : GFR_WIRE_MSG,
                               .n_read = (uint8_t)s->n_read,
                               .n_write = (uint8_t)s->n_write, .xid = msg->xid};
    unsigned n = msg->head_cnt + (s->layout == LAYOUT_INLINE ? msg->bulk_cnt : 0);
    struct iovec small[4];
    struct iovec *iov;
    int err;

    if (s->layout == LAYOUT_ALL_READ)
        n = 0;
    /* The common message has a piece or two: no allocation for it. */
    iov = n <= 4 ? small : calloc(n, sizeof(*iov));
    if (!iov)
        return -ENOMEM;
    if (n)
        memcpy(iov, msg->head, msg->head_cnt * sizeof(*iov));
    if (s->layout == LAYOUT_INLINE && msg->bulk_cnt)
        memcpy(iov + msg->head_cnt, msg->bulk, msg->bulk_cnt * sizeof(*iov));
    hdr.inline_len = (uint32_t)iov_total(iov, n);
    if (s->layout == LAYOUT_PUSH) {
        struct gfr_rdma_pending *reply;

        hdr.written = (uint32_t)s->bulk_len;
        reply = gfr_rdma_encode(&hdr, NULL, NULL, iov, n);
        err = reply ? gfr_rdma_push_start_locked(conn, s->wl, s->local, s->n_local,
                                                 s->bulk_len, reply, s->offer)
                    : -ENOMEM;
        if (err)
            free(reply);
        else
            conn->stats.bulk_pushed += s->bulk_len;
    } else {
        err = gfr_rdma_send_locked(conn, &hdr, s->read, s->write, iov, n, s->offer);
    }
    if (iov != small)
        free(iov);
    return err;
}

/* Is xid already awaiting a DONE or a reply?  Caller holds conn->lock. */
static int
xid_busy_locked(struct gfr_rdma_conn *conn, const struct submission *s)
{
    return (s->offer->await_done && gfr_rdma_offer_find_locked(conn, s->msg->xid, 0)) ||
           (s->offer->await_reply && gfr_rdma_offer_find_locked(conn, s->msg->xid, 1));
}

static int
submit(struct gfr_rdma_conn *conn, const struct gfr_rdma_msg *msg, void *copy)
{
    struct submission s = {.msg = msg};
    uint32_t inline_max;
    uint16_t max_segs;
    int err;

    if (!conn || !msg || (msg->head_cnt && !msg->head) || (msg->bulk_cnt && !msg->bulk) ||
        (msg->reply_cnt && !msg->reply) || (msg->is_reply && msg->reply_cnt))
        return -EINVAL;
    s.head_len = iov_total(msg->head, msg->head_cnt);
    s.bulk_len = iov_total(msg->bulk, msg->bulk_cnt);
    pthread_mutex_lock(&conn->lock);
    inline_max = conn->agreed.inline_max;
    max_segs = conn->agreed.max_segs;
    err = conn->state == GFR_CONN_DISCONNECTING || !inline_max ? -ENOTCONN : 0;
    if (!err && msg->is_reply)
        s.wl = gfr_rdma_peer_wl_take_locked(conn, msg->xid);
    if (!err && !copy && !msg->done && !msg->reply_cnt &&
        GFR_WIRE_HDR_SIZE + s.head_len + s.bulk_len <= inline_max) {
        s.layout = LAYOUT_INLINE; /* no offer: nothing to track */
        err = transmit_locked(conn, &s);
        pthread_mutex_unlock(&conn->lock);
        free(s.wl);
        return err;
    }
    pthread_mutex_unlock(&conn->lock);
    if (err)
        goto out;
    if (s.head_len + s.bulk_len > gfr_rdma_max_msg(conn)) {
        err = -EMSGSIZE;
        goto out;
    }
    if (msg->reply_cnt >= max_segs || msg->reply_cnt >= GFR_WIRE_MAX_SEGS) {
        err = -E2BIG;
        goto out;
    }
    s.offer = gfr_rdma_offer_new();
    if (!s.offer) {
        err = -ENOMEM;
        goto out;
    }
    s.offer->xid = msg->xid;
    s.offer->done = msg->done;
    s.offer->cb_arg = msg->cb_arg;
    s.offer->copy = copy;
    s.offer->parts = 1; /* the SEND */
    copy = NULL;
    err = prepare(conn, &s, inline_max, max_segs);
    if (err)
        goto out;

    pthread_mutex_lock(&conn->lock);
    if (conn->state == GFR_CONN_DISCONNECTING)
        err = -ENOTCONN;
    else if (xid_busy_locked(conn, &s))
        err = -EEXIST;
    if (!err) {
        cds_list_add_tail(&s.offer->link,
                          &conn->offers[msg->xid % GFR_RDMA_XID_BUCKETS]);
        err = transmit_locked(conn, &s);
        if (err)
            cds_list_del_init(&s.offer->link);
    }
    pthread_mutex_unlock(&conn->lock);
out:
    free(s.wl);
    free(copy);
    if (err && s.offer) {
        s.offer->done = NULL; /* never called for a failed submission */
        s.offer->parts = 1;
        gfr_rdma_offer_put(conn, s.offer, err);
    }
    return err;
}

int
gfr_rdma_submit(struct gfr_rdma_conn *conn, const struct gfr_rdma_msg *msg)
{
    return submit(conn, msg, NULL);
}

int
gfr_rdma_send(struct gfr_rdma_conn *conn, const void *data, size_t len)
{
    struct iovec iov = {(void *)data, len};
    struct gfr_rdma_msg msg = {.head = &iov, .head_cnt = 1};
    uint8_t *copy = NULL;

    if (!conn || (len && !data))
        return -EINVAL;
    pthread_mutex_lock(&conn->lock);
    msg.xid = ++conn->xid;
    pthread_mutex_unlock(&conn->lock);
    if (len > gfr_rdma_max_inline(conn)) {
        /* Offered as a read list: the copy lives until the peer's DONE. */
        if (len > gfr_rdma_max_msg(conn))
            return -EMSGSIZE;
        copy = malloc(len);
        if (!copy)
            return -ENOMEM;
        memcpy(copy, data, len);
        iov.iov_base = copy;
        msg.head_cnt = 0;
        msg.bulk = &iov;
        msg.bulk_cnt = 1;
    }
    return submit(conn, &msg, copy);
}
