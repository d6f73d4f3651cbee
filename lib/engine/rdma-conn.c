/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * One connection's setup and end: its QP and registered message buffers
 * on the device the CM resolved, the negotiated parameters, keepalives,
 * and finalisation once every work request has completed (failing and the
 * references are in rdma-qp.c).  Locking and lifetime rules:
 * engine-state.h.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <urcu/uatomic.h>

#include "gfr_clock.h"
#include "engine-conn.h"

#include <netinet/in.h>

/* This side's connection parameters, offering no probe byte (the CM
 * side adds its device's, when it has one: every field is set). */
void
gfr_rdma_conn_local_params(const struct gfr_rdma_opts *opts,
                           struct gfr_cm_params *params)
{
    *params = (struct gfr_cm_params){.credits = (uint16_t)opts->credits,
                                     .inline_max = opts->inline_max,
                                     .max_msg = opts->max_msg,
                                     .max_segs = GFR_WIRE_MAX_SEGS};
}

/* A connection on engine->conns, named after peer (NULL when unknown) in
 * its log messages; the caller owns it until it is reaped.  Takes
 * engine->lock. */
struct gfr_rdma_conn *
gfr_rdma_conn_new(struct gfr_rdma *engine, const struct gfr_rdma_opts *opts,
                  const struct sockaddr *peer)
{
    struct gfr_rdma_conn *conn = calloc(1, sizeof(*conn));

    if (!conn)
        return NULL;
    conn->kind = GFR_CM_CTX_CONN;
    conn->engine = engine;
    conn->opts = *opts;
    gfr_rdma_peer_name(peer, conn->peer_name);
    conn->outstanding = 1; /* the CM side's reference */
    pthread_mutex_init(&conn->lock, NULL);
    CDS_INIT_LIST_HEAD(&conn->pending);
    CDS_INIT_LIST_HEAD(&conn->xfers);
    CDS_INIT_LIST_HEAD(&conn->retired);
    for (unsigned b = 0; b < GFR_RDMA_XID_BUCKETS; b++) {
        CDS_INIT_LIST_HEAD(&conn->offers[b]);
        CDS_INIT_LIST_HEAD(&conn->peer_wl[b]);
    }
    pthread_mutex_lock(&engine->lock);
    cds_list_add_tail(&conn->link, &engine->conns);
    pthread_mutex_unlock(&engine->lock);
    return conn;
}

/* Receives, SENDs, the READs and WRITEs of transfers, the drain, the
 * keepalive. */
static int
cq_entries(const struct gfr_rdma_conn *conn)
{
    return (int)(conn->nrecv + conn->nsend + conn->opts.rdma_depth + 2);
}

/*
 * rdma_cm chooses the device, port and GID from the addresses; the device,
 * port and gid-index options say which ones must result, and a mismatch is
 * refused with a message that names both.  -ENODEV or 0.
 */
static int
check_placement(struct gfr_rdma_conn *conn)
{
    const struct gfr_rdma_opts *opts = &conn->opts;
    const char *name = ibv_get_device_name(conn->id->verbs->device);
    union ibv_gid gid;

    if (opts->device[0] && strcmp(opts->device, name) != 0) {
        gfr_rdma_conn_log(conn, "the address resolves to device %s, but device=%s is configured",
                          name, opts->device);
        return -ENODEV;
    }
    if (opts->device[0] && conn->id->port_num != opts->port) {
        gfr_rdma_conn_log(conn, "the address resolves to %s port %u, but port=%u is configured",
                          name, conn->id->port_num, opts->port);
        return -ENODEV;
    }
    if (opts->gid_index >= 0) {
        if (ibv_query_gid(conn->id->verbs, conn->id->port_num, opts->gid_index, &gid) != 0) {
            gfr_rdma_conn_log(conn, "%s port %u has no GID at gid-index=%d", name,
                              conn->id->port_num, opts->gid_index);
            return -ENODEV;
        }
        if (memcmp(&gid, &conn->id->route.addr.addr.ibaddr.sgid, sizeof(gid)) != 0) {
            gfr_rdma_conn_log(conn, "the address does not use GID %d of %s port %u "
                              "(gid-index=%d is configured)", opts->gid_index, name,
                              conn->id->port_num, opts->gid_index);
            return -ENODEV;
        }
    }
    return 0;
}

/* Send slots (registered, inline-max each), the send-queue ring and the
 * drain and keepalive work requests, for conn->nsend slots on conn->dev.
 * CM thread (gfr_rdma_conn_setup; the unit tests build connections with
 * it too).  0 or -ENOMEM; what was allocated is freed at finalisation. */
int
gfr_rdma_conn_setup_send_side(struct gfr_rdma_conn *conn)
{
    size_t size = (size_t)conn->nsend * conn->opts.inline_max;

    conn->send_buf = aligned_alloc(4096, (size + 4095) & ~(size_t)4095);
    conn->send_wr = calloc(conn->nsend, sizeof(*conn->send_wr));
    conn->free_slots = calloc(conn->nsend, sizeof(*conn->free_slots));
    conn->sq_size = conn->nsend + conn->opts.rdma_depth + 2;
    conn->sq_ring = calloc(conn->sq_size, sizeof(*conn->sq_ring));
    conn->sq_state = calloc(conn->sq_size, sizeof(*conn->sq_state));
    if (!conn->send_buf || !conn->send_wr || !conn->free_slots || !conn->sq_ring ||
        !conn->sq_state)
        return -ENOMEM;
    conn->send_mr = ibv_reg_mr(conn->dev->pd, conn->send_buf, size, 0);
    if (!conn->send_mr) {
        gfr_rdma_conn_log(conn, "registering %zu bytes of send buffers failed: %s", size,
                          strerror(errno));
        return -ENOMEM;
    }
    conn->drain_wr = (struct gfr_rdma_wr){.conn = conn, .kind = GFR_WR_DRAIN};
    conn->keepalive_wr = (struct gfr_rdma_wr){.conn = conn, .kind = GFR_WR_KEEPALIVE};
    for (uint32_t i = 0; i < conn->nsend; i++) {
        conn->send_wr[i] = (struct gfr_rdma_wr){.conn = conn, .slot = i,
                                                .kind = GFR_WR_SEND};
        conn->free_slots[i] = conn->nsend - 1 - i;
    }
    conn->nfree = conn->nsend;
    return 0;
}

/* Frees what gfr_rdma_conn_setup_send_side made (any part of it).  At
 * finalisation, under conn->lock, once nothing is in flight. */
void
gfr_rdma_conn_free_send_side(struct gfr_rdma_conn *conn)
{
    if (conn->send_mr)
        ibv_dereg_mr(conn->send_mr);
    conn->send_mr = NULL;
    free(conn->send_buf);
    free(conn->send_wr);
    free(conn->free_slots);
    free(conn->sq_ring);
    free(conn->sq_state);
    conn->sq_state = NULL;
    conn->send_buf = NULL;
    conn->send_wr = NULL;
    conn->free_slots = NULL;
    conn->sq_ring = NULL;
    conn->nfree = 0;
}

/* receive-queue=per-connection: receive buffers of its own (posted once
 * the QP exists). */
static int
setup_own_receives(struct gfr_rdma_conn *conn)
{
    size_t size = (size_t)conn->nrecv * conn->opts.inline_max;

    conn->recv_buf = aligned_alloc(4096, (size + 4095) & ~(size_t)4095);
    conn->recv_wr = calloc(conn->nrecv, sizeof(*conn->recv_wr));
    if (!conn->recv_buf || !conn->recv_wr)
        return -ENOMEM;
    conn->recv_mr = ibv_reg_mr(conn->dev->pd, conn->recv_buf, size, IBV_ACCESS_LOCAL_WRITE);
    if (!conn->recv_mr) {
        gfr_rdma_conn_log(conn, "registering %zu bytes of receive buffers failed: %s", size,
                          strerror(errno));
        return -ENOMEM;
    }
    for (uint32_t i = 0; i < conn->nrecv; i++)
        conn->recv_wr[i] = (struct gfr_rdma_wr){.conn = conn, .slot = i,
                                                .kind = GFR_WR_RECV};
    return 0;
}

/* How far the inline size asked of a QP steps down each time the
 * provider refuses it (siw takes 80 bytes, rxe 256, mlx5 about 220). */
#define INLINE_STEP 16

/*
 * Creates the connection's RC QP on its poller's CQ.  Inline data is asked
 * for at the device's starting size (dev->max_inline) and stepped down by
 * INLINE_STEP while the provider refuses the size (EINVAL), down to none;
 * any other error fails at once, and what one QP was refused lowers
 * nothing for the device's other QPs.  conn->max_inline is what the
 * provider granted.  The ACK timeout is an InfiniBand transport attribute
 * that iWARP has no use for: set only elsewhere.  CM thread; -errno.
 */
int
gfr_rdma_conn_create_qp(struct gfr_rdma_conn *conn)
{
    struct ibv_qp_init_attr attr;
    uint8_t timeout = conn->opts.qp_timeout;
    uint32_t want = conn->dev->max_inline;
    int err;

    for (;;) {
        memset(&attr, 0, sizeof(attr));
        attr.send_cq = conn->poller->cq;
        attr.recv_cq = conn->poller->cq;
        attr.srq = conn->dev->srq ? conn->dev->srq->srq : NULL;
        attr.qp_context = conn; /* whose QP a stuck post blames (rdma-device.c) */
        attr.qp_type = IBV_QPT_RC;
        attr.cap.max_send_wr = conn->sq_size; /* SENDs, READs/WRITEs, drain, keepalive */
        attr.cap.max_recv_wr = attr.srq ? 0 : conn->nrecv;
        attr.cap.max_send_sge = 1;
        attr.cap.max_recv_sge = 1;
        attr.cap.max_inline_data = want;
        if (rdma_create_qp(conn->id, conn->dev->pd, &attr) == 0)
            break;
        err = -errno;
        if (err != -EINVAL || want == 0) {
            gfr_rdma_conn_log(conn, "%s: rdma_create_qp failed: %s (with %u bytes of inline "
                              "data, %u send and %u receive work requests)",
                              ibv_get_device_name(conn->id->verbs->device), strerror(-err),
                              want, attr.cap.max_send_wr, attr.cap.max_recv_wr);
            return err;
        }
        want = want > INLINE_STEP ? want - INLINE_STEP : 0;
    }
    conn->qp = conn->id->qp;
    conn->max_inline = attr.cap.max_inline_data;
    if (!conn->dev->iwarp &&
        rdma_set_option(conn->id, RDMA_OPTION_ID, RDMA_OPTION_ID_ACK_TIMEOUT, &timeout,
                        sizeof(timeout)) != 0)
        gfr_rdma_conn_log(conn, "cannot set qp-timeout=%u: %s; the CM's default stands", timeout,
                          strerror(errno));
    return 0;
}

/*
 * Creates the QP and the send buffers on the device the CM resolved, and
 * provides receive buffers: `credits` more in the device's SRQ, or the
 * connection's own.  CM thread only.
 */
int
gfr_rdma_conn_setup(struct gfr_rdma_conn *conn)
{
    struct gfr_rdma *engine = conn->engine;
    int err;

    err = check_placement(conn);
    if (err)
        return err;
    conn->nrecv = conn->opts.credits;
    conn->nsend = conn->opts.credits;
    if (engine->pool) {
        err = gfr_pool_client_create(engine->pool, &conn->pool_client);
        if (err)
            return err;
    }
    err = gfr_rdma_dev_get(engine, conn->id->verbs, cq_entries(conn), &conn->dev,
                           &conn->poller);
    if (!err)
        err = gfr_rdma_conn_setup_send_side(conn);
    if (!err && conn->dev->srq) {
        pthread_mutex_lock(&engine->lock);
        err = gfr_rdma_srq_reserve(conn->dev, conn->nrecv);
        conn->srq_reserved = !err;
        pthread_mutex_unlock(&engine->lock);
    } else if (!err) {
        err = setup_own_receives(conn);
    }
    if (!err)
        err = gfr_rdma_conn_create_qp(conn);
    if (err)
        return err;
    /* Local values until the peer's are known (gfr_rdma_conn_negotiate):
     * receives are accepted from now on, sends wait for ESTABLISHED.  Under
     * the lock, which snapshots read them under (the connection is listed
     * since gfr_rdma_conn_new), and before the QP number leads completions
     * here. */
    pthread_mutex_lock(&conn->lock);
    conn->limits.max_msg = conn->opts.max_msg;
    conn->limits.max_segs = GFR_WIRE_MAX_SEGS;
    gfr_credits_init(&conn->credits, conn->nrecv);
    conn->credits.send_avail = 0;
    pthread_mutex_unlock(&conn->lock);
    gfr_rdma_conn_table_add(conn->dev, conn);
    if (conn->dev->srq)
        return 0;
    for (uint32_t i = 0; i < conn->nrecv; i++) {
        err = gfr_rdma_post_recv(conn, i);
        if (err) {
            gfr_rdma_conn_log(conn, "ibv_post_recv failed: %s", strerror(-err));
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
    uint32_t received;

    gfr_rdma_conn_local_params(&conn->opts, &local);
    pthread_mutex_lock(&conn->lock);
    gfr_cm_negotiate(&local, peer, &conn->agreed);
    conn->limits.max_msg = conn->agreed.max_msg;
    conn->limits.max_segs = conn->agreed.max_segs;
    /* Both sides start with the agreed window.  The peer may already have
     * spent some of its own on messages that came before this event was
     * handled (counted against our local window, which is no smaller). */
    received = conn->credits.window - conn->credits.peer_avail;
    conn->credits.window = conn->agreed.credits;
    conn->credits.send_avail = conn->agreed.credits;
    conn->credits.peer_avail = received < conn->agreed.credits
                                   ? conn->agreed.credits - received : 0;
    conn->peer_probe_addr = peer->probe_addr;
    conn->peer_probe_rkey = peer->probe_rkey;
    pthread_mutex_unlock(&conn->lock);
    return 0;
}

/* Copies a CM-reported address; 0, -ENOTCONN (none yet) or -EINVAL. */
int
gfr_rdma_copy_addr(const struct sockaddr *from, struct sockaddr *addr, socklen_t *len)
{
    socklen_t size;

    if (!addr || !len)
        return -EINVAL;
    if (!from || (from->sa_family != AF_INET && from->sa_family != AF_INET6))
        return -ENOTCONN;
    size = from->sa_family == AF_INET ? sizeof(struct sockaddr_in)
                                      : sizeof(struct sockaddr_in6);
    memcpy(addr, from, size < *len ? size : *len);
    *len = size;
    return 0;
}

/* One of the connection's addresses (get: rdma_get_peer_addr or
 * rdma_get_local_addr), under conn->lock: finalize clears the id under it,
 * and rdma_cm writes them until conn->addrs_known. */
static int
conn_addr(struct gfr_rdma_conn *conn, struct sockaddr *(*get)(struct rdma_cm_id *),
          struct sockaddr *addr, socklen_t *len)
{
    int err;

    if (!conn)
        return -EINVAL;
    pthread_mutex_lock(&conn->lock);
    err = gfr_rdma_copy_addr(conn->id && conn->addrs_known ? get(conn->id) : NULL, addr, len);
    pthread_mutex_unlock(&conn->lock);
    return err;
}

int
gfr_rdma_conn_peer_addr(struct gfr_rdma_conn *conn, struct sockaddr *addr, socklen_t *len)
{
    return conn_addr(conn, rdma_get_peer_addr, addr, len);
}

int
gfr_rdma_conn_local_addr(struct gfr_rdma_conn *conn, struct sockaddr *addr, socklen_t *len)
{
    return conn_addr(conn, rdma_get_local_addr, addr, len);
}

void
gfr_rdma_conn_count_copied(struct gfr_rdma_conn *conn, size_t n)
{
    gfr_rdma_count_copied(conn, n);
}

/* Takes conn->lock, then engine->note_lock (never both at once); any
 * thread.  copied_bytes and the multi-rail counters are counted outside
 * conn->lock (uatomic). */
void
gfr_rdma_conn_read_stats(struct gfr_rdma_conn *conn, struct gfr_rdma_conn_stats *stats,
                         char last_error[GFR_RDMA_ERROR_STR])
{
    pthread_mutex_lock(&conn->lock);
    *stats = conn->stats;
    pthread_mutex_unlock(&conn->lock);
    stats->copied_bytes = uatomic_read(&conn->stats.copied_bytes);
    stats->failovers = uatomic_read(&conn->rail_failovers);
    stats->resends = uatomic_read(&conn->rail_resends);
    stats->duplicates = uatomic_read(&conn->rail_duplicates);
    pthread_mutex_lock(&conn->engine->note_lock);
    stats->errors = conn->nerrors;
    if (last_error)
        memcpy(last_error, conn->last_error, GFR_RDMA_ERROR_STR);
    pthread_mutex_unlock(&conn->engine->note_lock);
}

void
gfr_rdma_conn_stats(struct gfr_rdma_conn *conn, struct gfr_rdma_conn_stats *stats)
{
    gfr_rdma_conn_read_stats(conn, stats, NULL);
}

/* How long the adapter retries a work request before it fails it:
 * 4.096 us x 2^qp-timeout per try, retry-count retries. */
static uint64_t
retry_bound_ns(const struct gfr_rdma_opts *opts)
{
    return (4096ull << opts->qp_timeout) * (opts->retry_count + 1u);
}

/*
 * Probes the peer with a zero-length RDMA WRITE: its adapter acknowledges
 * it without its CPU, and it needs no rkey (IBTA C9-88) and no credit.  A
 * peer that is gone turns it into a retry-exceeded error after qp-timeout
 * and retry-count, so a connection whose peer vanished without a word (a
 * link down, a lost DREQ) ends instead of waiting for messages forever.
 * On iWARP a WRITE completes once TCP has taken it, which proves nothing
 * of the peer, and the IB retry attributes are ignored; a READ's response
 * proves it.  A zero-length READ is mishandled by siw (Linux 6.1) under
 * traffic: it answers one ahead of the READ responses it owes, or refuses
 * its STag, and ends a healthy QP (docs/providers.md).  So on iWARP the
 * probe reads one byte the peer offered for it in the CM private data
 * (dev->probe_src_mr) into this device's sink; a peer that offered none
 * (an older one) is not probed, and TCP finds it silent (tcp_retries2).
 * One at a time per connection; a probe still unanswered after twice the
 * adapter's retry time (and at least keepalive-ms) means the adapter
 * itself is stuck (seen on rxe after a link flap), and ends the
 * connection too.  CM thread (the keepalive timer), which is also the one
 * that frees connections; takes conn->lock.
 */
void
gfr_rdma_conn_keepalive(struct gfr_rdma_conn *conn)
{
    struct ibv_send_wr wr = {.wr_id = (uintptr_t)&conn->keepalive_wr,
                             .opcode = IBV_WR_RDMA_WRITE,
                             .send_flags = IBV_SEND_SIGNALED};
    struct ibv_sge sink;
    const struct gfr_rdma_opts *opts = &conn->opts;
    uint64_t now = gfr_now_ns();
    uint64_t patience = 2 * retry_bound_ns(opts);
    int err;

    if (conn->dev->iwarp && !conn->dev->probe_sink_mr)
        return;
    if (patience < opts->keepalive_ms * 1000000ull)
        patience = opts->keepalive_ms * 1000000ull;
    pthread_mutex_lock(&conn->lock);
    if (conn->dev->iwarp) {
        if (!conn->peer_probe_rkey) {
            pthread_mutex_unlock(&conn->lock);
            return;
        }
        sink = (struct ibv_sge){.addr = (uintptr_t)conn->dev->probe_sink_mr->addr,
                                .length = 1, .lkey = conn->dev->probe_sink_mr->lkey};
        wr.opcode = IBV_WR_RDMA_READ;
        wr.sg_list = &sink;
        wr.num_sge = 1;
        wr.wr.rdma.remote_addr = conn->peer_probe_addr;
        wr.wr.rdma.rkey = conn->peer_probe_rkey;
    }
    if (conn->state == GFR_CONN_ESTABLISHED && conn->keepalive_posted &&
        now - conn->keepalive_posted_ns > patience) {
        gfr_rdma_conn_log(conn, "a keepalive went unanswered for %llu ms; disconnecting",
                          (unsigned long long)((now - conn->keepalive_posted_ns) / 1000000));
        gfr_rdma_conn_fail_locked(conn, -ETIMEDOUT);
    }
    if (conn->state == GFR_CONN_ESTABLISHED && conn->qp && !conn->keepalive_posted) {
        err = gfr_rdma_qp_post_locked(conn, &conn->keepalive_wr, &wr);
        if (err) {
            gfr_rdma_post_failed_locked(conn, "posting a keepalive", err);
        } else {
            conn->keepalive_posted = 1;
            conn->keepalive_posted_ns = now;
        }
    }
    pthread_mutex_unlock(&conn->lock);
}

static void
conn_free(struct gfr_rdma_conn *conn)
{
    if (conn->bundle_lead)
        gfr_rdma_bundle_free(conn->bundle);
    pthread_mutex_destroy(&conn->lock);
    free(conn);
}

/* How long a QP on the SRQ is given for IBV_EVENT_QP_LAST_WQE_REACHED: on
 * a provider that raises it, long enough for an event the async thread
 * takes late on a loaded host (the verbs model, its CPUs taken by two busy
 * loops, lost SRQ receives to a 100 ms wait under its mlx5 and iwarp
 * profiles); briefly on one known not to (rxe, which leaves late
 * completions in the CQ), and on a device where the long wait once went by
 * with no event (an older provider that raises none), until one comes.
 * Then its poller is given this long for a pass over the CQ (a poller
 * whose CQ broke makes none). */
#define LAST_WQE_WAIT_NS (10000 * 1000000ull)
#define NO_LAST_WQE_WAIT_NS (100 * 1000000ull)
#define CQ_PASS_WAIT_NS (2000 * 1000000ull)

/*
 * May the connection's QP be destroyed now?  A QP on the device's SRQ may
 * have taken receive buffers whose completions are not yet polled, and
 * some providers (mlx5) remove a destroyed QP's completions from the CQ
 * and return the buffers to the SRQ's own free list: buffers the engine
 * would never see again, nor repost, while it still counts them.  So
 * first the QP, in the error state since it failed, reports
 * IBV_EVENT_QP_LAST_WQE_REACHED (it takes no more buffers and their
 * completions are in the CQ; waited for LAST_WQE_WAIT_NS at most, or
 * NO_LAST_WQE_WAIT_NS where the provider never raises it, and not at all
 * on a device removed or dead, which raises no more events), then
 * the poller makes a pass over the CQ, handing on every completion in it
 * (a late one finds no connection and only reposts its buffer).  1 once
 * both are done (at once without an SRQ or a QP), else 0: the CM thread
 * asks again on its next tick.  CM thread only, once the last reference
 * is gone (after gfr_rdma_conn_end: the owner does not wait for this), or
 * for a rail of a bundle before, once it is failing (its QP in the error
 * state), so that nothing it received is lost: then again after its end,
 * which finds it done.
 */
int
gfr_rdma_conn_quiesce(struct gfr_rdma_conn *conn, uint64_t now_ns)
{
    if (!conn->qp || !conn->dev || !conn->dev->srq || !conn->poller)
        return 1;
    switch (conn->quiesce) {
    case GFR_QUIESCE_START:
        conn->quiesce = GFR_QUIESCE_LAST_WQE;
        conn->quiesce_since_ns = now_ns;
        /* fall through */
    case GFR_QUIESCE_LAST_WQE: {
        int brief = conn->dev->no_last_wqe_event || conn->dev->last_wqe_missed;

        if (!uatomic_read(&conn->last_wqe_reached) && !conn->dev->gone &&
            !conn->dev->async_closed) {
            if (now_ns - conn->quiesce_since_ns < (brief ? NO_LAST_WQE_WAIT_NS : LAST_WQE_WAIT_NS))
                return 0;
            if (!brief) {
                conn->dev->last_wqe_missed = 1;
                gfr_rdma_conn_log(conn, "QP %u on the shared receive queue raised no "
                                  "IBV_EVENT_QP_LAST_WQE_REACHED within %llu ms: the device's "
                                  "QPs wait for it %llu ms until one does",
                                  conn->qp->qp_num,
                                  (unsigned long long)(LAST_WQE_WAIT_NS / 1000000),
                                  (unsigned long long)(NO_LAST_WQE_WAIT_NS / 1000000));
            }
        }
        conn->quiesce = GFR_QUIESCE_CQ_PASS;
        conn->quiesce_since_ns = now_ns;
        conn->cq_pass_from = gfr_rdma_poller_pass_begin(conn->poller);
    }
        /* fall through */
    case GFR_QUIESCE_CQ_PASS:
        if (gfr_rdma_poller_passed(conn->poller, conn->cq_pass_from))
            return 1;
        if (now_ns - conn->quiesce_since_ns < CQ_PASS_WAIT_NS)
            return 0;
        gfr_rdma_conn_log(conn, "poller %u made no pass over its completion queue within "
                          "%llu ms: destroying QP %u without it (a receive buffer it took "
                          "may be lost)", conn->poller->index,
                          (unsigned long long)(CQ_PASS_WAIT_NS / 1000000), conn->qp->qp_num);
        return 1;
    }
    return 1;
}

/*
 * The end its owner sees, once the last reference is gone: what still
 * waits (transfers, queued messages, offers, whose done callbacks run) is
 * released, and the owner's disconnected callback is called.  The verbs
 * resources stay until gfr_rdma_conn_finalize, which may have to wait for
 * the QP's last receives (gfr_rdma_conn_quiesce): the owner is not kept
 * waiting for that.  CM thread only.
 */
void
gfr_rdma_conn_end(struct gfr_rdma_conn *conn)
{
    pthread_mutex_lock(&conn->lock);
    if (conn->state != GFR_CONN_DISCONNECTING)
        gfr_rdma_conn_set_state_locked(conn, GFR_CONN_DISCONNECTING);
    if (conn->awaiting) /* replies that will not come: stop polling for them */
        gfr_rdma_poller_replied(conn->poller, conn->awaiting);
    conn->awaiting = 0;
    pthread_mutex_unlock(&conn->lock);
    gfr_rdma_xfers_release_all(conn);
    gfr_rdma_tx_release_all(conn);
    gfr_rdma_offers_release_all(conn);
    gfr_rdma_sbuf_drain(conn);
    /* Its peer sends nothing more: the receives it was promised go back
     * to the device's SRQ now, so that connections made while this one's
     * QP waits for its last receives do not grow the queue. */
    if (conn->dev && conn->dev->srq) {
        pthread_mutex_lock(&conn->engine->lock);
        if (conn->srq_reserved)
            gfr_rdma_srq_unreserve(conn->dev, conn->nrecv);
        conn->srq_reserved = 0;
        pthread_mutex_unlock(&conn->engine->lock);
    }
    if (conn->ops && conn->ops->disconnected) {
        conn->ops->disconnected(conn, conn->reason, conn->cb_arg);
        if (conn->bundle && !conn->bundle_lead) {
            /* A rail that joined a bundle is the engine's: the bundle may
             * be gone once it has heard of the end. */
            conn->bundle = NULL;
            pthread_mutex_lock(&conn->engine->lock);
            conn->released = 1;
            pthread_mutex_unlock(&conn->engine->lock);
        }
    } else if (!conn->ops) {
        pthread_mutex_lock(&conn->engine->lock);
        conn->released = 1; /* never handed to an owner */
        pthread_mutex_unlock(&conn->engine->lock);
    }
}

/* Frees the connection's verbs resources (and the connection, once its
 * owner has released it).  CM thread only, after gfr_rdma_conn_end and
 * once gfr_rdma_conn_quiesce said yes. */
void
gfr_rdma_conn_finalize(struct gfr_rdma_conn *conn)
{
    struct gfr_rdma *engine = conn->engine;
    int release;

    pthread_mutex_lock(&engine->lock);
    cds_list_del(&conn->link);
    pthread_mutex_unlock(&engine->lock);

    if (conn->dev)
        gfr_rdma_conn_table_remove(conn->dev, conn);
    pthread_mutex_lock(&conn->lock);
    if (conn->qp)
        rdma_destroy_qp(conn->id);
    conn->qp = NULL;
    if (conn->recv_mr)
        ibv_dereg_mr(conn->recv_mr);
    gfr_rdma_conn_free_send_side(conn);
    if (conn->id)
        rdma_destroy_id(conn->id);
    conn->id = NULL;
    if (conn->pool_client)
        gfr_pool_client_release(conn->pool_client);
    free(conn->recv_buf);
    free(conn->recv_wr);
    conn->recv_buf = NULL;
    conn->recv_wr = NULL;
    pthread_mutex_unlock(&conn->lock);
    /* Takes engine->lock, which snapshots hold while they take connection
     * locks: never under conn->lock. */
    if (conn->poller)
        gfr_rdma_dev_put(conn->poller, cq_entries(conn));

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
