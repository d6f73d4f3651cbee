/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * A connection's queue pair and its life: the references that keep the
 * connection until every work request has completed (engine-state.h),
 * the send-queue ring that retires unsignaled work requests, posting to
 * the send queue, and failing: the QP to the error state, its work
 * requests flushed, a drain posted to retire the rest.  Everything above
 * (sending, receiving, transfers, setup) posts and fails through here.
 */
#define _GNU_SOURCE
#ifdef HAVE_CONFIG_H
#include "config.h" /* GFR_DEBUG */
#endif
#include <assert.h>
#include <errno.h>
#include <string.h>
#include <unistd.h>

#include <urcu/uatomic.h>

#include "gfr_clock.h"
#include "engine-qp.h"

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

/* Takes a reference for a work request or a pool delivery; the caller
 * already holds one (or the CM side's is still there). */
void
gfr_rdma_conn_get(struct gfr_rdma_conn *conn)
{
    uatomic_inc(&conn->outstanding);
}

/*
 * Up to max of the connections on engine->conns that match(conn, arg)
 * picks, after passing over the first skip of them (those a caller's
 * earlier batch took; they are still listed), into batch; returns how
 * many.  Takes engine->lock, so that its callers may act on the batch
 * without it (conn->lock is never taken under engine->lock): the CM
 * thread, which alone frees connections, so the batch stays valid.
 */
unsigned
gfr_rdma_conns_collect(struct gfr_rdma *engine, gfr_rdma_conn_match_fn match, const void *arg,
                       unsigned skip, struct gfr_rdma_conn **batch, unsigned max)
{
    struct gfr_rdma_conn *conn;
    unsigned n = 0;

    pthread_mutex_lock(&engine->lock);
    cds_list_for_each_entry(conn, &engine->conns, link) {
        if (!match(conn, arg))
            continue;
        if (skip) {
            skip--;
            continue;
        }
        batch[n++] = conn;
        if (n == max)
            break;
    }
    pthread_mutex_unlock(&engine->lock);
    return n;
}

/* Drops one reference; see gfr_rdma_conn_cm_done.  Any thread; takes
 * engine->lock when it is the last. */
void
gfr_rdma_conn_put(struct gfr_rdma_conn *conn)
{
    if (uatomic_sub_return(&conn->outstanding, 1) == 0)
        queue_reap(conn);
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
        gfr_rdma_conn_put(conn);
}

/* Posts receive buffer i.  Caller: the CM thread before connecting, or the
 * poller after handling the buffer's message. */
int
gfr_rdma_post_recv(struct gfr_rdma_conn *conn, uint32_t i)
{
    uint32_t size = conn->opts.inline_max;
    struct ibv_sge sge = {.addr = (uintptr_t)(conn->recv_buf + (size_t)i * size),
                          .length = size, .lkey = conn->recv_mr->lkey};
    struct ibv_recv_wr wr = {.wr_id = (uintptr_t)&conn->recv_wr[i],
                             .sg_list = &sge, .num_sge = 1};
    struct ibv_recv_wr *bad;
    int err;

    gfr_rdma_conn_get(conn);
    uatomic_set(&conn->recv_wr[i].posted, 1);
    err = gfr_rdma_post_errno(ibv_post_recv(conn->qp, &wr, &bad));
    if (err) {
        uatomic_set(&conn->recv_wr[i].posted, 0);
        gfr_rdma_conn_put(conn);
    }
    return -err;
}

/* Moves the QP to the error state, which flushes every work request
 * posted to it.  Caller holds conn->lock. */
static void
qp_to_error(struct gfr_rdma_conn *conn)
{
    struct ibv_qp_attr attr = {.qp_state = IBV_QPS_ERR};

    ibv_modify_qp(conn->qp, &attr, IBV_QP_STATE);
}

/*
 * Moves the QP to error so every posted work request flushes.  An
 * unsignaled SEND that completed before gives no completion: the
 * completion of a later work request retires it (gfr_rdma_sq_retire_locked).
 * Only when the last one posted was unsignaled is there none to come, and
 * then a drain is posted behind it, whose flushed completion retires the
 * rest.  iWARP providers refuse a post on a QP in error (cxgb4) or never
 * complete it (siw), so there every work request is signaled
 * (rdma-tx.c) and no drain is ever needed.  Caller holds conn->lock.
 */
static void
flush_qp(struct gfr_rdma_conn *conn)
{
    struct ibv_send_wr wr = {.wr_id = (uintptr_t)&conn->drain_wr,
                             .opcode = IBV_WR_SEND, .send_flags = IBV_SEND_SIGNALED};
    int err;

    if (!conn->qp)
        return;
    qp_to_error(conn);
    if (!conn->sq_count ||
        (conn->sq_state[(conn->sq_head + conn->sq_count - 1) % conn->sq_size] &
         (GFR_SQ_SIGNALED | GFR_SQ_DONE)))
        return;
    err = gfr_rdma_qp_post_locked(conn, &conn->drain_wr, &wr);
    if (err)
        /* Cannot tell which unsignaled SENDs completed: keep their
         * references (the connection is not freed) rather than guess. */
        gfr_rdma_conn_log(conn, "posting the drain of a failed QP: %s; %u send-queue entries "
                          "stay unaccounted", strerror(err), conn->sq_count);
}

/* The states each state may move to (enum gfr_conn_state's comment). */
#define TO(state) (1u << (state))
static const unsigned legal_next[] = {
    [GFR_CONN_NEW] = TO(GFR_CONN_RESOLVING_ADDR) | TO(GFR_CONN_CONNECTING) |
                     TO(GFR_CONN_DISCONNECTING),
    [GFR_CONN_RESOLVING_ADDR] = TO(GFR_CONN_RESOLVING_ROUTE) | TO(GFR_CONN_DISCONNECTING),
    [GFR_CONN_RESOLVING_ROUTE] = TO(GFR_CONN_CONNECTING) | TO(GFR_CONN_DISCONNECTING),
    [GFR_CONN_CONNECTING] = TO(GFR_CONN_ESTABLISHED) | TO(GFR_CONN_DISCONNECTING),
    [GFR_CONN_ESTABLISHED] = TO(GFR_CONN_DISCONNECTING),
    [GFR_CONN_DISCONNECTING] = 0,
};

static const char *const state_names[] = {
    [GFR_CONN_NEW] = "NEW",
    [GFR_CONN_RESOLVING_ADDR] = "RESOLVING_ADDR",
    [GFR_CONN_RESOLVING_ROUTE] = "RESOLVING_ROUTE",
    [GFR_CONN_CONNECTING] = "CONNECTING",
    [GFR_CONN_ESTABLISHED] = "ESTABLISHED",
    [GFR_CONN_DISCONNECTING] = "DISCONNECTING",
};

const char *
gfr_rdma_conn_state_str(enum gfr_conn_state state)
{
    return (unsigned)state <= GFR_CONN_DISCONNECTING ? state_names[state] : "unknown";
}

/*
 * Moves the connection to state `to`: the only writer of conn->state.  A
 * step enum gfr_conn_state does not allow is a bug of the caller: it is
 * refused with -EINVAL and logged, the state stays, and --enable-debug
 * builds stop on it.  Callers that may race a failure test for
 * DISCONNECTING first.  Caller holds conn->lock; the store is atomic so
 * that gfr_rdma_conn_state may read it without that lock.
 */
int
gfr_rdma_conn_set_state_locked(struct gfr_rdma_conn *conn, enum gfr_conn_state to)
{
    enum gfr_conn_state from = conn->state;

    if ((unsigned)to > GFR_CONN_DISCONNECTING || !(legal_next[from] & TO(to))) {
        gfr_rdma_conn_log(conn, "refusing a state change from %s to %s",
                          gfr_rdma_conn_state_str(from), gfr_rdma_conn_state_str(to));
#ifdef GFR_DEBUG
        assert(!"illegal connection state change");
#endif
        return -EINVAL;
    }
    uatomic_set(&conn->state, to);
    if (to == GFR_CONN_CONNECTING)
        conn->addrs_known = 1;
    return 0;
}

/* The state, for the CM thread's timers, which hold engine->lock and may
 * not take conn->lock under it; the value may be stale by the time it is
 * used, which a timer's action rechecks under conn->lock.  Any thread. */
enum gfr_conn_state
gfr_rdma_conn_state(const struct gfr_rdma_conn *conn)
{
    return uatomic_read(&conn->state);
}

/*
 * Ends the connection with reason (0: orderly, unless a fault was recorded
 * first: gfr_rdma_conn_fault).  The first reason sticks;
 * the disconnected callback comes from the CM thread once everything has
 * flushed.  Caller holds conn->lock (finalize clears id and qp under it).
 *
 * On iWARP, rdma_disconnect is a graceful close (the QP to SQD, siw's
 * CLOSING), which flushes nothing while the transmitter is idle: siw then
 * never completes a READ whose response has not come, and the connection
 * would never end.  So with work requests outstanding the QP goes to
 * error first, which flushes them all (an abortive close on iWARP
 * hardware, for a connection that is losing work anyway); with none the
 * close stays graceful.  InfiniBand's rdma_disconnect moves the QP to
 * error itself.
 *
 * The deadline bounds the CM's part whatever stage the connection was in:
 * an unanswered DREQ, or a handshake the peer never finishes after a
 * failure that came before ESTABLISHED (on_established sends the DREQ if
 * ESTABLISHED does come).
 */
void
gfr_rdma_conn_fail_locked(struct gfr_rdma_conn *conn, int reason)
{
    if (conn->state != GFR_CONN_DISCONNECTING) {
        gfr_rdma_conn_set_state_locked(conn, GFR_CONN_DISCONNECTING);
        conn->reason = reason ? reason : uatomic_read(&conn->fault);
        uatomic_set(&conn->disconnect_deadline_ns,
                    gfr_deadline_ns(conn->opts.connect_timeout_ms));
        if (conn->qp && conn->dev && conn->dev->iwarp && conn->sq_count)
            qp_to_error(conn);
        if (conn->id && conn->was_connected)
            rdma_disconnect(conn->id);
        flush_qp(conn);
    }
}

/*
 * The connection is closing, and not by our doing: the CM's DISCONNECTED,
 * or a flush, came while it was still up.  With RDMA READs of ours in
 * flight, the peer cut them off: it closed before we had pulled what it
 * offered, or refused a READ, which an iWARP peer does with a TERMINATE
 * that only the kernel log shows (siw: "got TERMINATE").  That is said,
 * and the connection is to end as reset (-ECONNRESET); else it ends in
 * order (0).  A WRITE in flight proves nothing: its data may have arrived
 * before its completion did (on iWARP it completes once TCP has it), and
 * the peer's orderly close can follow.  Caller holds conn->lock.
 */
int
gfr_rdma_conn_cut_off_locked(struct gfr_rdma_conn *conn)
{
    if (conn->state != GFR_CONN_ESTABLISHED || !conn->reads_inflight)
        return 0;
    gfr_rdma_conn_log(conn, "the connection closed under %u RDMA READ(s) of ours in flight "
                      "(the peer closed it or refused one; an iWARP peer's TERMINATE shows "
                      "only in the kernel log); disconnecting", conn->reads_inflight);
    return -ECONNRESET;
}

/* As gfr_rdma_conn_fail_locked, from any thread without the lock. */
void
gfr_rdma_conn_fail(struct gfr_rdma_conn *conn, int reason)
{
    pthread_mutex_lock(&conn->lock);
    gfr_rdma_conn_fail_locked(conn, reason);
    pthread_mutex_unlock(&conn->lock);
}

/*
 * Squeezes the done entries out of a full ring, keeping the order of the
 * rest.  A ring fills with them when a completion comes late (siw answers
 * an RDMA READ after SENDs posted behind it): the entries behind the
 * undone head are done and their slots back in use, so the work requests
 * in flight, which the engine bounds by sq_size, are fewer than the
 * entries.  Caller holds conn->lock.
 */
static void
sq_compact_locked(struct gfr_rdma_conn *conn)
{
    uint32_t kept = 0;

    for (uint32_t i = 0; i < conn->sq_count; i++) {
        uint32_t from = (conn->sq_head + i) % conn->sq_size;
        uint32_t to = (conn->sq_head + kept) % conn->sq_size;

        if (conn->sq_state[from] & GFR_SQ_DONE)
            continue;
        conn->sq_ring[to] = conn->sq_ring[from];
        conn->sq_state[to] = conn->sq_state[from];
        kept++;
    }
    conn->sq_count = kept;
}

/* Records a posted send-queue work request.  Caller holds conn->lock. */
void
gfr_rdma_sq_push_locked(struct gfr_rdma_conn *conn, struct gfr_rdma_wr *ctx, int signaled)
{
    uint32_t at;

    if (conn->sq_count == conn->sq_size)
        sq_compact_locked(conn);
    at = (conn->sq_head + conn->sq_count++) % conn->sq_size;

    conn->sq_ring[at] = ctx;
    conn->sq_state[at] = signaled ? GFR_SQ_SIGNALED : 0;
}

/* Send-queue work requests posted and not yet seen complete whose state
 * has every bit of with.  Caller holds conn->lock. */
static uint32_t
sq_count_locked(const struct gfr_rdma_conn *conn, uint8_t with)
{
    uint32_t n = 0;

    for (uint32_t pos = 0; pos < conn->sq_count; pos++) {
        uint8_t state = conn->sq_state[(conn->sq_head + pos) % conn->sq_size];

        n += (state & with) == with && !(state & GFR_SQ_DONE);
    }
    return n;
}

/* How many send-queue work requests are posted and not yet seen complete.
 * Caller holds conn->lock. */
uint32_t
gfr_rdma_sq_outstanding_locked(const struct gfr_rdma_conn *conn)
{
    return sq_count_locked(conn, 0);
}

/* How many of those were posted signaled: the ones a completion is still
 * to come for (an unsignaled one posted last may never show one).  Caller
 * holds conn->lock. */
uint32_t
gfr_rdma_sq_signaled_locked(const struct gfr_rdma_conn *conn)
{
    return sq_count_locked(conn, GFR_SQ_SIGNALED);
}

/* The position (from the ring's head) of ctx's oldest entry that is not
 * done yet, or sq_count when it has none.  ctx is compared, never read.
 * Caller holds conn->lock. */
static uint32_t
sq_find_locked(const struct gfr_rdma_conn *conn, const struct gfr_rdma_wr *ctx)
{
    uint32_t pos;

    for (pos = 0; pos < conn->sq_count; pos++) {
        uint32_t at = (conn->sq_head + pos) % conn->sq_size;

        if (conn->sq_ring[at] == ctx && !(conn->sq_state[at] & GFR_SQ_DONE))
            break;
    }
    return pos;
}

/* Has ctx an entry in the send-queue ring that is not done yet?  Caller
 * holds conn->lock. */
int
gfr_rdma_sq_holds_locked(const struct gfr_rdma_conn *conn, const struct gfr_rdma_wr *ctx)
{
    return sq_find_locked(conn, ctx) < conn->sq_count;
}

/*
 * ctx completed: marks its entry (the oldest of ctx's not yet done: a
 * transfer's operations share one ctx) and the unsignaled SENDs before it
 * done (they completed without a completion of their own; RC completes
 * SENDs in order), freeing their slots, then lets every done entry at the
 * ring's head go.  A signaled entry before ctx's that is not yet done
 * stays: its completion comes later (siw completes an RDMA READ after a
 * SEND posted behind it).  Returns how many entries other than ctx's were
 * retired: the caller drops that many references (gfr_rdma_sq_put) once
 * it has let go of conn->lock.  Caller holds conn->lock.
 */
unsigned
gfr_rdma_sq_retire_locked(struct gfr_rdma_conn *conn, struct gfr_rdma_wr *ctx)
{
    unsigned earlier = 0;
    uint32_t pos = sq_find_locked(conn, ctx);

    if (pos == conn->sq_count) {
        gfr_rdma_conn_log(conn, "a send-queue completion (work request kind %u) matches no "
                          "posted work request (%u in the ring)", ctx->kind, conn->sq_count);
        return 0;
    }
    conn->sq_state[(conn->sq_head + pos) % conn->sq_size] |= GFR_SQ_DONE;
    for (uint32_t i = 0; i < pos; i++) {
        uint32_t at = (conn->sq_head + i) % conn->sq_size;

        if (conn->sq_state[at] & (GFR_SQ_SIGNALED | GFR_SQ_DONE))
            continue;
        conn->sq_state[at] |= GFR_SQ_DONE;
        conn->free_slots[conn->nfree++] = conn->sq_ring[at]->slot;
        earlier++;
    }
    while (conn->sq_count && (conn->sq_state[conn->sq_head] & GFR_SQ_DONE)) {
        conn->sq_head = (conn->sq_head + 1) % conn->sq_size;
        conn->sq_count--;
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
 * A post to the connection's QP failed with err (positive): logs what
 * failed and ends the connection.  The reason is 0 (an orderly end, or the
 * fault the async handler recorded) when the QP was in the error state
 * already, which it reaches without an error of ours when its peer closes
 * (on iWARP at TCP's FIN, after which cxgb4 refuses posts with EINVAL);
 * -EIO when it was not, or cannot be asked.  Caller holds conn->lock.
 */
void
gfr_rdma_post_failed_locked(struct gfr_rdma_conn *conn, const char *what, int err)
{
    struct ibv_qp_attr attr;
    struct ibv_qp_init_attr init;
    int in_error = conn->qp && ibv_query_qp(conn->qp, &attr, IBV_QP_STATE, &init) == 0 &&
                   attr.qp_state == IBV_QPS_ERR;

    gfr_rdma_conn_log(conn, "%s failed: %s%s; disconnecting", what, strerror(err),
                      in_error ? " (the QP was in the error state already)" : "");
    gfr_rdma_conn_fail_locked(conn, in_error ? 0 : -EIO);
}

/*
 * Posts wr, whose wr_id is ctx, to the connection's send queue: takes the
 * work request's reference and records ctx on the send-queue ring, or
 * drops the reference again when the post fails.  Caller holds conn->lock.
 * 0 or a positive errno (the data path's convention, as ibv_post_send's).
 */
int
gfr_rdma_qp_post_locked(struct gfr_rdma_conn *conn, struct gfr_rdma_wr *ctx,
                        struct ibv_send_wr *wr)
{
    int err;

    gfr_rdma_conn_get(conn);
    err = gfr_rdma_dev_post_send(conn->dev, conn->qp, wr);
    if (err) {
        gfr_rdma_conn_put(conn);
        return err;
    }
    gfr_rdma_sq_push_locked(conn, ctx, !!(wr->send_flags & IBV_SEND_SIGNALED));
    return 0;
}
