/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Two engines, a server and a client, talk over the verbs model
 * (verbs-model.h) under each provider profile, one seed after another.
 * Each seed draws the options (receive queue, credits, keepalive, rails;
 * and each connection's own credits, rdma-depth and, with receive buffers
 * of its own, inline size), the connections, the requests (sizes, reply
 * buffers, reply sizes) and one fault (none, a QP error, port down, device
 * removal, a peer that disconnects) at a random work request, on either
 * rail's devices when the connections spread over two (multi-rail: the
 * invariants below hold for each owner's connection, whatever its rails
 * do); the model draws the fabric's order and delays.
 *
 * After every seed, the invariants:
 * - every request the engine took completes exactly once, before its
 *   connection reports its end, reaches the server's owner at most once
 *   (failover sends it again, never runs it twice), and a reply arrives at
 *   most once, with every byte right; a request with reply buffers that
 *   completed well had its reply delivered first;
 * - with rails, a fault on one device after every second rail joined
 *   costs nothing: every request is answered and no connection ends;
 *   after a QP's error (the device still works) the rail joins again,
 *   and a second round of requests is answered over the rails; and when
 *   a client device's QPs stall without an error instead (the rail seeds
 *   without a fault), rail-timeout-ms ends the stalled rail and
 *   every request is answered with no connection ended;
 * - without a fault, every request is answered and every connection ends
 *   in order;
 * - every connection reports its end exactly once;
 * - the model found nothing: every access in a registered region with the
 *   flags it needs, nothing posted where the provider refuses it, no
 *   receive buffer lost, no queue overrun, and every object freed.
 *
 *   GFR_MODEL_SEEDS=N   seeds per profile (default 40)
 *   GFR_MODEL_SEED=S    only seed S (replays its fault schedule)
 *   GFR_MODEL_PROFILE=P only profile P (rxe, mlx5, iwarp)
 *   GFR_MODEL_VERBOSE=1 a line for every seed, not only for those that fail
 *
 * A failure names the profile, the seed, the fault and its work request,
 * the invariants broken, the model's findings and the engines' last log
 * lines.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "gfr_pool.h"
#include "gfr_rdma.h"
#include "gfr_rdma_opts.h"
#include "verbs-model.h"

#define DEFAULT_SEEDS 40
#define MAX_CONNS 3
#define MAX_SERVER_CONNS 8
/* Requests a seed draws (up to DRAWN_REQS - 1), and a second round after
 * a rail rejoined. */
#define DRAWN_REQS 40
#define REJOIN_REQS 4
#define MAX_REQS (DRAWN_REQS + REJOIN_REQS)
#define MAX_BODY (64 * 1024)
#define PORT 4791
#define WAIT_MS 10000
/* A seed that takes longer has hung: its report and the exit follow. */
#define WATCHDOG_S 90

struct request_head {
    uint32_t xid;
    uint32_t reply_len;
};

struct request {
    struct request_head head;
    uint8_t *body;
    size_t body_len;
    uint8_t *offer;
    size_t offer_len;
    struct iovec iov[3];
    int submitted;
    int submitting; /* inside gfr_rdma_submit, which fails if the end is
                     * reported meanwhile (request_done checks the rest) */
    int done;
    int status;
    int replies;
    int served; /* times the server's owner got it: a second is a call run twice */
    int bad;
    int replied_before_done;
    struct side *side;
};

struct side {
    struct run *run;
    struct gfr_rdma_conn *conn;
    int is_server;
    int connected;
    int disconnected;
    int reason;
};

struct run {
    pthread_mutex_t lock;
    pthread_cond_t cond;
    uint64_t rng;
    struct side clients[MAX_CONNS];
    unsigned nclients;
    struct side servers[MAX_SERVER_CONNS];
    unsigned nservers;
    struct request reqs[MAX_CONNS][MAX_REQS];
    unsigned nreqs;
    int rails; /* the connections spread over two rails */
    /* ... and every second rail had joined before any fault: a fault on
     * one device must then cost no request and no connection (failover) */
    int railed;
    /* ... and, after a QP's error, the rail joined again (rejoin_round) */
    int rejoined;
    /* Multi-rail without a fault: one client device's QPs stall silently
     * once every rail joined (model_stall), and rail-timeout-ms must end
     * the stalled rails while failover hides it */
    int stall;
    unsigned stall_host;
    int hook_open;
    int hook_busy;
    char problems[2048];
    size_t problems_len;
    unsigned nproblems;
};

/* The engines' last log lines, shown when a seed fails. */
static struct {
    pthread_mutex_t lock;
    char lines[16][240];
    unsigned next;
} logs = {.lock = PTHREAD_MUTEX_INITIALIZER};

/* Rails the engines ended for a stall (rail-timeout-ms), from their log:
 * under logs.lock. */
static unsigned stall_ends;

static void
log_line(const char *msg, void *arg)
{
    (void)arg;
    pthread_mutex_lock(&logs.lock);
    snprintf(logs.lines[logs.next++ % 16], sizeof(logs.lines[0]), "%s", msg);
    if (strstr(msg, "made no progress for rail-timeout-ms"))
        stall_ends++;
    pthread_mutex_unlock(&logs.lock);
}

static unsigned
stall_ends_now(void)
{
    unsigned n;

    pthread_mutex_lock(&logs.lock);
    n = stall_ends;
    pthread_mutex_unlock(&logs.lock);
    return n;
}

static uint64_t
rnd(struct run *run)
{
    uint64_t z = (run->rng += 0x9e3779b97f4a7c15ULL);

    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

/* Log-uniform in [1, max]. */
static size_t
random_size(struct run *run, size_t max)
{
    unsigned bits = 0;
    size_t top;

    while (((size_t)1 << (bits + 1)) <= max)
        bits++;
    top = (size_t)1 << (rnd(run) % (bits + 1));
    top += rnd(run) % top;
    return top > max ? max : top;
}

static uint8_t
pattern(uint32_t xid, size_t i, uint8_t salt)
{
    return (uint8_t)(xid * 131u + i * 7u + salt);
}

/* Records a broken invariant.  Caller holds run->lock. */
static void
problem(struct run *run, const char *fmt, ...)
{
    va_list ap;

    run->nproblems++;
    if (run->problems_len + 2 >= sizeof(run->problems))
        return;
    va_start(ap, fmt);
    run->problems_len += (size_t)vsnprintf(run->problems + run->problems_len,
                                           sizeof(run->problems) - run->problems_len, fmt, ap);
    va_end(ap);
    if (run->problems_len + 1 < sizeof(run->problems))
        run->problems[run->problems_len++] = '\n';
    run->problems[run->problems_len < sizeof(run->problems) ? run->problems_len
                                                             : sizeof(run->problems) - 1] = '\0';
}

static uint8_t
rx_byte(const struct gfr_rdma_rx *rx, size_t i)
{
    return i < rx->head_len ? ((const uint8_t *)rx->head)[i]
                            : ((const uint8_t *)rx->bulk)[i - rx->head_len];
}

static void
on_connected(struct gfr_rdma_conn *conn, void *cb_arg)
{
    struct side *side = cb_arg;

    (void)conn;
    pthread_mutex_lock(&side->run->lock);
    side->connected = 1;
    pthread_cond_broadcast(&side->run->cond);
    pthread_mutex_unlock(&side->run->lock);
}

static void
free_reply(void *cb_arg, int status)
{
    (void)status;
    free(cb_arg);
}

/* Server: checks a request and answers it with reply_len bytes. */
static void
serve(struct side *side, struct gfr_rdma_conn *conn, const struct gfr_rdma_rx *rx)
{
    struct request_head head;
    size_t len = rx->head_len + rx->bulk_len;
    struct gfr_rdma_msg msg = {.xid = rx->xid, .is_reply = 1, .done = free_reply};
    struct iovec iov[2];
    uint8_t *reply;

    if (len < sizeof(head)) {
        pthread_mutex_lock(&side->run->lock);
        problem(side->run, "server: a request of %zu bytes", len);
        pthread_mutex_unlock(&side->run->lock);
        return;
    }
    if (rx->xid / MAX_REQS < MAX_CONNS) {
        struct request *req = &side->run->reqs[rx->xid / MAX_REQS][rx->xid % MAX_REQS];

        pthread_mutex_lock(&side->run->lock);
        if (++req->served > 1)
            problem(side->run, "server: request %u delivered %d times: it ran twice", rx->xid,
                    req->served);
        pthread_mutex_unlock(&side->run->lock);
    }
    for (size_t i = 0; i < sizeof(head); i++)
        ((uint8_t *)&head)[i] = rx_byte(rx, i);
    for (size_t i = sizeof(head); i < len; i++)
        if (rx_byte(rx, i) != pattern(head.xid, i, 1)) {
            pthread_mutex_lock(&side->run->lock);
            problem(side->run, "server: request %u corrupt at byte %zu of %zu", head.xid, i, len);
            pthread_mutex_unlock(&side->run->lock);
            return;
        }
    reply = malloc(sizeof(head) + head.reply_len);
    if (!reply)
        abort();
    memcpy(reply, &head, sizeof(head));
    for (size_t i = 0; i < head.reply_len; i++)
        reply[sizeof(head) + i] = pattern(head.xid, i, 2);
    iov[0] = (struct iovec){reply, sizeof(head)};
    iov[1] = (struct iovec){reply + sizeof(head), head.reply_len};
    msg.head = &iov[0];
    msg.head_cnt = 1;
    msg.bulk = &iov[1];
    msg.bulk_cnt = 1;
    msg.cb_arg = reply;
    if (gfr_rdma_submit(conn, &msg) != 0)
        free(reply); /* the connection is ending: its client learns it */
}

/* Client: is the reply to req right, wherever its data landed? */
static int
reply_ok(const struct gfr_rdma_rx *rx, const struct request *req)
{
    size_t body = rx->head_len + rx->bulk_len;

    if (body < sizeof(struct request_head))
        return 0;
    if (rx->written) {
        if (rx->written != req->head.reply_len || body != sizeof(struct request_head))
            return 0;
        for (size_t i = 0; i < rx->written; i++)
            if (req->offer[i] != pattern(req->head.xid, i, 2))
                return 0;
        return 1;
    }
    if (body - sizeof(struct request_head) != req->head.reply_len)
        return 0;
    for (size_t i = 0; i < req->head.reply_len; i++)
        if (rx_byte(rx, sizeof(struct request_head) + i) != pattern(req->head.xid, i, 2))
            return 0;
    return 1;
}

static void
on_received(struct gfr_rdma_conn *conn, const struct gfr_rdma_rx *rx, void *cb_arg)
{
    struct side *side = cb_arg;
    struct run *run = side->run;
    unsigned c = rx->xid / MAX_REQS, k = rx->xid % MAX_REQS;
    struct request *req;

    if (side->is_server) {
        serve(side, conn, rx);
        return;
    }
    pthread_mutex_lock(&run->lock);
    req = c < MAX_CONNS ? &run->reqs[c][k] : NULL;
    if (!rx->is_reply || !req || !req->submitted || &run->clients[c] != side) {
        problem(run, "client: a message with xid %u that answers nothing it sent", rx->xid);
    } else {
        if (++req->replies > 1)
            problem(run, "client: request %u answered %d times", rx->xid, req->replies);
        if (!reply_ok(rx, req))
            problem(run, "client: the reply to request %u is wrong (%zu written, %zu in body)",
                    rx->xid, rx->written, rx->head_len + rx->bulk_len);
        if (req->done && req->offer)
            problem(run, "client: request %u, which offered reply buffers, answered after "
                    "its done", rx->xid);
    }
    pthread_cond_broadcast(&run->cond);
    pthread_mutex_unlock(&run->lock);
}

static void
on_disconnected(struct gfr_rdma_conn *conn, int reason, void *cb_arg)
{
    struct side *side = cb_arg;
    struct run *run = side->run;

    (void)conn;
    pthread_mutex_lock(&run->lock);
    if (++side->disconnected > 1)
        problem(run, "%s: a connection reported its end %d times",
                side->is_server ? "server" : "client", side->disconnected);
    side->reason = reason;
    if (!side->is_server) {
        unsigned c = (unsigned)(side - run->clients);

        for (unsigned k = 0; k < run->nreqs; k++) {
            const struct request *req = &run->reqs[c][k];

            if (req->submitted && !req->submitting && !req->done)
                problem(run, "client %u: request %u (body %zu, reply buffers %zu, %d "
                        "replies) still open when its connection reported its end", c,
                        req->head.xid, req->body_len, req->offer_len, req->replies);
        }
    }
    pthread_cond_broadcast(&run->cond);
    pthread_mutex_unlock(&run->lock);
}

static const struct gfr_rdma_conn_ops ops = {
    .connected = on_connected,
    .received = on_received,
    .disconnected = on_disconnected,
};

static int
on_accept(struct gfr_rdma_listener *l, struct gfr_rdma_conn *conn, void *cb_arg,
          const struct gfr_rdma_conn_ops **conn_ops, void **conn_cb_arg)
{
    struct run *run = cb_arg;
    struct side *side;

    (void)l;
    pthread_mutex_lock(&run->lock);
    if (run->nservers == MAX_SERVER_CONNS) {
        pthread_mutex_unlock(&run->lock);
        return -ENOSPC;
    }
    side = &run->servers[run->nservers++];
    *side = (struct side){.run = run, .conn = conn, .is_server = 1};
    pthread_mutex_unlock(&run->lock);
    *conn_ops = &ops;
    *conn_cb_arg = side;
    return 0;
}

static void
request_done(void *cb_arg, int status)
{
    struct request *req = cb_arg;
    struct run *run = req->side->run;

    pthread_mutex_lock(&run->lock);
    if (++req->done > 1)
        problem(run, "client: request %u completed %d times", req->head.xid, req->done);
    if (req->side->disconnected)
        problem(run, "client: request %u completed after its connection ended", req->head.xid);
    req->status = status;
    req->replied_before_done = req->replies > 0;
    pthread_cond_broadcast(&run->cond);
    pthread_mutex_unlock(&run->lock);
}

/* The fault "a peer disconnects": the fabric thread asks the owner of
 * one of the connections, picked by the seed, to end it. */
static void
disconnect_one(void *cb_arg, uint64_t pick)
{
    struct run *run = cb_arg;
    struct gfr_rdma_conn *conn = NULL;
    unsigned n;

    pthread_mutex_lock(&run->lock);
    n = run->nclients + run->nservers;
    if (run->hook_open && n) {
        unsigned i = (unsigned)(pick % n);

        conn = i < run->nclients ? run->clients[i].conn : run->servers[i - run->nclients].conn;
        run->hook_busy = 1;
    }
    pthread_mutex_unlock(&run->lock);
    if (!conn)
        return;
    gfr_rdma_disconnect(conn);
    pthread_mutex_lock(&run->lock);
    run->hook_busy = 0;
    pthread_cond_broadcast(&run->cond);
    pthread_mutex_unlock(&run->lock);
}

/* Waits under run->lock until done(run) or WAIT_MS pass: 0 or -ETIMEDOUT. */
static int
wait_for(struct run *run, int (*done)(struct run *))
{
    struct timespec ts;

    clock_gettime(CLOCK_REALTIME, &ts);
    ts.tv_sec += WAIT_MS / 1000;
    while (!done(run))
        if (pthread_cond_timedwait(&run->cond, &run->lock, &ts) == ETIMEDOUT)
            return done(run) ? 0 : -ETIMEDOUT;
    return 0;
}

static int
all_set_up(struct run *run)
{
    for (unsigned c = 0; c < run->nclients; c++)
        if (!run->clients[c].connected && !run->clients[c].disconnected)
            return 0;
    return 1;
}

/* Multi-rail: the rails of engine's bundles that are established, over
 * its connections that are. */
static unsigned
rails_established(struct gfr_rdma *engine, unsigned *conns)
{
    struct gfr_rdma_snapshot *snap;
    unsigned rails = 0;

    *conns = 0;
    if (gfr_rdma_snapshot(engine, &snap) != 0)
        return 0;
    for (unsigned i = 0; i < snap->nconns; i++) {
        const struct gfr_rdma_conn_info *c = &snap->conns[i];

        if (strcmp(c->state, "ESTABLISHED") != 0)
            continue;
        if (c->bundle && c->rail)
            rails++;
        else
            ++*conns;
    }
    gfr_rdma_snapshot_free(snap);
    return rails;
}

/* Multi-rail: the established connections of engine's bundles, whatever
 * their rail (a lead that ended has a rail in its place once its path
 * joined again). */
static unsigned
bundle_rails_established(struct gfr_rdma *engine)
{
    struct gfr_rdma_snapshot *snap;
    unsigned n = 0;

    if (gfr_rdma_snapshot(engine, &snap) != 0)
        return 0;
    for (unsigned i = 0; i < snap->nconns; i++)
        n += snap->conns[i].bundle && strcmp(snap->conns[i].state, "ESTABLISHED") == 0;
    gfr_rdma_snapshot_free(snap);
    return n;
}

/* Multi-rail: each client connection's second rail joins before the
 * requests start, unless a fault came first (run->railed says whether one
 * did not); bounded by WAIT_MS.  Takes run->lock. */
static void
wait_for_rails(struct run *run, struct gfr_rdma *client)
{
    unsigned conns = 0, rails = 0;

    for (unsigned ms = 0; ms < WAIT_MS && !model_faults_injected(); ms += 2) {
        rails = rails_established(client, &conns);
        if (conns && rails >= conns) {
            pthread_mutex_lock(&run->lock);
            run->railed = !model_faults_injected();
            pthread_mutex_unlock(&run->lock);
            return;
        }
        usleep(2000);
    }
    if (!model_faults_injected()) {
        pthread_mutex_lock(&run->lock);
        problem(run, "%u of %u client connection(s) have their second rail after %d ms",
                rails, conns, WAIT_MS);
        pthread_mutex_unlock(&run->lock);
    }
}

/* Every request has completed, and each answered or its connection gone. */
static int
all_settled(struct run *run)
{
    for (unsigned c = 0; c < run->nclients; c++)
        for (unsigned k = 0; k < run->nreqs; k++) {
            const struct request *req = &run->reqs[c][k];

            if (req->submitted &&
                (!req->done || (!req->replies && !req->status && !run->clients[c].disconnected)))
                return 0;
        }
    return 1;
}

static int
all_ended(struct run *run)
{
    for (unsigned c = 0; c < run->nclients; c++)
        if (!run->clients[c].disconnected)
            return 0;
    for (unsigned s = 0; s < run->nservers; s++)
        if (!run->servers[s].disconnected)
            return 0;
    return !run->hook_busy;
}

static int
submit_request(struct run *run, unsigned c, unsigned k)
{
    struct request *req = &run->reqs[c][k];
    struct gfr_rdma_msg msg = {.xid = c * MAX_REQS + k, .done = request_done, .cb_arg = req};
    size_t body = rnd(run) % 2 ? random_size(run, MAX_BODY) : 0;
    int err;

    req->side = &run->clients[c];
    req->head = (struct request_head){.xid = msg.xid,
                                      .reply_len = (uint32_t)random_size(run, MAX_BODY)};
    req->body_len = body;
    req->body = malloc(body ? body : 1);
    if (!req->body)
        return -ENOMEM;
    for (size_t i = 0; i < body; i++)
        req->body[i] = pattern(msg.xid, i + sizeof(req->head), 1);
    req->iov[0] = (struct iovec){&req->head, sizeof(req->head)};
    req->iov[1] = (struct iovec){req->body, body};
    msg.head = &req->iov[0];
    msg.head_cnt = 1;
    /* Inside a bundle a request that will be answered says so: its reply
     * is delivered to it once, and failover sends it again (docs/multi-
     * rail.md); without rails, read lists end with DONE as before. */
    msg.expects_reply = run->rails;
    if (body) {
        msg.bulk = &req->iov[1];
        msg.bulk_cnt = 1;
    }
    if (rnd(run) % 2) {
        req->offer_len = random_size(run, MAX_BODY);
        req->offer = calloc(1, req->offer_len);
        if (!req->offer)
            return -ENOMEM;
        req->iov[2] = (struct iovec){req->offer, req->offer_len};
        msg.reply = &req->iov[2];
        msg.reply_cnt = 1;
    }
    pthread_mutex_lock(&run->lock);
    req->submitted = 1;
    req->submitting = 1;
    pthread_mutex_unlock(&run->lock);
    err = gfr_rdma_submit(run->clients[c].conn, &msg);
    pthread_mutex_lock(&run->lock);
    req->submitting = 0;
    if (err) {
        req->submitted = 0;
        /* A failed device refuses registrations before its connections
         * have ended. */
        if (err != -ENOTCONN && !(err == -EIO && model_faults_injected()))
            problem(run, "client: submitting request %u failed: %s", msg.xid, strerror(-err));
    }
    pthread_mutex_unlock(&run->lock);
    return 0;
}

/* The invariants once everything has ended; fault: the one injected
 * (MODEL_FAULT_NONE: none).  With every second rail joined before it, a
 * fault on one device (a QP's error, its port, its removal) leaves the
 * other rail: failover answers every request and ends no connection.
 * Caller holds run->lock. */
static int
failover_expected(const struct run *run, enum model_fault fault)
{
    return run->railed && (fault == MODEL_FAULT_QP_ERROR || fault == MODEL_FAULT_PORT_DOWN ||
                           fault == MODEL_FAULT_DEVICE_REMOVAL);
}

static void
check_outcome(struct run *run, enum model_fault fault)
{
    int faulted = fault != MODEL_FAULT_NONE;
    int failover = failover_expected(run, fault);

    for (unsigned c = 0; c < run->nclients; c++) {
        struct side *side = &run->clients[c];

        if (!faulted && side->reason)
            problem(run, "client %u: ended with %s without a fault", c, strerror(-side->reason));
        if (failover && side->reason)
            problem(run, "client %u: ended with %s, though the fault left it a rail", c,
                    strerror(-side->reason));
        for (unsigned k = 0; k < run->nreqs; k++) {
            struct request *req = &run->reqs[c][k];

            if (!req->submitted)
                continue;
            if (req->done != 1)
                problem(run, "client: request %u completed %d times", req->head.xid, req->done);
            if (req->offer && req->done && !req->status && !req->replied_before_done)
                problem(run, "client: request %u with reply buffers completed before its reply",
                        req->head.xid);
            if (!faulted && (!req->replies || req->status))
                problem(run, "client: request %u %s without a fault", req->head.xid,
                        req->status ? "failed" : "was never answered");
            if (failover && (!req->replies || req->status))
                problem(run, "client: request %u %s, though the fault left its connection a "
                        "rail", req->head.xid, req->status ? "failed" : "was never answered");
        }
    }
    for (unsigned s = 0; s < run->nservers; s++)
        if (!faulted && run->servers[s].reason)
            problem(run, "server %u: ended with %s without a fault", s,
                    strerror(-run->servers[s].reason));
}

static void
free_requests(struct run *run)
{
    for (unsigned c = 0; c < MAX_CONNS; c++)
        for (unsigned k = 0; k < MAX_REQS; k++) {
            free(run->reqs[c][k].body);
            free(run->reqs[c][k].offer);
        }
}

static void
print_logs(void)
{
    print_message("the engines' last log lines:\n");
    for (unsigned i = 0; i < 16; i++) {
        const char *line = logs.lines[(logs.next + i) % 16];

        if (line[0])
            print_message("  %s\n", line);
    }
}

/* The seed running, for the watchdog. */
static char running[160];

static void
watchdog(int sig)
{
    static const char what[] = "model-test: hung: ";

    (void)sig;
    if (write(STDOUT_FILENO, what, sizeof(what) - 1) < 0 ||
        write(STDOUT_FILENO, running, strlen(running)) < 0)
        _exit(2);
    _exit(1);
}

/* Stops the program when the engines cannot be destroyed safely (they
 * kept a QP after every connection ended: destroying them would wait for
 * ever); the seed's report comes first. */
static void
stop_here(struct run *run, enum model_profile profile, uint64_t seed)
{
    print_message("model %s seed %llu: stopped: %s", model_profile_name(profile),
                  (unsigned long long)seed, run->problems);
    print_logs();
    fflush(stdout);
    _exit(1);
}

/* Completions the profile gave twice, in its seeds so far. */
static unsigned duplicates_given;
/* Seeds whose fault hit one rail after every second rail had joined: the
 * failover invariant applied (check_outcome). */
static unsigned failovers_checked;
/* ... and of those, seeds whose rail joined again after a QP's error and
 * carried a second round (rejoin_round). */
static unsigned rejoins_checked;
/* Seeds whose client device stalled silently (run->stall). */
static unsigned stalls_checked;

/* A number drawn from seed and salt apart from the run's stream
 * (splitmix64's finalizer). */
static uint64_t
mix(uint64_t seed, uint64_t salt)
{
    uint64_t h = (seed + 1) * 0x9e3779b97f4a7c15ULL + salt * 0xd6e8feb86659fd93ULL;

    h ^= h >> 30;
    h *= 0xbf58476d1ce4e5b9ULL;
    h ^= h >> 27;
    h *= 0x94d049bb133111ebULL;
    return h ^ (h >> 31);
}

/* Options of connection `which` (0: the listener's, 1...: a client's):
 * the engine's, with credits and rdma-depth of its own, and its own
 * inline size where receive buffers are each connection's (the engine
 * takes options per connection: gfr_rdma_connect, gfr_rdma_listen).
 * Drawn from the seed apart from the run's stream, which stays as it was. */
static void
conn_opts(const struct gfr_rdma_opts *engine, uint64_t seed, unsigned which,
          struct gfr_rdma_opts *out)
{
    uint64_t h = (seed + 1) * 0xd6e8feb86659fd93ULL + (which + 1) * 0x9e3779b97f4a7c15ULL;

    h ^= h >> 31;
    h *= 0xbf58476d1ce4e5b9ULL;
    h ^= h >> 29;
    *out = *engine;
    out->credits = 2 + (uint32_t)(h % 63);
    out->rdma_depth = 1 + (uint32_t)((h >> 8) % 8);
    if (engine->receive_queue == GFR_RQ_PER_CONN)
        out->inline_max = 256u << ((h >> 16) % 6);
}

/*
 * Multi-rail, after a QP's error on one rail that failover hid: the rail
 * joins again (its path's backoff, then a new connection), so that every
 * client connection has two rails once more, bounded by WAIT_MS; then a
 * second round of requests, which must be answered like the first.
 * Takes run->lock.
 */
static void
rejoin_round(struct run *run, struct gfr_rdma *client)
{
    unsigned rails = 0;

    for (unsigned ms = 0; ms < WAIT_MS; ms += 5) {
        rails = bundle_rails_established(client);
        if (rails >= 2 * run->nclients)
            break;
        usleep(5000);
    }
    pthread_mutex_lock(&run->lock);
    if (rails < 2 * run->nclients)
        problem(run, "%u of %u rails established %d ms after the QP error: the rail did "
                "not join again", rails, 2 * run->nclients, WAIT_MS);
    run->rejoined = rails >= 2 * run->nclients;
    pthread_mutex_unlock(&run->lock);
    if (!run->rejoined)
        return;
    for (unsigned k = run->nreqs; k < run->nreqs + REJOIN_REQS; k++)
        for (unsigned c = 0; c < run->nclients; c++)
            assert_int_equal(submit_request(run, c, k), 0);
    pthread_mutex_lock(&run->lock);
    run->nreqs += REJOIN_REQS;
    if (wait_for(run, all_settled) != 0)
        problem(run, "requests after the rejoin still open after %d ms", WAIT_MS);
    pthread_mutex_unlock(&run->lock);
}

/* One seed under one profile: 0, or 1 with the reason printed. */
static int
run_seed(enum model_profile profile, uint64_t seed, unsigned faults_seen[MODEL_NFAULTS])
{
    struct run *run = calloc(1, sizeof(*run));
    struct model_plan plan;
    struct gfr_rdma_opts opts, listener_opts, client_opts[MAX_CONNS], engine_wide;
    struct gfr_pool_opts pool_opts;
    struct gfr_pool *pool = NULL;
    struct gfr_rdma *server = NULL, *client = NULL;
    struct gfr_rdma_listener *listener = NULL;
    struct sockaddr_in srv_addr, cli_addr, listen_addr;
    char report[4096];
    unsigned findings;
    unsigned stalls_before;
    int faulted, rejoin, err;

    assert_non_null(run);
    snprintf(running, sizeof(running), "profile %s seed %llu\n", model_profile_name(profile),
             (unsigned long long)seed);
    alarm(WATCHDOG_S);
    pthread_mutex_init(&run->lock, NULL);
    pthread_cond_init(&run->cond, NULL);
    run->rng = seed * 0x2545f4914f6cdd1dULL + profile;
    run->nclients = 1 + (unsigned)(rnd(run) % MAX_CONNS);
    run->nreqs = 4 + (unsigned)(rnd(run) % (DRAWN_REQS - 4));
    /* A request and its reply take about two sends: the fault lands
     * anywhere in the traffic, now and then after it. */
    plan.fault = (enum model_fault)(rnd(run) % MODEL_NFAULTS);
    plan.at_post = 1 + (unsigned)(rnd(run) % (2 * run->nclients * run->nreqs + 8));
    plan.host = (unsigned)(rnd(run) % 2);

    gfr_rdma_opts_init(&opts);
    opts.receive_queue = rnd(run) % 2 ? GFR_RQ_SRQ : GFR_RQ_PER_CONN;
    opts.credits = rnd(run) % 2 ? 64 : 4 + (uint32_t)(rnd(run) % 12);
    opts.connect_timeout_ms = 5000;
    /* Half the seeds probe every 5 ms, so that probes (a zero-length WRITE,
     * on iWARP a READ of the byte the peer offered) meet the traffic and
     * the faults; drawn apart from the stream above, which stays as it was. */
    if ((seed * 0x9e3779b97f4a7c15ULL) >> 63)
        opts.keepalive_ms = 5;
    /* Three seeds in eight spread each connection over both rails (multi-
     * rail): the server listens on every address and offers both, and the
     * fault may hit either rail's devices; drawn apart from the stream. */
    if (mix(seed, 1) % 8 < 3) {
        assert_int_equal(gfr_rdma_opts_set(&opts, "rails", "auto", NULL, 0), 0);
        run->rails = 1;
        assert_int_equal(gfr_rdma_opts_set(&opts, "rail-addresses", "10.0.0.1,10.0.1.1",
                                           NULL, 0), 0);
        plan.host += 2 * (unsigned)(mix(seed, 2) % 2);
        /* The seeds without a fault stall one client device's QPs
         * instead, with a short rail timeout. */
        if (plan.fault == MODEL_FAULT_NONE) {
            run->stall = 1;
            run->stall_host = 1 + 2 * (unsigned)(mix(seed, 4) % 2);
            opts.rail_timeout_ms = 300;
        }
    }
    assert_int_equal(model_start(profile, seed, &plan, disconnect_one, run), 0);
    gfr_pool_opts_init(&pool_opts);
    pool_opts.name = "model";
    assert_int_equal(gfr_pool_create(&pool_opts, &pool), 0);
    assert_int_equal(gfr_rdma_create(&opts, pool, &server), 0);
    assert_int_equal(gfr_rdma_create(&opts, pool, &client), 0);
    model_addr(0, PORT, &srv_addr);
    model_addr(1, 0, &cli_addr);
    listen_addr = srv_addr;
    if (gfr_rdma_opts_rails(&opts) == GFR_RAILS_AUTO) /* rails join on the second address */
        listen_addr.sin_addr.s_addr = htonl(INADDR_ANY);
    conn_opts(&opts, seed, 0, &listener_opts);
    assert_int_equal(gfr_rdma_listen(server, (struct sockaddr *)&listen_addr, 16,
                                     &listener_opts, on_accept, run, &listener),
                     0);
    /* an engine-wide option of its own is refused, before anything starts */
    engine_wide = opts;
    engine_wide.pollers = 2;
    assert_int_equal(gfr_rdma_connect(client, (struct sockaddr *)&srv_addr,
                                      (struct sockaddr *)&cli_addr, &engine_wide, &ops,
                                      &run->clients[0], &run->clients[0].conn),
                     -EINVAL);
    pthread_mutex_lock(&run->lock);
    run->hook_open = 1;
    for (unsigned c = 0; c < run->nclients; c++)
        run->clients[c] = (struct side){.run = run};
    pthread_mutex_unlock(&run->lock);
    for (unsigned c = 0; c < run->nclients; c++) {
        conn_opts(&opts, seed, c + 1, &client_opts[c]);
        err = gfr_rdma_connect(client, (struct sockaddr *)&srv_addr,
                               (struct sockaddr *)&cli_addr, &client_opts[c], &ops,
                               &run->clients[c], &run->clients[c].conn);
        assert_int_equal(err, 0);
    }
    pthread_mutex_lock(&run->lock);
    if (wait_for(run, all_set_up) != 0)
        problem(run, "connections not set up within %d ms", WAIT_MS);
    pthread_mutex_unlock(&run->lock);
    if (gfr_rdma_opts_rails(&opts) == GFR_RAILS_AUTO)
        wait_for_rails(run, client);
    stalls_before = stall_ends_now();
    if (run->stall && run->railed)
        model_stall(run->stall_host);
    for (unsigned k = 0; k < run->nreqs; k++)
        for (unsigned c = 0; c < run->nclients; c++)
            if (run->clients[c].connected)
                assert_int_equal(submit_request(run, c, k), 0);
    pthread_mutex_lock(&run->lock);
    if (wait_for(run, all_settled) != 0)
        problem(run, "requests still open after %d ms", WAIT_MS);
    rejoin = model_faults_injected() && plan.fault == MODEL_FAULT_QP_ERROR &&
             failover_expected(run, plan.fault) && !run->nproblems;
    if (run->stall && run->railed && stall_ends_now() == stalls_before)
        problem(run, "model%u's QPs stalled, and rail-timeout-ms ended no rail",
                run->stall_host);
    stalls_checked += run->stall && run->railed;
    pthread_mutex_unlock(&run->lock);
    if (rejoin)
        rejoin_round(run, client);
    for (unsigned c = 0; c < run->nclients; c++)
        gfr_rdma_disconnect(run->clients[c].conn);
    pthread_mutex_lock(&run->lock);
    if (wait_for(run, all_ended) != 0)
        problem(run, "connections still up %d ms after the client disconnected", WAIT_MS);
    run->hook_open = 0;
    while (run->hook_busy)
        pthread_cond_wait(&run->cond, &run->lock);
    pthread_mutex_unlock(&run->lock);
    for (unsigned ms = 0; model_live_qps() && ms < WAIT_MS; ms += 10)
        usleep(10000);
    if (model_live_qps()) {
        pthread_mutex_lock(&run->lock);
        problem(run, "%u QP(s) still there %d ms after every connection reported its end "
                "(fault %s at work request %u)", model_live_qps(), WAIT_MS,
                model_fault_name(plan.fault), plan.at_post);
        stop_here(run, profile, seed);
    }
    for (unsigned c = 0; c < run->nclients; c++)
        gfr_rdma_conn_release(run->clients[c].conn);
    for (unsigned s = 0; s < run->nservers; s++)
        gfr_rdma_conn_release(run->servers[s].conn);
    gfr_rdma_listener_close(listener);
    gfr_rdma_destroy(client);
    gfr_rdma_destroy(server);
    gfr_pool_destroy(pool, GFR_POOL_DRAIN_RUN);
    faulted = model_faults_injected() > 0;
    duplicates_given += model_duplicates();
    findings = model_stop(report, sizeof(report));
    pthread_mutex_lock(&run->lock);
    check_outcome(run, faulted ? plan.fault : MODEL_FAULT_NONE);
    failovers_checked += faulted && failover_expected(run, plan.fault);
    rejoins_checked += run->rejoined;
    pthread_mutex_unlock(&run->lock);
    if (faulted)
        faults_seen[plan.fault]++;
    else
        faults_seen[MODEL_FAULT_NONE]++;
    if (findings || run->nproblems || getenv("GFR_MODEL_VERBOSE")) {
        print_message("model %s seed %llu: fault %s at work request %u on device %u (%s); "
                      "%u client connection(s)%s, %u requests each, receive-queue=%s, "
                      "the listener's credits=%u rdma-depth=%u inline-max=%u\n",
                      model_profile_name(profile), (unsigned long long)seed,
                      model_fault_name(plan.fault), plan.at_post, plan.host,
                      faulted ? "injected" : "not reached", run->nclients,
                      gfr_rdma_opts_rails(&opts) == GFR_RAILS_AUTO ? " over two rails" : "", run->nreqs,
                      opts.receive_queue == GFR_RQ_SRQ ? "srq" : "per-connection",
                      listener_opts.credits, listener_opts.rdma_depth, listener_opts.inline_max);
        if (run->nproblems)
            print_message("invariants broken (%u):\n%s", run->nproblems, run->problems);
        if (findings)
            print_message("model findings (%u):\n%s", findings, report);
        print_logs();
    }
    alarm(0);
    err = findings || run->nproblems;
    free_requests(run);
    pthread_mutex_destroy(&run->lock);
    pthread_cond_destroy(&run->cond);
    free(run);
    memset(logs.lines, 0, sizeof(logs.lines));
    return err;
}

static unsigned
env_uint(const char *name, unsigned fallback)
{
    const char *v = getenv(name);

    return v && *v ? (unsigned)strtoul(v, NULL, 10) : fallback;
}

static void
run_profile(enum model_profile profile)
{
    const char *only = getenv("GFR_MODEL_PROFILE");
    const char *one = getenv("GFR_MODEL_SEED");
    unsigned seeds = env_uint("GFR_MODEL_SEEDS", DEFAULT_SEEDS);
    unsigned faults[MODEL_NFAULTS] = {0};
    unsigned failed = 0, ran = 0;

    if (only && *only && strcmp(only, model_profile_name(profile)) != 0)
        skip();
    duplicates_given = 0;
    failovers_checked = 0;
    rejoins_checked = 0;
    stalls_checked = 0;
    for (unsigned i = 0; i < seeds; i++) {
        uint64_t seed = one && *one ? strtoull(one, NULL, 10) : i + 1;

        failed += (unsigned)run_seed(profile, seed, faults);
        ran++;
        if (one && *one)
            break;
    }
    print_message("model %s: %u seed(s), %u failed; faults injected: none (or not reached) %u, qp-error %u, "
                  "port-down %u, device-removal %u, peer-disconnect %u; duplicate completions %u; "
                  "faults on one rail that failover had to hide %u, rails that joined again "
                  "after one %u; silent stalls of one rail %u\n",
                  model_profile_name(profile), ran, failed, faults[MODEL_FAULT_NONE],
                  faults[MODEL_FAULT_QP_ERROR], faults[MODEL_FAULT_PORT_DOWN],
                  faults[MODEL_FAULT_DEVICE_REMOVAL], faults[MODEL_FAULT_PEER_DISCONNECT],
                  duplicates_given, failovers_checked, rejoins_checked, stalls_checked);
    assert_int_equal(failed, 0);
}

static void
test_rxe_profile(void **state)
{
    (void)state;
    run_profile(MODEL_RXE);
}

static void
test_mlx5_profile(void **state)
{
    (void)state;
    run_profile(MODEL_MLX5);
}

static void
test_iwarp_profile(void **state)
{
    (void)state;
    run_profile(MODEL_IWARP);
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_rxe_profile),
        cmocka_unit_test(test_mlx5_profile),
        cmocka_unit_test(test_iwarp_profile),
    };

    gfr_rdma_set_log(log_line, NULL);
    signal(SIGALRM, watchdog);
    return cmocka_run_group_tests(tests, NULL, NULL);
}
