/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Submitting a message: choosing how it travels (inline, as a read list
 * the peer pulls, or written into the write list the peer offered with
 * its request), registering what that needs without conn->lock, and
 * handing it to the send queue (rdma-tx.c) or to a push transfer.
 * Locking and lifetime rules: engine-state.h.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "gfr_clock.h"
#include "engine-rx.h"

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
    const struct gfr_rdma_tag *tag;
    enum layout layout;
    size_t head_len, bulk_len;
    struct gfr_rdma_offer *offer;
    struct gfr_wire_seg read[GFR_WIRE_MAX_SEGS];
    struct gfr_wire_seg write[GFR_WIRE_MAX_SEGS];
    unsigned n_read, n_write;
    struct gfr_xfer_local local[GFR_WIRE_MAX_SEGS];
    unsigned n_local;
    struct gfr_rdma_peer_wl *wl; /* PUSH: the peer's list, taken */
    size_t staged_bytes;         /* copied into staging buffers */
};

/*
 * Is copying len bytes of bulk through a staging buffer of kind the way
 * (copy-max, docs/engine.md)?  Not for a remotely accessible one on a
 * connection a listener accepted: there the device's other connections
 * are other clients, and one that guessed the rkey could reach the buffer
 * (rdma-sbuf.c); such bulk is registered for its one transfer.
 */
static int
stages(const struct gfr_rdma_conn *conn, enum gfr_sbuf_kind kind, size_t len)
{
    return len && len <= conn->opts.copy_max && len <= gfr_rdma_sbuf_max() &&
           (kind == GFR_SBUF_LOCAL || !conn->is_server);
}

/* Copies the pieces into the offer's staging buffer: one read segment, or
 * one local source of a push.  No lock held. */
static int
stage_pieces(struct gfr_rdma_conn *conn, struct submission *s, const struct iovec *iov,
             unsigned cnt, size_t total, int for_push)
{
    struct gfr_rdma_sbuf *b;
    int err = gfr_rdma_sbuf_get(conn, for_push ? GFR_SBUF_LOCAL : GFR_SBUF_REMOTE, total, &b);

    if (err)
        return err;
    s->offer->staged = b;
    gfr_rdma_sbuf_copy_in(b, 0, iov, cnt);
    gfr_rdma_count_copied(conn, total);
    s->staged_bytes += total;
    if (for_push)
        s->local[s->n_local++] =
            (struct gfr_xfer_local){(uintptr_t)b->mem, (uint32_t)total, b->mr->lkey};
    else
        s->read[s->n_read++] =
            (struct gfr_wire_seg){(uintptr_t)b->mem, b->mr->rkey, (uint32_t)total};
    return 0;
}

/* Stages the body pieces (up to copy-max), or registers them (or a copy,
 * when there are more than room) as read segments (REMOTE_READ) or as
 * local sources of a push. */
static int
register_pieces(struct gfr_rdma_conn *conn, struct submission *s,
                const struct iovec *iov, unsigned cnt, size_t total, unsigned room,
                int for_push)
{
    int access = for_push ? 0 : IBV_ACCESS_REMOTE_READ;
    unsigned used = 0;
    struct iovec joined;

    if (stages(conn, for_push ? GFR_SBUF_LOCAL : GFR_SBUF_REMOTE, total))
        return stage_pieces(conn, s, iov, cnt, total, for_push);
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
        gfr_rdma_count_copied(conn, off);
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

/*
 * Offers a staging buffer for the reply's bulk, as one write segment of
 * the reply buffers' total; the reply's written bytes are copied out into
 * them when it comes (gfr_rdma_offer_revoke_writes).
 */
static int
offer_landing(struct gfr_rdma_conn *conn, struct submission *s, size_t total)
{
    const struct gfr_rdma_msg *msg = s->msg;
    int err = gfr_rdma_sbuf_get(conn, GFR_SBUF_REMOTE, total, &s->offer->landing);

    if (err)
        return err;
    memcpy(s->offer->reply, msg->reply, msg->reply_cnt * sizeof(msg->reply[0]));
    s->offer->reply_cnt = msg->reply_cnt;
    s->write[s->n_write++] = (struct gfr_wire_seg){
        (uintptr_t)s->offer->landing->mem, s->offer->landing->mr->rkey, (uint32_t)total};
    s->offer->write_total = total;
    s->offer->waits |= GFR_OFFER_REPLY;
    return 0;
}

/* Registers the reply buffers a request offers (remote write access), or
 * offers a staging buffer in their place (up to copy-max). */
static int
offer_reply_buffers(struct gfr_rdma_conn *conn, struct submission *s)
{
    const struct gfr_rdma_msg *msg = s->msg;
    size_t total = gfr_rdma_iov_total(msg->reply, msg->reply_cnt);

    if (stages(conn, GFR_SBUF_REMOTE, total))
        return offer_landing(conn, s, total);
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
    if (s->n_write)
        s->offer->waits |= GFR_OFFER_REPLY;
    return 0;
}

/* Copies head and bulk into one buffer, offered as a one-segment read
 * list (LAYOUT_ALL_READ). */
static int
copy_and_register(struct gfr_rdma_conn *conn, struct submission *s)
{
    const struct gfr_rdma_msg *msg = s->msg;
    struct iovec all;
    uint8_t *copy;
    size_t off = 0;

    if (stages(conn, GFR_SBUF_REMOTE, s->head_len + s->bulk_len)) {
        struct gfr_rdma_sbuf *b;
        int err = gfr_rdma_sbuf_get(conn, GFR_SBUF_REMOTE, s->head_len + s->bulk_len, &b);

        if (err)
            return err;
        s->offer->staged = b;
        off = gfr_rdma_sbuf_copy_in(b, 0, msg->head, msg->head_cnt);
        off = gfr_rdma_sbuf_copy_in(b, off, msg->bulk, msg->bulk_cnt);
        gfr_rdma_count_copied(conn, off);
        s->staged_bytes += off;
        s->read[s->n_read++] = (struct gfr_wire_seg){(uintptr_t)b->mem, b->mr->rkey,
                                                     (uint32_t)off};
        return 0;
    }
    copy = malloc(s->head_len + s->bulk_len);
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
    gfr_rdma_count_copied(conn, off);
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
    size_t lists, room;
    int err;

    err = offer_reply_buffers(conn, s);
    if (err)
        return err;
    lists = gfr_wire_hdr_len(0, s->n_write);
    if (lists > inline_max) {
        gfr_rdma_conn_log(conn, "a message offering %u reply buffers needs a %zu-byte header, "
                          "more than the %u bytes a message may have inline: refused",
                          s->n_write, lists, inline_max);
        return -EMSGSIZE;
    }
    room = inline_max - lists;
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
    s->offer->waits |= GFR_OFFER_DONE;
    if (s->head_len + gfr_wire_hdr_len(1, s->n_write) <= inline_max) {
        /* As many read segments as the agreement allows and the header,
         * with the head behind it, still fits inline: more pieces than
         * that are offered as one copy. */
        size_t fit = (room - s->head_len) / GFR_WIRE_SEG_SIZE;
        unsigned segs = (unsigned)max_segs - s->n_write;

        if (segs > GFR_WIRE_MAX_SEGS)
            segs = GFR_WIRE_MAX_SEGS;
        if (segs > fit)
            segs = (unsigned)fit;
        s->layout = LAYOUT_READ_LIST;
        return register_pieces(conn, s, msg->bulk, msg->bulk_cnt, s->bulk_len, segs, 0);
    }
    /* The head alone is too large to go inline: the peer pulls it all. */
    s->layout = LAYOUT_ALL_READ;
    return copy_and_register(conn, s);
}

/*
 * A push has posted its last WRITE (gfr_rdma_xfer_posted_fn): its reply
 * goes into the send queue now, behind the WRITEs on the same queue pair.
 * RC delivers it after their data is placed, and a WRITE that fails moves
 * the queue pair to the error state, which flushes the reply instead: the
 * peer never sees a reply without its data, and no wait for the WRITEs'
 * completions (and a poller's wake-up) sits between the data and the
 * reply.  Caller holds conn->lock.
 */
static void
push_posted(struct gfr_rdma_xfer *x)
{
    struct gfr_rdma_pending *reply = x->reply;

    x->reply = NULL;
    gfr_rdma_queue_locked(x->ctx.conn, reply);
}

/*
 * A push ended (gfr_rdma_xfer_finished_fn).  Its reply went to the send
 * queue when the last WRITE was posted, and its offer part ends with that
 * SEND; a push cancelled or failed before that drops the reply and
 * releases its part with -ENOTCONN (cancelled at the end of the
 * connection: the offer ends with the others).  Poller thread, or the CM
 * thread at the end; no lock held.
 */
static void
push_finished(struct gfr_rdma_xfer *x, int status)
{
    struct gfr_rdma_conn *conn = x->ctx.conn;

    if (x->reply) {
        free(x->reply);
        if (status != -ECANCELED)
            gfr_rdma_offer_settle(conn, x->offer, GFR_OFFER_SEND, -ENOTCONN);
    }
    free(x);
}

/*
 * Starts writing the submission's bulk (s->local) into the peer's write
 * list s->wl; reply (carrying one part of s->offer) follows the last
 * WRITE (push_posted).  Caller holds conn->lock.  0, -ENOMEM, -EMSGSIZE,
 * -EPROTO.
 */
static int
push_start_locked(struct gfr_rdma_conn *conn, const struct submission *s,
                  struct gfr_rdma_pending *reply)
{
    struct gfr_rdma_xfer *x = gfr_rdma_xfer_new(conn, 0, push_finished);
    int err;

    if (!x)
        return -ENOMEM;
    x->posted = push_posted;
    memcpy(x->local, s->local, s->n_local * sizeof(s->local[0]));
    memcpy(x->remote, s->wl->seg, s->wl->n * sizeof(s->wl->seg[0]));
    err = gfr_xfer_init(&x->plan, x->local, s->n_local, x->remote, s->wl->n, s->bulk_len,
                        conn->opts.segment_size);
    if (err) {
        free(x);
        return err;
    }
    x->reply = reply;
    x->offer = s->offer;
    reply->offer = s->offer;
    gfr_rdma_xfer_start_locked(conn, x);
    return 0;
}

/* Puts the prepared message on the wire.  Caller holds conn->lock. */
static int
transmit_locked(struct gfr_rdma_conn *conn, struct submission *s)
{
    const struct gfr_rdma_msg *msg = s->msg;
    struct gfr_wire_hdr hdr = {.type = msg->is_reply ? GFR_WIRE_REPLY : GFR_WIRE_MSG,
                               .n_read = (uint8_t)s->n_read,
                               .n_write = (uint8_t)s->n_write, .xid = msg->xid,
                               .flags = (s->offer && s->offer->reply_ends_reads
                                             ? GFR_WIRE_F_REPLY_ENDS_READS : 0) |
                                        (s->tag ? GFR_WIRE_F_AWAITS_REPLY : 0) |
                                        (s->tag && s->tag->resend ? GFR_WIRE_F_RESEND : 0),
                               .written = s->tag ? s->tag->mark : 0};
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
    hdr.inline_len = (uint32_t)gfr_rdma_iov_total(iov, n);
    if (s->layout == LAYOUT_PUSH) {
        struct gfr_rdma_pending *reply;

        hdr.written = (uint32_t)s->bulk_len;
        err = gfr_rdma_encode(&hdr, NULL, NULL, iov, n, gfr_rdma_send_cap(conn), &reply);
        if (!err) {
            gfr_rdma_count_copied(conn, hdr.inline_len);
            err = push_start_locked(conn, s, reply);
            if (err)
                free(reply);
            else
                conn->stats.bulk_pushed += s->bulk_len;
        }
    } else {
        err = gfr_rdma_send_locked(conn, &hdr, s->read, s->write, iov, n, s->offer);
    }
    if (iov != small)
        free(iov);
    return err;
}

/*
 * A message of ours that is not a reply, on a connection we opened, is a
 * request whose reply will come: the poller polls for it a while rather
 * than sleep (rdma-poller.c, reply-spin-max-us; adaptive polling only).
 * The time it was sent is kept for its round trip (rdma-rx.c).  Caller
 * holds conn->lock.
 */
static void
await_reply_locked(struct gfr_rdma_conn *conn, const struct gfr_rdma_msg *msg)
{
    const struct gfr_rdma_opts *opts = &conn->opts;

    if (msg->is_reply || conn->is_server || opts->poll_mode != GFR_POLL_ADAPTIVE ||
        !opts->reply_spin_max_us)
        return;
    conn->awaiting++;
    conn->sent_at[msg->xid % GFR_RDMA_XID_BUCKETS] =
        (struct gfr_rdma_sent_at){.xid = msg->xid, .ns = gfr_now_ns()};
    gfr_rdma_poller_expect(conn->poller, gfr_rtt_early(&conn->rtt),
                           gfr_rtt_bound(&conn->rtt, (uint64_t)opts->spin_us * 1000,
                                         (uint64_t)opts->reply_spin_max_us * 1000));
}

/* Is xid already awaiting a DONE or a reply?  Caller holds conn->lock. */
static int
xid_busy_locked(struct gfr_rdma_conn *conn, const struct submission *s)
{
    return ((s->offer->waits & GFR_OFFER_DONE) &&
            gfr_rdma_offer_find_locked(conn, s->msg->xid, GFR_OFFER_DONE)) ||
           ((s->offer->waits & GFR_OFFER_REPLY) &&
            gfr_rdma_offer_find_locked(conn, s->msg->xid, GFR_OFFER_REPLY));
}

static int
submit(struct gfr_rdma_conn *conn, const struct gfr_rdma_msg *msg, void *copy,
       const struct gfr_rdma_tag *tag)
{
    struct submission s = {.msg = msg, .tag = tag};
    uint32_t inline_max;
    uint16_t max_segs;
    int held = 0;
    int err;

    if (!conn || !msg || (msg->head_cnt && !msg->head) || (msg->bulk_cnt && !msg->bulk) ||
        (msg->reply_cnt && !msg->reply) ||
        (msg->is_reply && (msg->reply_cnt || msg->expects_reply)) ||
        (tag && !gfr_rdma_msg_awaits_reply(msg)))
        return -EINVAL;
    s.head_len = gfr_rdma_iov_total(msg->head, msg->head_cnt);
    s.bulk_len = gfr_rdma_iov_total(msg->bulk, msg->bulk_cnt);
    pthread_mutex_lock(&conn->lock);
    inline_max = conn->agreed.inline_max;
    max_segs = conn->agreed.max_segs;
    err = conn->state == GFR_CONN_DISCONNECTING || !inline_max ? -ENOTCONN : 0;
    if (!err)
        gfr_rdma_trace_submit_locked(conn, msg->xid, msg->is_reply);
    if (!err && msg->is_reply)
        s.wl = gfr_rdma_peer_wl_take_locked(conn, msg->xid);
    if (!err && !copy && !msg->done && !msg->reply_cnt &&
        GFR_WIRE_HDR_SIZE + s.head_len + s.bulk_len <= inline_max) {
        s.layout = LAYOUT_INLINE; /* no offer: nothing to track */
        err = transmit_locked(conn, &s);
        if (!err)
            await_reply_locked(conn, msg);
        pthread_mutex_unlock(&conn->lock);
        free(s.wl);
        return err;
    }
    /* What follows registers memory on the device's PD without
     * conn->lock: a reference keeps the connection, and with it the
     * device and its PD, from being finalized meanwhile (a DEVICE_REMOVAL
     * frees them once the last connection on the device is gone). */
    if (!err && !(held = gfr_rdma_conn_tryget(conn)))
        err = -ENOTCONN;
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
    s.offer->waits = GFR_OFFER_SEND;
    copy = NULL;
    err = prepare(conn, &s, inline_max, max_segs);
    if (err)
        goto out;
    /* A request its peer answers: one SEND fewer per bulk request.  Not a
     * resend: the reply may answer an earlier copy before the peer has
     * pulled this one (docs/multi-rail.md). */
    s.offer->reply_ends_reads = msg->expects_reply && s.n_read && !(tag && tag->resend);

    pthread_mutex_lock(&conn->lock);
    if (conn->state == GFR_CONN_DISCONNECTING)
        err = -ENOTCONN;
    else if (xid_busy_locked(conn, &s))
        err = -EEXIST;
    if (!err) {
        cds_list_add_tail(&s.offer->link,
                          &conn->offers[msg->xid % GFR_RDMA_XID_BUCKETS]);
        err = transmit_locked(conn, &s);
        if (err) {
            cds_list_del_init(&s.offer->link);
        } else {
            await_reply_locked(conn, msg);
            conn->stats.staged_bytes += s.staged_bytes;
            if (s.offer->waits & GFR_OFFER_DONE)
                conn->stats.bulk_offered++;
        }
    }
    pthread_mutex_unlock(&conn->lock);
out:
    free(s.wl);
    free(copy);
    if (err && s.offer) {
        s.offer->done = NULL; /* never called for a failed submission */
        gfr_rdma_offer_abandon(conn, s.offer, err);
    }
    if (held) /* after the abandoned offer's deregistrations */
        gfr_rdma_conn_put(conn);
    return err;
}

int
gfr_rdma_conn_submit(struct gfr_rdma_conn *conn, const struct gfr_rdma_msg *msg)
{
    return submit(conn, msg, NULL, NULL);
}

int
gfr_rdma_conn_submit_tagged(struct gfr_rdma_conn *conn, const struct gfr_rdma_msg *msg,
                            const struct gfr_rdma_tag *tag)
{
    return submit(conn, msg, NULL, tag);
}

int
gfr_rdma_conn_send(struct gfr_rdma_conn *conn, const void *data, size_t len)
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
        /* Offered as a read list: staged during submit (copy-max), or
         * else a copy that lives until the peer's DONE. */
        if (len > gfr_rdma_max_msg(conn))
            return -EMSGSIZE;
        msg.head_cnt = 0;
        msg.bulk = &iov;
        msg.bulk_cnt = 1;
        if (!stages(conn, GFR_SBUF_REMOTE, len)) {
            copy = malloc(len);
            if (!copy)
                return -ENOMEM;
            memcpy(copy, data, len);
            gfr_rdma_count_copied(conn, len);
            iov.iov_base = copy;
        }
    }
    return submit(conn, &msg, copy, NULL);
}

/* A control message of the bundle's on conn (engine-rx.h). */
static int
send_control(struct gfr_rdma_conn *conn, const struct gfr_wire_hdr *hdr)
{
    int err = -ENOTCONN;

    pthread_mutex_lock(&conn->lock);
    if (conn->state == GFR_CONN_ESTABLISHED) {
        err = gfr_rdma_send_locked(conn, hdr, NULL, NULL, NULL, 0, NULL);
        if (err) /* no memory to queue it: the peer would wait for it forever */
            gfr_rdma_conn_fail_locked(conn, err);
    }
    pthread_mutex_unlock(&conn->lock);
    return err;
}

int
gfr_rdma_conn_send_fence(struct gfr_rdma_conn *conn, uint8_t rail_id)
{
    struct gfr_wire_hdr hdr = {.type = GFR_WIRE_FENCE, .xid = rail_id};

    return send_control(conn, &hdr);
}

int
gfr_rdma_conn_refuse_copy(struct gfr_rdma_conn *conn, uint32_t xid)
{
    struct gfr_wire_hdr hdr = {.type = GFR_WIRE_ERROR, .xid = xid, .written = EALREADY};
    struct gfr_rdma_peer_wl *wl;

    pthread_mutex_lock(&conn->lock);
    wl = gfr_rdma_peer_wl_take_locked(conn, xid);
    pthread_mutex_unlock(&conn->lock);
    if (!wl)
        return 0;
    free(wl);
    return send_control(conn, &hdr);
}
