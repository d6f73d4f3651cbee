/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * A bundle of rails (engine-bundle.h, docs/multi-rail.md): which rail a
 * message takes, and the rails' callbacks brought together under the
 * lead's handle.
 *
 * Which rail: a reply goes on the rail its request came on (the request's
 * offered buffers are registered on that rail's device, and its sender
 * settles them when the reply arrives there); a request goes on the live
 * rail with the fewest requests awaiting replies, ties taking turns, and
 * so does every other message.  Until failover is built (step 3 of the
 * design), a rail that ends after it was established ends the whole
 * bundle: its unanswered calls fail as on one rail, never in silence.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include "engine-bundle.h"

/* The rails' callbacks, on every rail of a bundle (cb_arg: the bundle). */
static void bundle_connected(struct gfr_rdma_conn *rail, void *arg);
static void bundle_received(struct gfr_rdma_conn *rail, const struct gfr_rdma_rx *rx,
                            void *arg);
static void bundle_disconnected(struct gfr_rdma_conn *rail, int reason, void *arg);

static const struct gfr_rdma_conn_ops bundle_ops = {
    .connected = bundle_connected,
    .received = bundle_received,
    .disconnected = bundle_disconnected,
};

/* A server's calls by xid.  Caller holds bundle->lock. */
static uint32_t
call_slot(const struct gfr_rdma_bundle *b, uint32_t xid)
{
    return (xid * 2654435761u) & (b->calls_size - 1);
}

static int
calls_grow_locked(struct gfr_rdma_bundle *b)
{
    uint32_t size = b->calls_size ? b->calls_size * 2 : 64;
    struct gfr_rdma_bundle_call *old = b->calls;
    uint32_t old_size = b->calls_size;
    struct gfr_rdma_bundle_call *calls = calloc(size, sizeof(*calls));

    if (!calls)
        return -ENOMEM;
    b->calls = calls;
    b->calls_size = size;
    for (uint32_t i = 0; i < old_size; i++) {
        if (!old[i].used)
            continue;
        uint32_t s = call_slot(b, old[i].xid);

        while (calls[s].used)
            s = (s + 1) & (size - 1);
        calls[s] = old[i];
    }
    free(old);
    return 0;
}

/* Records that xid came on rail (a repeated xid: the later rail).  0,
 * -ENOMEM, or -ENOSPC past GFR_BUNDLE_MAX_CALLS.  Caller holds the lock. */
static int
call_put_locked(struct gfr_rdma_bundle *b, uint32_t xid, unsigned rail)
{
    uint32_t s;

    if (b->calls_used >= GFR_BUNDLE_MAX_CALLS)
        return -ENOSPC;
    if ((b->calls_used + 1) * 2 > b->calls_size && calls_grow_locked(b) != 0)
        return -ENOMEM;
    for (s = call_slot(b, xid); b->calls[s].used; s = (s + 1) & (b->calls_size - 1)) {
        if (b->calls[s].xid == xid) {
            b->calls[s].rail = (uint8_t)rail;
            return 0;
        }
    }
    b->calls[s] = (struct gfr_rdma_bundle_call){.xid = xid, .rail = (uint8_t)rail, .used = 1};
    b->calls_used++;
    return 0;
}

/* Empties slot s, moving back the entries of its probe run that it would
 * hide (no tombstones).  Caller holds the lock. */
static void
call_del_locked(struct gfr_rdma_bundle *b, uint32_t s)
{
    uint32_t mask = b->calls_size - 1;

    b->calls[s].used = 0;
    b->calls_used--;
    for (uint32_t j = (s + 1) & mask; b->calls[j].used; j = (j + 1) & mask) {
        uint32_t home = call_slot(b, b->calls[j].xid);

        /* j's entry may move to s when s lies on its way from home to j */
        if (((j - home) & mask) >= ((j - s) & mask)) {
            b->calls[s] = b->calls[j];
            b->calls[j].used = 0;
            s = j;
        }
    }
}

/* The rail xid came on, forgotten now; -1 when it is not known.  Caller
 * holds the lock. */
static int
call_take_locked(struct gfr_rdma_bundle *b, uint32_t xid)
{
    if (!b->calls_size)
        return -1;
    for (uint32_t s = call_slot(b, xid); b->calls[s].used;
         s = (s + 1) & (b->calls_size - 1)) {
        if (b->calls[s].xid == xid) {
            int rail = b->calls[s].rail;

            call_del_locked(b, s);
            return rail;
        }
    }
    return -1;
}

/* Forgets the calls of a rail that ended.  Caller holds the lock. */
static void
calls_drop_rail_locked(struct gfr_rdma_bundle *b, unsigned rail)
{
    uint32_t s = 0;

    while (s < b->calls_size) {
        if (b->calls[s].used && b->calls[s].rail == rail)
            call_del_locked(b, s); /* an entry may have moved into s */
        else
            s++;
    }
}

int
gfr_rdma_bundle_lead(struct gfr_rdma_conn *conn, int is_server)
{
    struct gfr_rdma *engine = conn->engine;
    struct gfr_rdma_bundle *b = calloc(1, sizeof(*b));

    if (!b)
        return -ENOMEM;
    b->engine = engine;
    b->lead = conn;
    b->is_server = is_server;
    b->owner_ops = conn->ops;
    b->owner_arg = conn->cb_arg;
    b->rails[0] = conn;
    pthread_mutex_init(&b->lock, NULL);
    CDS_INIT_LIST_HEAD(&b->link);
    if (is_server) {
        /* A random token: a rail that joins must have read the lead's
         * accept.  Without the kernel's randomness there is no bundle. */
        if (getrandom(&b->token, sizeof(b->token), 0) != sizeof(b->token)) {
            pthread_mutex_destroy(&b->lock);
            free(b);
            return -errno;
        }
        pthread_mutex_lock(&engine->lock);
        if (!++engine->next_bundle)
            engine->next_bundle = 1;
        b->id = engine->next_bundle;
        cds_list_add_tail(&b->link, &engine->bundles);
        pthread_mutex_unlock(&engine->lock);
    }
    conn->ops = &bundle_ops;
    conn->cb_arg = b;
    conn->bundle = b;
    conn->bundle_lead = 1;
    gfr_rdma_bundle_name(conn, b->id, 0);
    return 0;
}

void
gfr_rdma_bundle_name(struct gfr_rdma_conn *conn, uint32_t id, unsigned rail)
{
    pthread_mutex_lock(&conn->lock);
    conn->bundle_id = id;
    conn->rail = rail;
    pthread_mutex_unlock(&conn->lock);
}

struct gfr_rdma_bundle *
gfr_rdma_bundle_find(struct gfr_rdma *engine, uint32_t id, uint64_t token)
{
    struct gfr_rdma_bundle *b, *found = NULL;

    pthread_mutex_lock(&engine->lock);
    cds_list_for_each_entry(b, &engine->bundles, link) {
        if (b->id == id) {
            /* every bit compared, whichever differs */
            found = (b->token ^ token) == 0 ? b : NULL;
            break;
        }
    }
    pthread_mutex_unlock(&engine->lock);
    return found;
}

int
gfr_rdma_bundle_member(struct gfr_rdma_bundle *b, struct gfr_rdma_conn *conn)
{
    unsigned rail;

    pthread_mutex_lock(&b->lock);
    for (rail = 1; rail < GFR_CM_MAX_RAILS && b->rails[rail]; rail++)
        continue;
    if (rail < GFR_CM_MAX_RAILS)
        b->rails[rail] = conn;
    pthread_mutex_unlock(&b->lock);
    if (rail == GFR_CM_MAX_RAILS)
        return -ENOSPC;
    b->members++;
    conn->ops = &bundle_ops;
    conn->cb_arg = b;
    conn->bundle = b;
    gfr_rdma_bundle_name(conn, b->id, rail);
    return 0;
}

void
gfr_rdma_bundle_free(struct gfr_rdma_bundle *b)
{
    pthread_mutex_destroy(&b->lock);
    free(b->calls);
    free(b);
}

/* CM thread.  A rail that joins a throttled bundle is throttled too; one
 * whose device another rail uses is named in the log: the two share a
 * port, and the bundle gains no bandwidth from it. */
static void
bundle_connected(struct gfr_rdma_conn *rail, void *arg)
{
    struct gfr_rdma_bundle *b = arg;
    int shares = -1;
    int throttled;

    pthread_mutex_lock(&b->lock);
    b->live[rail->rail] = 1;
    throttled = b->throttled;
    for (unsigned i = 0; i < GFR_CM_MAX_RAILS; i++)
        if (i != rail->rail && b->live[i] && b->rails[i]->dev == rail->dev)
            shares = (int)i;
    pthread_mutex_unlock(&b->lock);
    if (rail == b->lead) {
        if (b->owner_ops->connected)
            b->owner_ops->connected(b->lead, b->owner_arg);
        return;
    }
    if (shares >= 0)
        gfr_rdma_conn_log(rail, "rail %u reaches its peer through %s, as rail %d does: "
                          "they share one port and add no bandwidth", rail->rail,
                          ibv_get_device_name(rail->dev->verbs->device), shares);
    if (throttled)
        gfr_rdma_conn_throttle(rail, 1);
}

/* Any thread that delivers.  A server remembers the rail of each request
 * whose sender awaits a reply; a reply settles its rail's count. */
static void
bundle_received(struct gfr_rdma_conn *rail, const struct gfr_rdma_rx *rx, void *arg)
{
    struct gfr_rdma_bundle *b = arg;
    int err = 0;

    pthread_mutex_lock(&b->lock);
    if (rx->is_reply && b->inflight[rail->rail])
        b->inflight[rail->rail]--;
    else if (!rx->is_reply && rx->awaits_reply && b->is_server)
        err = call_put_locked(b, rx->xid, rail->rail);
    pthread_mutex_unlock(&b->lock);
    if (err) {
        gfr_rdma_conn_log(rail, "cannot keep the rail of request %u: %s; ending the "
                          "connection", rx->xid,
                          err == -ENOSPC ? "the peer has 65536 calls unanswered"
                                         : strerror(-err));
        gfr_rdma_conn_fail(b->lead, err == -ENOSPC ? -EPROTO : err);
        return;
    }
    b->owner_ops->received(b->lead, rx, b->owner_arg);
}

/* CM thread.  The owner hears of the end once the lead and every member
 * have ended, so that no callback of the bundle follows it. */
static void
bundle_disconnected(struct gfr_rdma_conn *rail, int reason, void *arg)
{
    struct gfr_rdma_bundle *b = arg;
    struct gfr_rdma_conn *end[GFR_CM_MAX_RAILS];
    unsigned nend = 0;
    int was_live;

    pthread_mutex_lock(&b->lock);
    was_live = b->live[rail->rail];
    b->live[rail->rail] = 0;
    b->inflight[rail->rail] = 0;
    calls_drop_rail_locked(b, rail->rail);
    if (rail != b->lead)
        b->rails[rail->rail] = NULL;
    if (rail == b->lead)
        for (unsigned i = 1; i < GFR_CM_MAX_RAILS; i++)
            if (b->rails[i])
                end[nend++] = b->rails[i];
    pthread_mutex_unlock(&b->lock);

    if (rail == b->lead) {
        pthread_mutex_lock(&b->engine->lock);
        cds_list_del_init(&b->link); /* no rail joins any more */
        pthread_mutex_unlock(&b->engine->lock);
        b->lead_ended = 1;
        b->lead_reason = reason;
        for (unsigned i = 0; i < nend; i++)
            gfr_rdma_conn_fail(end[i], reason);
    } else {
        b->members--;
        if (was_live && !b->lead_ended) {
            gfr_rdma_conn_log(rail, "rail %u ended (%s): ending its bundle's connection "
                              "(failover is not built yet)", rail->rail,
                              reason ? strerror(-reason) : "orderly");
            gfr_rdma_conn_fail(b->lead, reason);
        } else if (!b->lead_ended) {
            gfr_rdma_conn_log(rail, "rail %u could not join (%s): the connection "
                              "goes on without it", rail->rail,
                              reason ? strerror(-reason) : "closed");
        }
    }
    if (b->lead_ended && !b->members && b->owner_ops) {
        const struct gfr_rdma_conn_ops *ops = b->owner_ops;

        b->owner_ops = NULL; /* once */
        ops->disconnected(b->lead, b->lead_reason, b->owner_arg);
    }
}

/*
 * The rail for a message, with a reference taken (gfr_rdma_conn_put), or
 * NULL when the bundle has none left.  Any thread; takes the bundle's
 * lock.
 */
static struct gfr_rdma_conn *
pick(struct gfr_rdma_bundle *b, const struct gfr_rdma_msg *msg, unsigned *railp)
{
    struct gfr_rdma_conn *conn = NULL;
    int rail = -1;

    pthread_mutex_lock(&b->lock);
    if (msg && msg->is_reply && b->is_server)
        rail = call_take_locked(b, msg->xid);
    if (rail < 0 || !b->rails[rail]) {
        unsigned long least = ~0ul;

        rail = 0; /* the lead while no rail is live: it queues or refuses */
        for (unsigned k = 0; k < GFR_CM_MAX_RAILS; k++) {
            unsigned i = (b->turn + k) % GFR_CM_MAX_RAILS;

            if (b->live[i] && b->inflight[i] < least) {
                least = b->inflight[i];
                rail = (int)i;
            }
        }
        b->turn = (unsigned)rail + 1;
    }
    conn = b->rails[rail];
    if (conn && !gfr_rdma_conn_tryget(conn))
        conn = NULL;
    if (conn && msg && gfr_rdma_msg_awaits_reply(msg))
        b->inflight[rail]++;
    pthread_mutex_unlock(&b->lock);
    *railp = (unsigned)rail;
    return conn;
}

/* A request that was not sent after all: its rail awaits no reply. */
static void
unpick(struct gfr_rdma_bundle *b, const struct gfr_rdma_msg *msg, unsigned rail)
{
    if (!gfr_rdma_msg_awaits_reply(msg))
        return;
    pthread_mutex_lock(&b->lock);
    if (b->inflight[rail])
        b->inflight[rail]--;
    pthread_mutex_unlock(&b->lock);
}

int
gfr_rdma_submit(struct gfr_rdma_conn *conn, const struct gfr_rdma_msg *msg)
{
    struct gfr_rdma_conn *rail;
    unsigned index;
    int err;

    if (!conn || !conn->bundle || !msg)
        return gfr_rdma_conn_submit(conn, msg);
    rail = pick(conn->bundle, msg, &index);
    if (!rail)
        return -ENOTCONN;
    err = gfr_rdma_conn_submit(rail, msg);
    if (err)
        unpick(conn->bundle, msg, index);
    gfr_rdma_conn_put(rail);
    return err;
}

int
gfr_rdma_send(struct gfr_rdma_conn *conn, const void *data, size_t len)
{
    struct gfr_rdma_conn *rail;
    unsigned index;
    int err;

    if (!conn || !conn->bundle)
        return gfr_rdma_conn_send(conn, data, len);
    rail = pick(conn->bundle, NULL, &index);
    if (!rail)
        return -ENOTCONN;
    err = gfr_rdma_conn_send(rail, data, len);
    gfr_rdma_conn_put(rail);
    return err;
}

/* Every rail of the bundle with a reference taken, into rails; how many.
 * Takes the bundle's lock. */
static unsigned
hold_rails(struct gfr_rdma_bundle *b, struct gfr_rdma_conn *rails[GFR_CM_MAX_RAILS])
{
    unsigned n = 0;

    pthread_mutex_lock(&b->lock);
    for (unsigned i = 1; i < GFR_CM_MAX_RAILS; i++)
        if (b->rails[i] && gfr_rdma_conn_tryget(b->rails[i]))
            rails[n++] = b->rails[i];
    pthread_mutex_unlock(&b->lock);
    return n;
}

int
gfr_rdma_throttle(struct gfr_rdma_conn *conn, int on)
{
    struct gfr_rdma_conn *rails[GFR_CM_MAX_RAILS];
    unsigned n;
    int err;

    if (!conn || !conn->bundle)
        return gfr_rdma_conn_throttle(conn, on);
    pthread_mutex_lock(&conn->bundle->lock);
    conn->bundle->throttled = on;
    pthread_mutex_unlock(&conn->bundle->lock);
    err = gfr_rdma_conn_throttle(conn, on);
    n = hold_rails(conn->bundle, rails);
    for (unsigned i = 0; i < n; i++) {
        gfr_rdma_conn_throttle(rails[i], on);
        gfr_rdma_conn_put(rails[i]);
    }
    return err;
}

int
gfr_rdma_disconnect(struct gfr_rdma_conn *conn)
{
    struct gfr_rdma_conn *rails[GFR_CM_MAX_RAILS];
    unsigned n;

    if (!conn)
        return -EINVAL;
    gfr_rdma_conn_fail(conn, 0);
    if (!conn->bundle)
        return 0;
    n = hold_rails(conn->bundle, rails);
    for (unsigned i = 0; i < n; i++) {
        gfr_rdma_conn_fail(rails[i], 0);
        gfr_rdma_conn_put(rails[i]);
    }
    return 0;
}
