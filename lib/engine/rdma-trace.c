/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Per-stage latency (transport.rdma.latency-stats, docs/engine.md "Per-
 * stage latency"): the trace points of a call's way through the engine,
 * each reading the clock once and ending at most one stage of enum
 * gfr_rdma_stage in the engine's histograms.
 *
 * The trace points are the steps of the engine's own stages: every step
 * of a received message (gfr_rdma_rx_advance calls gfr_rdma_trace_rx),
 * the submission of a data message, its post, and the completion of a
 * signaled SEND.  A call's stamps between a request and its reply are kept
 * by xid in the connection (trace_out for our requests, trace_in for the
 * peer's); a call whose slot a newer one took is counted as untraced, not
 * timed wrong.
 *
 * With latency-stats off nothing here reads the clock.  Histograms take
 * relaxed atomic adds (gfr_hist.h) from any thread; the stamps are
 * written under conn->lock, or by the one thread holding a message.
 */
#include <urcu/uatomic.h>

#include "gfr_be.h"
#include "gfr_clock.h"
#include "engine-res.h"

/* Each stage's name in statistics and one line on what it measures. */
static const struct {
    const char *name;
    const char *about;
} stages[GFR_STAGE_COUNT] = {
    [GFR_STAGE_REQ_QUEUE] = {"req_queue",
                            "client: request submitted -> its SEND posted"},
    [GFR_STAGE_REQ_WIRE] = {"req_wire",
                           "client: request posted -> its SEND completed (signaled SENDs)"},
    [GFR_STAGE_RTT_POLLING] = {"rtt_polling",
                              "client: request posted -> reply reaped, poller polling"},
    [GFR_STAGE_RTT_SLEEPING] = {"rtt_sleeping",
                               "client: request posted -> reply reaped, poller had slept"},
    [GFR_STAGE_REPLY_PULL] = {"reply_pull",
                             "client: the reply's bulk read by RDMA READ"},
    [GFR_STAGE_REPLY_DISPATCH] = {"reply_dispatch",
                                 "client: reply ready -> owner's callback entered"},
    [GFR_STAGE_REPLY_OWNER] = {"reply_owner",
                              "client: in the owner's received callback (reply)"},
    [GFR_STAGE_CALL] = {"call",
                       "client: request submitted -> reply handed to the owner"},
    [GFR_STAGE_REQ_PULL] = {"req_pull",
                           "server: the request's bulk read by RDMA READ"},
    [GFR_STAGE_REQ_DISPATCH] = {"req_dispatch",
                               "server: request ready -> owner's callback entered"},
    [GFR_STAGE_REQ_OWNER] = {"req_owner",
                            "server: in the owner's received callback (request)"},
    [GFR_STAGE_SERVE] = {"serve",
                        "server: request handed to the owner -> reply submitted"},
    [GFR_STAGE_REPLY_QUEUE] = {"reply_queue",
                              "server: reply submitted -> its SEND posted (bulk write included)"},
    [GFR_STAGE_REPLY_WIRE] = {"reply_wire",
                             "server: reply posted -> its SEND completed (signaled SENDs)"},
};

const char *
gfr_rdma_stage_name(enum gfr_rdma_stage stage)
{
    return (unsigned)stage < GFR_STAGE_COUNT ? stages[stage].name : NULL;
}

const char *
gfr_rdma_stage_about(enum gfr_rdma_stage stage)
{
    return (unsigned)stage < GFR_STAGE_COUNT ? stages[stage].about : NULL;
}

static void
record(struct gfr_rdma *engine, enum gfr_rdma_stage stage, uint64_t from, uint64_t to)
{
    gfr_hist_add(&engine->stage[stage], to > from ? to - from : 0);
}

static struct gfr_rdma_trace_call *
slot_of(struct gfr_rdma_trace_call *table, uint32_t xid)
{
    return &table[xid % GFR_RDMA_TRACE_CALLS];
}

/* Opens a call's slot, counting the call it displaces as untraced. */
static void
open_call(struct gfr_rdma *engine, struct gfr_rdma_trace_call *c, uint32_t xid,
          uint64_t now)
{
    if (c->live)
        uatomic_inc(&engine->untraced);
    *c = (struct gfr_rdma_trace_call){.xid = xid, .live = 1, .start_ns = now};
}

/* The live slot of xid, or NULL. */
static struct gfr_rdma_trace_call *
find_call(struct gfr_rdma_trace_call *table, uint32_t xid)
{
    struct gfr_rdma_trace_call *c = slot_of(table, xid);

    return c->live && c->xid == xid ? c : NULL;
}

/*
 * A data message was submitted: a request opens its call; a reply ends
 * the SERVE stage of the peer's request and starts REPLY_QUEUE.  Caller
 * holds conn->lock.
 */
void
gfr_rdma_trace_submit_locked(struct gfr_rdma_conn *conn, uint32_t xid, int is_reply)
{
    struct gfr_rdma *engine = conn->engine;
    struct gfr_rdma_trace_call *c;
    uint64_t now;

    if (!engine->trace)
        return;
    now = gfr_now_ns();
    if (!is_reply) {
        open_call(engine, slot_of(conn->trace_out, xid), xid, now);
        return;
    }
    c = find_call(conn->trace_in, xid);
    if (!c)
        return;
    record(engine, GFR_STAGE_SERVE, c->start_ns, now);
    c->start_ns = now; /* from here: the reply's queue */
    c->posted_ns = 0;
}

/*
 * The time the SEND carrying msg (an encoded message) is handed to the
 * provider, for gfr_rdma_trace_posted_locked; 0 while the engine does not
 * trace, and for a message no stage ends at (a CREDIT update), which then
 * costs no clock read.  Taken before ibv_post_send: rxe runs a user QP's
 * requester inside the call, so the SEND can reach the peer, and the
 * peer's stages begin, before the call returns; stamped after it, a queue
 * stage would overlap the peer's.  Any thread.
 */
uint64_t
gfr_rdma_trace_stamp(const struct gfr_rdma *engine, const uint8_t *msg)
{
    if (!engine->trace || (msg[1] != GFR_WIRE_MSG && msg[1] != GFR_WIRE_REPLY))
        return 0;
    return gfr_now_ns();
}

/*
 * ctx's SEND carrying msg (an encoded message) was posted, handed to the
 * provider at posted_ns (gfr_rdma_trace_stamp; 0: nothing to record): a
 * request's or reply's queue stage ends there, and a signaled SEND is
 * stamped for its completion.  Caller holds conn->lock.
 */
void
gfr_rdma_trace_posted_locked(struct gfr_rdma_conn *conn, struct gfr_rdma_wr *ctx,
                             const uint8_t *msg, uint64_t posted_ns)
{
    struct gfr_rdma *engine = conn->engine;
    int is_reply = msg[1] == GFR_WIRE_REPLY;
    uint32_t xid = gfr_get_be32(msg + 8);
    struct gfr_rdma_trace_call *c;

    ctx->trace_stage = GFR_STAGE_COUNT;
    if (!posted_ns)
        return;
    c = find_call(is_reply ? conn->trace_in : conn->trace_out, xid);
    if (!c)
        return;
    record(engine, is_reply ? GFR_STAGE_REPLY_QUEUE : GFR_STAGE_REQ_QUEUE, c->start_ns, posted_ns);
    if (is_reply)
        c->live = 0; /* the server's part of the call ends here */
    else
        c->posted_ns = posted_ns;
    ctx->trace_posted_ns = posted_ns;
    ctx->trace_stage = is_reply ? GFR_STAGE_REPLY_WIRE : GFR_STAGE_REQ_WIRE;
}

/* ctx's own completion arrived (not a retirement by a later one).  Caller
 * holds conn->lock. */
void
gfr_rdma_trace_send_done_locked(struct gfr_rdma_conn *conn, struct gfr_rdma_wr *ctx)
{
    if (ctx->trace_stage < GFR_STAGE_COUNT && conn->engine->trace)
        record(conn->engine, ctx->trace_stage, ctx->trace_posted_ns, gfr_now_ns());
    ctx->trace_stage = GFR_STAGE_COUNT;
}

/* A reply was reaped (its CHECKED step, under conn->lock): the round trip
 * of its request ends. */
static void
reply_checked_locked(struct gfr_rdma_rxmsg *m, uint64_t now)
{
    struct gfr_rdma_conn *conn = m->conn;
    struct gfr_rdma_trace_call *c = find_call(conn->trace_out, m->rx.xid);

    if (!c)
        return;
    if (c->posted_ns)
        record(conn->engine, m->after_sleep ? GFR_STAGE_RTT_SLEEPING : GFR_STAGE_RTT_POLLING,
               c->posted_ns, now);
    m->call_ns = c->start_ns;
    c->live = 0;
}

/* A request reached its owner: the SERVE stage starts. */
static void
request_owned(struct gfr_rdma_rxmsg *m, uint64_t now)
{
    struct gfr_rdma_conn *conn = m->conn;

    pthread_mutex_lock(&conn->lock);
    open_call(conn->engine, slot_of(conn->trace_in, m->rx.xid), m->rx.xid, now);
    pthread_mutex_unlock(&conn->lock);
}

/*
 * The trace point of a received message's step to `to` (called by
 * gfr_rdma_rx_advance before m->state changes, by the thread that holds
 * m; the CHECKED step is taken on the poller, under conn->lock, with m->rx
 * filled in).  Control messages (CREDIT, DONE, ERROR) are not traced:
 * they belong to no call.
 */
void
gfr_rdma_trace_rx(struct gfr_rdma_rxmsg *m, enum gfr_rx_state to)
{
    struct gfr_rdma *engine = m->conn->engine;
    int reply = m->rx.is_reply;
    uint64_t now;

    if (!engine->trace || !m->data)
        return;
    if (to == GFR_RX_CHECKED) {
        m->stamp_ns = gfr_now_ns();
        m->after_sleep = m->conn->poller->woke;
        if (reply)
            reply_checked_locked(m, m->stamp_ns);
        return;
    }
    if (!m->stamp_ns || (to == GFR_RX_RELEASED && m->state != GFR_RX_OWNED))
        return;
    now = gfr_now_ns();
    switch (to) {
    case GFR_RX_PULLED:
        record(engine, reply ? GFR_STAGE_REPLY_PULL : GFR_STAGE_REQ_PULL, m->stamp_ns, now);
        break;
    case GFR_RX_OWNED:
        record(engine, reply ? GFR_STAGE_REPLY_DISPATCH : GFR_STAGE_REQ_DISPATCH,
               m->stamp_ns, now);
        if (reply && m->call_ns)
            record(engine, GFR_STAGE_CALL, m->call_ns, now);
        else if (!reply)
            request_owned(m, now);
        break;
    case GFR_RX_RELEASED:
        record(engine, reply ? GFR_STAGE_REPLY_OWNER : GFR_STAGE_REQ_OWNER, m->stamp_ns, now);
        break;
    default:
        break;
    }
    m->stamp_ns = now;
}
