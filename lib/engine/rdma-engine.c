/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The engine: its CM event channel and CM thread, listeners, connecting and
 * accepting, and the CM events that move a connection through its states.
 * Every function here that handles a CM event runs on the CM thread.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <urcu/uatomic.h>
#include <urcu/urcu-memb.h>

#include "gfr_addr.h"
#include "gfr_clock.h"
#include "gfr_port_counters.h"
#include "gfr_rail_ports.h"
#include "engine-conn.h"

/*
 * Ends the connections whose last reference is gone (their owners are
 * told at once: gfr_rdma_conn_end), and finalizes them once their QP may
 * be destroyed (gfr_rdma_conn_quiesce): those that must wait stay on
 * engine->quiescing, looked at again on every tick.  CM thread.
 */
static void
reap_all(struct gfr_rdma *engine)
{
    struct gfr_rdma_conn *conn;
    struct gfr_rdma_conn *tmp;
    CDS_LIST_HEAD(reaped);
    uint64_t now;

    pthread_mutex_lock(&engine->lock);
    cds_list_splice(&engine->reap, &reaped);
    CDS_INIT_LIST_HEAD(&engine->reap);
    pthread_mutex_unlock(&engine->lock);
    cds_list_for_each_entry_safe(conn, tmp, &reaped, reap_link) {
        cds_list_del(&conn->reap_link);
        gfr_rdma_conn_end(conn);
        cds_list_add_tail(&conn->reap_link, &engine->quiescing);
    }
    now = gfr_now_ns();
    cds_list_for_each_entry_safe(conn, tmp, &engine->quiescing, reap_link) {
        if (!gfr_rdma_conn_quiesce(conn, now))
            continue;
        cds_list_del(&conn->reap_link);
        gfr_rdma_conn_finalize(conn);
    }
}

static int
reject_reason_to_errno(struct gfr_rdma_conn *conn, const struct rdma_cm_event *event)
{
    if (event->param.conn.private_data_len >= 1) {
        uint8_t why = *(const uint8_t *)event->param.conn.private_data;
        if (why >= GFR_CM_REJECT_SHORT && why <= GFR_CM_REJECT_BUNDLE) {
            gfr_rdma_conn_log(conn, "connection rejected by the peer: %s",
                              gfr_cm_reject_str((enum gfr_cm_reject_reason)why));
            return -EPROTO;
        }
    }
    gfr_rdma_conn_log(conn, "connection rejected by the peer (status %d)", event->status);
    return -ECONNREFUSED;
}

/* Connection parameters, after gfr_rdma_conn_setup (the device is known):
 * as many RDMA READs in flight each way as rdma-depth and the device
 * allow; private_data holds GFR_CM_PRIVATE_MAX bytes. */
static void
fill_conn_param(const struct gfr_rdma_conn *conn, struct rdma_conn_param *param,
                uint8_t *private_data)
{
    int len;

    uint32_t depth = conn->opts.rdma_depth;
    struct gfr_cm_params local;

    gfr_rdma_conn_local_params(&conn->opts, &local);
    if (conn->dev->probe_src_mr) {
        local.probe_addr = (uintptr_t)conn->dev->probe_buf;
        local.probe_rkey = conn->dev->probe_src_mr->rkey;
    }
    gfr_cm_encode(&local, private_data, GFR_CM_PRIVATE_MAX);
    len = gfr_cm_rails_encode(&conn->cm_rails, private_data, GFR_CM_PRIVATE_MAX);
    memset(param, 0, sizeof(*param));
    param->private_data = private_data;
    param->private_data_len = (uint8_t)(len > 0 ? len : GFR_CM_PRIVATE_SIZE);
    param->retry_count = conn->opts.retry_count;
    param->rnr_retry_count = conn->opts.rnr_retry;
    param->responder_resources = (uint8_t)(depth < conn->dev->max_rd_atom
                                           ? depth : conn->dev->max_rd_atom);
    param->initiator_depth = (uint8_t)(depth < conn->dev->max_init_rd_atom
                                       ? depth : conn->dev->max_init_rd_atom);
}

/* A failure before the connection exists on the wire: flush and reap. */
static void
conn_abort(struct gfr_rdma_conn *conn, int reason)
{
    gfr_rdma_conn_fail(conn, reason);
    gfr_rdma_conn_cm_done(conn);
}

/* Refuses a connection request before it has a connection, with reason
 * (GFR_CM_REJECT_NONE: none) and a log line naming the peer. */
static void
refuse_request(struct rdma_cm_event *event, enum gfr_cm_reject_reason why)
{
    uint8_t reason = (uint8_t)why;
    char from[GFR_RDMA_PEER_NAME_MAX];

    gfr_rdma_peer_name(rdma_get_peer_addr(event->id), from);
    gfr_rdma_log("rejecting a connection request from %s: %s", from, gfr_cm_reject_str(why));
    rdma_reject(event->id, &reason, 1);
    rdma_destroy_id(event->id);
}

/*
 * A client that would use rails reached a listener with rails on: its
 * connection becomes a bundle's lead, and the accept names the bundle and
 * the rail addresses, with the listener's port.  Without addresses, or
 * when the bundle cannot be made, the connection stays on one rail, as it
 * would with a server without rails.  CM thread, before the accept.
 */
static void
offer_rails(struct gfr_rdma_conn *conn, struct gfr_rdma_listener *listener)
{
    struct sockaddr_storage addrs[GFR_RDMA_MAX_RAIL_ADDRS];
    char bound[INET6_ADDRSTRLEN];
    unsigned port;
    struct gfr_cm_rails *offer = &conn->cm_rails;
    int n = gfr_rdma_opts_rail_addresses(&conn->opts, addrs, GFR_RDMA_MAX_RAIL_ADDRS);
    int err;

    if (n <= 0) {
        if (!listener->rails_unoffered++)
            gfr_rdma_conn_log(conn, "rails are on, but rail-addresses names no address "
                              "to offer: clients with rails stay on one rail");
        return;
    }
    err = gfr_rdma_bundle_lead(conn, 1);
    if (err) {
        gfr_rdma_conn_log(conn, "cannot make a bundle of rails (%s): the connection "
                          "stays on one rail", strerror(-err));
        return;
    }
    gfr_addr_host_port((const struct sockaddr *)&listener->addr, bound, &port);
    *offer = (struct gfr_cm_rails){.flags = GFR_CM_F_RAILS, .bundle = conn->bundle_id,
                                   .token = conn->bundle->token, .naddrs = (unsigned)n};
    for (int i = 0; i < n; i++) {
        struct gfr_cm_rail_addr *a = &offer->addrs[i];

        a->port = (uint16_t)port;
        if (addrs[i].ss_family == AF_INET6) {
            a->family = 6;
            memcpy(a->addr, &((struct sockaddr_in6 *)&addrs[i])->sin6_addr, 16);
        } else {
            a->family = 4;
            memcpy(a->addr, &((struct sockaddr_in *)&addrs[i])->sin_addr, 4);
        }
    }
}

static void
on_connect_request(struct gfr_rdma *engine, struct rdma_cm_event *event)
{
    struct gfr_rdma_listener *listener = event->listen_id->context;
    const struct gfr_rdma_opts *opts = &listener->opts;
    struct gfr_rdma_bundle *bundle = NULL;
    struct gfr_cm_params peer;
    struct gfr_cm_rails rails;
    enum gfr_cm_reject_reason why;
    struct rdma_conn_param param;
    uint8_t private_data[GFR_CM_PRIVATE_MAX];
    struct gfr_rdma_conn *conn;
    int err;

    if (gfr_cm_decode(event->param.conn.private_data, event->param.conn.private_data_len,
                      &peer, &why) != 0 ||
        gfr_cm_rails_decode(event->param.conn.private_data,
                            event->param.conn.private_data_len, &rails, &why) != 0) {
        refuse_request(event, why);
        return;
    }
    if (rails.flags & GFR_CM_F_JOIN) {
        /* A rail joins its bundle: it runs by the lead's options, and its
         * owner is the lead's, who is not asked again. */
        bundle = gfr_rdma_bundle_find(engine, rails.bundle, rails.token);
        if (!bundle) {
            refuse_request(event, GFR_CM_REJECT_BUNDLE);
            return;
        }
        opts = &bundle->lead->opts;
    }
    conn = gfr_rdma_conn_new(engine, opts, rdma_get_peer_addr(event->id));
    if (!conn) {
        rdma_reject(event->id, NULL, 0);
        rdma_destroy_id(event->id);
        return;
    }
    event->id->context = conn;
    pthread_mutex_lock(&conn->lock); /* listed already: snapshots read these */
    conn->id = event->id;
    conn->is_server = 1;
    gfr_rdma_conn_set_state_locked(conn, GFR_CONN_CONNECTING);
    pthread_mutex_unlock(&conn->lock);
    conn->connect_deadline_ns = gfr_deadline_ns(conn->opts.connect_timeout_ms);
    if (bundle) {
        err = gfr_rdma_bundle_member(bundle, conn, rails.rail_id, -1);
        if (err) {
            uint8_t reason = GFR_CM_REJECT_BUNDLE;

            if (err == -ENOSPC)
                gfr_rdma_conn_log(conn, "rejecting a rail: its bundle has %d rails already",
                                  GFR_CM_MAX_RAILS);
            else
                gfr_rdma_conn_log(conn, "rejecting a rail: its bundle is ending");
            rdma_reject(conn->id, &reason, 1);
            conn_abort(conn, err);
            return;
        }
    } else {
        err = listener->accept(listener, conn, listener->cb_arg, &conn->ops, &conn->cb_arg);
        if (!err && (!conn->ops || !conn->ops->received || !conn->ops->disconnected))
            err = -EINVAL;
        if (err) {
            /* Refused by the user: never reported to it. */
            conn->ops = NULL;
            rdma_reject(conn->id, NULL, 0);
            conn_abort(conn, err);
            return;
        }
        if ((rails.flags & GFR_CM_F_RAILS) && gfr_rdma_opts_rails(&conn->opts) != GFR_RAILS_OFF)
            offer_rails(conn, listener);
    }
    err = gfr_rdma_conn_setup(conn);
    if (!err)
        err = gfr_rdma_conn_negotiate(conn, &peer);
    if (!err) {
        fill_conn_param(conn, &param, private_data);
        if (rdma_accept(conn->id, &param) != 0)
            err = -errno;
    }
    if (err) {
        /* The CM refuses to set up a QP for a request the peer has already
         * withdrawn (a REJ, its id destroyed): EINVAL, seen under a flood
         * of abandoned connection requests. */
        gfr_rdma_conn_log(conn, "cannot accept a connection: %s%s", strerror(-err),
                          err == -EINVAL ? " (the peer may have withdrawn its request)" : "");
        rdma_reject(conn->id, NULL, 0);
        conn_abort(conn, err);
    }
}

static void join_rails(struct gfr_rdma *engine, struct gfr_rdma_conn *lead,
                       const struct gfr_cm_rails *offer);
static void rejoin_rails(struct gfr_rdma *engine);

static void
on_established(struct gfr_rdma *engine, struct gfr_rdma_conn *conn,
               struct rdma_cm_event *event)
{
    struct gfr_cm_params peer;
    struct gfr_cm_rails offer = {0};
    enum gfr_cm_reject_reason why;
    int usable;

    if (!conn->is_server) {
        if (gfr_cm_decode(event->param.conn.private_data,
                          event->param.conn.private_data_len, &peer, &why) != 0 ||
            gfr_cm_rails_decode(event->param.conn.private_data,
                                event->param.conn.private_data_len, &offer, &why) != 0) {
            gfr_rdma_conn_log(conn, "dropping a connection the peer accepted: %s",
                              gfr_cm_reject_str(why));
            pthread_mutex_lock(&conn->lock);
            conn->was_connected = 1;
            gfr_rdma_conn_fail_locked(conn, -EPROTO);
            pthread_mutex_unlock(&conn->lock);
            return;
        }
        gfr_rdma_conn_negotiate(conn, &peer);
    }
    pthread_mutex_lock(&conn->lock);
    conn->was_connected = 1;
    usable = conn->state == GFR_CONN_CONNECTING;
    if (usable)
        gfr_rdma_conn_set_state_locked(conn, GFR_CONN_ESTABLISHED);
    else if (conn->id)
        /* It failed before the CM reported it (a server can receive, and
         * fail, as soon as it has accepted): the peer believes it is
         * connected and has to be told now.  Its deadline is running. */
        rdma_disconnect(conn->id);
    pthread_mutex_unlock(&conn->lock);
    if (!usable)
        return; /* disconnected follows */
    if (!conn->is_server && conn->bundle_lead)
        gfr_rdma_bundle_taken(conn, (offer.flags & GFR_CM_F_RAILS) ? offer.bundle : 0,
                              offer.token);
    if (conn->opts.keepalive_ms)
        conn->keepalive_next_ns = gfr_deadline_ns(conn->opts.keepalive_ms);
    if (conn->ops->connected)
        conn->ops->connected(conn, conn->cb_arg);
    /* Grants that piled up before ESTABLISHED. */
    gfr_rdma_send_flush(conn);
    if (!conn->is_server && conn->bundle_lead)
        join_rails(engine, conn, &offer);
}

/* The CM says the connection closed: it ends in order, or as reset when
 * the peer cut work of ours off (gfr_rdma_conn_cut_off_locked).  CM
 * thread; takes conn->lock. */
static void
on_disconnected(struct gfr_rdma_conn *conn)
{
    int was_up;

    pthread_mutex_lock(&conn->lock);
    was_up = conn->state == GFR_CONN_ESTABLISHED;
    gfr_rdma_conn_fail_locked(conn, gfr_rdma_conn_cut_off_locked(conn));
    pthread_mutex_unlock(&conn->lock);
    /* a rail's end is the bundle's business: said where it comes from */
    if (was_up && conn->bundle)
        gfr_rdma_conn_log(conn, "rail %u: the peer disconnected it", conn->rail);
}

/* A client's next step of resolving and connecting, unless the connection
 * failed meanwhile (engine destruction, a device removed): then its end
 * is under way and nothing more is started.  1 when it moved on. */
static int
advance(struct gfr_rdma_conn *conn, enum gfr_conn_state to)
{
    int failed;

    pthread_mutex_lock(&conn->lock);
    failed = conn->state == GFR_CONN_DISCONNECTING;
    if (!failed)
        gfr_rdma_conn_set_state_locked(conn, to);
    pthread_mutex_unlock(&conn->lock);
    return !failed;
}

static void
on_conn_event(struct gfr_rdma *engine, struct rdma_cm_event *event)
{
    struct gfr_rdma_conn *conn = event->id->context;
    int err;

    switch (event->event) {
    case RDMA_CM_EVENT_ADDR_RESOLVED:
        if (!advance(conn, GFR_CONN_RESOLVING_ROUTE))
            break;
        if (rdma_resolve_route(conn->id, (int)conn->opts.connect_timeout_ms) != 0)
            conn_abort(conn, -errno);
        break;
    case RDMA_CM_EVENT_ROUTE_RESOLVED: {
        struct rdma_conn_param param;
        uint8_t private_data[GFR_CM_PRIVATE_MAX];

        err = gfr_rdma_conn_setup(conn);
        if (!err) {
            fill_conn_param(conn, &param, private_data);
            conn->connect_deadline_ns = gfr_deadline_ns(conn->opts.connect_timeout_ms);
            if (!advance(conn, GFR_CONN_CONNECTING))
                break;
            if (rdma_connect(conn->id, &param) != 0)
                err = -errno;
        }
        if (err)
            conn_abort(conn, err);
        break;
    }
    case RDMA_CM_EVENT_ESTABLISHED:
        on_established(engine, conn, event);
        break;
    case RDMA_CM_EVENT_ADDR_ERROR:
    case RDMA_CM_EVENT_ROUTE_ERROR:
        gfr_rdma_conn_log(conn, "cannot resolve the peer's %s: %s",
                          event->event == RDMA_CM_EVENT_ADDR_ERROR ? "address" : "route",
                          strerror(-event->status));
        conn_abort(conn, event->status ? event->status : -EHOSTUNREACH);
        break;
    case RDMA_CM_EVENT_UNREACHABLE:
    case RDMA_CM_EVENT_CONNECT_ERROR:
        gfr_rdma_conn_log(conn, "connecting failed: %s", rdma_event_str(event->event));
        conn_abort(conn, event->event == RDMA_CM_EVENT_UNREACHABLE ? -EHOSTUNREACH
                                                                   : -ECONNREFUSED);
        break;
    case RDMA_CM_EVENT_REJECTED:
        conn_abort(conn, reject_reason_to_errno(conn, event));
        break;
    case RDMA_CM_EVENT_DISCONNECTED:
        on_disconnected(conn);
        gfr_rdma_conn_cm_done(conn);
        break;
    case RDMA_CM_EVENT_DEVICE_REMOVAL:
        /* The last event of this id: the kernel is destroying it. */
        gfr_rdma_conn_log(conn, "%s: disconnecting", rdma_event_str(event->event));
        gfr_rdma_dev_removed(engine, event->id->verbs);
        gfr_rdma_conn_fail(conn, -ENODEV);
        gfr_rdma_conn_cm_done(conn);
        break;
    case RDMA_CM_EVENT_ADDR_CHANGE:
        gfr_rdma_conn_log(conn, "%s: disconnecting", rdma_event_str(event->event));
        gfr_rdma_conn_fail(conn, -ENODEV);
        if (!conn->was_connected)
            gfr_rdma_conn_cm_done(conn);
        break;
    default:
        break; /* TIMEWAIT_EXIT and the like */
    }
}

static void
log_listener(const struct gfr_rdma_listener *listener, const char *what)
{
    char name[GFR_RDMA_PEER_NAME_MAX];

    gfr_rdma_peer_name((const struct sockaddr *)&listener->addr, name);
    gfr_rdma_log("listener on %s: %s", name, what);
}

/* Binds and listens on listener->addr: 0 or -errno.  The CM path of the
 * verbs libraries sets errno. */
static int
listener_open(struct gfr_rdma *engine, struct gfr_rdma_listener *listener,
              struct rdma_cm_id **idp)
{
    struct rdma_cm_id *id = NULL;
    int err;

    if (rdma_create_id(engine->channel, &id, listener, RDMA_PS_TCP) != 0)
        return -errno;
    if (rdma_bind_addr(id, (struct sockaddr *)&listener->addr) != 0 ||
        rdma_listen(id, listener->backlog) != 0) {
        err = -errno;
        rdma_destroy_id(id);
        return err;
    }
    *idp = id;
    return 0;
}

/*
 * The device the listener's address is on is going away: give the id
 * back (the kernel waits for it) and listen again once a device has the
 * address (relisten).  A listener on a wildcard address spans every
 * device and never sees this.  CM thread.
 */
static void
on_listener_device_removal(struct gfr_rdma *engine, struct gfr_rdma_listener *listener,
                           struct ibv_context *verbs)
{
    struct rdma_cm_id *id;

    gfr_rdma_dev_removed(engine, verbs);
    pthread_mutex_lock(&engine->lock);
    id = listener->id;
    listener->id = NULL;
    listener->relisten_ns = gfr_deadline_ns(1000);
    pthread_mutex_unlock(&engine->lock);
    rdma_destroy_id(id);
    log_listener(listener, "its device was removed; listening again once the "
                 "address has a device");
}

/* Listeners whose device went away try to listen again every second.
 * CM thread; holds engine->lock over the attempts (a few system calls
 * each, and only while a device is missing). */
static void
relisten(struct gfr_rdma *engine)
{
    struct gfr_rdma_listener *listener;
    uint64_t now = gfr_now_ns();

    pthread_mutex_lock(&engine->lock);
    cds_list_for_each_entry(listener, &engine->listeners, link) {
        struct rdma_cm_id *id;
        int err;

        if (listener->id || now < listener->relisten_ns)
            continue;
        err = listener_open(engine, listener, &id);
        if (err) {
            listener->relisten_ns = gfr_deadline_ns(1000);
            continue;
        }
        listener->id = id;
        log_listener(listener, "listening again");
    }
    pthread_mutex_unlock(&engine->lock);
}

static void
handle_cm_event(struct gfr_rdma *engine)
{
    struct rdma_cm_event *event;
    struct rdma_cm_event copy;
    uint8_t private_data[256];

    if (rdma_get_cm_event(engine->channel, &event) != 0)
        return;
    /* Handle a copy after acking, so that destroying an id here never
     * waits for an event we still hold. */
    copy = *event;
    if (event->param.conn.private_data && event->param.conn.private_data_len) {
        size_t n = event->param.conn.private_data_len;
        if (n > sizeof(private_data))
            n = sizeof(private_data);
        memcpy(private_data, event->param.conn.private_data, n);
        copy.param.conn.private_data = private_data;
        copy.param.conn.private_data_len = (uint8_t)n;
    }
    if (event->event == RDMA_CM_EVENT_CONNECT_REQUEST) {
        rdma_ack_cm_event(event);
        on_connect_request(engine, &copy);
        return;
    }
    rdma_ack_cm_event(event);
    if (!copy.id || !copy.id->context)
        return;
    if (*(enum gfr_cm_ctx_kind *)copy.id->context == GFR_CM_CTX_LISTENER) {
        if (copy.event == RDMA_CM_EVENT_DEVICE_REMOVAL)
            on_listener_device_removal(engine, copy.id->context, copy.id->verbs);
        return;
    }
    on_conn_event(engine, &copy);
}

/*
 * The connection timers, checked by the CM thread on each tick (tick_ms).  Each
 * kind has a test, run under engine->lock (it may re-arm the timer), and
 * an action, run without it: actions take conn->lock, which is never
 * taken under engine->lock.  The CM thread is the only one that frees
 * connections, so a batch stays valid once engine->lock is dropped.  An
 * action may leave its timer due (a stalled rail waiting for its poller's
 * pass, or for a probe): it fires again on the next tick, not in this
 * pass.
 */
struct conn_timer {
    int (*due)(struct gfr_rdma_conn *conn, uint64_t now);
    void (*fire)(struct gfr_rdma_conn *conn);
};

/* A handshake longer than connect-timeout-ms: a peer that went away or
 * never sends its RTU (half-open connections hold CQ room). */
static int
handshake_due(struct gfr_rdma_conn *conn, uint64_t now)
{
    return gfr_rdma_conn_state(conn) == GFR_CONN_CONNECTING && !conn->was_connected &&
           now > conn->connect_deadline_ns;
}

static void
handshake_fire(struct gfr_rdma_conn *conn)
{
    gfr_rdma_conn_log(conn, "the connection handshake took longer than connect-timeout-ms "
                      "(%u ms): giving up", conn->opts.connect_timeout_ms);
    conn_abort(conn, -ETIMEDOUT);
}

/* A disconnect the peer's CM has not answered within connect-timeout-ms:
 * the CM would retry its DREQ for a minute and more before reporting
 * DISCONNECTED.  Destroying the id (at finalisation) ends it. */
static int
disconnect_due(struct gfr_rdma_conn *conn, uint64_t now)
{
    uint64_t deadline = uatomic_read(&conn->disconnect_deadline_ns);

    return deadline && now > deadline && !uatomic_read(&conn->cm_done);
}

static void
disconnect_fire(struct gfr_rdma_conn *conn)
{
    if (conn->was_connected)
        gfr_rdma_conn_log(conn, "the peer did not answer the disconnect within connect-timeout-ms "
                          "(%u ms): closing the connection without it",
                          conn->opts.connect_timeout_ms);
    else
        gfr_rdma_conn_log(conn, "the connection failed during its handshake and the handshake did "
                          "not end within connect-timeout-ms (%u ms): closing it",
                          conn->opts.connect_timeout_ms);
    gfr_rdma_conn_cm_done(conn);
}

/* Connect-timeout-ms after a connection failed, once its CM side is done:
 * whatever it posted should have flushed long ago (its QP went to error
 * when it failed); a provider that will never complete some is made to
 * (gfr_rdma_cq_flush_stranded).  On a device removed or dead at once:
 * it completes nothing more.  Once per connection. */
static int
stranded_due(struct gfr_rdma_conn *conn, uint64_t now)
{
    uint64_t deadline = uatomic_read(&conn->disconnect_deadline_ns);
    int gone = conn->dev && (conn->dev->gone || conn->dev->async_closed);

    return deadline && (now > deadline || gone) && uatomic_read(&conn->cm_done) &&
           !conn->stranded_flushed && conn->poller;
}

static int
keepalive_due(struct gfr_rdma_conn *conn, uint64_t now)
{
    if (!conn->keepalive_next_ns || now < conn->keepalive_next_ns)
        return 0;
    conn->keepalive_next_ns = gfr_deadline_ns(conn->opts.keepalive_ms);
    return 1;
}

/* A failing rail of a bundle whose QP's completions are all handed on
 * (gfr_rdma_conn_quiesce, reached early), or that never connected (it
 * received nothing): its own reference goes, and with the last one it
 * ends as any connection does. */
static int
rail_pass_due(struct gfr_rdma_conn *conn, uint64_t now)
{
    (void)now;
    return uatomic_read(&conn->pass_held) && gfr_rdma_conn_state(conn) == GFR_CONN_DISCONNECTING;
}

static void
rail_pass_fire(struct gfr_rdma_conn *conn)
{
    if (conn->was_connected && !gfr_rdma_conn_quiesce(conn, gfr_now_ns()))
        return;
    uatomic_set(&conn->pass_held, 0);
    gfr_rdma_conn_put(conn);
}

/*
 * A rail of a bundle whose sends have made no progress for rail-timeout-ms
 * (signaled work requests outstanding, none completing: an unsignaled one
 * posted last never shows a completion; a path that drops what it
 * is sent without an error, an RNR wait without end, iWARP's TCP
 * retransmitting for minutes) is due; whether another rail made progress
 * meanwhile is rail_stall_fire's question.  A rail idle or moving is
 * well, and so is one first seen.  Takes conn->lock (under engine->lock,
 * as snapshots do); CM thread.
 */
static int
rail_stall_due(struct gfr_rdma_conn *conn, uint64_t now)
{
    uint64_t done, timeout_ns = conn->opts.rail_timeout_ms * 1000000ull;
    uint32_t outstanding = 0;
    int railed;

    /* The state first: a client's lead gets its bundle on the connecting
     * thread, before it is established. */
    pthread_mutex_lock(&conn->lock);
    railed = conn->state == GFR_CONN_ESTABLISHED && conn->bundle && timeout_ns &&
             !conn->stall_ended;
    if (railed)
        outstanding = gfr_rdma_sq_signaled_locked(conn);
    pthread_mutex_unlock(&conn->lock);
    if (!railed)
        return 0;
    done = CMM_LOAD_SHARED(conn->sends_done);
    if (done != conn->stall_seen) {
        conn->stall_seen = done;
        conn->moved_ns = now;
    }
    if (!conn->calm_ns || !outstanding || conn->moved_ns == now) {
        conn->calm_ns = now;
        conn->stall_passing = 0;
    }
    return now - conn->calm_ns >= timeout_ns;
}

/* Ends a stalled rail while another rail of its bundle made progress
 * well into the stall (in its second half: a pause of the whole peer,
 * which stalls every rail at once, is not taken for one rail's stall):
 * its calls go on there.  First its poller makes a pass over its CQ: a
 * poller kept off the CPU (a loaded host) leaves completions unpolled,
 * and a rail that only waits for it is not stalled; it is judged at the
 * next tick after the pass, or after stall_pass_wait_ns without one.  When no other rail made progress (the others
 * idle, or stalled too), each other rail is probed
 * (gfr_rdma_conn_keepalive, which posts none while one is out): one that
 * answers has made progress by the next tick; if none does, the peer,
 * not the rail, is slow or gone, which the probe and the adapter's
 * retries judge, and the rail is left alone.  CM thread. */
/* How long a stalled rail waits for its poller's pass: a poller kept off
 * the CPU, or held by a long handler, may make none for a while, and a
 * stall must still be judged within the bound (the rail timeout
 * plus 5 s, with the tick). */
static uint64_t
stall_pass_wait_ns(const struct gfr_rdma_conn *conn)
{
    uint64_t ms = conn->opts.rail_timeout_ms < 1000 ? 1000 : conn->opts.rail_timeout_ms;

    return (ms < 3000 ? ms : 3000) * 1000000ull;
}

static void
rail_stall_fire(struct gfr_rdma_conn *conn)
{
    uint64_t window_ns = conn->opts.rail_timeout_ms * 1000000ull;
    int other;

    if (!conn->stall_passing) {
        conn->stall_passing = 1;
        conn->stall_pass_ns = gfr_now_ns();
        conn->stall_pass_from = gfr_rdma_poller_pass_begin(conn->poller);
        return;
    }
    if (!gfr_rdma_poller_passed(conn->poller, conn->stall_pass_from) &&
        gfr_now_ns() - conn->stall_pass_ns < stall_pass_wait_ns(conn))
        return;
    other = gfr_rdma_bundle_progressing(conn, conn->calm_ns + window_ns / 2);

    if (other < 0) {
        struct gfr_rdma_conn *others[GFR_CM_MAX_RAILS];
        unsigned n = gfr_rdma_bundle_others(conn, others);

        for (unsigned i = 0; i < n; i++) {
            gfr_rdma_conn_keepalive(others[i]);
            gfr_rdma_conn_put(others[i]);
        }
        return;
    }
    conn->stall_ended = 1;
    gfr_rdma_conn_log(conn, "rail %u: its sends made no progress for rail-timeout-ms (%u ms) "
                      "while rail %d's did: ending it", conn->rail,
                      conn->opts.rail_timeout_ms, other);
    gfr_rdma_conn_fail(conn, -ETIMEDOUT);
    /* No disconnect handshake over a path that carries nothing: it could
     * only time out (connect-timeout-ms) while the rail's calls wait for
     * its end to be sent again.  The peer learns of it from the FENCE. */
    gfr_rdma_conn_cm_done(conn);
}

static const struct conn_timer conn_timers[] = {
    {handshake_due, handshake_fire},
    {disconnect_due, disconnect_fire},
    {stranded_due, gfr_rdma_cq_flush_stranded},
    {keepalive_due, gfr_rdma_conn_keepalive},
    {rail_pass_due, rail_pass_fire},
    {rail_stall_due, rail_stall_fire},
};

static void
run_timers(struct gfr_rdma *engine)
{
    struct gfr_rdma_conn *batch[32];
    const unsigned max = sizeof(batch) / sizeof(batch[0]);

    uint64_t pass = ++engine->timers_pass;

    for (size_t t = 0; t < sizeof(conn_timers) / sizeof(conn_timers[0]); t++) {
        const struct conn_timer *timer = &conn_timers[t];
        unsigned n;

        do {
            uint64_t now = gfr_now_ns();
            struct gfr_rdma_conn *conn;

            n = 0;
            pthread_mutex_lock(&engine->lock);
            cds_list_for_each_entry(conn, &engine->conns, link) {
                if (conn->timers_pass != pass) {
                    conn->timers_pass = pass;
                    conn->timers_fired = 0;
                }
                if ((conn->timers_fired & (1u << t)) || !timer->due(conn, now))
                    continue;
                conn->timers_fired |= 1u << t;
                batch[n++] = conn;
                if (n == max)
                    break;
            }
            pthread_mutex_unlock(&engine->lock);
            for (unsigned i = 0; i < n; i++)
                timer->fire(batch[i]);
        } while (n == max);
    }
}

/* Engine destruction, on the CM thread (the only one that frees
 * connections, so walking the list here is safe). */
static int
disconnect_all(struct gfr_rdma *engine)
{
    struct gfr_rdma_conn *conn;
    struct gfr_rdma_conn *tmp;
    int live = 0;

    pthread_mutex_lock(&engine->lock);
    cds_list_for_each_entry_safe(conn, tmp, &engine->conns, link) {
        live++;
        if (gfr_rdma_conn_state(conn) == GFR_CONN_DISCONNECTING)
            continue;
        pthread_mutex_unlock(&engine->lock);
        gfr_rdma_conn_fail(conn, 0);
        /* Never connected on the wire: no DISCONNECTED will come. */
        if (!conn->was_connected)
            gfr_rdma_conn_cm_done(conn);
        pthread_mutex_lock(&engine->lock);
        tmp = cds_list_entry(engine->conns.next, struct gfr_rdma_conn, link);
    }
    pthread_mutex_unlock(&engine->lock);
    return live;
}

/* Destroys the CM ids of the listeners gfr_rdma_listener_close handed
 * over.  On the CM thread, between events: a CONNECT_REQUEST already taken
 * from the channel still uses its listener after the event is acked. */
static void
close_listeners(struct gfr_rdma *engine)
{
    struct gfr_rdma_listener *listener;

    pthread_mutex_lock(&engine->lock);
    while (!cds_list_empty(&engine->closing)) {
        listener = cds_list_first_entry(&engine->closing, struct gfr_rdma_listener, link);
        cds_list_del_init(&listener->link);
        pthread_mutex_unlock(&engine->lock);
        if (listener->id)
            rdma_destroy_id(listener->id);
        pthread_mutex_lock(&engine->lock);
        listener->closed = 1;
    }
    pthread_cond_broadcast(&engine->closed);
    pthread_mutex_unlock(&engine->lock);
}

/*
 * dispatch=direct: looks at the pollers' handler runs (rdma-poller.c)
 * while any ran since the last tick; after a quiet tick the CM thread
 * goes back to ticking every 100 ms until a poller begins a run and sets
 * watching again.  A run that begins between the look and the clearing
 * is found by the second look.  CM thread.
 */
static void
watch_handlers(struct gfr_rdma *engine)
{
    if (engine->opts.dispatch != GFR_DISPATCH_DIRECT || !uatomic_read(&engine->watching))
        return;
    if (gfr_rdma_pollers_watch(engine, gfr_now_ns()))
        return;
    uatomic_set(&engine->watching, 0);
    cmm_smp_mb();
    if (gfr_rdma_pollers_watch(engine, gfr_now_ns()))
        uatomic_set(&engine->watching, 1);
}

/*
 * How long the CM thread may sleep between its timers: GFR_RELAY_AFTER_MS
 * while pollers run handlers (watch_handlers), 100 ms while anything is on
 * its way (a connection being set up or ending, a listener to reopen or
 * to close, a device being removed, destruction), else a second, or the
 * keepalive interval or the time until a rail is due to rejoin if
 * shorter: an idle process wakes once a second, and keepalives and the
 * check of stuck posts (gfr_rdma_dev_check_posts) run at most that much
 * late.  Takes engine->lock; CM thread.
 */
static int
tick_ms(struct gfr_rdma *engine)
{
    struct gfr_rdma_listener *listener;
    struct gfr_rdma_bundle *bundle;
    struct gfr_rdma_conn *conn;
    uint64_t now = gfr_now_ns();
    int ms = 1000;

    if (uatomic_read(&engine->watching))
        return GFR_RELAY_AFTER_MS;
    if (uatomic_read(&engine->destroying))
        return 100;
    pthread_mutex_lock(&engine->lock);
    if (!cds_list_empty(&engine->removed) || !cds_list_empty(&engine->closing) ||
        !cds_list_empty(&engine->reap))
        ms = 100;
    if (!cds_list_empty(&engine->quiescing)) /* the CM thread's own list */
        ms = 10;
    cds_list_for_each_entry(listener, &engine->listeners, link)
        if (!listener->id)
            ms = 100;
    cds_list_for_each_entry(conn, &engine->conns, link) {
        if (gfr_rdma_conn_state(conn) != GFR_CONN_ESTABLISHED)
            ms = 100;
        if (conn->opts.keepalive_ms && conn->opts.keepalive_ms < (uint32_t)ms)
            ms = (int)conn->opts.keepalive_ms;
        if (conn->stall_passing && ms > 100) /* judged once its poller has looked */
            ms = 100;
    }
    cds_list_for_each_entry(bundle, &engine->bundles, link) {
        uint64_t at = uatomic_read(&bundle->rejoin_ns);
        uint64_t wait_ms = at > now ? (at - now) / 1000000u + 1 : 0;

        if (at && wait_ms < (uint64_t)ms)
            ms = (int)wait_ms;
    }
    pthread_mutex_unlock(&engine->lock);
    return ms;
}

/* Devices whose async events the CM thread watches; more are not
 * watched (a process of GlusterFS uses one or two). */
#define WATCHED_DEVICES 16

static void *
cm_main(void *arg)
{
    struct gfr_rdma *engine = arg;
    struct pollfd pfds[2 + WATCHED_DEVICES];
    struct gfr_rdma_dev *devs[WATCHED_DEVICES];

    urcu_memb_register_thread(); /* adds, removes and finds connections by QP number */
    pfds[0] = (struct pollfd){.fd = engine->channel->fd, .events = POLLIN};
    pfds[1] = (struct pollfd){.fd = engine->wake_fd, .events = POLLIN};
    while (!uatomic_read(&engine->stopping)) {
        unsigned ndevs;

        if (uatomic_read(&engine->destroying) && disconnect_all(engine) == 0)
            break;
        ndevs = gfr_rdma_async_fds(engine, pfds + 2, devs, WATCHED_DEVICES);
        /* Also without events, tick_ms apart: handshakes expire,
         * listeners come back on their own, a long handler gets a relay. */
        if (poll(pfds, 2 + ndevs, tick_ms(engine)) < 0)
            for (unsigned i = 0; i < 2 + ndevs; i++)
                pfds[i].revents = 0;
        for (unsigned i = 0; i < ndevs; i++)
            if (pfds[2 + i].revents)
                gfr_rdma_async_handle(engine, devs[i], pfds[2 + i].revents);
        if (pfds[0].revents & POLLIN)
            handle_cm_event(engine);
        if (pfds[1].revents & POLLIN) {
            uint64_t count;
            if (read(engine->wake_fd, &count, sizeof(count)) < 0 && errno != EAGAIN)
                gfr_rdma_log("reading the CM thread's eventfd: %s", strerror(errno));
        }
        close_listeners(engine);
        gfr_rdma_cq_abandon_broken(engine);
        reap_all(engine);
        run_timers(engine);
        rejoin_rails(engine);
        gfr_rdma_dev_check_posts(engine, gfr_now_ns());
        watch_handlers(engine);
        gfr_rdma_dev_free_removed(engine);
        relisten(engine);
    }
    urcu_memb_unregister_thread();
    return NULL;
}

/* A port rails names that can carry no rail, and why. */
static void
log_unusable_port(const struct gfr_rail_port *p)
{
    gfr_rdma_log("rails: %s:%u can carry no rail: %s", p->dev.name, p->dev.port, p->why);
}

/*
 * rails = DEV[:PORT],...: each named port as the engine starts, where it
 * is or what it lacks (no such device, its port down, no interface, no
 * address), so that a rail the configuration names but cannot use is
 * never dropped in silence; and each rail address a server advertises
 * that none of them holds.  Later joins read the ports again.
 */
static void
log_rail_ports(const struct gfr_rdma_opts *opts)
{
    struct gfr_rail_port ports[GFR_RDMA_MAX_RAIL_DEVICES];
    struct sockaddr_storage addrs[GFR_RDMA_MAX_RAIL_ADDRS];
    char host[INET6_ADDRSTRLEN], address[GFR_RDMA_ADDR_STR];
    unsigned port;
    int n, naddrs;

    if (gfr_rdma_opts_rails(opts) != GFR_RAILS_DEVICES)
        return;
    n = gfr_rail_ports_read(gfr_sysfs_root(), opts, ports, GFR_RDMA_MAX_RAIL_DEVICES);
    if (n < 0) {
        gfr_rdma_log("rails %s: cannot read the interfaces' addresses (%s)", opts->rails,
                     strerror(-n));
        return;
    }
    for (int i = 0; i < n; i++) {
        const struct gfr_rail_port *p = &ports[i];

        if (!p->usable) {
            log_unusable_port(p);
            continue;
        }
        gfr_rdma_log("rails: %s:%u is on %s, %s%s", p->dev.name, p->dev.port, p->netdev,
                     gfr_rail_port_address(p, address, sizeof(address)),
                     p->naddrs > 1 ? " and more" : "");
    }
    naddrs = gfr_rdma_opts_rail_addresses(opts, addrs, GFR_RDMA_MAX_RAIL_ADDRS);
    for (int i = 0; i < naddrs; i++) {
        if (gfr_rail_ports_own(ports, (unsigned)n, (const struct sockaddr *)&addrs[i]))
            continue;
        gfr_addr_host_port((const struct sockaddr *)&addrs[i], host, &port);
        gfr_rdma_log("rails: rail address %s is on none of the usable ports rails names: "
                     "rails joined there use another device",
                     host);
    }
}

int
gfr_rdma_create(const struct gfr_rdma_opts *opts, struct gfr_pool *pool,
                struct gfr_rdma **enginep)
{
    struct gfr_rdma *engine;
    char why[160];
    int err;

    if (!opts || !enginep)
        return -EINVAL;
    if (gfr_rdma_opts_check(opts, why, sizeof(why)) != 0) {
        gfr_rdma_log("bad options: %s", why);
        return -EINVAL;
    }
    if (opts->dispatch != GFR_DISPATCH_INLINE && !pool) {
        gfr_rdma_log("bad options: dispatch=%s needs a worker pool",
                     gfr_dispatch_str(opts->dispatch));
        return -EINVAL;
    }
    engine = calloc(1, sizeof(*engine));
    if (!engine)
        return -ENOMEM;
    log_rail_ports(opts);
    engine->opts = *opts;
    engine->on_wc = gfr_rdma_cq_complete;
    engine->pool = opts->dispatch == GFR_DISPATCH_INLINE ? NULL : pool;
    engine->trace = opts->latency_stats == GFR_LATENCY_STATS_ON;
    pthread_mutex_init(&engine->lock, NULL);
    pthread_mutex_init(&engine->note_lock, NULL);
    pthread_mutex_init(&engine->threads_lock, NULL);
    CDS_INIT_LIST_HEAD(&engine->devices);
    CDS_INIT_LIST_HEAD(&engine->removed);
    CDS_INIT_LIST_HEAD(&engine->conns);
    CDS_INIT_LIST_HEAD(&engine->listeners);
    CDS_INIT_LIST_HEAD(&engine->closing);
    pthread_cond_init(&engine->closed, NULL);
    CDS_INIT_LIST_HEAD(&engine->reap);
    CDS_INIT_LIST_HEAD(&engine->quiescing);
    CDS_INIT_LIST_HEAD(&engine->dead);
    CDS_INIT_LIST_HEAD(&engine->bundles);
    engine->wake_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    engine->channel = rdma_create_event_channel();
    if (engine->wake_fd < 0 || !engine->channel) {
        err = engine->channel ? -errno : -ENODEV;
        gfr_rdma_log("cannot open the RDMA CM (%s): is rdma_ucm loaded and an RDMA "
                     "device present?", strerror(-err));
        goto fail;
    }
    err = -pthread_create(&engine->cm_thread, NULL, cm_main, engine);
    if (err)
        goto fail;
    pthread_setname_np(engine->cm_thread, "gfr-cm");
    *enginep = engine;
    return 0;
fail:
    if (engine->channel)
        rdma_destroy_event_channel(engine->channel);
    if (engine->wake_fd >= 0)
        close(engine->wake_fd);
    pthread_mutex_destroy(&engine->threads_lock);
    pthread_mutex_destroy(&engine->note_lock);
    pthread_mutex_destroy(&engine->lock);
    free(engine);
    return err;
}

/* Frees a client's connection that never started resolving. */
static void
client_conn_drop(struct gfr_rdma_conn *conn)
{
    struct gfr_rdma *engine = conn->engine;

    pthread_mutex_lock(&engine->lock);
    cds_list_del(&conn->link);
    pthread_mutex_unlock(&engine->lock);
    if (conn->bundle_lead)
        gfr_rdma_bundle_free(conn->bundle);
    free(conn);
}

/* opts for a connection of engine, or NULL (after a log line naming the
 * option) when they differ from engine's on an engine-wide one. */
static const struct gfr_rdma_opts *
conn_opts(const struct gfr_rdma *engine, const struct gfr_rdma_opts *opts, const char *what)
{
    const char *conflict;

    if (!opts)
        return &engine->opts;
    conflict = gfr_rdma_opts_engine_conflict(&engine->opts, opts);
    if (!conflict)
        return opts;
    gfr_rdma_log("cannot %s: %s differs from its engine's, and is the same for every "
                 "connection of an engine", what, conflict);
    return NULL;
}

/* A listener with rails on that is bound to one address hears joining
 * rails only there: each rail address it does not listen on is named in
 * the log at once, not discovered by a client whose rail is refused. */
static void
check_rail_addresses(const struct gfr_rdma_listener *listener)
{
    struct sockaddr_storage addrs[GFR_RDMA_MAX_RAIL_ADDRS];
    int n = gfr_rdma_opts_rail_addresses(&listener->opts, addrs, GFR_RDMA_MAX_RAIL_ADDRS);
    char bound[INET6_ADDRSTRLEN], host[INET6_ADDRSTRLEN], what[INET6_ADDRSTRLEN + 160];
    unsigned port;

    /* numeric text compares addresses of either family as inet_ntop writes them */
    gfr_addr_host_port((const struct sockaddr *)&listener->addr, bound, &port);
    if (strcmp(bound, "0.0.0.0") == 0 || strcmp(bound, "::") == 0)
        return;
    for (int i = 0; i < n; i++) {
        gfr_addr_host_port((const struct sockaddr *)&addrs[i], host, &port);
        if (strcmp(host, bound) == 0)
            continue;
        snprintf(what, sizeof(what), "rail address %s is not its address, so rails that "
                 "join there are refused: listen on the wildcard address (no bind-address) "
                 "to serve rails", host);
        log_listener(listener, what);
    }
}

int
gfr_rdma_listen(struct gfr_rdma *engine, const struct sockaddr *addr, int backlog,
                const struct gfr_rdma_opts *opts, gfr_rdma_accept_fn accept, void *cb_arg,
                struct gfr_rdma_listener **listenerp)
{
    struct gfr_rdma_listener *listener;
    socklen_t len = sizeof(listener->addr);
    int err;

    if (!engine || !addr || !accept || !listenerp)
        return -EINVAL;
    opts = conn_opts(engine, opts, "listen");
    if (!opts)
        return -EINVAL;
    if (addr->sa_family != AF_INET && addr->sa_family != AF_INET6) {
        gfr_rdma_log("cannot listen: address family %d is neither IPv4 nor IPv6",
                     addr->sa_family);
        return -EAFNOSUPPORT;
    }
    listener = calloc(1, sizeof(*listener));
    if (!listener)
        return -ENOMEM;
    listener->kind = GFR_CM_CTX_LISTENER;
    listener->engine = engine;
    listener->accept = accept;
    listener->cb_arg = cb_arg;
    listener->backlog = backlog;
    listener->opts = *opts;
    err = gfr_rdma_copy_addr(addr, (struct sockaddr *)&listener->addr, &len);
    if (!err)
        err = listener_open(engine, listener, &listener->id);
    if (err) {
        free(listener); /* the caller reports it: it may be trying again */
        return err;
    }
    /* With the port the kernel chose, to listen on it again. */
    len = sizeof(listener->addr);
    gfr_rdma_copy_addr(rdma_get_local_addr(listener->id),
                       (struct sockaddr *)&listener->addr, &len);
    if (gfr_rdma_opts_rails(&listener->opts) != GFR_RAILS_OFF)
        check_rail_addresses(listener);
    pthread_mutex_lock(&engine->lock);
    cds_list_add_tail(&listener->link, &engine->listeners);
    pthread_mutex_unlock(&engine->lock);
    *listenerp = listener;
    return 0;
}

void
gfr_rdma_listener_close(struct gfr_rdma_listener *listener)
{
    struct gfr_rdma *engine;
    uint64_t one = 1;

    if (!listener)
        return;
    engine = listener->engine;
    if (pthread_equal(pthread_self(), engine->cm_thread)) {
        pthread_mutex_lock(&engine->lock);
        cds_list_del(&listener->link);
        pthread_mutex_unlock(&engine->lock);
        if (listener->id)
            rdma_destroy_id(listener->id);
        free(listener);
        return;
    }
    pthread_mutex_lock(&engine->lock);
    cds_list_move(&listener->link, &engine->closing);
    pthread_mutex_unlock(&engine->lock);
    if (write(engine->wake_fd, &one, sizeof(one)) != sizeof(one))
        gfr_rdma_log("cannot wake the CM thread to close a listener: %s", strerror(errno));
    pthread_mutex_lock(&engine->lock);
    while (!listener->closed)
        pthread_cond_wait(&engine->closed, &engine->lock);
    pthread_mutex_unlock(&engine->lock);
    free(listener);
}

int
gfr_rdma_listener_addr(struct gfr_rdma_listener *listener, struct sockaddr *addr,
                       socklen_t *len)
{
    if (!listener)
        return -EINVAL;
    return gfr_rdma_copy_addr((const struct sockaddr *)&listener->addr, addr, len);
}

/* A client's connection to dst, with its CM id, resolving nothing yet:
 * the caller sets its callbacks, then resolves.  0, or -errno after a
 * log line. */
static int
client_conn_new(struct gfr_rdma *engine, const struct sockaddr *dst,
                const struct gfr_rdma_opts *opts, struct gfr_rdma_conn **connp)
{
    struct gfr_rdma_conn *conn = gfr_rdma_conn_new(engine, opts, dst);
    struct rdma_cm_id *id;
    int err;

    if (!conn)
        return -ENOMEM;
    if (rdma_create_id(engine->channel, &id, conn, RDMA_PS_TCP) != 0) {
        err = -errno;
        gfr_rdma_conn_log(conn, "rdma_create_id failed: %s", strerror(-err));
        client_conn_drop(conn);
        return err;
    }
    pthread_mutex_lock(&conn->lock); /* listed already: snapshots read these */
    conn->id = id;
    gfr_rdma_conn_set_state_locked(conn, GFR_CONN_RESOLVING_ADDR);
    pthread_mutex_unlock(&conn->lock);
    *connp = conn;
    return 0;
}

/* Starts resolving a client's connection; a failure is reported through
 * disconnected, like every other. */
static void
client_conn_resolve(struct gfr_rdma_conn *conn, const struct sockaddr *src,
                    const struct sockaddr *dst)
{
    int err;

    if (rdma_resolve_addr(conn->id, (struct sockaddr *)src, (struct sockaddr *)dst,
                          (int)conn->opts.connect_timeout_ms) != 0) {
        err = -errno;
        gfr_rdma_conn_log(conn, "rdma_resolve_addr failed: %s", strerror(-err));
        conn_abort(conn, err);
    }
}

/* Whether a and b are the same address and port. */
static int
same_endpoint(const struct sockaddr *a, const struct sockaddr_storage *b)
{
    if (!a || a->sa_family != b->ss_family)
        return 0;
    if (a->sa_family == AF_INET)
        return memcmp(a, b, sizeof(struct sockaddr_in)) == 0;
    return memcmp(&((const struct sockaddr_in6 *)a)->sin6_addr,
                  &((const struct sockaddr_in6 *)b)->sin6_addr, 16) == 0 &&
           ((const struct sockaddr_in6 *)a)->sin6_port ==
               ((const struct sockaddr_in6 *)b)->sin6_port;
}

/*
 * With rails = DEV[:PORT],..., the address of the named port on dst's
 * subnet into *src; NULL (the route decides) with rails auto.  Returns 0,
 * or -ENOENT (after a log line naming the ports and why each is no use,
 * when log) where no named port can reach dst.  Any thread.
 */
static int
rail_source(const struct gfr_rdma_opts *opts, const struct sockaddr *dst,
            struct sockaddr_storage *src, const struct sockaddr **srcp, int log)
{
    struct gfr_rail_port ports[GFR_RDMA_MAX_RAIL_DEVICES];
    char names[160], host[INET6_ADDRSTRLEN];
    unsigned port;
    int n;

    *srcp = NULL;
    if (gfr_rdma_opts_rails(opts) != GFR_RAILS_DEVICES)
        return 0;
    n = gfr_rail_ports_read(gfr_sysfs_root(), opts, ports, GFR_RDMA_MAX_RAIL_DEVICES);
    if (n > 0 && gfr_rail_ports_source(ports, (unsigned)n, dst, src) >= 0) {
        *srcp = (const struct sockaddr *)src;
        return 0;
    }
    if (log) {
        gfr_addr_host_port(dst, host, &port);
        gfr_rdma_log("rails %s: none has an address on the subnet of %s%s",
                     n > 0 ? gfr_rail_ports_names(ports, (unsigned)n, names, sizeof(names))
                           : opts->rails,
                     host,
                     n < 0 ? " (the interfaces' addresses cannot be read)" : "");
        for (int i = 0; i < n; i++)
            if (!ports[i].usable)
                log_unusable_port(&ports[i]);
    }
    return -ENOENT;
}

/*
 * Connects a rail of b on its path (the server's rail address dst): from
 * the named device port on dst's subnet with rails = DEV[:PORT],..., else
 * from whichever device its route picks; it joins with the bundle's id
 * and token.  When no rail can be made, the path waits its backoff again.
 * CM thread.
 */
static void
join_path(struct gfr_rdma *engine, struct gfr_rdma_bundle *b, int path,
          const struct sockaddr *dst)
{
    struct gfr_rdma_path *p = &b->paths[path];
    struct sockaddr_storage src_buf;
    const struct sockaddr *src;
    struct gfr_rdma_conn *rail;
    int err;

    if (rail_source(&b->lead->opts, dst, &src_buf, &src, !p->unsourced) != 0) {
        p->unsourced = 1;
        gfr_rdma_bundle_path_lost(b, path);
        return;
    }
    p->unsourced = 0;
    if (client_conn_new(engine, dst, &b->lead->opts, &rail) != 0) {
        gfr_rdma_bundle_path_lost(b, path);
        return;
    }
    err = gfr_rdma_bundle_member(b, rail, 0, path);
    if (err) {
        if (err == -ENOSPC)
            gfr_rdma_conn_log(rail, "every one of the %d rails of the bundle is in use "
                              "(rails still ending): this path joins later",
                              GFR_CM_MAX_RAILS);
        rdma_destroy_id(rail->id);
        client_conn_drop(rail);
        gfr_rdma_bundle_path_lost(b, path);
        return;
    }
    rail->cm_rails = (struct gfr_cm_rails){.flags = GFR_CM_F_JOIN, .bundle = b->id,
                                           .token = b->token, .rail_id = rail->rail_id};
    client_conn_resolve(rail, src, dst);
}

/*
 * The server accepted lead, a client's connection with rails, and offered
 * its bundle's rail addresses: each is a path of the bundle, the lead's
 * own address the lead's, and a rail is connected on every other one.
 * The bundle is listed so that its paths rejoin (rejoin_rails).  A server
 * that offered none (an older one, or one without rails or rail
 * addresses) is named in the log: the connection stays on one rail.  CM
 * thread.
 */
static void
join_rails(struct gfr_rdma *engine, struct gfr_rdma_conn *lead,
           const struct gfr_cm_rails *offer)
{
    struct gfr_rdma_bundle *b = lead->bundle;
    const struct sockaddr *lead_dst = rdma_get_peer_addr(lead->id);
    int lead_path = -1;

    if (!b->id || !offer->naddrs) {
        gfr_rdma_conn_log(lead, "rails are on, but the server offered none (rails off "
                          "or no rail-addresses there, or an older server): one rail, "
                          "and calls as without rails");
        return;
    }
    for (unsigned i = 0; i < offer->naddrs; i++) {
        const struct gfr_cm_rail_addr *a = &offer->addrs[i];
        struct sockaddr_storage dst = {0};
        int path;

        if (a->family == 6) {
            struct sockaddr_in6 *sin6 = (struct sockaddr_in6 *)&dst;

            sin6->sin6_family = AF_INET6;
            sin6->sin6_port = htons(a->port);
            memcpy(&sin6->sin6_addr, a->addr, 16);
        } else {
            struct sockaddr_in *sin = (struct sockaddr_in *)&dst;

            sin->sin_family = AF_INET;
            sin->sin_port = htons(a->port);
            memcpy(&sin->sin_addr, a->addr, 4);
        }
        if (same_endpoint(lead_dst, &dst)) {
            if (lead_path < 0)
                lead_path = gfr_rdma_bundle_add_path(b, (struct sockaddr *)&dst, lead);
            continue;
        }
        path = gfr_rdma_bundle_add_path(b, (struct sockaddr *)&dst, NULL);
        if (path < 0) {
            gfr_rdma_conn_log(lead, "the server offers more rail addresses than the %d "
                              "rails a bundle has: the rest are not joined", GFR_CM_MAX_RAILS);
            break;
        }
        join_path(engine, b, path, (struct sockaddr *)&dst);
    }
    pthread_mutex_lock(&engine->lock);
    cds_list_add_tail(&b->link, &engine->bundles);
    pthread_mutex_unlock(&engine->lock);
}

/* Client bundles whose paths wait to rejoin, each as its backoff ends
 * (the bundle's rejoin_ns; tick_ms wakes the CM thread for it).  The CM
 * thread is the only one that frees bundles, so those it found stay until
 * it is done with them.  CM thread. */
static void
rejoin_rails(struct gfr_rdma *engine)
{
    struct gfr_rdma_bundle *due[16];
    struct gfr_rdma_bundle *b;
    uint64_t now = gfr_now_ns();
    unsigned n = 0;

    if (uatomic_read(&engine->destroying)) /* every connection is ending */
        return;
    pthread_mutex_lock(&engine->lock);
    cds_list_for_each_entry(b, &engine->bundles, link) {
        uint64_t at = uatomic_read(&b->rejoin_ns);

        if (!b->is_server && at && at <= now && n < sizeof(due) / sizeof(due[0]))
            due[n++] = b;
    }
    pthread_mutex_unlock(&engine->lock);
    for (unsigned i = 0; i < n; i++) {
        struct sockaddr_storage dst;
        int path;

        while ((path = gfr_rdma_bundle_rejoin_due(due[i], now, &dst)) >= 0)
            join_path(engine, due[i], path, (struct sockaddr *)&dst);
    }
}

int
gfr_rdma_connect(struct gfr_rdma *engine, const struct sockaddr *dst,
                 const struct sockaddr *src, const struct gfr_rdma_opts *opts,
                 const struct gfr_rdma_conn_ops *ops, void *cb_arg,
                 struct gfr_rdma_conn **connp)
{
    struct sockaddr_storage src_buf;
    const struct sockaddr *rail_src;
    struct gfr_rdma_conn *conn;
    int err;

    if (!engine || !dst || !ops || !ops->received || !ops->disconnected || !connp)
        return -EINVAL;
    opts = conn_opts(engine, opts, "connect");
    if (!opts)
        return -EINVAL;
    /* The lead, too, leaves from a named port where one is on dst's
     * subnet; else by its route, as without rails (named in the log). */
    if (!src && rail_source(opts, dst, &src_buf, &rail_src, 1) == 0)
        src = rail_src;
    err = client_conn_new(engine, dst, opts, &conn);
    if (err)
        return err;
    conn->ops = ops;
    conn->cb_arg = cb_arg;
    if (gfr_rdma_opts_rails(&conn->opts) != GFR_RAILS_OFF) {
        err = gfr_rdma_bundle_lead(conn, 0);
        if (err) {
            rdma_destroy_id(conn->id);
            client_conn_drop(conn);
            return err;
        }
        conn->cm_rails.flags = GFR_CM_F_RAILS;
    }
    *connp = conn;
    client_conn_resolve(conn, src, dst);
    return 0;
}

void
gfr_rdma_destroy(struct gfr_rdma *engine)
{
    uint64_t one = 1;

    if (!engine)
        return;
    /* The CM thread disconnects every connection, reaps them as their
     * work requests flush and their CM events end, then exits. */
    uatomic_set(&engine->destroying, 1);
    if (write(engine->wake_fd, &one, sizeof(one)) != sizeof(one))
        gfr_rdma_log("cannot wake the CM thread: %s", strerror(errno));
    pthread_join(engine->cm_thread, NULL);
    while (!cds_list_empty(&engine->listeners)) {
        struct gfr_rdma_listener *l = cds_list_first_entry(&engine->listeners,
                                                           struct gfr_rdma_listener, link);
        cds_list_del(&l->link);
        if (l->id)
            rdma_destroy_id(l->id);
        free(l);
    }
    gfr_rdma_conn_free_dead(engine);
    gfr_rdma_dev_destroy_all(engine);
    rdma_destroy_event_channel(engine->channel);
    close(engine->wake_fd);
    pthread_cond_destroy(&engine->closed);
    pthread_mutex_destroy(&engine->threads_lock);
    pthread_mutex_destroy(&engine->note_lock);
    pthread_mutex_destroy(&engine->lock);
    free(engine);
}
