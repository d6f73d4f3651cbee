/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * One connection: its QP and registered buffers, the send path with
 * credits, completions, and the end of its life.  See rdma-internal.h for
 * the locking and lifetime rules.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <urcu/uatomic.h>

#include "rdma-internal.h"

static void wr_done(struct gfr_rdma_conn *conn);

void
gfr_rdma_log(const char *fmt, ...)
{
    va_list ap;

    fprintf(stderr, "gfr-rdma: ");
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
}

void
gfr_rdma_conn_local_params(const struct gfr_rdma *engine,
                           struct gfr_cm_params *params)
{
    params->credits = (uint16_t)engine->opts.credits;
    params->inline_max = engine->opts.inline_max;
    params->max_msg = engine->opts.max_msg;
    params->max_segs = GFR_WIRE_MAX_SEGS;
}

struct gfr_rdma_conn *
gfr_rdma_conn_new(struct gfr_rdma *engine)
{
    struct gfr_rdma_conn *conn = calloc(1, sizeof(*conn));

    if (!conn)
        return NULL;
    conn->kind = GFR_CM_CTX_CONN;
    conn->engine = engine;
    conn->outstanding = 1; /* the CM side's reference */
    pthread_mutex_init(&conn->lock, NULL);
    CDS_INIT_LIST_HEAD(&conn->pending);
    pthread_mutex_lock(&engine->lock);
    cds_list_add_tail(&conn->link, &engine->conns);
    pthread_mutex_unlock(&engine->lock);
    return conn;
}

static int
cq_entries(const struct gfr_rdma_conn *conn)
{
    return (int)(conn->nrecv + conn->nsend);
}

/* Posts receive buffer i.  Caller: the CM thread before connecting, or the
 * poller after handling the buffer's message. */
static int
post_recv(struct gfr_rdma_conn *conn, uint32_t i)
{
    uint32_t size = conn->engine->opts.inline_max;
    struct ibv_sge sge = {.addr = (uintptr_t)(conn->recv_buf + (size_t)i * size),
                          .length = size, .lkey = conn->recv_mr->lkey};
    struct ibv_recv_wr wr = {.wr_id = (uintptr_t)&conn->recv_wr[i],
                             .sg_list = &sge, .num_sge = 1};
    struct ibv_recv_wr *bad;
    int err;

    uatomic_inc(&conn->outstanding);
    err = ibv_post_recv(conn->qp, &wr, &bad);
    if (err)
        uatomic_dec(&conn->outstanding);
    return -err;
}

/*
 * Creates the QP and registers and posts the buffers, on the device the CM
 * resolved.  CM thread only.
 */
int
gfr_rdma_conn_setup(struct gfr_rdma_conn *conn)
{
    struct gfr_rdma *engine = conn->engine;
    struct ibv_qp_init_attr attr;
    size_t rsize = engine->opts.inline_max;
    int err;

    conn->nrecv = engine->opts.credits;
    conn->nsend = engine->opts.credits;
    if (engine->pool) {
        err = gfr_pool_client_create(engine->pool, &conn->pool_client);
        if (err)
            return err;
    }
    err = gfr_rdma_dev_get(engine, conn->id->verbs, cq_entries(conn), &conn->dev);
    if (err)
        return err;

    conn->recv_buf = aligned_alloc(4096, conn->nrecv * rsize);
    conn->send_buf = aligned_alloc(4096, conn->nsend * rsize);
    conn->recv_wr = calloc(conn->nrecv, sizeof(*conn->recv_wr));
    conn->send_wr = calloc(conn->nsend, sizeof(*conn->send_wr));
    conn->free_slots = calloc(conn->nsend, sizeof(*conn->free_slots));
    if (!conn->recv_buf || !conn->send_buf || !conn->recv_wr || !conn->send_wr ||
        !conn->free_slots)
        return -ENOMEM;
    conn->recv_mr = ibv_reg_mr(conn->dev->pd, conn->recv_buf, conn->nrecv * rsize,
                               IBV_ACCESS_LOCAL_WRITE);
    conn->send_mr = ibv_reg_mr(conn->dev->pd, conn->send_buf, conn->nsend * rsize, 0);
    if (!conn->recv_mr || !conn->send_mr) {
        gfr_rdma_log("registering %zu bytes of buffers failed: %s",
                     (conn->nrecv + conn->nsend) * rsize, strerror(errno));
        return -ENOMEM;
    }
    for (uint32_t i = 0; i < conn->nrecv; i++)
        conn->recv_wr[i] = (struct gfr_rdma_wr){conn, i, 1};
    for (uint32_t i = 0; i < conn->nsend; i++) {
        conn->send_wr[i] = (struct gfr_rdma_wr){conn, i, 0};
        conn->free_slots[i] = conn->nsend - 1 - i;
    }
    conn->nfree = conn->nsend;

    memset(&attr, 0, sizeof(attr));
    attr.send_cq = conn->dev->cq;
    attr.recv_cq = conn->dev->cq;
    attr.qp_type = IBV_QPT_RC;
    attr.cap.max_send_wr = conn->nsend;
    attr.cap.max_recv_wr = conn->nrecv;
    attr.cap.max_send_sge = 1;
    attr.cap.max_recv_sge = 1;
    attr.cap.max_inline_data = conn->dev->max_inline;
    if (rdma_create_qp(conn->id, conn->dev->pd, &attr) != 0) {
        /* Some providers refuse inline data: retry without it. */
        attr.cap.max_inline_data = 0;
        if (rdma_create_qp(conn->id, conn->dev->pd, &attr) != 0) {
            err = -errno;
            gfr_rdma_log("%s: rdma_create_qp failed: %s",
                         ibv_get_device_name(conn->id->verbs->device), strerror(-err));
            return err;
        }
    }
    conn->qp = conn->id->qp;
    conn->dev->max_inline = attr.cap.max_inline_data;

    /* Local values until the peer's are known (gfr_rdma_conn_negotiate):
     * receives are accepted from now on, sends wait for ESTABLISHED. */
    conn->limits.max_msg = engine->opts.max_msg;
    conn->limits.max_segs = GFR_WIRE_MAX_SEGS;
    gfr_credits_init(&conn->credits, conn->nrecv);
    conn->credits.send_avail = 0;
    for (uint32_t i = 0; i < conn->nrecv; i++) {
        err = post_recv(conn, i);
        if (err) {
            gfr_rdma_log("ibv_post_recv failed: %s", strerror(-err));
            return err;
        }
    }
    return 0;
}

/*
 * Applies the negotiated parameters (CM thread).  The server calls it when
 * it accepts, the client when it learns the server's parameters on
 * ESTABLISHED.  Until then gfr_rdma_conn_setup's local values stand: they
 * are upper bounds of the negotiated ones, so messages that arrive before
 * the CM event has been handled are decoded and counted correctly.
 */
int
gfr_rdma_conn_negotiate(struct gfr_rdma_conn *conn,
                        const struct gfr_cm_params *peer)
{
    struct gfr_cm_params local;

    gfr_rdma_conn_local_params(conn->engine, &local);
    pthread_mutex_lock(&conn->lock);
    gfr_cm_negotiate(&local, peer, &conn->agreed);
    conn->limits.max_msg = conn->agreed.max_msg;
    conn->limits.max_segs = conn->agreed.max_segs;
    conn->credits.window = conn->agreed.credits;
    conn->credits.send_avail = conn->agreed.credits;
    pthread_mutex_unlock(&conn->lock);
    return 0;
}

size_t
gfr_rdma_max_payload(const struct gfr_rdma_conn *conn)
{
    uint32_t limit = conn->agreed.inline_max ? conn->agreed.inline_max
                                             : conn->engine->opts.inline_max;

    return limit - GFR_WIRE_HDR_SIZE;
}

/* Posts one SEND of type with payload.  Caller holds conn->lock and has
 * checked credits and a free slot. */
static int
post_send_locked(struct gfr_rdma_conn *conn, enum gfr_wire_type type,
                 uint16_t grant, const void *data, size_t len)
{
    uint32_t slot = conn->free_slots[--conn->nfree];
    uint8_t *buf = conn->send_buf + (size_t)slot * conn->engine->opts.inline_max;
    struct gfr_wire_hdr hdr = {.type = (uint8_t)type, .credits = grant,
                               .xid = ++conn->xid, .inline_len = (uint32_t)len};
    struct ibv_sge sge;
    struct ibv_send_wr wr;
    struct ibv_send_wr *bad;
    ssize_t head = gfr_wire_encode(&hdr, NULL, NULL, buf, GFR_WIRE_HDR_SIZE);
    int err;

    if (len)
        memcpy(buf + head, data, len);
    sge.addr = (uintptr_t)buf;
    sge.length = (uint32_t)(head + (ssize_t)len);
    sge.lkey = conn->send_mr->lkey;
    memset(&wr, 0, sizeof(wr));
    wr.wr_id = (uintptr_t)&conn->send_wr[slot];
    wr.sg_list = &sge;
    wr.num_sge = 1;
    wr.opcode = IBV_WR_SEND;
    wr.send_flags = IBV_SEND_SIGNALED;
    if (sge.length <= conn->dev->max_inline)
        wr.send_flags |= IBV_SEND_INLINE;
    uatomic_inc(&conn->outstanding);
    err = ibv_post_send(conn->qp, &wr, &bad);
    if (err) {
        uatomic_dec(&conn->outstanding);
        conn->free_slots[conn->nfree++] = slot;
        gfr_rdma_log("ibv_post_send failed: %s", strerror(err));
        return -err;
    }
    if (type == GFR_WIRE_CREDIT)
        conn->stats.credit_updates++;
    else
        conn->stats.sent++;
    return 0;
}

/* Sends what waits for credits, then a CREDIT message if one is due.
 * Caller holds conn->lock. */
static void
flush_locked(struct gfr_rdma_conn *conn)
{
    while (conn->state == GFR_CONN_ESTABLISHED && !cds_list_empty(&conn->pending) &&
           conn->nfree && gfr_credits_can_send_data(&conn->credits)) {
        struct gfr_rdma_pending *p =
            cds_list_first_entry(&conn->pending, struct gfr_rdma_pending, link);
        uint16_t grant = gfr_credits_take_data(&conn->credits);

        cds_list_del(&p->link);
        post_send_locked(conn, GFR_WIRE_MSG, grant, p->data, p->len);
        free(p);
    }
    if (conn->state == GFR_CONN_ESTABLISHED && conn->nfree &&
        gfr_credits_need_update(&conn->credits))
        post_send_locked(conn, GFR_WIRE_CREDIT,
                         gfr_credits_take_update(&conn->credits), NULL, 0);
}

void
gfr_rdma_send_flush(struct gfr_rdma_conn *conn)
{
    pthread_mutex_lock(&conn->lock);
    flush_locked(conn);
    pthread_mutex_unlock(&conn->lock);
}

int
gfr_rdma_send(struct gfr_rdma_conn *conn, const void *data, size_t len)
{
    int err = 0;

    if (!conn || (len && !data))
        return -EINVAL;
    if (len > gfr_rdma_max_payload(conn))
        return -EMSGSIZE;
    pthread_mutex_lock(&conn->lock);
    if (conn->state == GFR_CONN_DISCONNECTING) {
        err = -ENOTCONN;
    } else if (conn->state == GFR_CONN_ESTABLISHED && cds_list_empty(&conn->pending) &&
               conn->nfree && gfr_credits_can_send_data(&conn->credits)) {
        err = post_send_locked(conn, GFR_WIRE_MSG,
                               gfr_credits_take_data(&conn->credits), data, len);
    } else {
        struct gfr_rdma_pending *p = malloc(sizeof(*p) + len);

        if (!p) {
            err = -ENOMEM;
        } else {
            p->len = len;
            memcpy(p->data, data, len);
            cds_list_add_tail(&p->link, &conn->pending);
            conn->stats.queued_for_credits++;
        }
    }
    pthread_mutex_unlock(&conn->lock);
    return err;
}

void
gfr_rdma_conn_stats(struct gfr_rdma_conn *conn, struct gfr_rdma_conn_stats *stats)
{
    pthread_mutex_lock(&conn->lock);
    *stats = conn->stats;
    pthread_mutex_unlock(&conn->lock);
}

/* Moves the QP to error so every posted work request flushes. */
static void
flush_qp(struct gfr_rdma_conn *conn)
{
    struct ibv_qp_attr attr = {.qp_state = IBV_QPS_ERR};

    if (conn->qp)
        ibv_modify_qp(conn->qp, &attr, IBV_QP_STATE);
}

/*
 * Ends the connection with reason (0: orderly).  Any thread.  The first
 * reason sticks; the disconnected callback comes from the CM thread once
 * everything has flushed.
 */
void
gfr_rdma_conn_fail(struct gfr_rdma_conn *conn, int reason)
{
    /* Under the lock: finalize clears id and qp under it too. */
    pthread_mutex_lock(&conn->lock);
    if (conn->state != GFR_CONN_DISCONNECTING) {
        conn->state = GFR_CONN_DISCONNECTING;
        conn->reason = reason;
        if (conn->id && conn->was_connected)
            rdma_disconnect(conn->id);
        flush_qp(conn);
    }
    pthread_mutex_unlock(&conn->lock);
}

int
gfr_rdma_disconnect(struct gfr_rdma_conn *conn)
{
    if (!conn)
        return -EINVAL;
    gfr_rdma_conn_fail(conn, 0);
    return 0;
}

/* Called once per connection, by whoever dropped its last reference. */
static void
queue_reap(struct gfr_rdma_conn *conn)
{
    struct gfr_rdma *engine = conn->engine;
    uint64_t one = 1;

    pthread_mutex_lock(&engine->lock);
    cds_list_add_tail(&conn->reap_link, &engine->reap);
    pthread_mutex_unlock(&engine->lock);
    if (write(engine->wake_fd, &one, sizeof(one)) != sizeof(one))
        gfr_rdma_log("cannot wake the CM thread: %s", strerror(errno));
}

/*
 * The CM side is over (CM thread): drop its reference.  `outstanding` holds
 * one reference for the CM side until then, one per posted work request
 * and one per pool delivery; whoever drops the last queues the connection
 * for reaping and is the last to touch it.
 */
void
gfr_rdma_conn_cm_done(struct gfr_rdma_conn *conn)
{
    if (uatomic_xchg(&conn->cm_done, 1) == 0)
        wr_done(conn);
}

/* Drops one reference; see gfr_rdma_conn_cm_done. */
static void
wr_done(struct gfr_rdma_conn *conn)
{
    if (uatomic_sub_return(&conn->outstanding, 1) == 0)
        queue_reap(conn);
}

static void
run_delivery(struct gfr_pool_job *job, void *cb_arg, int status)
{
    struct gfr_rdma_delivery *d = caa_container_of(job, struct gfr_rdma_delivery, job);
    struct gfr_rdma_conn *conn = d->conn;

    /* A pool being destroyed cancels: the message dies with the process. */
    if (status == 0)
        conn->ops->received(conn, d->data, d->len, conn->cb_arg);
    free(d);
    wr_done(conn);
}

/*
 * Hands a copy of the payload to the pool, so the receive buffer can be
 * reposted at once however slow the handler.  The delivery counts as
 * outstanding: the connection cannot be reaped (nor disconnected called)
 * before it has been handled.  Without memory, the message is handled
 * inline instead of dropped.
 */
static void
dispatch_to_pool(struct gfr_rdma_conn *conn, const void *payload, size_t len)
{
    struct gfr_rdma_delivery *d = malloc(sizeof(*d) + len);

    if (!d) {
        conn->ops->received(conn, payload, len, conn->cb_arg);
        return;
    }
    d->conn = conn;
    d->len = len;
    memcpy(d->data, payload, len);
    gfr_pool_job_init(&d->job, run_delivery, NULL);
    uatomic_inc(&conn->outstanding);
    if (gfr_pool_submit(conn->engine->pool, &d->job, conn->pool_client,
                        GFR_POOL_PRIO_NORMAL) != 0) {
        uatomic_dec(&conn->outstanding);
        free(d);
        conn->ops->received(conn, payload, len, conn->cb_arg);
    }
}

static void
handle_recv(struct gfr_rdma_conn *conn, struct gfr_rdma_wr *ctx, struct ibv_wc *wc)
{
    const uint8_t *buf = conn->recv_buf + (size_t)ctx->slot * conn->engine->opts.inline_max;
    struct gfr_wire_msg msg;
    const char *reason = NULL;
    int established;
    int err;

    pthread_mutex_lock(&conn->lock);
    established = conn->state == GFR_CONN_ESTABLISHED ||
                  conn->state == GFR_CONN_CONNECTING;
    err = established ? gfr_wire_decode(buf, wc->byte_len, &conn->limits, &msg, &reason) : 0;
    if (established && !err && gfr_credits_on_receive(&conn->credits, msg.hdr.credits) != 0) {
        err = -EPROTO;
        reason = "peer sent without a credit, or granted more than the window";
    }
    if (established && !err && msg.hdr.type == GFR_WIRE_MSG && (msg.hdr.n_read || msg.hdr.n_write)) {
        err = -EPROTO;
        reason = "chunk lists are not supported by this build yet";
    } else if (established && !err && msg.hdr.type != GFR_WIRE_MSG && msg.hdr.type != GFR_WIRE_CREDIT) {
        err = -EPROTO;
        reason = "DONE or ERROR for a request this side never made";
    }
    pthread_mutex_unlock(&conn->lock);
    if (!established)
        return; /* arrived while closing: dropped with the connection */
    if (err) {
        gfr_rdma_log("peer broke the protocol (%s); disconnecting",
                     reason ? reason : "invalid message");
        gfr_rdma_conn_fail(conn, -EPROTO);
        return;
    }
    if (msg.hdr.type == GFR_WIRE_MSG) {
        if (conn->pool_client)
            dispatch_to_pool(conn, msg.payload, msg.hdr.inline_len);
        else
            conn->ops->received(conn, msg.payload, msg.hdr.inline_len, conn->cb_arg);
        pthread_mutex_lock(&conn->lock);
        conn->stats.received++;
        pthread_mutex_unlock(&conn->lock);
    }
    pthread_mutex_lock(&conn->lock);
    if (conn->state != GFR_CONN_DISCONNECTING && post_recv(conn, ctx->slot) == 0)
        gfr_credits_on_repost(&conn->credits, 1);
    flush_locked(conn);
    pthread_mutex_unlock(&conn->lock);
}

void
gfr_rdma_conn_complete(struct ibv_wc *wc)
{
    struct gfr_rdma_wr *ctx = (struct gfr_rdma_wr *)(uintptr_t)wc->wr_id;
    struct gfr_rdma_conn *conn = ctx->conn;

    if (wc->status != IBV_WC_SUCCESS) {
        if (wc->status != IBV_WC_WR_FLUSH_ERR)
            gfr_rdma_log("work request failed: %s (vendor error %u); disconnecting",
                         ibv_wc_status_str(wc->status), wc->vendor_err);
        gfr_rdma_conn_fail(conn, wc->status == IBV_WC_WR_FLUSH_ERR ? 0 : -EIO);
    } else if (ctx->is_recv) {
        handle_recv(conn, ctx, wc);
    }
    if (!ctx->is_recv) {
        pthread_mutex_lock(&conn->lock);
        conn->free_slots[conn->nfree++] = ctx->slot;
        flush_locked(conn);
        pthread_mutex_unlock(&conn->lock);
    }
    wr_done(conn);
}

static void
conn_free(struct gfr_rdma_conn *conn)
{
    pthread_mutex_destroy(&conn->lock);
    free(conn);
}

/* CM thread only, once the last reference is gone. */
void
gfr_rdma_conn_finalize(struct gfr_rdma_conn *conn)
{
    struct gfr_rdma *engine = conn->engine;
    int release;

    pthread_mutex_lock(&engine->lock);
    cds_list_del(&conn->link);
    pthread_mutex_unlock(&engine->lock);

    if (conn->ops && conn->ops->disconnected)
        conn->ops->disconnected(conn, conn->reason, conn->cb_arg);
    else if (!conn->ops)
        conn->released = 1; /* never handed to an owner */

    pthread_mutex_lock(&conn->lock);
    conn->state = GFR_CONN_DISCONNECTING;
    while (!cds_list_empty(&conn->pending)) {
        struct gfr_rdma_pending *p =
            cds_list_first_entry(&conn->pending, struct gfr_rdma_pending, link);
        cds_list_del(&p->link);
        free(p);
    }
    if (conn->qp)
        rdma_destroy_qp(conn->id);
    conn->qp = NULL;
    if (conn->recv_mr)
        ibv_dereg_mr(conn->recv_mr);
    if (conn->send_mr)
        ibv_dereg_mr(conn->send_mr);
    if (conn->dev)
        gfr_rdma_dev_put(conn->dev, cq_entries(conn));
    if (conn->id)
        rdma_destroy_id(conn->id);
    conn->id = NULL;
    if (conn->pool_client)
        gfr_pool_client_release(conn->pool_client);
    free(conn->recv_buf);
    free(conn->send_buf);
    free(conn->recv_wr);
    free(conn->send_wr);
    free(conn->free_slots);
    conn->recv_buf = conn->send_buf = NULL;
    conn->recv_wr = conn->send_wr = NULL;
    conn->free_slots = NULL;
    conn->nfree = 0;
    pthread_mutex_unlock(&conn->lock);

    pthread_mutex_lock(&engine->lock);
    conn->finalized = 1;
    release = conn->released;
    if (!release)
        cds_list_add_tail(&conn->link, &engine->dead);
    pthread_mutex_unlock(&engine->lock);
    if (release)
        conn_free(conn);
}

void
gfr_rdma_conn_release(struct gfr_rdma_conn *conn)
{
    struct gfr_rdma *engine;
    int free_now;

    if (!conn)
        return;
    engine = conn->engine;
    pthread_mutex_lock(&engine->lock);
    conn->released = 1;
    free_now = conn->finalized;
    if (free_now)
        cds_list_del(&conn->link);
    pthread_mutex_unlock(&engine->lock);
    if (free_now)
        conn_free(conn);
}

void
gfr_rdma_conn_free_dead(struct gfr_rdma *engine)
{
    while (!cds_list_empty(&engine->dead)) {
        struct gfr_rdma_conn *conn =
            cds_list_first_entry(&engine->dead, struct gfr_rdma_conn, link);
        cds_list_del(&conn->link);
        conn_free(conn);
    }
}
