/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * engine-test: drives lib/'s RDMA engine over soft-RoCE.
 *
 *   engine-test server ADDR PORT [-c CONNS] [-t SECONDS] [-o key=value]...
 *       accepts CONNS connections (default 1), echoes every message back
 *       with its bytes inverted, exits 0 once all have disconnected in order,
 *       within SECONDS (default 60: a client that runs longer needs more).
 *       With -c 0 it serves any number of connections until SIGTERM, then
 *       prints how they ended (orderly, protocol violation, I/O error,
 *       other) and exits 0 when each ended exactly once, none is left and
 *       the process holds no QP (hostile peers: t-engine-hostile.sh)
 *   engine-test client ADDR PORT BINDADDR [-c CONNS] [-n COUNT | -t SECONDS]
 *                      [-S STOPFILE] [-b BURST] [-s MAXSIZE] [-o key=value]...
 *       opens CONNS connections at once; on each, sends COUNT messages (or
 *       as many as SECONDS allow: the soak, t-engine-soak.sh; or until
 *       STOPFILE exists, looked for between bursts: t-engine-rejoin.sh) of
 *       pseudo-random sizes (1 byte to the inline maximum, or to MAXSIZE,
 *       log-uniform, so large bodies travel as read lists) in bursts of
 *       BURST without waiting, checks every echo byte by byte, disconnects;
 *       exits 0 when all were verified, 2 when a connection could not be
 *       established, 3 when the peer went away and every connection
 *       reported it exactly once
 *   -r (client and server): request/reply instead of echo.  Each request
 *       offers a reply buffer of a random size up to MAXSIZE and asks for
 *       a reply body of another; the server replies with gfr_rdma_submit,
 *       so a reply that fits the offered buffer is RDMA-written into it and
 *       a larger one is pulled; the client checks every byte wherever it
 *       landed
 *   engine-test cycles ADDR PORT BINDADDR -c ROUNDS
 *       connects, exchanges 4 messages and disconnects ROUNDS times, one
 *       connection at a time (the server runs with -c ROUNDS); then prints
 *       the QPs and MRs this process still holds (rdma resource show):
 *       no QP, and no more MRs than after the first round
 *
 * Options (-o) are the engine's (lib/pure/gfr_rdma_opts.h), e.g. -o credits=4
 * or -o dispatch=inline (the default hands messages to a gfr_pool).
 * Every wait is bounded; a failure says what failed and exits 1.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <netdb.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "gfr_addr.h"
#include "gfr_clock.h"
#include "gfr_rdma.h"

#define WAIT_MS 60000

/* One connection's view, the cb_arg of its callbacks. */
struct peer {
    struct gfr_rdma_conn *conn;
    char addr[INET6_ADDRSTRLEN + 8]; /* server: where it came from */
    unsigned long received;
    unsigned long bad;
    int connected;
    int disconnected;
    int reason;
};

static struct {
    pthread_mutex_t lock;
    pthread_cond_t cond;
    int is_server;
    int request_reply;
    unsigned accepted;
    unsigned disconnected;
    struct peer peers[4096];
} st = {
    .lock = PTHREAD_MUTEX_INITIALIZER,
    .cond = PTHREAD_COND_INITIALIZER,
};

static uint8_t
pattern(uint32_t seq, size_t i)
{
    return (uint8_t)(seq * 131u + i * 7u + 1u);
}

static void
on_connected(struct gfr_rdma_conn *conn, void *cb_arg)
{
    struct peer *peer = cb_arg;

    pthread_mutex_lock(&st.lock);
    peer->connected = 1;
    pthread_cond_broadcast(&st.cond);
    pthread_mutex_unlock(&st.lock);
}

/* Byte i of a received body (head, then bulk). */
static uint8_t
body_byte(const struct gfr_rdma_rx *rx, size_t i)
{
    return i < rx->head_len ? ((const uint8_t *)rx->head)[i]
                            : ((const uint8_t *)rx->bulk)[i - rx->head_len];
}

/* Fills a message body: bytes 0..3 carry seq when there is room, and a
 * body shorter than 4 bytes uses its length as seq. */
static void
fill_body(uint8_t *buf, size_t len, uint32_t seq)
{
    if (len >= 4)
        memcpy(buf, &seq, 4);
    else
        seq = (uint32_t)len;
    for (size_t i = len >= 4 ? 4 : 0; i < len; i++)
        buf[i] = pattern(seq, i);
}

/* Checks an echoed (inverted) body. */
static int
echo_ok(const struct gfr_rdma_rx *rx)
{
    size_t len = rx->head_len + rx->bulk_len;
    uint32_t seq = (uint32_t)len;
    size_t i = 0;

    if (len >= 4) {
        uint8_t b[4];

        for (; i < 4; i++)
            b[i] = (uint8_t)(body_byte(rx, i) ^ 0xffu);
        memcpy(&seq, b, 4);
    }
    for (; i < len; i++) {
        uint8_t got = (uint8_t)(body_byte(rx, i) ^ 0xffu);

        if (got != pattern(seq, i))
            return 0;
    }
    return 1;
}

/* Request/reply mode: a request's head. */
struct rr_request {
    uint32_t seq;
    uint32_t reply_len; /* body bytes the reply's bulk must carry */
};

/* One outstanding request of the client: its offered reply buffer. */
struct rr_slot {
    uint8_t *reply_buf;
    size_t reply_cap;
    uint32_t reply_len;
    struct rr_request req;
    struct iovec head;
    struct iovec reply;
};

static void
free_after_send(void *cb_arg, int status)
{
    (void)status;
    free(cb_arg);
}

/* Server: answers a request with reply_len bytes of pattern(seq). */
static void
serve_request(struct gfr_rdma_conn *conn, const struct gfr_rdma_rx *rx)
{
    struct rr_request req;
    struct gfr_rdma_msg msg = {.xid = rx->xid, .is_reply = 1};
    struct iovec iov[2];
    uint8_t *body;
    int err;

    if (rx->head_len < sizeof(req)) {
        fprintf(stderr, "engine-test: server: short request\n");
        return;
    }
    memcpy(&req, rx->head, sizeof(req));
    body = malloc(sizeof(req) + req.reply_len);
    if (!body)
        abort();
    memcpy(body, &req, sizeof(req));
    for (size_t i = 0; i < req.reply_len; i++)
        body[sizeof(req) + i] = pattern(req.seq, i);
    iov[0] = (struct iovec){body, sizeof(req)};
    iov[1] = (struct iovec){body + sizeof(req), req.reply_len};
    msg.head = &iov[0];
    msg.head_cnt = 1;
    msg.bulk = &iov[1];
    msg.bulk_cnt = 1;
    msg.done = free_after_send;
    msg.cb_arg = body;
    err = gfr_rdma_submit(conn, &msg);
    if (err) {
        free(body);
        fprintf(stderr, "engine-test: server: reply failed: %s\n", strerror(-err));
    }
}

/* Client: a reply's data is in the offered buffer (written) or follows the
 * echoed request head in the body. */
static int
reply_ok(const struct gfr_rdma_rx *rx, const struct rr_slot *slot)
{
    size_t body = rx->head_len + rx->bulk_len;

    if (body < sizeof(struct rr_request))
        return 0;
    if (rx->written) {
        if (rx->written != slot->reply_len || body != sizeof(struct rr_request))
            return 0;
        for (size_t i = 0; i < rx->written; i++)
            if (slot->reply_buf[i] != pattern(slot->req.seq, i))
                return 0;
        return 1;
    }
    if (body - sizeof(struct rr_request) != slot->reply_len)
        return 0;
    for (size_t i = 0; i < slot->reply_len; i++)
        if (body_byte(rx, sizeof(struct rr_request) + i) != pattern(slot->req.seq, i))
            return 0;
    return 1;
}

static struct rr_slot *rr_slots; /* client, request/reply: by xid */
/* client -S: sending stops, between bursts, once this file exists */
static const char *stop_file;

static int probe_qps; /* cycles: count our QPs once connected */
static int in_cycles; /* cycles: say less */
static int qps_seen;

static void
on_received(struct gfr_rdma_conn *conn, const struct gfr_rdma_rx *rx, void *cb_arg)
{
    struct peer *peer = cb_arg;
    int ok = 1;

    if (st.is_server && st.request_reply) {
        serve_request(conn, rx);
    } else if (st.is_server) {
        size_t len = rx->head_len + rx->bulk_len;
        uint8_t *echo = malloc(len ? len : 1);
        int err;

        if (!echo)
            abort();
        for (size_t i = 0; i < len; i++)
            echo[i] = (uint8_t)(body_byte(rx, i) ^ 0xffu);
        err = gfr_rdma_send(conn, echo, len);
        free(echo);
        if (err)
            fprintf(stderr, "engine-test: server: echo of %zu bytes failed: %s\n", len,
                    strerror(-err));
    } else if (st.request_reply) {
        ok = rx->is_reply && reply_ok(rx, &rr_slots[rx->xid]);
    } else {
        ok = echo_ok(rx);
    }
    pthread_mutex_lock(&st.lock);
    if (!ok)
        peer->bad++;
    peer->received++;
    pthread_cond_broadcast(&st.cond);
    pthread_mutex_unlock(&st.lock);
}

static void
on_disconnected(struct gfr_rdma_conn *conn, int reason, void *cb_arg)
{
    struct peer *peer = cb_arg;

    pthread_mutex_lock(&st.lock);
    peer->disconnected++;
    peer->reason = reason;
    st.disconnected++;
    pthread_cond_broadcast(&st.cond);
    pthread_mutex_unlock(&st.lock);
    /* The server is done with the handle here; the client keeps its
     * handles until it has read their statistics. */
    if (st.is_server)
        gfr_rdma_conn_release(conn);
}

static const struct gfr_rdma_conn_ops ops = {
    .connected = on_connected,
    .received = on_received,
    .disconnected = on_disconnected,
};

/* "host port" of an address the engine reports, or "?". */
static void
describe_addr(const struct sockaddr *sa, char *buf, size_t len)
{
    char host[INET6_ADDRSTRLEN];
    unsigned port;

    gfr_addr_host_port(sa, host, &port);
    snprintf(buf, len, "%s port %u", host, port);
}

static void
describe(struct gfr_rdma_conn *conn,
         int (*get)(struct gfr_rdma_conn *, struct sockaddr *, socklen_t *), char *buf,
         size_t len)
{
    struct sockaddr_storage ss;
    socklen_t sl = sizeof(ss);

    if (get(conn, (struct sockaddr *)&ss, &sl) == 0)
        describe_addr((struct sockaddr *)&ss, buf, len);
    else
        snprintf(buf, len, "?");
}

static int
accept_one(struct gfr_rdma_listener *l, struct gfr_rdma_conn *conn, void *cb_arg,
           const struct gfr_rdma_conn_ops **conn_ops, void **conn_cb_arg)
{
    struct peer *peer;

    pthread_mutex_lock(&st.lock);
    if (st.accepted >= sizeof(st.peers) / sizeof(st.peers[0])) {
        pthread_mutex_unlock(&st.lock);
        return -ENOSPC;
    }
    peer = &st.peers[st.accepted++];
    peer->conn = conn;
    describe(conn, gfr_rdma_conn_peer_addr, peer->addr, sizeof(peer->addr));
    pthread_mutex_unlock(&st.lock);
    *conn_ops = &ops;
    *conn_cb_arg = peer;
    return 0;
}

/* Waits until cond holds (st.lock held), at most ms; 0, or -ETIMEDOUT. */
#define WAIT_FOR_MS(pred, ms)                                               \
    ({                                                                      \
        struct timespec deadline_;                                          \
        int rc_ = 0;                                                        \
        clock_gettime(CLOCK_REALTIME, &deadline_);                          \
        deadline_.tv_sec += (ms) / 1000;                                    \
        while (!(pred) && rc_ == 0)                                         \
            rc_ = pthread_cond_timedwait(&st.cond, &st.lock, &deadline_);   \
        (pred) ? 0 : -ETIMEDOUT;                                            \
    })
#define WAIT_FOR(pred) WAIT_FOR_MS(pred, WAIT_MS)

static int
die(const char *what)
{
    fprintf(stderr, "engine-test: %s\n", what);
    return 1;
}

static int own_resources(const char *type);
static int settled_qps(void);

static void print_stuck(struct gfr_rdma *engine, const char *who);

/* Connections whose end has not been reported yet.  st.lock held. */
static unsigned
unended_locked(void)
{
    unsigned n = 0;

    for (unsigned i = 0; i < st.accepted; i++)
        n += st.peers[i].disconnected == 0;
    return n;
}

/* -c 0: waits for SIGTERM or SIGINT (blocked in every thread since main
 * started), sent once every client has gone.  A connection's end can be
 * reported up to connect-timeout-ms after its peer left: on siw, what
 * the provider never completes or the CM never reports after a close is
 * settled by the engine at that deadline (docs/providers.md).  So this
 * waits, up to WAIT_MS, for every connection to end, then reports how
 * each ended and names each one whose end never came, with what the
 * engine still holds. */
static int
serve_until_stopped(struct gfr_rdma *engine)
{
    sigset_t stop;
    int sig;
    unsigned ended[4] = {0}; /* orderly, -EPROTO, -EIO, other */
    unsigned open_at_stop, open = 0, twice = 0;
    unsigned long echoed = 0;
    uint64_t stopped_ns, waited_ms;
    int qps;

    sigemptyset(&stop);
    sigaddset(&stop, SIGTERM);
    sigaddset(&stop, SIGINT);
    sigwait(&stop, &sig);
    stopped_ns = gfr_now_ns();
    pthread_mutex_lock(&st.lock);
    open_at_stop = unended_locked();
    (void)WAIT_FOR(unended_locked() == 0);
    waited_ms = (gfr_now_ns() - stopped_ns) / 1000000;
    for (unsigned i = 0; i < st.accepted; i++) {
        const struct peer *p = &st.peers[i];

        echoed += p->received;
        if (p->disconnected == 0) {
            open++;
            fprintf(stderr, "engine-test: server: connection %u (from %s, %s, %lu messages "
                            "received) never reported its end\n", i, p->addr,
                    p->connected ? "connected" : "never connected", p->received);
        } else if (p->disconnected > 1)
            twice++;
        else
            ended[p->reason == 0 ? 0 : p->reason == -EPROTO ? 1 : p->reason == -EIO ? 2 : 3]++;
    }
    pthread_mutex_unlock(&st.lock);
    if (open)
        print_stuck(engine, "server");
    qps = settled_qps();
    printf("engine-test: server: stopped after %u connections, echoed %lu messages; "
           "ended: %u orderly, %u protocol violations, %u I/O errors, %u other; "
           "%u still open, %u reported twice (%u were open at the stop signal, "
           "waited %" PRIu64 " ms); this process holds %d QPs (rdma resource show)\n",
           st.accepted, echoed, ended[0], ended[1], ended[2], ended[3], open, twice,
           open_at_stop, waited_ms, qps);
    return open == 0 && twice == 0 && qps == 0 ? 0 : 1;
}

/* After a wait that timed out: the engine's connections that are still
 * there, and what each still waits for. */
static void
print_stuck(struct gfr_rdma *engine, const char *who)
{
    struct gfr_rdma_snapshot *snap;

    if (gfr_rdma_snapshot(engine, &snap) != 0)
        return;
    for (unsigned i = 0; i < snap->nconns; i++) {
        const struct gfr_rdma_conn_info *c = &snap->conns[i];

        fprintf(stderr, "engine-test: %s: still there: connection with %s (rail %u of bundle "
                        "%u, on %s), %s, reason %d, %u READ/WRITE in flight, %u on the send "
                        "queue, %u offers, %u queued, credits %u/%u/%u, %lu sent, %lu received; "
                        "last error: %s\n", who, c->peer, c->rail, c->bundle, c->device,
                c->state, c->reason, c->rdma_inflight, c->send_queue, c->offers, c->queued,
                c->credits_ours, c->credits_theirs, c->credits_window, c->stats.sent,
                c->stats.received, c->last_error[0] ? c->last_error : "none");
    }
    gfr_rdma_snapshot_free(snap);
}

static int
run_server(struct gfr_rdma *engine, const char *addr, const char *port,
           unsigned conns, unsigned seconds)
{
    struct sockaddr_storage ss;
    struct sockaddr_storage bound;
    socklen_t bound_len;
    char where[INET6_ADDRSTRLEN + 16];
    struct gfr_rdma_listener *listener;
    unsigned long echoed = 0;
    int bad_reasons = 0, resets = 0;
    int err;

    st.is_server = 1;
    if (gfr_addr_parse_numeric(addr, port, &ss))
        return die("server: bad address");
    err = gfr_rdma_listen(engine, (struct sockaddr *)&ss, 128, NULL, accept_one, NULL, &listener);
    if (err) {
        fprintf(stderr, "engine-test: server: listen failed: %s\n", strerror(-err));
        return 1;
    }
    bound_len = sizeof(bound);
    if (gfr_rdma_listener_addr(listener, (struct sockaddr *)&bound, &bound_len) != 0)
        return die("server: the listener has no address");
    describe_addr((struct sockaddr *)&bound, where, sizeof(where));
    /* The bound port, also when PORT was 0. */
    printf("engine-test: server: listening on %s\n", where);
    fflush(stdout);
    if (conns == 0)
        return serve_until_stopped(engine);
    pthread_mutex_lock(&st.lock);
    err = WAIT_FOR_MS(st.disconnected >= conns, seconds ? seconds * 1000ull : WAIT_MS);
    /* A client's close may cut off a SEND of ours: RoCE flushes it (an
     * orderly end), iWARP's TCP stream breaks under it (-ECONNRESET, siw
     * even for a SEND it had handed to TCP); either way the client went
     * away as it meant to. */
    for (unsigned i = 0; i < st.accepted; i++) {
        echoed += st.peers[i].received;
        if (st.peers[i].reason == -ECONNRESET && st.peers[i].disconnected == 1)
            resets++;
        else if (st.peers[i].reason != 0 || st.peers[i].disconnected != 1)
            bad_reasons++;
    }
    pthread_mutex_unlock(&st.lock);
    if (err) {
        print_stuck(engine, "server");
        return die("server: the clients did not come and go within the time limit");
    }
    printf("engine-test: server: %u connections (the first from %s), echoed %lu "
           "messages, %d ended badly, %d reset by the client's close\n", st.accepted,
           st.accepted ? st.peers[0].addr : "-", echoed, bad_reasons, resets);
    return bad_reasons == 0 ? 0 : 1;
}

/* A size from 1 to max, log-uniform: every order of magnitude is as
 * likely, so both tiny and multi-megabyte bodies occur. */
static size_t
random_size(size_t max)
{
    unsigned bits = 0;
    size_t top;

    while (((size_t)1 << (bits + 1)) <= max)
        bits++;
    top = (size_t)1 << ((unsigned)rand() % (bits + 1));
    top = top + (size_t)rand() % top;
    return top > max ? max : top;
}

static void
request_done(void *cb_arg, int status)
{
    struct rr_slot *slot = cb_arg;

    if (status)
        fprintf(stderr, "engine-test: client: request %u ended with %s\n", slot->req.seq,
                strerror(-status));
    free(slot->reply_buf);
    slot->reply_buf = NULL;
}

/* Request/reply mode: request k offers a reply buffer and asks for a reply
 * body that fits it three times in four. */
static int
send_request(struct peer *peer, size_t max, unsigned long k)
{
    struct rr_slot *slot = &rr_slots[k];
    struct gfr_rdma_msg msg = {.xid = (uint32_t)k};
    size_t cap = random_size(max);

    slot->reply_len = (uint32_t)(rand() % 4 ? 1 + (size_t)rand() % cap : random_size(max));
    slot->reply_cap = cap;
    slot->reply_buf = malloc(cap);
    if (!slot->reply_buf)
        return -ENOMEM;
    memset(slot->reply_buf, 0, cap);
    slot->req = (struct rr_request){.seq = (uint32_t)k, .reply_len = slot->reply_len};
    slot->head = (struct iovec){&slot->req, sizeof(slot->req)};
    slot->reply = (struct iovec){slot->reply_buf, cap};
    msg.head = &slot->head;
    msg.head_cnt = 1;
    msg.reply = &slot->reply;
    msg.reply_cnt = 1;
    msg.done = request_done;
    msg.cb_arg = slot;
    return gfr_rdma_submit(peer->conn, &msg);
}

static int
send_burst(struct peer *peer, uint8_t *buf, size_t max, unsigned long first,
           unsigned long n)
{
    for (unsigned long k = first; k < first + n; k++) {
        size_t len = random_size(max);
        int err;

        if (st.request_reply) {
            err = send_request(peer, max, k);
        } else {
            fill_body(buf, len, (uint32_t)k);
            err = gfr_rdma_send(peer->conn, buf, len);
        }
        if (err) {
            fprintf(stderr, "engine-test: client: send %lu failed: %s\n", k,
                    strerror(-err));
            return err;
        }
    }
    return 0;
}

/* The rails of each bundle (transport.rdma.rails), one line each: the
 * split t-engine-rails.sh checks against the veth counters; then the
 * device ports rails names, as gfr-stat shows them. */
static void
print_rails(struct gfr_rdma *engine, const char *side)
{
    struct gfr_rdma_snapshot *snap;

    if (gfr_rdma_snapshot(engine, &snap) != 0)
        return;
    for (unsigned i = 0; i < snap->nconns; i++) {
        const struct gfr_rdma_conn_info *c = &snap->conns[i];

        if (!c->bundle)
            continue;
        printf("engine-test: %s: bundle %u rail %u on %s to %s: %lu sent, %lu received, "
               "%lu bytes sent, %lu bytes received, %lu pushed, %lu pulled\n",
               side, c->bundle, c->rail, c->device, c->peer, c->stats.sent,
               c->stats.received, c->stats.bytes_sent, c->stats.bytes_received,
               c->stats.bulk_pushed, c->stats.bulk_pulled);
    }
    for (unsigned i = 0; i < snap->nrail_ports; i++) {
        const struct gfr_rdma_rail_port_info *r = &snap->rail_ports[i];

        if (r->up)
            printf("engine-test: %s: rail port %s:%u up, %s, %s\n", side, r->device, r->port,
                   r->netdev, r->address);
        else
            printf("engine-test: %s: rail port %s:%u down: %s\n", side, r->device, r->port,
                   r->why);
    }
    gfr_rdma_snapshot_free(snap);
}

static int
run_client(struct gfr_rdma *engine, const char *addr, const char *port,
           const char *bind_addr, unsigned conns, unsigned long count,
           unsigned seconds, unsigned burst, size_t max_size)
{
    time_t until = 0;
    struct sockaddr_storage dst;
    struct sockaddr_storage src;
    struct gfr_rdma_conn_stats stats;
    unsigned long queued = 0, updates = 0, received = 0, bad = 0;
    unsigned long bulk_pulled = 0, bulk_offered = 0, registrations = 0;
    unsigned long registration_ns = 0, keepalives = 0;
    uint8_t *buf;
    size_t max;
    unsigned long sent = 0;
    int err = 0;

    if (gfr_addr_parse_numeric(addr, port, &dst) ||
        gfr_addr_parse_numeric(bind_addr, "0", &src))
        return die("client: bad address");
    for (unsigned c = 0; c < conns; c++) {
        err = gfr_rdma_connect(engine, (struct sockaddr *)&dst, (struct sockaddr *)&src, NULL,
                               &ops, &st.peers[c], &st.peers[c].conn);
        if (err)
            return die("client: connect failed");
    }
    for (unsigned c = 0; c < conns; c++) {
        struct peer *peer = &st.peers[c];

        pthread_mutex_lock(&st.lock);
        err = WAIT_FOR(peer->connected || peer->disconnected);
        pthread_mutex_unlock(&st.lock);
        if (err || !peer->connected) {
            fprintf(stderr, "engine-test: client: connection %u not established "
                            "(reason %d: %s)\n", c, peer->reason, strerror(-peer->reason));
            return 2;
        }
    }
    if (probe_qps)
        qps_seen = own_resources("qp");
    if (!in_cycles) {
        char from[INET6_ADDRSTRLEN + 8];
        char to[INET6_ADDRSTRLEN + 8];

        describe(st.peers[0].conn, gfr_rdma_conn_local_addr, from, sizeof(from));
        describe(st.peers[0].conn, gfr_rdma_conn_peer_addr, to, sizeof(to));
        printf("engine-test: client: connected from %s to %s\n", from, to);
        fflush(stdout); /* t-engine-soak.sh waits for this line */
    }
    max = max_size ? max_size : gfr_rdma_max_inline(st.peers[0].conn);
    if (max > gfr_rdma_max_msg(st.peers[0].conn) -
                  (st.request_reply ? sizeof(struct rr_request) : 0))
        return die("client: -s is larger than the negotiated max-msg");
    if (st.request_reply &&
        (conns != 1 || seconds || !(rr_slots = calloc(count, sizeof(*rr_slots)))))
        return die("client: -r takes one connection, a count (not -t) and memory");
    buf = malloc(max);
    if (!buf)
        return die("client: out of memory");
    srand(7);
    if (seconds) {
        count = ULONG_MAX;
        until = time(NULL) + (time_t)seconds; /* from the first message */
    }
    while (sent < count && !err && (!until || time(NULL) < until) &&
           !(stop_file && access(stop_file, F_OK) == 0)) {
        unsigned long n = count - sent < burst ? count - sent : burst;

        for (unsigned c = 0; c < conns && !err; c++)
            err = send_burst(&st.peers[c], buf, max, sent, n);
        sent += n;
        for (unsigned c = 0; c < conns && !err; c++) {
            struct peer *peer = &st.peers[c];

            pthread_mutex_lock(&st.lock);
            err = WAIT_FOR(peer->received >= sent || peer->disconnected);
            if (!err && peer->disconnected)
                err = -ECONNRESET;
            pthread_mutex_unlock(&st.lock);
        }
    }
    free(buf);
    if (err) {
        int once = 1;

        /* The peer went away mid-stream: every connection must report it
         * exactly once, within the time limit. */
        print_stuck(engine, "client");
        pthread_mutex_lock(&st.lock);
        err = WAIT_FOR(st.disconnected >= conns);
        for (unsigned c = 0; c < conns; c++) {
            if (st.peers[c].disconnected != 1)
                once = 0;
            fprintf(stderr, "engine-test: client: connection %u disconnected %d time(s), "
                            "reason %d, after %lu echoes (%lu bad)\n", c,
                    st.peers[c].disconnected, st.peers[c].reason, st.peers[c].received,
                    st.peers[c].bad);
        }
        pthread_mutex_unlock(&st.lock);
        fprintf(stderr, "engine-test: client: echoes stopped coming\n");
        return !err && once ? 3 : 1;
    }
    print_rails(engine, "client");
    for (unsigned c = 0; c < conns; c++) {
        gfr_rdma_conn_stats(st.peers[c].conn, &stats);
        queued += stats.queued_for_credits;
        updates += stats.credit_updates;
        bulk_pulled += stats.bulk_pulled;
        bulk_offered += stats.bulk_offered;
        registrations += stats.registrations;
        registration_ns += stats.registration_ns;
        keepalives += stats.keepalives;
        gfr_rdma_disconnect(st.peers[c].conn);
    }
    pthread_mutex_lock(&st.lock);
    err = WAIT_FOR(st.disconnected >= conns);
    for (unsigned c = 0; c < conns; c++) {
        received += st.peers[c].received;
        bad += st.peers[c].bad;
        if (st.peers[c].reason != 0 || st.peers[c].disconnected != 1)
            bad++;
    }
    pthread_mutex_unlock(&st.lock);
    if (err) {
        print_stuck(engine, "client");
        return die("client: the disconnects did not complete");
    }
    for (unsigned c = 0; c < conns; c++)
        gfr_rdma_conn_release(st.peers[c].conn);
    printf("engine-test: client: %u connections, %lu %s of 1..%zu bytes verified "
           "both ways, %lu bad; %lu sends waited for credits, %lu credit updates; "
           "bulk: %lu bytes pulled, %lu offered as read lists, %lu registrations "
           "(%.1f us each); %lu liveness probes answered\n",
           conns, received, st.request_reply ? "requests with replies" : "messages", max,
           bad, queued, updates, bulk_pulled, bulk_offered, registrations,
           registrations ? registration_ns / 1e3 / registrations : 0.0, keepalives);
    free(rr_slots);
    rr_slots = NULL;
    return bad == 0 && received == sent * conns ? 0 : 1;
}

/* Is tid a thread of this process? */
static int
own_thread(int tid)
{
    char path[64];

    snprintf(path, sizeof(path), "/proc/self/task/%d", tid);
    return access(path, F_OK) == 0;
}

/*
 * Lines of `rdma resource show TYPE` that belong to this process.  The
 * kernel tags a resource with the thread that created it (here the
 * engine's CM thread), so any of our threads counts.
 */
static int
own_resources(const char *type)
{
    char cmd[128];
    char line[512];
    FILE *f;
    int n = 0;

    snprintf(cmd, sizeof(cmd), "rdma resource show %s 2>/dev/null", type);
    f = popen(cmd, "r");
    if (!f)
        return -1;
    while (fgets(line, sizeof(line), f)) {
        const char *pid = strstr(line, " pid ");

        if (pid && own_thread(atoi(pid + 5)))
            n++;
    }
    pclose(f);
    return n;
}

/*
 * Our QPs once the connections told disconnected have given them back:
 * that happens on the engine's CM thread after the owner is told, and a
 * QP on the shared receive queue first waits for its last receives (up to
 * 100 ms where the provider does not report them, docs/engine.md).  Waits
 * up to 5 s for none to be left; the count then.
 */
static int
settled_qps(void)
{
    int qps = own_resources("qp");

    for (int i = 0; i < 50 && qps != 0; i++) {
        usleep(100000);
        qps = own_resources("qp");
    }
    return qps;
}

/*
 * ROUNDS connect/exchange/disconnect cycles.  The QPs seen while the first
 * connection is up prove the count can see ours; at the end no QP may be
 * left, and no MR beyond those the device kept after the first round (the
 * shared receive queue's buffers, which live as long as the engine).
 */
static int
run_cycles(struct gfr_rdma *engine, const char *addr, const char *port,
           const char *bind_addr, unsigned rounds)
{
    int mrs_base = -1;
    int qps;
    int mrs;

    in_cycles = 1;
    for (unsigned r = 0; r < rounds; r++) {
        memset(&st.peers[0], 0, sizeof(st.peers[0]));
        st.disconnected = 0;
        probe_qps = r == 0;
        if (run_client(engine, addr, port, bind_addr, 1, 4, 0, 2, 0) != 0) {
            fprintf(stderr, "engine-test: cycles: round %u failed\n", r);
            return 1;
        }
        if (r == 0) {
            settled_qps(); /* the first connection's own MRs go with its QP */
            mrs_base = own_resources("mr");
        }
    }
    qps = settled_qps();
    mrs = own_resources("mr");
    printf("engine-test: cycles: %u connect/disconnect cycles; %d QPs seen while "
           "connected; this process now holds %d QPs and %d MRs (%d after the first "
           "round) (rdma resource show)\n", rounds, qps_seen, qps, mrs, mrs_base);
    if (qps < 0 || mrs < 0 || mrs_base < 0)
        return die("cycles: cannot read rdma resource show");
    if (qps_seen < 1)
        return die("cycles: no QP of ours was visible while connected: the count is blind");
    return qps == 0 && mrs == mrs_base ? 0 : 1;
}

int
main(int argc, char **argv)
{
    struct gfr_rdma_opts opts;
    struct gfr_pool_opts pool_opts;
    struct gfr_pool *pool;
    struct gfr_rdma *engine;
    unsigned long count = 1000;
    unsigned seconds = 0;
    unsigned burst = 1;
    unsigned conns = 1;
    size_t max_size = 0;
    int opt;
    int rc;

    gfr_rdma_opts_init(&opts);
    while ((opt = getopt(argc, argv, "c:n:t:b:s:rS:o:")) != -1) {
        char why[160];
        char *eq;

        switch (opt) {
        case 'n': count = strtoul(optarg, NULL, 10); break;
        case 't': seconds = (unsigned)strtoul(optarg, NULL, 10); break;
        case 'c': conns = (unsigned)strtoul(optarg, NULL, 10); break;
        case 'b': burst = (unsigned)strtoul(optarg, NULL, 10); break;
        case 's': max_size = strtoul(optarg, NULL, 0); break;
        case 'r': st.request_reply = 1; break;
        case 'S': stop_file = optarg; break;
        case 'o':
            eq = strchr(optarg, '=');
            if (!eq)
                return die("-o takes key=value");
            *eq = 0;
            if (gfr_rdma_opts_set(&opts, optarg, eq + 1, why, sizeof(why)) != 0) {
                fprintf(stderr, "engine-test: %s\n", why);
                return 2;
            }
            break;
        default:
            return die("usage: engine-test server ADDR PORT | client|cycles ADDR PORT "
                       "BIND [-c CONNS] [-n N | -t SECONDS] [-S STOP-FILE] [-b B] [-s MAX] "
                       "[-r] [-o k=v]");
        }
    }
    if (argc - optind < 3 || burst == 0 || conns > 1024 ||
        (conns == 0 && strcmp(argv[optind], "server") != 0))
        return die("usage: engine-test server ADDR PORT | client ADDR PORT BIND "
                   "[-c CONNS] [-n N] [-b B] [-o k=v]");
    if (conns == 0) {
        sigset_t stop;

        /* Before any thread starts, so that only sigwait takes them. */
        sigemptyset(&stop);
        sigaddset(&stop, SIGTERM);
        sigaddset(&stop, SIGINT);
        pthread_sigmask(SIG_BLOCK, &stop, NULL);
    }
    gfr_pool_opts_init(&pool_opts);
    pool_opts.name = "et-pool";
    if (gfr_pool_create(&pool_opts, &pool) != 0)
        return die("cannot create the worker pool");
    if (gfr_rdma_create(&opts, pool, &engine) != 0)
        return die("cannot create the engine");
    if (strcmp(argv[optind], "server") == 0)
        rc = run_server(engine, argv[optind + 1], argv[optind + 2], conns, seconds);
    else if (strcmp(argv[optind], "cycles") == 0 && argc - optind >= 4)
        rc = run_cycles(engine, argv[optind + 1], argv[optind + 2], argv[optind + 3], conns);
    else if (strcmp(argv[optind], "client") == 0 && argc - optind >= 4)
        rc = run_client(engine, argv[optind + 1], argv[optind + 2], argv[optind + 3],
                        conns, count, seconds, burst, max_size);
    else
        rc = die("first argument: server or client");
    gfr_rdma_destroy(engine);
    gfr_pool_destroy(pool, GFR_POOL_DRAIN_RUN);
    return rc;
}
