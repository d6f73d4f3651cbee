/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * A bundle of rails (engine-bundle.h, docs/multi-rail.md): which rail a
 * message takes, the rails' callbacks brought together under the lead's
 * handle, and failover.
 *
 * Which rail: a reply goes on the rail its request came on while that
 * rail lives (the request's offered buffers are registered on that rail's
 * device), else on any live rail; a request goes on the live rail with
 * the fewest requests awaiting replies, ties taking turns, and so does
 * every other message.
 *
 * Failover ("Failover without loss"): a client keeps each awaited call
 * until its reply has been delivered and the done of its last copy has
 * run; when a rail ends, it fences the rail on every live one and sends
 * the rail's unanswered calls again there.  A server judges every awaited
 * request by its table of calls (gfr_calls.h), drops duplicates and late
 * copies, sends a reply whose rail failed again on a live one, and keeps
 * every reply until the client's mark says it holds it: a SEND that
 * completed well at the server may still be lost at the client (its
 * device removed before its CQ was polled; on iWARP a completion only
 * says TCP took the data), and a resend of its call is answered with
 * another copy.  The owner hears of the end once, when no rail is left.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include "engine-bundle.h"
#include "gfr_addr.h"
#include "gfr_clock.h"

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

/*
 * A message the bundle keeps until it is done with it: a client's awaited
 * call (until its reply has been delivered and its last copy's done has
 * run), a server's reply (until the client's mark passes its xid, the
 * bounds release it, or no rail is left), or any other message (until a
 * copy of it went out well, or no rail is left).  msg is the owner's, with
 * its iovec arrays copied into iov; the buffers they name stay the
 * owner's until its done runs.  A message without a done callback (its
 * buffers are the caller's only until gfr_rdma_submit returns) has its
 * body copied into copy instead, freed with it.  Owner: the bundle, under
 * its lock; done runs without it.
 */
struct kept {
    /* a client's calls: b->kept[xid % buckets]; a server's replies:
     * b->replies */
    struct cds_list_head link;
    /* a client's call: the CM thread's, while it sends it again; a
     * server's reply: the releasing thread's, once it is unlisted */
    struct cds_list_head resend_link;
    struct gfr_rdma_bundle *b;
    struct gfr_rdma_msg msg;
    gfr_rdma_done_fn done; /* the owner's */
    void *cb_arg;
    int is_call;      /* a client's awaited call */
    unsigned rail;    /* where its latest copy went */
    unsigned out;     /* copies whose done has not run */
    int replied;      /* a call's reply came (delivering: being handed on) */
    int delivering;
    int failed;       /* a call the peer refused (-EREMOTEIO) */
    /* A server's reply to a call its client tagged (the table knows it:
     * the client's mark releases it), kept on b->replies; a copy went out well (counted in b->nanswered,
     * its bytes in b->answered_bytes); a resend of its call came while a
     * copy was out, and wants another on again_rail once it is done. */
    int tracked;
    int answered;
    size_t bytes;
    int again;
    unsigned again_rail;
    void *copy;
    struct iovec iov[];
};

static struct kept *
kept_new(struct gfr_rdma_bundle *b, const struct gfr_rdma_msg *msg, int is_call)
{
    unsigned n = msg->head_cnt + msg->bulk_cnt + msg->reply_cnt + 2;
    struct kept *k = calloc(1, sizeof(*k) + n * sizeof(k->iov[0]));
    struct iovec *at;

    if (!k)
        return NULL;
    k->b = b;
    k->msg = *msg;
    k->done = msg->done;
    k->cb_arg = msg->cb_arg;
    k->is_call = is_call;
    CDS_INIT_LIST_HEAD(&k->link);
    at = k->iov;
    if (!msg->done) {
        size_t head = gfr_rdma_iov_total(msg->head, msg->head_cnt);
        size_t len = head + gfr_rdma_iov_total(msg->bulk, msg->bulk_cnt);
        uint8_t *p = k->copy = malloc(len ? len : 1);

        if (!p) {
            free(k);
            return NULL;
        }
        for (unsigned i = 0; i < msg->head_cnt; p += msg->head[i].iov_len, i++)
            memcpy(p, msg->head[i].iov_base, msg->head[i].iov_len);
        for (unsigned i = 0; i < msg->bulk_cnt; p += msg->bulk[i].iov_len, i++)
            memcpy(p, msg->bulk[i].iov_base, msg->bulk[i].iov_len);
        at[0] = (struct iovec){k->copy, head};
        at[1] = (struct iovec){(uint8_t *)k->copy + head, len - head};
        k->msg.head = &at[0];
        k->msg.head_cnt = head ? 1 : 0;
        k->msg.bulk = &at[1];
        k->msg.bulk_cnt = len > head ? 1 : 0;
        at += 2;
        if (msg->reply_cnt)
            k->msg.reply = memcpy(at, msg->reply, msg->reply_cnt * sizeof(*at));
        return k;
    }
    if (msg->head_cnt)
        k->msg.head = memcpy(at, msg->head, msg->head_cnt * sizeof(*at));
    at += msg->head_cnt;
    if (msg->bulk_cnt)
        k->msg.bulk = memcpy(at, msg->bulk, msg->bulk_cnt * sizeof(*at));
    at += msg->bulk_cnt;
    if (msg->reply_cnt)
        k->msg.reply = memcpy(at, msg->reply, msg->reply_cnt * sizeof(*at));
    return k;
}

/* A client's kept call by xid, or NULL.  Caller holds the lock. */
static struct kept *
call_find_locked(struct gfr_rdma_bundle *b, uint32_t xid)
{
    struct kept *k;

    cds_list_for_each_entry(k, &b->kept[xid % GFR_RDMA_XID_BUCKETS], link)
        if (k->msg.xid == xid)
            return k;
    return NULL;
}

/* The client's mark: the oldest xid it awaits a reply to, in serial-number
 * order, at most xid (the request about to go).  Caller holds the lock. */
static uint32_t
mark_locked(struct gfr_rdma_bundle *b, uint32_t xid)
{
    uint32_t mark = xid;
    struct kept *k;

    for (unsigned i = 0; i < GFR_RDMA_XID_BUCKETS; i++)
        cds_list_for_each_entry(k, &b->kept[i], link)
            if (!k->replied && gfr_xid_before(k->msg.xid, mark))
                mark = k->msg.xid;
    return mark;
}

/* A live rail not in avoid (a mask of rails), with the fewest requests
 * awaiting replies, ties taking turns; when none is live, the lead
 * (unless avoided): a server's may take messages before its ESTABLISHED
 * event (the CM event and the first completions race), and one that has
 * ended refuses them; -1 when that is avoided too.  Caller holds the
 * lock. */
static int
least_locked(struct gfr_rdma_bundle *b, unsigned avoid)
{
    unsigned long least = ~0ul;
    int rail = -1;

    for (unsigned k = 0; k < GFR_CM_MAX_RAILS; k++) {
        unsigned i = (b->turn + k) % GFR_CM_MAX_RAILS;

        if (b->live[i] && !(avoid & (1u << i)) && b->inflight[i] < least) {
            least = b->inflight[i];
            rail = (int)i;
        }
    }
    if (rail >= 0)
        b->turn = (unsigned)rail + 1;
    else if (!(avoid & 1u))
        rail = 0;
    return rail;
}

/* The mask least_locked avoids for conn (NULL: none).  Caller holds the
 * lock. */
static unsigned
rail_mask_locked(const struct gfr_rdma_bundle *b, const struct gfr_rdma_conn *conn)
{
    for (unsigned i = 0; conn && i < GFR_CM_MAX_RAILS; i++)
        if (b->rails[i] == conn)
            return 1u << i;
    return 0;
}

/* rail's connection with a reference taken, counting an awaited request
 * on it; NULL when it is going.  Caller holds the lock. */
static struct gfr_rdma_conn *
take_locked(struct gfr_rdma_bundle *b, int rail, int awaits)
{
    struct gfr_rdma_conn *conn = b->rails[rail];

    if (!conn || !gfr_rdma_conn_tryget(conn))
        return NULL;
    if (awaits)
        b->inflight[rail]++;
    return conn;
}

/* Every rail's connection that is live (or, all: every one) with a
 * reference taken, into rails; how many.  Caller holds the lock. */
static unsigned
hold_rails_locked(struct gfr_rdma_bundle *b, int all,
                  struct gfr_rdma_conn *rails[GFR_CM_MAX_RAILS])
{
    unsigned n = 0;

    for (unsigned i = 0; i < GFR_CM_MAX_RAILS; i++)
        if (b->rails[i] && (all || b->live[i]) && gfr_rdma_conn_tryget(b->rails[i]))
            rails[n++] = b->rails[i];
    return n;
}

/* Ends every rail: no failover from now on.  Any thread, no lock held. */
static void
bundle_fail(struct gfr_rdma_bundle *b, int reason)
{
    struct gfr_rdma_conn *rails[GFR_CM_MAX_RAILS];
    unsigned n;

    pthread_mutex_lock(&b->lock);
    if (!b->ending) {
        b->ending = 1;
        b->reason = reason;
    }
    n = hold_rails_locked(b, 1, rails);
    pthread_mutex_unlock(&b->lock);
    for (unsigned i = 0; i < n; i++) {
        gfr_rdma_conn_fail(rails[i], reason);
        gfr_rdma_conn_put(rails[i]);
    }
}

static void kept_done(void *cb_arg, int status);

/*
 * Sends a copy of k's message on a live rail other than avoid (prefer's,
 * for a reply whose call's rail lives), the copy's done being
 * kept_done.  again: an earlier copy was lost with its rail (counted in
 * the taking rail's resends); a call carries the client's mark, and
 * RESEND when again.  A rail that refuses with -ENOTCONN (ending
 * meanwhile) or -EIO (its device failed) is passed over for the next.  0,
 * or the error of the last rail tried (-ENOTCONN: none is live).  Any
 * thread, no lock held.
 */
static int
send_copy(struct kept *k, int prefer, const struct gfr_rdma_conn *avoid, int again)
{
    struct gfr_rdma_bundle *b = k->b;
    struct gfr_rdma_tag tag = {.resend = again};
    unsigned tried;
    int tagged;
    int err = -ENOTCONN;

    k->msg.done = kept_done;
    k->msg.cb_arg = k;
    pthread_mutex_lock(&b->lock);
    tried = rail_mask_locked(b, avoid);
    pthread_mutex_unlock(&b->lock);
    for (;;) {
        struct gfr_rdma_conn *conn;
        int rail;

        pthread_mutex_lock(&b->lock);
        rail = prefer >= 0 && b->live[prefer] && !(tried & (1u << prefer))
                   ? prefer : least_locked(b, tried);
        prefer = -1;
        if (rail < 0) {
            pthread_mutex_unlock(&b->lock);
            return err;
        }
        tried |= 1u << rail;
        /* NULL: live still, but its last reference is gone (its end is
         * near): the next rail */
        conn = take_locked(b, rail, k->is_call);
        /* A client's bundle the server did not take: no tags (the
         * server's table would not read them, an older one refuses them) */
        tagged = k->is_call && b->id;
        if (conn) {
            k->rail = (unsigned)rail;
            k->out++;
            if (tagged)
                tag.mark = mark_locked(b, k->msg.xid);
            if (b->is_server && k->msg.is_reply)
                gfr_calls_replying(&b->calls, k->msg.xid, (unsigned)rail);
        }
        pthread_mutex_unlock(&b->lock);
        if (!conn)
            continue;
        err = tagged ? gfr_rdma_conn_submit_tagged(conn, &k->msg, &tag)
                     : gfr_rdma_conn_submit(conn, &k->msg);
        if (err) {
            pthread_mutex_lock(&b->lock);
            k->out--;
            if (k->is_call && b->inflight[rail])
                b->inflight[rail]--;
            pthread_mutex_unlock(&b->lock);
        } else if (again) {
            uatomic_inc(&conn->rail_resends);
        }
        gfr_rdma_conn_put(conn);
        if (err != -ENOTCONN && err != -EIO)
            return err;
    }
}

/* A server's reply that no rail took: the call cannot be answered, and a
 * resend of it must not run it again, so the bundle ends (GlusterFS sees
 * a disconnect, as without rails).  With -ENOTCONN every rail is ending
 * already, and the bundle with them, for its own reason.  Any thread, no
 * lock held. */
static void
reply_lost(struct gfr_rdma_bundle *b, uint32_t xid, int err)
{
    int ending;

    pthread_mutex_lock(&b->lock);
    ending = b->ending;
    pthread_mutex_unlock(&b->lock);
    if (ending || err == -ENOTCONN)
        return;
    gfr_rdma_conn_log(b->lead, "no rail takes the reply to call %u (%s): ending the "
                      "connection rather than leave the call unanswered", xid, strerror(-err));
    bundle_fail(b, err);
}

/* k is done with: the owner's done runs, with status.  No lock held. */
static void
kept_finish(struct kept *k, int status)
{
    if (k->done)
        k->done(k->cb_arg, status);
    free(k->copy);
    free(k);
}

/* The status a client's finished call k reports to its owner. */
static int
call_status(const struct kept *k)
{
    return k->replied ? 0 : k->failed ? k->failed : -ENOTCONN;
}

/* Is the client's call k done with?  No copy out (nor a claim) and no
 * reply being delivered, and its reply delivered, its peer refused it, or
 * the bundle closed.  Unlists it then.  Caller holds the lock. */
static int
call_settled_locked(struct gfr_rdma_bundle *b, struct kept *k)
{
    if (k->out || k->delivering || !(k->replied || k->failed || b->closed))
        return 0;
    cds_list_del_init(&k->link);
    if (!k->replied && b->inflight[k->rail])
        b->inflight[k->rail]--;
    return 1;
}

/* A server's kept reply by xid, or NULL.  Caller holds the lock. */
static struct kept *
reply_find_locked(struct gfr_rdma_bundle *b, uint32_t xid)
{
    struct kept *k;

    cds_list_for_each_entry(k, &b->replies, link)
        if (k->msg.xid == xid)
            return k;
    return NULL;
}

/* Takes a server's reply off b->replies, onto released when that is not
 * NULL.  Caller holds the lock. */
static void
reply_unlist_locked(struct gfr_rdma_bundle *b, struct kept *k, struct cds_list_head *released)
{
    cds_list_del_init(&k->link);
    if (k->answered) {
        b->nanswered--;
        b->answered_bytes -= k->bytes;
    }
    if (released)
        cds_list_add_tail(&k->resend_link, released);
}

/* Does the client hold the reply to xid?  Its mark has passed it.  Caller
 * holds the lock. */
static int
client_holds_locked(const struct gfr_rdma_bundle *b, uint32_t xid)
{
    return b->calls.marked && gfr_xid_before(xid, b->calls.mark);
}

/*
 * Moves onto released the server's answered replies with no copy out that
 * the client holds (all of them when sweep, else k's alone: only a mark
 * that moved releases others), then, while the kept answers exceed the
 * bounds, the oldest; and k with no copy out once the bundle closed.
 * Caller holds the lock.
 */
static void
replies_release_locked(struct gfr_rdma_bundle *b, struct kept *k, int sweep,
                       struct cds_list_head *released)
{
    struct kept *pos, *tmp;

    if (k && !k->out && (b->closed || (k->answered && client_holds_locked(b, k->msg.xid))))
        reply_unlist_locked(b, k, released);
    if (sweep)
        cds_list_for_each_entry_safe(pos, tmp, &b->replies, link)
            if (pos->answered && !pos->out && client_holds_locked(b, pos->msg.xid))
                reply_unlist_locked(b, pos, released);
    cds_list_for_each_entry_safe(pos, tmp, &b->replies, link) {
        if (b->nanswered <= GFR_BUNDLE_KEPT_REPLIES &&
            b->answered_bytes <= GFR_BUNDLE_KEPT_REPLY_BYTES)
            break;
        if (pos->answered && !pos->out)
            reply_unlist_locked(b, pos, released);
    }
}

/* The owner's done for each released reply: 0 for one that went out
 * well, else -ENOTCONN (the bundle closed without a rail to take it).  No
 * lock held. */
static void
replies_finish(struct cds_list_head *released)
{
    struct kept *k, *tmp;

    cds_list_for_each_entry_safe(k, tmp, released, resend_link) {
        cds_list_del(&k->resend_link);
        kept_finish(k, k->answered ? 0 : -ENOTCONN);
    }
}

/*
 * After a copy of the server's reply k or a claim on it ended (k->out
 * counted down already): a reply lost (its send failed, not answered
 * before, say the callers) that nothing holds any more is unlisted, and
 * the caller ends it (returns 1); any other is left to
 * replies_release_locked, which moves onto released what the client
 * holds or the bounds shed.  Caller holds the lock.
 */
static int
reply_settle_locked(struct gfr_rdma_bundle *b, struct kept *k, int lost,
                    struct cds_list_head *released)
{
    if (lost && !k->out) {
        reply_unlist_locked(b, k, NULL);
        return 1;
    }
    replies_release_locked(b, k, 0, released);
    return 0;
}

/* Drops the caller's claim on the server's reply k (reply_settle_locked),
 * then ends the replies that released.  Returns 1 when k is the caller's
 * to end.  No lock held. */
static int
reply_unclaim(struct kept *k, int lost)
{
    struct gfr_rdma_bundle *b = k->b;
    CDS_LIST_HEAD(released);
    int unlisted;

    pthread_mutex_lock(&b->lock);
    k->out--;
    unlisted = reply_settle_locked(b, k, lost, &released);
    pthread_mutex_unlock(&b->lock);
    replies_finish(&released);
    return unlisted;
}

/*
 * Sends another copy of the server's reply k, which the caller claimed
 * (a count in k->out, so that no release frees it meanwhile), on prefer's
 * rail if it lives, else on another live rail than avoid; then drops the
 * claim.  again: for a resend of its call (counted in the rail's
 * resends).  When no rail takes it the call cannot be answered
 * (reply_lost) and k ends, with status unless a copy went out well
 * before.  Any thread, no lock held.
 */
static void
reply_send_again(struct kept *k, int prefer, const struct gfr_rdma_conn *avoid, int again,
                 int status)
{
    int err = send_copy(k, prefer, avoid, again);

    if (err)
        reply_lost(k->b, k->msg.xid, err);
    if (reply_unclaim(k, err != 0))
        kept_finish(k, k->answered ? 0 : status);
}

/*
 * The done of one copy of a server's reply k.  A copy that went out well
 * leaves the reply kept, answered, until the client holds it
 * (replies_release_locked); a resend of its call that came meanwhile gets
 * another copy.  A copy that failed is sent again on another live rail,
 * unless the bundle is ending.  Any thread, no lock held.
 */
static void
reply_done(struct kept *k, int status)
{
    struct gfr_rdma_bundle *b = k->b;
    const struct gfr_rdma_conn *failed = NULL;
    CDS_LIST_HEAD(released);
    int prefer = -1, send = 0, finish = 0;

    pthread_mutex_lock(&b->lock);
    k->out--;
    if (status == 0) {
        gfr_calls_answered(&b->calls, k->msg.xid);
        if (!k->answered) {
            k->answered = 1;
            b->nanswered++;
            b->answered_bytes += k->bytes;
        }
    } else {
        failed = b->rails[k->rail];
    }
    if ((k->again || status != 0) && !b->ending) {
        send = 1;
        prefer = k->again ? (int)k->again_rail : -1;
        k->again = 0;
        k->out++; /* claimed */
    } else {
        /* a failed copy here: the bundle is ending, and a call not
         * answered before goes unanswered with it */
        finish = reply_settle_locked(b, k, status != 0 && !k->answered, &released);
    }
    pthread_mutex_unlock(&b->lock);
    replies_finish(&released);
    if (send)
        reply_send_again(k, prefer, failed, status == 0, status);
    else if (finish)
        kept_finish(k, status);
}

/*
 * The done of one copy of k.  A call ends once its reply has been
 * delivered and no copy is out, or when its peer refused it; a call whose
 * copy was lost with its rail stays, and is sent again when the bundle
 * hears of the rail's end (after every copy there has ended).  Any other
 * message ends when a copy went out well; one whose copy failed is sent
 * again on another live rail (at least once: the peer may have taken the
 * failed copy), a server's reply to an untagged call among them; a
 * tracked reply is reply_done's.  Any thread, no lock held.
 */
static void
kept_done(void *cb_arg, int status)
{
    struct kept *k = cb_arg;
    struct gfr_rdma_bundle *b = k->b;
    const struct gfr_rdma_conn *failed;
    int finish, ending;

    if (k->tracked) {
        reply_done(k, status);
        return;
    }
    pthread_mutex_lock(&b->lock);
    k->out--;
    if (k->is_call) {
        if (status == -EREMOTEIO && !k->replied)
            k->failed = status;
        finish = call_settled_locked(b, k);
        pthread_mutex_unlock(&b->lock);
        if (finish)
            kept_finish(k, call_status(k));
        return;
    }
    failed = b->rails[k->rail];
    ending = b->ending;
    pthread_mutex_unlock(&b->lock);
    if (status != 0) {
        int err = ending ? -ENOTCONN : send_copy(k, -1, failed, 0);

        if (err == 0)
            return;
        if (b->is_server && k->msg.is_reply)
            reply_lost(b, k->msg.xid, err);
    }
    kept_finish(k, status);
}

/* A server's FENCE handler (engine-state.h): the client gave up its rail
 * rail_id.  Poller thread of the rail it arrived on, in that rail's
 * order. */
static void
rail_fenced(struct gfr_rdma_conn *on, uint8_t rail_id)
{
    struct gfr_rdma_bundle *b = on->bundle;
    struct gfr_rdma_conn *gone = NULL;

    if (!b)
        return;
    pthread_mutex_lock(&b->lock);
    for (unsigned i = 0; i < GFR_CM_MAX_RAILS && !gone; i++) {
        struct gfr_rdma_conn *r = b->rails[i];

        if (r && r != on && r->rail_id == rail_id && !r->fenced) {
            r->fenced = 1;
            gone = gfr_rdma_conn_tryget(r) ? r : NULL;
        }
    }
    pthread_mutex_unlock(&b->lock);
    if (!gone)
        return;
    gfr_rdma_conn_log(gone, "the client gave up rail %u: late requests on it are dropped, "
                      "and it ends", gone->rail);
    gfr_rdma_conn_fail(gone, -ECONNRESET);
    gfr_rdma_conn_put(gone);
}

/* A rail's own reference and its FENCE handler (engine-state.h); before
 * the connection is shared. */
static void
rail_hold(struct gfr_rdma_conn *conn)
{
    conn->on_fence = rail_fenced;
    gfr_rdma_conn_get(conn);
    uatomic_set(&conn->pass_held, 1);
}

static struct gfr_rdma_bundle *
bundle_new(struct gfr_rdma_conn *lead, int is_server)
{
    struct gfr_rdma_bundle *b = calloc(1, sizeof(*b));

    if (!b)
        return NULL;
    if (gfr_calls_init(&b->calls, GFR_BUNDLE_MAX_CALLS) != 0) {
        free(b);
        return NULL;
    }
    b->engine = lead->engine;
    b->lead = lead;
    b->is_server = is_server;
    b->owner_ops = lead->ops;
    b->owner_arg = lead->cb_arg;
    b->rails[0] = lead;
    for (unsigned i = 0; i < GFR_CM_MAX_RAILS; i++)
        b->path_of[i] = -1;
    b->open = 1;
    pthread_mutex_init(&b->lock, NULL);
    CDS_INIT_LIST_HEAD(&b->link);
    for (unsigned i = 0; i < GFR_RDMA_XID_BUCKETS; i++)
        CDS_INIT_LIST_HEAD(&b->kept[i]);
    CDS_INIT_LIST_HEAD(&b->replies);
    return b;
}

int
gfr_rdma_bundle_lead(struct gfr_rdma_conn *conn, int is_server)
{
    struct gfr_rdma *engine = conn->engine;
    struct gfr_rdma_bundle *b = bundle_new(conn, is_server);

    if (!b)
        return -ENOMEM;
    if (is_server) {
        /* A random token: a rail that joins must have read the lead's
         * accept.  Without the kernel's randomness there is no bundle. */
        if (getrandom(&b->token, sizeof(b->token), 0) != sizeof(b->token)) {
            int err = -errno;

            gfr_rdma_bundle_free(b);
            return err;
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
    rail_hold(conn);
    gfr_rdma_bundle_name(conn, b->id, 0);
    return 0;
}

void
gfr_rdma_bundle_taken(struct gfr_rdma_conn *lead, uint32_t id, uint64_t token)
{
    struct gfr_rdma_bundle *b = lead->bundle;

    pthread_mutex_lock(&b->lock);
    b->id = id;
    b->token = token;
    pthread_mutex_unlock(&b->lock);
    if (id)
        gfr_rdma_bundle_name(lead, id, 0);
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
        if (b->is_server && b->id == id) {
            /* every bit compared, whichever differs */
            found = (b->token ^ token) == 0 ? b : NULL;
            break;
        }
    }
    pthread_mutex_unlock(&engine->lock);
    return found;
}

int
gfr_rdma_bundle_member(struct gfr_rdma_bundle *b, struct gfr_rdma_conn *conn,
                       uint8_t rail_id, int path)
{
    unsigned rail = GFR_CM_MAX_RAILS;
    int ending;

    pthread_mutex_lock(&b->lock);
    ending = b->ending;
    if (!ending) /* no rail joins a bundle that is ending */
        for (rail = 1; rail < GFR_CM_MAX_RAILS && b->rails[rail]; rail++)
            continue;
    if (rail < GFR_CM_MAX_RAILS) {
        b->rails[rail] = conn;
        if (!rail_id) {
            /* 255 joins before an id comes back: a fence naming the old
             * rail has long been handled by then */
            if (!++b->last_rail_id)
                b->last_rail_id = 1;
            rail_id = b->last_rail_id;
        }
        conn->rail_id = rail_id;
        if (path >= 0) {
            b->path_of[rail] = path;
            b->paths[path].rail = (int)rail;
        }
    }
    pthread_mutex_unlock(&b->lock);
    if (rail == GFR_CM_MAX_RAILS)
        return ending ? -ESHUTDOWN : -ENOSPC;
    b->open++;
    conn->ops = &bundle_ops;
    conn->cb_arg = b;
    conn->bundle = b;
    rail_hold(conn);
    gfr_rdma_bundle_name(conn, b->id, rail);
    return 0;
}

/* The earliest retry of a waiting path, for the CM thread's tick.  Caller
 * holds the lock. */
static void
rejoin_next_locked(struct gfr_rdma_bundle *b)
{
    uint64_t next = 0;

    for (unsigned i = 0; i < b->npaths; i++)
        if (b->paths[i].state == GFR_PATH_WAITING &&
            (!next || b->paths[i].retry_ns < next))
            next = b->paths[i].retry_ns;
    uatomic_set(&b->rejoin_ns, next);
}

/* path's rail ended, or none could be made: it waits its backoff, from
 * the first after a rail that lasted; how many ms.  Caller holds the
 * lock. */
static unsigned
path_lost_locked(struct gfr_rdma_bundle *b, int path, uint64_t now)
{
    struct gfr_rdma_path *p = &b->paths[path];
    unsigned ms;

    if (p->state == GFR_PATH_UP && now - p->up_ns >= GFR_BUNDLE_REJOIN_STABLE_MS * 1000000ull)
        p->failures = 0;
    else if (p->failures < 16)
        p->failures++;
    ms = GFR_BUNDLE_REJOIN_FIRST_MS << (p->failures < 5 ? p->failures : 5);
    if (ms > GFR_BUNDLE_REJOIN_MAX_MS)
        ms = GFR_BUNDLE_REJOIN_MAX_MS;
    if (p->rail >= 0 && b->path_of[p->rail] == path)
        b->path_of[p->rail] = -1;
    if (p->state == GFR_PATH_UP) {
        p->losses++;
        p->attempts = 0;
    }
    p->rail = -1;
    p->state = GFR_PATH_WAITING;
    p->retry_ns = now + ms * 1000000ull;
    rejoin_next_locked(b);
    return ms;
}

int
gfr_rdma_bundle_add_path(struct gfr_rdma_bundle *b, const struct sockaddr *dst,
                         struct gfr_rdma_conn *on)
{
    size_t len = dst->sa_family == AF_INET6 ? sizeof(struct sockaddr_in6)
                                            : sizeof(struct sockaddr_in);
    struct gfr_rdma_path *p;
    int path = -ENOSPC;

    pthread_mutex_lock(&b->lock);
    if (b->npaths < GFR_CM_MAX_RAILS) {
        path = (int)b->npaths++;
        p = &b->paths[path];
        memset(p, 0, sizeof(*p));
        memcpy(&p->dst, dst, len);
        p->state = on ? GFR_PATH_UP : GFR_PATH_JOINING;
        p->rail = -1;
        if (on) {
            p->up_ns = gfr_now_ns();
            p->rail = (int)on->rail;
            b->path_of[on->rail] = path;
        }
    }
    pthread_mutex_unlock(&b->lock);
    return path;
}

int
gfr_rdma_bundle_rejoin_due(struct gfr_rdma_bundle *b, uint64_t now,
                           struct sockaddr_storage *dst)
{
    int path = -1;

    pthread_mutex_lock(&b->lock);
    for (unsigned i = 0; i < b->npaths && !b->ending && path < 0; i++) {
        struct gfr_rdma_path *p = &b->paths[i];

        if (p->state == GFR_PATH_WAITING && p->retry_ns <= now) {
            p->state = GFR_PATH_JOINING;
            p->attempts++;
            *dst = p->dst;
            path = (int)i;
        }
    }
    if (b->ending)
        uatomic_set(&b->rejoin_ns, 0);
    else if (path >= 0)
        rejoin_next_locked(b);
    pthread_mutex_unlock(&b->lock);
    return path;
}

void
gfr_rdma_bundle_path_lost(struct gfr_rdma_bundle *b, int path)
{
    pthread_mutex_lock(&b->lock);
    path_lost_locked(b, path, gfr_now_ns());
    pthread_mutex_unlock(&b->lock);
}

int
gfr_rdma_bundle_progressing(struct gfr_rdma_conn *rail, uint64_t since_ns)
{
    struct gfr_rdma_bundle *b = rail->bundle;
    int other = -1;

    if (!b)
        return -1;
    pthread_mutex_lock(&b->lock);
    for (unsigned i = 0; i < GFR_CM_MAX_RAILS && other < 0; i++)
        if (b->rails[i] && b->rails[i] != rail && b->live[i] &&
            b->rails[i]->moved_ns >= since_ns)
            other = (int)i;
    pthread_mutex_unlock(&b->lock);
    return other;
}

unsigned
gfr_rdma_bundle_others(struct gfr_rdma_conn *rail, struct gfr_rdma_conn *others[GFR_CM_MAX_RAILS])
{
    struct gfr_rdma_bundle *b = rail->bundle;
    struct gfr_rdma_conn *live[GFR_CM_MAX_RAILS];
    unsigned n = 0, nlive;

    if (!b)
        return 0;
    pthread_mutex_lock(&b->lock);
    nlive = hold_rails_locked(b, 0, live);
    pthread_mutex_unlock(&b->lock);
    for (unsigned i = 0; i < nlive; i++) {
        if (live[i] == rail)
            gfr_rdma_conn_put(live[i]);
        else
            others[n++] = live[i];
    }
    return n;
}

void
gfr_rdma_bundle_free(struct gfr_rdma_bundle *b)
{
    pthread_mutex_destroy(&b->lock);
    gfr_calls_fini(&b->calls);
    free(b);
}

/* CM thread.  A rail that joins a throttled bundle is throttled too; one
 * whose device another rail uses is named in the log: the two share a
 * port, and the bundle gains no bandwidth from it.  A client's path is up
 * (its backoff starts again from the first once the rail has lasted), and
 * a rail that joined again says so. */
static void
bundle_connected(struct gfr_rdma_conn *rail, void *arg)
{
    struct gfr_rdma_bundle *b = arg;
    char host[INET6_ADDRSTRLEN] = "";
    unsigned attempts = 0;
    int shares = -1;
    int throttled;

    pthread_mutex_lock(&b->lock);
    b->live[rail->rail] = 1;
    throttled = b->throttled;
    if (b->path_of[rail->rail] >= 0) {
        struct gfr_rdma_path *p = &b->paths[b->path_of[rail->rail]];
        unsigned port;

        p->state = GFR_PATH_UP;
        p->up_ns = gfr_now_ns();
        attempts = p->losses ? p->attempts : 0;
        gfr_addr_host_port((const struct sockaddr *)&p->dst, host, &port);
    }
    for (unsigned i = 0; i < GFR_CM_MAX_RAILS; i++)
        if (i != rail->rail && b->live[i] && b->rails[i]->dev == rail->dev)
            shares = (int)i;
    pthread_mutex_unlock(&b->lock);
    if (rail == b->lead) {
        if (b->owner_ops->connected)
            b->owner_ops->connected(b->lead, b->owner_arg);
        return;
    }
    if (attempts)
        gfr_rdma_conn_log(rail, "rail %u joined again, to %s, through %s, at attempt %u since "
                          "its path's rail ended", rail->rail, host,
                          ibv_get_device_name(rail->dev->verbs->device), attempts);
    if (shares >= 0)
        gfr_rdma_conn_log(rail, "rail %u reaches its peer through %s, as rail %d does: "
                          "they share one port and add no bandwidth", rail->rail,
                          ibv_get_device_name(rail->dev->verbs->device), shares);
    if (throttled)
        gfr_rdma_conn_throttle(rail, 1);
}

/*
 * A resend of a call whose reply has gone out (REPLYING or ANSWERED): the
 * client lost that copy with its rail.  The kept reply is claimed for
 * another copy (returned; the caller sends it), or, while a copy is out,
 * marked to get one once that copy is done (NULL).  *unkept: the bounds
 * released it (a call the bundle can no longer answer).  Caller holds the
 * lock.
 */
static struct kept *
reply_for_resend_locked(struct gfr_rdma_bundle *b, struct gfr_rdma_conn *rail, uint32_t xid,
                        int *unkept)
{
    enum gfr_call_state state = gfr_calls_state(&b->calls, xid, NULL);
    struct kept *k;

    /* a resend that the mark overtook (its call answered since) is stale */
    if ((state != GFR_CALL_REPLYING && state != GFR_CALL_ANSWERED) ||
        client_holds_locked(b, xid))
        return NULL;
    k = reply_find_locked(b, xid);
    if (!k) {
        *unkept = 1;
        return NULL;
    }
    if (k->out) {
        k->again = 1;
        k->again_rail = rail->rail;
        return NULL;
    }
    k->out++;
    return k;
}

/*
 * A server's verdict on an awaited request (gfr_calls.h): 1 to deliver
 * it, 0 when it was dropped (a duplicate, a stale or late copy: one whose
 * write list is still kept is answered with ERROR EALREADY, which ends
 * it; a resend of a call already replied to gets its kept reply again),
 * or a negative errno that ends the bundle.  A mark that moved on
 * releases the replies the client now holds.  Any thread that delivers.
 */
static int
judge(struct gfr_rdma_bundle *b, struct gfr_rdma_conn *rail, const struct gfr_rdma_rx *rx)
{
    enum gfr_call_verdict verdict = GFR_CALL_NEW;
    CDS_LIST_HEAD(released);
    struct kept *reply = NULL;
    uint32_t mark;
    int err = 0;
    int unkept = 0;
    int late, marked;

    pthread_mutex_lock(&b->lock);
    late = rail->fenced;
    marked = b->calls.marked;
    mark = b->calls.mark;
    if (!late)
        err = gfr_calls_arrived(&b->calls, rx->xid, (uint32_t)rx->written, rx->resend,
                                rail->rail, &verdict);
    if (!err && !late && verdict == GFR_CALL_DUPLICATE && rx->resend)
        reply = reply_for_resend_locked(b, rail, rx->xid, &unkept);
    if (b->calls.marked != marked || b->calls.mark != mark)
        replies_release_locked(b, NULL, 1, &released);
    pthread_mutex_unlock(&b->lock);
    replies_finish(&released);
    if (unkept) {
        gfr_rdma_conn_log(rail, "a resend of request %u, whose reply went out and is no "
                          "longer kept (more than %u replies or %u MiB of them kept for "
                          "calls after the client's oldest): ending the connection rather "
                          "than run it twice", rx->xid, GFR_BUNDLE_KEPT_REPLIES,
                          GFR_BUNDLE_KEPT_REPLY_BYTES >> 20);
        return -EPROTO;
    }
    if (err) {
        gfr_rdma_conn_log(rail, "cannot keep request %u in the bundle's table of calls: %s; "
                          "ending the connection", rx->xid,
                          err == -ENOSPC ? "the client leaves 65536 calls unanswered"
                          : err == -EPROTO ? "its mark is after its xid"
                                           : strerror(-err));
        return err == -ENOMEM ? err : -EPROTO;
    }
    if (verdict == GFR_CALL_AMBIGUOUS) {
        gfr_rdma_conn_log(rail, "a resend of request %u, among the answers the table had to "
                          "evict: it may have run; ending the connection rather than run "
                          "it twice", rx->xid);
        return -EPROTO;
    }
    if (!late && verdict == GFR_CALL_NEW)
        return 1;
    uatomic_inc(&rail->rail_duplicates);
    if (rx->offered_write)
        gfr_rdma_conn_refuse_copy(rail, rx->xid);
    if (reply) /* after the refusal, on the rail the resend came on */
        reply_send_again(reply, (int)rail->rail, NULL, 1, 0);
    return 0;
}

/* Any thread that delivers (the rail's messages come in the rail's order,
 * a rail that is ending included: it hands on what it took).  A client's
 * reply is delivered once (a later copy is dropped), and ends its call
 * when no copy is out; a server judges an awaited request first. */
static void
bundle_received(struct gfr_rdma_conn *rail, const struct gfr_rdma_rx *rx, void *arg)
{
    struct gfr_rdma_bundle *b = arg;
    struct kept *k = NULL;
    int verdict = 1;

    if (rx->is_reply && !b->is_server) {
        pthread_mutex_lock(&b->lock);
        k = call_find_locked(b, rx->xid);
        if (k && !k->replied) {
            k->replied = 1;
            k->delivering = 1;
            if (b->inflight[k->rail])
                b->inflight[k->rail]--;
        } else {
            k = NULL;
            verdict = 0; /* a duplicate: the call has its reply */
        }
        pthread_mutex_unlock(&b->lock);
        if (!verdict)
            uatomic_inc(&rail->rail_duplicates);
    } else if (!rx->is_reply && rx->awaits_reply && b->is_server) {
        verdict = judge(b, rail, rx);
        if (verdict < 0) {
            bundle_fail(b, verdict);
            return;
        }
    }
    if (verdict)
        b->owner_ops->received(b->lead, rx, b->owner_arg);
    if (k) {
        int finish;

        pthread_mutex_lock(&b->lock);
        k->delivering = 0;
        finish = call_settled_locked(b, k);
        pthread_mutex_unlock(&b->lock);
        if (finish)
            kept_finish(k, 0);
    }
}

/*
 * A rail ended (everything it received has been handed on, every copy
 * sent on it is done).  While another rail lives, a client fences the
 * rail on every live one, then sends its unanswered calls again; when
 * none is left, the bundle ends.  The owner hears of the end once every
 * rail has ended, after the calls still kept have ended with -ENOTCONN.
 * CM thread.
 */
static void
bundle_disconnected(struct gfr_rdma_conn *rail, int reason, void *arg)
{
    struct gfr_rdma_bundle *b = arg;
    struct gfr_rdma_conn *live[GFR_CM_MAX_RAILS];
    struct kept *k, *tmp;
    CDS_LIST_HEAD(resend);
    unsigned nlive = 0;
    unsigned nheld = 0;
    unsigned retry_ms = 0;
    char again[48] = "";
    int was_live, failover, ending;

    pthread_mutex_lock(&b->lock);
    was_live = b->live[rail->rail];
    b->live[rail->rail] = 0;
    b->inflight[rail->rail] = 0;
    if (rail != b->lead)
        b->rails[rail->rail] = NULL;
    for (unsigned i = 0; i < GFR_CM_MAX_RAILS; i++)
        nlive += b->live[i] != 0;
    if (!nlive && !b->ending && (was_live || rail == b->lead)) {
        b->ending = 1;
        b->reason = reason;
    }
    if (b->path_of[rail->rail] >= 0)
        retry_ms = path_lost_locked(b, b->path_of[rail->rail], gfr_now_ns());
    failover = was_live && !b->ending;
    if (failover)
        nheld = hold_rails_locked(b, 0, live);
    if (failover && !b->is_server) {
        /* this rail's calls, and any an earlier resend could not place */
        for (unsigned i = 0; i < GFR_RDMA_XID_BUCKETS; i++)
            cds_list_for_each_entry(k, &b->kept[i], link)
                if (!k->replied && !k->out && !b->live[k->rail]) {
                    k->out++; /* claimed: it stays kept */
                    cds_list_add_tail(&k->resend_link, &resend);
                }
    }
    pthread_mutex_unlock(&b->lock);
    b->open--;

    if (retry_ms)
        snprintf(again, sizeof(again), "; it joins again in %u ms", retry_ms);
    if (failover) {
        gfr_rdma_conn_log(rail, "rail %u ended (%s): the connection goes on over the other "
                          "rails%s%s", rail->rail, reason ? strerror(-reason) : "orderly",
                          b->is_server ? "" : ", its unanswered calls sent again there", again);
    } else if (!was_live && !b->ending) {
        gfr_rdma_conn_log(rail, "rail %u could not join (%s): the connection goes on "
                          "without it%s", rail->rail, reason ? strerror(-reason) : "closed",
                          again);
    }
    for (unsigned i = 0; i < nheld; i++) {
        uatomic_inc(&live[i]->rail_failovers);
        if (!b->is_server)
            gfr_rdma_conn_send_fence(live[i], rail->rail_id);
        gfr_rdma_conn_put(live[i]);
    }
    if (failover && !b->is_server) {
        cds_list_for_each_entry_safe(k, tmp, &resend, resend_link) {
            int err;

            cds_list_del(&k->resend_link);
            pthread_mutex_lock(&b->lock);
            k->out--; /* send_copy counts its copy */
            pthread_mutex_unlock(&b->lock);
            /* -ENOTCONN: no rail took it; the next rail's end, or the
             * bundle's, finds it */
            err = send_copy(k, -1, rail, 1);
            if (err && err != -ENOTCONN) {
                gfr_rdma_conn_log(rail, "cannot send call %u again: %s; ending the "
                                  "connection", k->msg.xid, strerror(-err));
                bundle_fail(b, err);
            }
        }
    }
    pthread_mutex_lock(&b->lock);
    ending = b->ending;
    pthread_mutex_unlock(&b->lock);
    if (ending && b->open)
        bundle_fail(b, b->reason);
    if (ending && !b->open && b->owner_ops) {
        const struct gfr_rdma_conn_ops *ops = b->owner_ops;

        pthread_mutex_lock(&b->engine->lock);
        cds_list_del_init(&b->link); /* no rail joins any more */
        pthread_mutex_unlock(&b->engine->lock);
        CDS_LIST_HEAD(calls);
        CDS_LIST_HEAD(replies);

        /* Every copy sent is done (each rail's end waited for its own);
         * what a submitter still holds, it finishes once it is through. */
        pthread_mutex_lock(&b->lock);
        b->closed = 1;
        for (unsigned i = 0; i < GFR_RDMA_XID_BUCKETS; i++)
            cds_list_for_each_entry_safe(k, tmp, &b->kept[i], link)
                if (call_settled_locked(b, k))
                    cds_list_add_tail(&k->resend_link, &calls);
        cds_list_for_each_entry_safe(k, tmp, &b->replies, link)
            if (!k->out)
                reply_unlist_locked(b, k, &replies);
        pthread_mutex_unlock(&b->lock);
        cds_list_for_each_entry_safe(k, tmp, &calls, resend_link) {
            cds_list_del(&k->resend_link);
            kept_finish(k, call_status(k));
        }
        replies_finish(&replies);
        b->owner_ops = NULL; /* once */
        ops->disconnected(b->lead, b->reason, b->owner_arg);
    }
}

/* A client's awaited call: kept, then sent.  -EEXIST when a call with its
 * xid is kept still. */
static int
submit_call(struct gfr_rdma_bundle *b, const struct gfr_rdma_msg *msg)
{
    struct kept *k = kept_new(b, msg, 1);
    int finish = 0;
    int err;

    if (!k)
        return -ENOMEM;
    pthread_mutex_lock(&b->lock);
    err = b->ending ? -ENOTCONN : call_find_locked(b, msg->xid) ? -EEXIST : 0;
    if (!err) {
        cds_list_add_tail(&k->link, &b->kept[msg->xid % GFR_RDMA_XID_BUCKETS]);
        k->out++; /* claimed until sent: the bundle's end leaves it to us */
    }
    pthread_mutex_unlock(&b->lock);
    if (!err) {
        err = send_copy(k, -1, NULL, 0);
        pthread_mutex_lock(&b->lock);
        k->out--;
        if (err)
            cds_list_del_init(&k->link);
        else
            finish = call_settled_locked(b, k);
        pthread_mutex_unlock(&b->lock);
    }
    if (err) {
        /* not sent: the owner's done never runs (gfr_rdma_submit) */
        free(k->copy);
        free(k);
    } else if (finish) {
        kept_finish(k, call_status(k));
    }
    return err;
}

int
gfr_rdma_submit(struct gfr_rdma_conn *conn, const struct gfr_rdma_msg *msg)
{
    struct gfr_rdma_bundle *b = conn ? conn->bundle : NULL;
    struct kept *k;
    int prefer = -1;
    int tracked = 0;
    unsigned rail;
    int err;

    if (!b || !msg)
        return gfr_rdma_conn_submit(conn, msg);
    if (!b->is_server && gfr_rdma_msg_awaits_reply(msg))
        return submit_call(b, msg);
    if (b->is_server && msg->is_reply) {
        enum gfr_call_state state;

        pthread_mutex_lock(&b->lock);
        state = gfr_calls_state(&b->calls, msg->xid, &rail);
        pthread_mutex_unlock(&b->lock);
        if (state == GFR_CALL_RUNNING)
            prefer = (int)rail;
        /* untagged (a client without a bundle the server took): no mark
         * would ever release it, and no resend comes */
        tracked = state != 0;
    }
    k = kept_new(b, msg, 0);
    if (!k)
        return -ENOMEM;
    k->tracked = tracked;
    if (tracked) {
        /* listed first: a resend of its call finds it while its first copy
         * is out */
        k->bytes = gfr_rdma_iov_total(k->msg.head, k->msg.head_cnt) +
                   gfr_rdma_iov_total(k->msg.bulk, k->msg.bulk_cnt);
        pthread_mutex_lock(&b->lock);
        k->out++; /* claimed until it is sent */
        cds_list_add_tail(&k->link, &b->replies);
        pthread_mutex_unlock(&b->lock);
    }
    err = send_copy(k, prefer, NULL, 0);
    /* on a failure no copy went out, so the claim was its last hold */
    if (tracked)
        reply_unclaim(k, err != 0);
    if (err) {
        if (b->is_server && msg->is_reply)
            reply_lost(b, msg->xid, err);
        free(k->copy);
        free(k);
    }
    return err;
}

int
gfr_rdma_send(struct gfr_rdma_conn *conn, const void *data, size_t len)
{
    struct gfr_rdma_bundle *b = conn ? conn->bundle : NULL;
    struct gfr_rdma_conn *rail = NULL;
    int index;
    int err;

    if (!b)
        return gfr_rdma_conn_send(conn, data, len);
    pthread_mutex_lock(&b->lock);
    index = least_locked(b, 0);
    if (index >= 0)
        rail = take_locked(b, index, 0);
    pthread_mutex_unlock(&b->lock);
    if (!rail)
        return -ENOTCONN;
    err = gfr_rdma_conn_send(rail, data, len);
    gfr_rdma_conn_put(rail);
    return err;
}

int
gfr_rdma_throttle(struct gfr_rdma_conn *conn, int on)
{
    struct gfr_rdma_conn *rails[GFR_CM_MAX_RAILS];
    unsigned n;
    int err = -ENOTCONN;

    if (!conn || !conn->bundle)
        return gfr_rdma_conn_throttle(conn, on);
    pthread_mutex_lock(&conn->bundle->lock);
    conn->bundle->throttled = on;
    n = hold_rails_locked(conn->bundle, 1, rails);
    pthread_mutex_unlock(&conn->bundle->lock);
    for (unsigned i = 0; i < n; i++) {
        if (gfr_rdma_conn_throttle(rails[i], on) == 0)
            err = 0;
        gfr_rdma_conn_put(rails[i]);
    }
    return err;
}

int
gfr_rdma_disconnect(struct gfr_rdma_conn *conn)
{
    if (!conn)
        return -EINVAL;
    if (!conn->bundle) {
        gfr_rdma_conn_fail(conn, 0);
        return 0;
    }
    bundle_fail(conn->bundle, 0);
    return 0;
}
