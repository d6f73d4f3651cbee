/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The receive side of a connection: decoding and checking every received
 * header against what this side offered, pulling a read list, answering
 * DONE, and delivering messages inline on the poller or through the
 * worker pool.  A received message moves through the stages of enum
 * gfr_rx_state, and only gfr_rdma_rx_advance moves it.  Completions reach
 * it from rdma-cq.c.  Locking and
 * lifetime rules: engine-state.h.
 */
#define _GNU_SOURCE
#ifdef HAVE_CONFIG_H
#include "config.h" /* GFR_DEBUG */
#endif
#include <assert.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <urcu/uatomic.h>

#include "gfr_clock.h"
#include "engine-rx.h"

/* The steps enum gfr_rx_state allows (engine-state.h). */
#define TO(state) (1u << (state))
static const unsigned rx_next[] = {
    [GFR_RX_RECEIVED] = TO(GFR_RX_CHECKED) | TO(GFR_RX_RELEASED),
    [GFR_RX_CHECKED] = TO(GFR_RX_PULLING) | TO(GFR_RX_DELIVERING) | TO(GFR_RX_RELEASED),
    [GFR_RX_PULLING] = TO(GFR_RX_PULLED) | TO(GFR_RX_RELEASED),
    [GFR_RX_PULLED] = TO(GFR_RX_DELIVERING),
    [GFR_RX_DELIVERING] = TO(GFR_RX_OWNED) | TO(GFR_RX_RELEASED),
    [GFR_RX_OWNED] = TO(GFR_RX_RELEASED),
    [GFR_RX_RELEASED] = 0,
};

static const char *const rx_state_names[] = {
    [GFR_RX_RECEIVED] = "RECEIVED",     [GFR_RX_CHECKED] = "CHECKED",
    [GFR_RX_PULLING] = "PULLING",       [GFR_RX_PULLED] = "PULLED",
    [GFR_RX_DELIVERING] = "DELIVERING", [GFR_RX_OWNED] = "OWNED",
    [GFR_RX_RELEASED] = "RELEASED",
};

const char *
gfr_rdma_rx_state_str(enum gfr_rx_state state)
{
    return (unsigned)state <= GFR_RX_RELEASED ? rx_state_names[state] : "unknown";
}

/*
 * Moves a received message to its next stage: the only writer of
 * m->state, and its trace point (gfr_rdma_trace_rx).  A
 * step enum gfr_rx_state does not allow is a bug: refused with -EINVAL
 * and logged, and --enable-debug builds stop.  The thread that holds the
 * message at that stage (enum gfr_rx_state); no lock needed.
 */
int
gfr_rdma_rx_advance(struct gfr_rdma_rxmsg *m, enum gfr_rx_state to)
{
    if ((unsigned)to > GFR_RX_RELEASED || !(rx_next[m->state] & TO(to))) {
        gfr_rdma_conn_log(m->conn, "refusing to move the received message of xid %u from %s "
                          "to %s", m->rx.xid, gfr_rdma_rx_state_str(m->state),
                          gfr_rdma_rx_state_str(to));
#ifdef GFR_DEBUG
        assert(!"illegal received-message state change");
#endif
        return -EINVAL;
    }
    gfr_rdma_trace_rx(m, to);
    m->state = to;
    return 0;
}

/*
 * The message is done with: its pull buffer goes back, and the request it
 * answers (if any) stops waiting for its delivery, with status
 * (-ECANCELED: the connection's end, which ends its offers itself).
 */
static void
rx_release(struct gfr_rdma_rxmsg *m, int status)
{
    gfr_rdma_rx_advance(m, GFR_RX_RELEASED);
    if (m->sink_mr)
        gfr_rdma_mr_deregister(m->conn, &m->sink_mr, 1);
    m->sink_mr = NULL;
    if (m->owned)
        gfr_rdma_pbuf_put(m->owned);
    if (m->reply_to && status != -ECANCELED)
        gfr_rdma_offer_settle(m->conn, m->reply_to, GFR_OFFER_DELIVERY, status);
}

/* Hands d's message to the owner (unless the pool is cancelling it: the
 * message dies with the process), then lets it go.  The caller keeps its
 * reference on the connection. */
static void
delivery_run(struct gfr_rdma_delivery *d, int status)
{
    struct gfr_rdma_conn *conn = d->m.conn;

    if (status == 0) {
        gfr_rdma_rx_advance(&d->m, GFR_RX_OWNED);
        conn->ops->received(conn, &d->m.rx, conn->cb_arg);
    }
    rx_release(&d->m, 0);
    free(d);
}

/* A delivery as a pool job (a pool worker). */
static void
run_delivery(struct gfr_pool_job *job, void *cb_arg, int status)
{
    struct gfr_rdma_delivery *d = caa_container_of(job, struct gfr_rdma_delivery, job);
    struct gfr_rdma_conn *conn = d->m.conn;

    (void)cb_arg;
    delivery_run(d, status);
    gfr_rdma_conn_put(conn);
}

/* Messages of a connection that go through the pool after one of its
 * handlers ran on the poller for GFR_RELAY_AFTER_MS or longer. */
#define POOL_AFTER_SLOW_HANDLER 1024

/*
 * A delivery on the poller thread (dispatch=direct, run after its batch by
 * rdma-poller.c).  A handler that ran as long as a relay takes to start
 * sends its connection's next messages through the pool: its handlers
 * block or are slow, and must not hold the poller.  pool_for is uatomic
 * (deliver reads it on a relay too).
 */
static void
run_delivery_direct(struct gfr_pool_job *job, void *cb_arg, int status)
{
    struct gfr_rdma_delivery *d = caa_container_of(job, struct gfr_rdma_delivery, job);
    struct gfr_rdma_conn *conn = d->m.conn;
    uint64_t start = gfr_now_ns();

    (void)cb_arg;
    delivery_run(d, status);
    if (gfr_now_ns() - start >= GFR_RELAY_AFTER_MS * 1000000ull) {
        uatomic_set(&conn->pool_for, POOL_AFTER_SLOW_HANDLER);
        uatomic_inc(&conn->poller->st_slow_handlers);
    }
    gfr_rdma_conn_put(conn);
}

/*
 * Hands m to its received callback.  dispatch=direct: after the poller's
 * current batch, on the poller thread (unless a relay polls, or the
 * connection's handlers were slow: then as dispatch=pool); pool: as a pool
 * job, one pool client per connection; inline (or when the pool cannot
 * take it: handled late rather than dropped): at once.  Released once
 * received has returned.  m is on the caller's stack with its head in a
 * receive buffer (copied unless handled at once), or it is held->m, a
 * pulled message, whose head is in its pull buffer.  The polling thread,
 * no lock held.
 */
static void
deliver(struct gfr_rdma_rxmsg *m, struct gfr_rdma_delivery *held)
{
    struct gfr_rdma_conn *conn = m->conn;
    struct gfr_rdma_delivery *d = held;
    int direct = conn->opts.dispatch == GFR_DISPATCH_DIRECT && !conn->poller->relaying;

    if (direct && uatomic_read(&conn->pool_for)) {
        uatomic_dec(&conn->pool_for);
        direct = 0;
    }
    gfr_rdma_rx_advance(m, GFR_RX_DELIVERING);
    if (conn->pool_client && !d) {
        d = malloc(sizeof(*d) + m->rx.head_len);
        if (d) {
            d->m = *m;
            memcpy(d->data, m->rx.head, m->rx.head_len);
            gfr_rdma_count_copied(conn, m->rx.head_len);
            d->m.rx.head = d->data;
        }
    }
    if (conn->pool_client && d) {
        gfr_pool_job_init(&d->job, direct ? run_delivery_direct : run_delivery, NULL);
        gfr_rdma_conn_get(conn);
        if (direct) {
            gfr_rdma_poller_defer(conn->poller, &d->job);
            return;
        }
        if (gfr_pool_submit(conn->engine->pool, &d->job, conn->pool_client,
                            GFR_POOL_PRIO_NORMAL) == 0)
            return;
        gfr_rdma_conn_put(conn);
    }
    gfr_rdma_rx_advance(m, GFR_RX_OWNED);
    conn->ops->received(conn, &m->rx, conn->cb_arg);
    rx_release(m, 0);
    free(d);
}

/*
 * A reply to one of our requests is in (rdma-poller.c's reply-expected
 * polling): it no longer awaits, and its round trip is sampled when its
 * stamp is still there (64 requests later it is not).  Caller holds
 * conn->lock.
 */
static void
reply_came_locked(struct gfr_rdma_conn *conn, uint32_t xid)
{
    struct gfr_rdma_sent_at *sent = &conn->sent_at[xid % GFR_RDMA_XID_BUCKETS];

    if (!conn->awaiting)
        return;
    conn->awaiting--;
    gfr_rdma_poller_replied(conn->poller, 1);
    if (sent->ns && sent->xid == xid) {
        gfr_rtt_sample(&conn->rtt, gfr_now_ns() - sent->ns);
        sent->ns = 0;
    }
}

/*
 * A pull ended (gfr_rdma_xfer_finished_fn).  With all its data, DONE goes
 * back (unless the request waived it: its reply will end the read list)
 * and the message is delivered; failed, or on a connection that is
 * ending, it is released with -ENOTCONN; cancelled at the end of the
 * connection, with -ECANCELED.  Poller thread, or the CM thread at the
 * end; no lock held.
 */
static void
pull_finished(struct gfr_rdma_xfer *x, int status)
{
    struct gfr_rdma_delivery *d = x->owner;
    struct gfr_rdma_conn *conn = d->m.conn;
    struct gfr_wire_hdr done = {.type = GFR_WIRE_DONE, .xid = d->m.rx.xid};
    int deliver_it;

    free(x);
    if (d->m.sink_mr) /* the peer's access ends with the pull */
        gfr_rdma_mr_deregister(conn, &d->m.sink_mr, 1);
    d->m.sink_mr = NULL;
    if (status == -ECANCELED) {
        rx_release(&d->m, status);
        free(d);
        return;
    }
    pthread_mutex_lock(&conn->lock);
    deliver_it = status == 0 && conn->state != GFR_CONN_DISCONNECTING;
    if (deliver_it) {
        conn->stats.received++;
        if (d->m.rx.is_reply)
            reply_came_locked(conn, d->m.rx.xid);
        gfr_rdma_rx_advance(&d->m, GFR_RX_PULLED);
        if (!d->m.done_waived &&
            gfr_rdma_send_locked(conn, &done, NULL, NULL, NULL, 0, NULL) != 0)
            gfr_rdma_conn_fail_locked(conn, -ENOMEM);
    }
    pthread_mutex_unlock(&conn->lock);
    if (deliver_it) {
        deliver(&d->m, d);
    } else {
        rx_release(&d->m, -ENOTCONN);
        free(d);
    }
}

/*
 * Where a message's read list is pulled to: a pull buffer of this poller
 * with the inline part copied in front, so the receive buffer can be
 * reposted at once.  An RDMA READ's sink needs remote write access on
 * iWARP (its READ response is a tagged write into the sink), and a pull
 * buffer is shared by every connection of its poller, so there the sink
 * is registered for this one transfer with that access, over the buffer,
 * and deregistered when the pull ends.  The connection's poller thread,
 * no lock held (registering is slow, and submitters wait on conn->lock).
 * 0 or -ENOMEM.
 */
static int
pull_sink_get(struct gfr_rdma_conn *conn, const struct gfr_wire_msg *msg,
              struct gfr_rdma_rxmsg *m)
{
    size_t head = msg->hdr.inline_len;
    size_t bulk = msg->hdr.read_len;
    struct gfr_rdma_pbuf *pbuf = gfr_rdma_pbuf_get(conn->poller, head + bulk);

    if (!pbuf)
        return -ENOMEM;
    if (conn->dev->iwarp &&
        gfr_rdma_mr_register(conn, pbuf->mem + head, bulk,
                             IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE,
                             &m->sink_mr) != 0) {
        gfr_rdma_pbuf_put(pbuf);
        return -ENOMEM;
    }
    memcpy(pbuf->mem, msg->payload, head);
    gfr_rdma_count_copied(conn, head);
    m->owned = pbuf;
    return 0;
}

/*
 * Starts pulling the read list of msg, checked as m, into the sink
 * pull_sink_get gave m.  The message moves into a delivery of its own
 * (the pool job that will carry it), PULLING; m stays the caller's only on
 * failure, with its sink.  The connection's poller thread, caller holds
 * conn->lock.  0, -ENOMEM, or -EPROTO.
 */
static int
pull_start_locked(struct gfr_rdma_conn *conn, const struct gfr_wire_msg *msg,
                  const struct gfr_rdma_rxmsg *m)
{
    struct gfr_rdma_xfer *x = gfr_rdma_xfer_new(conn, 1, pull_finished);
    struct gfr_rdma_delivery *d = malloc(sizeof(*d));
    size_t head = msg->hdr.inline_len;
    size_t bulk = msg->hdr.read_len;
    uint8_t *buf = m->owned->mem;
    uint32_t lkey = m->sink_mr ? m->sink_mr->lkey : m->owned->mr->lkey;
    int err = -ENOMEM;

    if (!x || !d)
        goto fail;
    memcpy(x->remote, msg->read, msg->hdr.n_read * sizeof(x->remote[0]));
    x->local[0] = (struct gfr_xfer_local){(uintptr_t)(buf + head), (uint32_t)bulk, lkey};
    if (gfr_xfer_init(&x->plan, x->local, 1, x->remote, msg->hdr.n_read, bulk,
                      conn->opts.segment_size) != 0) {
        /* The decoder checked the lengths; only a wrapping segment is left. */
        err = -EPROTO;
        goto fail;
    }
    d->m = *m;
    d->m.rx.head = buf;
    d->m.rx.bulk = buf + head;
    d->m.rx.bulk_len = bulk;
    gfr_rdma_rx_advance(&d->m, GFR_RX_PULLING);
    x->owner = d;
    conn->stats.bulk_pulled += bulk;
    gfr_rdma_xfer_start_locked(conn, x);
    return 0;
fail:
    free(d);
    free(x);
    return err;
}

/*
 * Checks a decoded msg against the connection's credits and this side's
 * offers, and records what it needs: the offer a DONE/ERROR releases (or
 * a REPLY, for a request whose reply ends its read list), the request a
 * REPLY answers.  Caller holds conn->lock.  0, or -EPROTO with *reason
 * (the connection must be torn down).
 */
int
gfr_rdma_rx_accept_locked(struct gfr_rdma_conn *conn, const struct gfr_wire_msg *msg,
                          struct gfr_rdma_rx_plan *plan, const char **reason)
{
    const struct gfr_wire_hdr *hdr = &msg->hdr;
    struct gfr_rdma_offer *offer;
    int copy_refused;
    int err;

    if (gfr_credits_on_receive(&conn->credits, hdr->credits) != 0) {
        *reason = "peer sent without a credit, or granted more than the window";
        return -EPROTO;
    }
    switch (hdr->type) {
    case GFR_WIRE_CREDIT:
        return 0;
    case GFR_WIRE_FENCE:
        /* Only a client gives up rails, and only a server's rails hear of
         * it (docs/multi-rail.md, "Fences"). */
        if (!conn->bundle || !conn->is_server || hdr->xid > UINT8_MAX) {
            *reason = "a FENCE on a connection that is no server's rail, or naming no rail";
            return -EPROTO;
        }
        plan->fence = 1;
        plan->fence_id = (uint8_t)hdr->xid;
        return 0;
    case GFR_WIRE_DONE:
    case GFR_WIRE_ERROR:
        offer = gfr_rdma_offer_find_locked(conn, hdr->xid, GFR_OFFER_DONE);
        /* A bundle's peer dropped a copy of our request as a duplicate
         * (docs/multi-rail.md): it ends the copy's write list too; the
         * reply comes to the call, on whichever rail. */
        copy_refused = hdr->type == GFR_WIRE_ERROR && hdr->written == EALREADY && conn->bundle;
        if (copy_refused) {
            plan->reply_to = gfr_rdma_offer_find_locked(conn, hdr->xid, GFR_OFFER_REPLY);
            if (plan->reply_to) {
                gfr_rdma_offer_arrived_locked(conn, plan->reply_to, GFR_OFFER_REPLY);
                plan->refused_copy = 1;
            }
        }
        /* (and it comes late when a reply on this rail ended them first) */
        if (!offer && !copy_refused) {
            *reason = "DONE or ERROR for a message that offered no read list";
            return -EPROTO;
        }
        if (offer) {
            gfr_rdma_offer_arrived_locked(conn, offer, GFR_OFFER_DONE);
            plan->done_for = offer;
            plan->done_status = hdr->type == GFR_WIRE_DONE ? 0
                                : hdr->written == EALREADY ? -EALREADY : -EREMOTEIO;
        }
        return 0;
    case GFR_WIRE_REPLY:
        offer = gfr_rdma_offer_find_locked(conn, hdr->xid, GFR_OFFER_REPLY);
        if (hdr->written && (!offer || hdr->written > offer->write_total)) {
            *reason = "reply claims more written bytes than its request offered";
            return -EPROTO;
        }
        if (offer) {
            gfr_rdma_offer_arrived_locked(conn, offer, GFR_OFFER_REPLY);
            plan->reply_to = offer;
        }
        /* The peer pulled the request's read list before it could answer;
         * a peer that sent a DONE anyway (one that ignores the flag) has
         * settled it already, and nothing waits here. */
        offer = gfr_rdma_offer_find_locked(conn, hdr->xid, GFR_OFFER_DONE);
        if (offer && offer->reply_ends_reads) {
            gfr_rdma_offer_arrived_locked(conn, offer, GFR_OFFER_DONE);
            plan->done_for = offer;
            plan->done_status = 0;
        }
        break;
    default: /* GFR_WIRE_MSG */
        /* Calls are tagged for rails (AWAITS_REPLY, RESEND, the mark in
         * written) only between the rails of a bundle both ends agreed
         * on, and only by the client, whose calls the server's table
         * keeps: a peer tagging elsewhere sends what an older peer
         * refuses (docs/wire-protocol.md), so this side refuses it too.
         * (A client's bundle the server did not take, an older server's,
         * is thus covered without reading the bundle.) */
        if (hdr->written || (hdr->flags & (GFR_WIRE_F_AWAITS_REPLY | GFR_WIRE_F_RESEND))) {
            if (!conn->bundle) {
                *reason = "a call tagged for rails on a connection that is no rail of a bundle";
                return -EPROTO;
            }
            if (!conn->is_server) {
                *reason = "a call tagged for rails from a server (only clients tag calls)";
                return -EPROTO;
            }
        }
        if (hdr->n_write) {
            err = gfr_rdma_peer_wl_add_locked(conn, msg);
            if (err == -EPROTO) {
                *reason = "a second request with the xid of one not yet answered";
                return err;
            }
            if (err)
                gfr_rdma_conn_log(conn, "no memory to keep a request's write list: its reply "
                                  "will travel as a read list");
        }
        break;
    }
    return 0;
}

static int
is_data(const struct gfr_wire_msg *msg)
{
    return msg->hdr.type == GFR_WIRE_MSG || msg->hdr.type == GFR_WIRE_REPLY;
}

/*
 * A message arrived for conn in buf (a buffer of its own at slot, or rb of
 * the device's SRQ): RECEIVED, then CHECKED, then delivered, pulled, or
 * (a control message, a refused one) released.  The buffer is reposted
 * once the message no longer needs it (copied for the pool or a pull, or
 * handled inline), and one credit goes back to the peer.  Poller thread
 * (rdma-cq.c), no lock held.
 */
void
gfr_rdma_rx_handle(struct gfr_rdma_conn *conn, const uint8_t *buf, uint32_t slot,
                   struct gfr_rdma_rbuf *rb, struct ibv_wc *wc)
{
    struct gfr_rdma_rxmsg m = {.state = GFR_RX_RECEIVED, .conn = conn};
    struct gfr_wire_msg msg;
    struct gfr_rdma_rx_plan plan = {0};
    const char *reason = "invalid message";
    int sink_err = 0;
    int open;
    int err = 0;

    pthread_mutex_lock(&conn->lock);
    /* A rail of a bundle hands on what it took even while it ends, so that
     * what its peer saw arrive is delivered (docs/multi-rail.md). */
    open = conn->state == GFR_CONN_ESTABLISHED || conn->state == GFR_CONN_CONNECTING ||
           (conn->state == GFR_CONN_DISCONNECTING && conn->bundle);
    if (open) {
        conn->stats.bytes_received += wc->byte_len;
        err = gfr_wire_decode(buf, wc->byte_len, &conn->limits, &msg, &reason);
        if (!err)
            err = gfr_rdma_rx_accept_locked(conn, &msg, &plan, &reason);
    }
    if (open && !err) {
        m.rx = (struct gfr_rdma_rx){.xid = msg.hdr.xid,
                                    .is_reply = msg.hdr.type == GFR_WIRE_REPLY,
                                    .awaits_reply = msg.hdr.type == GFR_WIRE_MSG &&
                                                    (msg.hdr.flags & GFR_WIRE_F_AWAITS_REPLY),
                                    .resend = msg.hdr.type == GFR_WIRE_MSG &&
                                              (msg.hdr.flags & GFR_WIRE_F_RESEND),
                                    .offered_write = msg.hdr.n_write != 0,
                                    .head = msg.payload, .head_len = msg.hdr.inline_len,
                                    .written = msg.hdr.written};
        m.data = is_data(&msg);
        m.done_waived = msg.hdr.type == GFR_WIRE_MSG &&
                        (msg.hdr.flags & GFR_WIRE_F_REPLY_ENDS_READS);
        m.reply_to = plan.reply_to;
        gfr_rdma_rx_advance(&m, GFR_RX_CHECKED);
        if (msg.hdr.n_read) {
            /* Its sink is found (and maybe registered) without the lock;
             * this poller alone handles the connection's messages, so
             * none overtakes it meanwhile. */
            pthread_mutex_unlock(&conn->lock);
            sink_err = pull_sink_get(conn, &msg, &m);
            pthread_mutex_lock(&conn->lock);
            if (sink_err)
                plan.refuse = 1;
            else if (conn->state == GFR_CONN_DISCONNECTING)
                plan.dropped = 1;
            else if (pull_start_locked(conn, &msg, &m) == 0)
                plan.pulling = 1;
            else
                plan.refuse = 1;
        } else if (is_data(&msg)) {
            conn->stats.received++; /* a pulled one is counted when its pull ends */
            if (m.rx.is_reply)
                reply_came_locked(conn, msg.hdr.xid);
        }
    }
    pthread_mutex_unlock(&conn->lock);
    if (!open || err) {
        /* Arrived while closing (dropped with the connection), or broke
         * the protocol. */
        if (err) {
            gfr_rdma_conn_log(conn, "peer broke the protocol (%s); disconnecting", reason);
            gfr_rdma_conn_fail(conn, -EPROTO);
        }
        gfr_rdma_rx_advance(&m, GFR_RX_RELEASED);
        goto repost;
    }
    if (plan.fence && conn->on_fence)
        conn->on_fence(conn, plan.fence_id);
    if (plan.done_for)
        gfr_rdma_offer_pulled(conn, plan.done_for, plan.done_status);
    if (plan.reply_to && plan.refused_copy) {
        gfr_rdma_offer_revoke_writes(conn, plan.reply_to, 0);
        gfr_rdma_offer_settle(conn, plan.reply_to, GFR_OFFER_DELIVERY, -EALREADY);
    } else if (plan.reply_to) {
        gfr_rdma_offer_revoke_writes(conn, plan.reply_to, msg.hdr.written);
    }
    if (plan.dropped) {
        rx_release(&m, -ENOTCONN); /* the connection ended meanwhile */
    } else if (plan.refuse) {
        struct gfr_wire_hdr hdr = {.type = GFR_WIRE_ERROR, .xid = msg.hdr.xid,
                                   .written = ENOMEM};

        gfr_rdma_conn_log(conn, "no memory to receive a message of %u bytes; refusing it",
                          msg.hdr.read_len + msg.hdr.inline_len);
        rx_release(&m, -ENOMEM);
        pthread_mutex_lock(&conn->lock);
        if (gfr_rdma_send_locked(conn, &hdr, NULL, NULL, NULL, 0, NULL) != 0)
            gfr_rdma_conn_fail_locked(conn, -ENOMEM);
        pthread_mutex_unlock(&conn->lock);
    } else if (!plan.pulling && is_data(&msg)) {
        deliver(&m, NULL);
    } else if (!plan.pulling) {
        gfr_rdma_rx_advance(&m, GFR_RX_RELEASED); /* CREDIT, DONE or ERROR: handled */
    }
repost:
    if (rb)
        gfr_rdma_srq_post(conn->dev, rb);
    pthread_mutex_lock(&conn->lock);
    if (conn->state != GFR_CONN_DISCONNECTING &&
        (rb || gfr_rdma_post_recv(conn, slot) == 0))
        gfr_credits_on_repost(&conn->credits, 1);
    gfr_rdma_flush_locked(conn);
    pthread_mutex_unlock(&conn->lock);
}
