/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * gfr-perf: measures lib/'s RDMA engine.
 *
 *   gfr-perf server ADDR PORT [-o key=value]...
 *       serves clients until the last one leaves: echoes a message whose
 *       first byte is 'E', answers an 'A' request with an 8-byte reply, an
 *       'R' request with a reply of the size it asks for (into the buffer
 *       the request offered)
 *   gfr-perf lat ADDR PORT BINDADDR [-s SIZE] [-n ITERS]
 *       ping-pong of SIZE-byte messages (default 64, 1000 iterations);
 *       prints the round trip's minimum, typical (median), average, p99 and
 *       p99.9 in microseconds, like perftest's ib_send_lat (which reports
 *       half of it)
 *   gfr-perf bw ADDR PORT BINDADDR [-s SIZE] [-w WINDOW] [-n COUNT] [-R]
 *       keeps WINDOW requests of SIZE bytes in flight (default 1 MiB, 16,
 *       200); the bodies are the caller's own buffers, copied into staging
 *       buffers (or registered per transfer, -o copy-max=0) and pulled by
 *       the server with RDMA READ; with -R the
 *       requests are small and ask for SIZE-byte replies, which the server
 *       RDMA-writes into the buffers each request offered.  Prints MB/s
 *       (10^6 bytes), the registration cost and the client process's CPU
 *       time per MiB moved
 *   gfr-perf rate ADDR PORT BINDADDR [-c CONNS] [-d DEPTH] [-s SIZE] [-n OPS]
 *       CONNS connections with DEPTH echo requests each in flight; prints
 *       completed requests per second
 *
 * Common: -j (--json) prints one JSON object instead of a table; -o sets engine
 * options (lib/pure/gfr_rdma_opts.h), e.g. -o poll-mode=busy -o dispatch=inline.
 * The next request is sent from the callback that completes the previous
 * one, so the figures include the engine's dispatch and poll mode but no
 * hand-off to a benchmark thread.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <netdb.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <urcu/uatomic.h>

#include "gfr_clock.h"
#include "gfr_addr.h"
#include "gfr_rdma.h"

#define WAIT_S 300
#define MAX_CONNS 256

/* A request's head. */
struct req_head {
    uint8_t op; /* 'E' echo, 'A' ack, 'R' reply of reply_len bytes */
    uint8_t pad[3];
    uint32_t reply_len;
};

/* One request slot of the bw and rate modes. */
struct slot {
    struct conn *c;
    uint32_t xid;
    int events; /* reply arrived + done called: both before reuse */
    struct req_head head;
    uint8_t *buf;
    struct iovec iov[2];
};

struct conn {
    struct gfr_rdma_conn *conn;
    int connected;
    int disconnected;
    int reason;
    struct slot *slots;
};

static struct {
    pthread_mutex_t lock;
    pthread_cond_t cond;
    int server;
    char mode; /* 'l', 'b', 'r' */
    int reverse;
    unsigned nconns;
    unsigned live;
    struct conn conns[MAX_CONNS];
    size_t size;
    unsigned window;
    unsigned long target;   /* round trips / requests to complete */
    unsigned long issued;   /* uatomic */
    unsigned long finished; /* uatomic */
    int failed;
    uint8_t *msg;
    uint64_t sent_ns;
    uint64_t *rtt_ns;
} g = {
    .lock = PTHREAD_MUTEX_INITIALIZER,
    .cond = PTHREAD_COND_INITIALIZER,
};

static void
signal_main(void)
{
    pthread_mutex_lock(&g.lock);
    pthread_cond_broadcast(&g.cond);
    pthread_mutex_unlock(&g.lock);
}

static void
fail(const char *what, int err)
{
    fprintf(stderr, "gfr-perf: %s: %s\n", what, strerror(-err));
    pthread_mutex_lock(&g.lock);
    g.failed = 1;
    pthread_cond_broadcast(&g.cond);
    pthread_mutex_unlock(&g.lock);
}

static void
on_connected(struct gfr_rdma_conn *conn, void *cb_arg)
{
    struct conn *c = cb_arg;

    pthread_mutex_lock(&g.lock);
    if (c)
        c->connected = 1;
    pthread_cond_broadcast(&g.cond);
    pthread_mutex_unlock(&g.lock);
}

static void
free_cb(void *cb_arg, int status)
{
    (void)status;
    free(cb_arg);
}

/* Replies to xid with copy: head_len bytes of head, then bulk_len of bulk.
 * The copy is freed once the engine is done with it (or at once on error). */
static int
reply_with_copy(struct gfr_rdma_conn *conn, uint32_t xid, uint8_t *copy, size_t head_len,
                size_t bulk_len)
{
    struct iovec iov[2] = {{copy, head_len}, {copy + head_len, bulk_len}};
    struct gfr_rdma_msg msg = {.xid = xid, .is_reply = 1, .head = &iov[0],
                               .head_cnt = 1, .bulk = &iov[1], .bulk_cnt = 1,
                               .done = free_cb, .cb_arg = copy};
    int err = gfr_rdma_submit(conn, &msg);

    if (err)
        free(copy);
    return err;
}

/* Server side of every mode. */
static void
serve(struct gfr_rdma_conn *conn, const struct gfr_rdma_rx *rx)
{
    struct req_head head = {0};
    struct gfr_rdma_msg msg = {.xid = rx->xid, .is_reply = 1};
    struct iovec iov[2];
    uint8_t *copy;
    size_t len = rx->head_len + rx->bulk_len;
    int err;

    if (rx->head_len >= 1)
        head.op = ((const uint8_t *)rx->head)[0];
    if (rx->head_len >= sizeof(head))
        memcpy(&head, rx->head, sizeof(head));
    switch (head.op) {
    case 'A':
        iov[0] = (struct iovec){&head, sizeof(head)};
        msg.head = iov;
        msg.head_cnt = 1;
        err = gfr_rdma_submit(conn, &msg);
        break;
    case 'R':
        copy = calloc(1, sizeof(head) + head.reply_len);
        err = copy ? reply_with_copy(conn, rx->xid, copy, sizeof(head), head.reply_len)
                   : -ENOMEM;
        break;
    default: /* echo the body */
        copy = malloc(len ? len : 1);
        if (!copy) {
            err = -ENOMEM;
            break;
        }
        memcpy(copy, rx->head, rx->head_len);
        if (rx->bulk_len)
            memcpy(copy + rx->head_len, rx->bulk, rx->bulk_len);
        err = reply_with_copy(conn, rx->xid, copy, 0, len);
        break;
    }
    if (err)
        fprintf(stderr, "gfr-perf: server: reply failed: %s\n", strerror(-err));
}

static int issue(struct slot *s);

/* A slot's request has been answered and its buffers released. */
static void
slot_event(struct slot *s)
{
    if (uatomic_add_return(&s->events, 1) < 2)
        return;
    if (uatomic_add_return(&g.finished, 1) >= g.target) {
        signal_main();
        return;
    }
    if (uatomic_read(&g.issued) < g.target) {
        int err = issue(s);

        if (err)
            fail("submitting a request", err);
    }
}

static void
slot_done(void *cb_arg, int status)
{
    if (status)
        fail("a request ended", status);
    else
        slot_event(cb_arg);
}

static int
issue(struct slot *s)
{
    struct gfr_rdma_msg msg = {.xid = s->xid, .done = slot_done, .cb_arg = s};

    uatomic_inc(&g.issued);
    s->events = 0;
    msg.head = &s->iov[0];
    msg.head_cnt = 1;
    if (g.mode == 'b' && g.reverse) {
        msg.reply = &s->iov[1];
        msg.reply_cnt = 1;
    } else {
        msg.bulk = &s->iov[1];
        msg.bulk_cnt = 1;
    }
    return gfr_rdma_submit(s->c->conn, &msg);
}

static void
on_received(struct gfr_rdma_conn *conn, const struct gfr_rdma_rx *rx, void *cb_arg)
{
    struct conn *c = cb_arg;
    uint64_t t = gfr_now_ns();
    unsigned long done;

    if (g.server) {
        serve(conn, rx);
        return;
    }
    if (g.mode != 'l') {
        slot_event(&c->slots[rx->xid % g.window]);
        return;
    }
    done = g.finished;
    g.rtt_ns[done++] = t - g.sent_ns;
    g.finished = done;
    if (done == g.target) {
        signal_main();
        return;
    }
    g.sent_ns = gfr_now_ns();
    if (gfr_rdma_send(conn, g.msg, g.size) != 0)
        fail("send", -EIO);
}

static void
on_disconnected(struct gfr_rdma_conn *conn, int reason, void *cb_arg)
{
    struct conn *c = cb_arg;

    pthread_mutex_lock(&g.lock);
    if (c) {
        c->disconnected = 1;
        c->reason = reason;
    }
    if (g.live)
        g.live--;
    if (reason)
        g.failed = 1;
    pthread_cond_broadcast(&g.cond);
    pthread_mutex_unlock(&g.lock);
    gfr_rdma_conn_release(conn);
}

static const struct gfr_rdma_conn_ops ops = {
    .connected = on_connected,
    .received = on_received,
    .disconnected = on_disconnected,
};

static int
accept_conn(struct gfr_rdma_listener *l, struct gfr_rdma_conn *conn, void *cb_arg,
            const struct gfr_rdma_conn_ops **conn_ops, void **conn_cb_arg)
{
    (void)l;
    (void)conn;
    (void)cb_arg;
    pthread_mutex_lock(&g.lock);
    g.live++;
    g.nconns++;
    pthread_mutex_unlock(&g.lock);
    *conn_ops = &ops;
    *conn_cb_arg = NULL;
    return 0;
}

/* Waits (g.lock held) until pred or WAIT_S seconds; 0 or -ETIMEDOUT. */
#define WAIT_FOR(pred)                                                      \
    ({                                                                      \
        struct timespec deadline_;                                          \
        clock_gettime(CLOCK_REALTIME, &deadline_);                          \
        deadline_.tv_sec += WAIT_S;                                         \
        while (!(pred) &&                                                   \
               pthread_cond_timedwait(&g.cond, &g.lock, &deadline_) == 0)   \
            ;                                                               \
        (pred) ? 0 : -ETIMEDOUT;                                            \
    })

static int
compare_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a;
    uint64_t y = *(const uint64_t *)b;

    return x < y ? -1 : x > y;
}

static int
run_server(struct gfr_rdma *engine, const char *addr, const char *port)
{
    struct sockaddr_storage ss;
    struct gfr_rdma_listener *listener;
    int err;

    g.server = 1;
    if (gfr_addr_parse_numeric(addr, port, &ss)) {
        fprintf(stderr, "gfr-perf: %s port %s is not a numeric address and port\n", addr, port);
        return 1;
    }
    err = gfr_rdma_listen(engine, (struct sockaddr *)&ss, 128, NULL, accept_conn, NULL, &listener);
    if (err) {
        fprintf(stderr, "gfr-perf: cannot listen on %s port %s: %s\n", addr, port, strerror(-err));
        return 1;
    }
    printf("gfr-perf: server listening on %s port %s\n", addr, port);
    fflush(stdout);
    pthread_mutex_lock(&g.lock);
    while (g.nconns == 0 || g.live > 0)
        pthread_cond_wait(&g.cond, &g.lock);
    pthread_mutex_unlock(&g.lock);
    return 0;
}

/* Opens n connections; 0, or 1 with a message. */
static int
connect_all(struct gfr_rdma *engine, const char *addr, const char *port,
            const char *bind_addr, unsigned n)
{
    struct sockaddr_storage dst;
    struct sockaddr_storage src;
    int err = 0;

    if (gfr_addr_parse_numeric(addr, port, &dst) ||
        gfr_addr_parse_numeric(bind_addr, "0", &src)) {
        fprintf(stderr, "gfr-perf: bad address\n");
        return 1;
    }
    g.nconns = n;
    g.live = n;
    for (unsigned i = 0; i < n; i++)
        if (gfr_rdma_connect(engine, (struct sockaddr *)&dst, (struct sockaddr *)&src, NULL,
                             &ops, &g.conns[i], &g.conns[i].conn) != 0)
            return 1;
    pthread_mutex_lock(&g.lock);
    for (unsigned i = 0; i < n && !err; i++) {
        struct conn *c = &g.conns[i];

        err = WAIT_FOR(c->connected || c->disconnected);
        if (!err && !c->connected)
            err = c->reason ? c->reason : -ENOTCONN;
    }
    pthread_mutex_unlock(&g.lock);
    if (err) {
        fprintf(stderr, "gfr-perf: not connected: %s\n", strerror(-err));
        return 1;
    }
    return 0;
}

static void
disconnect_all(void)
{
    for (unsigned i = 0; i < g.nconns; i++)
        gfr_rdma_disconnect(g.conns[i].conn);
    pthread_mutex_lock(&g.lock);
    WAIT_FOR(g.live == 0);
    pthread_mutex_unlock(&g.lock);
}

static int
run_latency(const struct gfr_rdma_opts *opts, int json)
{
    struct gfr_rdma_conn *conn = g.conns[0].conn;
    double sum = 0;
    uint64_t *r;
    unsigned long n = g.target;
    int err;

    g.msg = calloc(1, g.size);
    g.rtt_ns = calloc(n, sizeof(uint64_t));
    if (!g.msg || !g.rtt_ns)
        return 1;
    g.msg[0] = 'E';
    pthread_mutex_lock(&g.lock);
    g.sent_ns = gfr_now_ns();
    err = gfr_rdma_send(conn, g.msg, g.size);
    if (!err)
        err = WAIT_FOR(g.finished == n || g.failed);
    pthread_mutex_unlock(&g.lock);
    if (err || g.finished != n) {
        fprintf(stderr, "gfr-perf: %lu of %lu round trips completed\n", g.finished, n);
        return 1;
    }
    r = g.rtt_ns;
    for (unsigned long i = 0; i < n; i++)
        sum += (double)r[i];
    qsort(r, n, sizeof(*r), compare_u64);
#define US(x) ((double)(x) / 1000.0)
    if (json)
        printf("{\"mode\":\"lat\",\"size\":%zu,\"iterations\":%lu,\"poll_mode\":\"%s\","
               "\"dispatch\":\"%s\",\"rtt_min_us\":%.2f,\"rtt_typical_us\":%.2f,"
               "\"rtt_avg_us\":%.2f,\"rtt_p99_us\":%.2f,\"rtt_p999_us\":%.2f}\n",
               g.size, n, gfr_poll_mode_str(opts->poll_mode), gfr_dispatch_str(opts->dispatch),
               US(r[0]), US(r[n / 2]), US(sum / (double)n), US(r[(n * 99) / 100]),
               US(r[(n * 999) / 1000]));
    else
        printf(" #bytes #iterations  rtt_min[us]  rtt_typical[us]  rtt_avg[us]  "
               "rtt_p99[us]  rtt_p99.9[us]  (%s, %s)\n %-6zu %-11lu  %-11.2f  %-15.2f  "
               "%-11.2f  %-11.2f  %.2f\n",
               gfr_poll_mode_str(opts->poll_mode), gfr_dispatch_str(opts->dispatch), g.size, n,
               US(r[0]), US(r[n / 2]), US(sum / (double)n), US(r[(n * 99) / 100]),
               US(r[(n * 999) / 1000]));
    return 0;
}

/* CPU time of the whole process (every thread, user and system). */
static uint64_t
process_cpu_ns(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* bw and rate: g.window slots per connection, refilled as they finish. */
static int
run_window(const struct gfr_rdma_opts *opts, int json)
{
    struct gfr_rdma_conn_stats st;
    unsigned long regs = 0, reg_ns = 0;
    uint64_t start, elapsed, cpu_start, cpu;
    double secs;
    int err = 0;

    for (unsigned i = 0; i < g.nconns; i++) {
        struct conn *c = &g.conns[i];

        c->slots = calloc(g.window, sizeof(*c->slots));
        if (!c->slots)
            return 1;
        for (unsigned k = 0; k < g.window; k++) {
            struct slot *s = &c->slots[k];

            s->c = c;
            s->xid = k;
            s->buf = calloc(1, g.size ? g.size : 1);
            if (!s->buf)
                return 1;
            s->head.op = g.mode == 'r' ? 'E' : g.reverse ? 'R' : 'A';
            s->head.reply_len = g.reverse ? (uint32_t)g.size : 0;
            s->iov[0] = (struct iovec){&s->head, sizeof(s->head)};
            s->iov[1] = (struct iovec){s->buf, g.size};
        }
    }
    cpu_start = process_cpu_ns();
    start = gfr_now_ns();
    for (unsigned k = 0; k < g.window && !err; k++)
        for (unsigned i = 0; i < g.nconns && !err; i++)
            if (uatomic_read(&g.issued) < g.target)
                err = issue(&g.conns[i].slots[k]);
    pthread_mutex_lock(&g.lock);
    if (!err)
        err = WAIT_FOR(uatomic_read(&g.finished) >= g.target || g.failed);
    pthread_mutex_unlock(&g.lock);
    elapsed = gfr_now_ns() - start;
    cpu = process_cpu_ns() - cpu_start;
    if (err || g.failed) {
        fprintf(stderr, "gfr-perf: %lu of %lu requests completed\n", g.finished, g.target);
        return 1;
    }
    for (unsigned i = 0; i < g.nconns; i++) {
        gfr_rdma_conn_stats(g.conns[i].conn, &st);
        regs += st.registrations;
        reg_ns += st.registration_ns;
    }
    secs = (double)elapsed / 1e9;
    if (g.mode == 'b') {
        double mbps = (double)g.size * (double)g.finished / secs / 1e6;
        double mib = (double)g.size * (double)g.finished / (1 << 20);
        double cpu_ms_per_mib = (double)cpu / 1e6 / mib;

        if (json)
            printf("{\"mode\":\"bw\",\"direction\":\"%s\",\"size\":%zu,\"window\":%u,"
                   "\"count\":%lu,\"poll_mode\":\"%s\",\"dispatch\":\"%s\","
                   "\"mb_per_s\":%.2f,\"registrations\":%lu,\"registration_us_avg\":%.2f,"
                   "\"cpu_ms_per_mib\":%.3f}\n",
                   g.reverse ? "reply-write" : "request-read", g.size, g.window,
                   g.finished, gfr_poll_mode_str(opts->poll_mode), gfr_dispatch_str(opts->dispatch),
                   mbps, regs, regs ? (double)reg_ns / 1e3 / (double)regs : 0.0,
                   cpu_ms_per_mib);
        else
            printf(" #bytes  window  #requests  BW[MB/s]  direction     registrations  "
                   "avg reg+dereg[us]  CPU[ms/MiB]  (%s, %s)\n"
                   " %-7zu %-7u %-10lu %-9.2f %-13s %-14lu %-18.2f %.3f\n",
                   gfr_poll_mode_str(opts->poll_mode), gfr_dispatch_str(opts->dispatch), g.size,
                   g.window, g.finished, mbps, g.reverse ? "reply-write" : "request-read",
                   regs, regs ? (double)reg_ns / 1e3 / (double)regs : 0.0, cpu_ms_per_mib);
    } else {
        double rate = (double)g.finished / secs;

        if (json)
            printf("{\"mode\":\"rate\",\"connections\":%u,\"depth\":%u,\"size\":%zu,"
                   "\"requests\":%lu,\"poll_mode\":\"%s\",\"dispatch\":\"%s\","
                   "\"requests_per_s\":%.0f}\n",
                   g.nconns, g.window, g.size, g.finished,
                   gfr_poll_mode_str(opts->poll_mode), gfr_dispatch_str(opts->dispatch), rate);
        else
            printf(" #conns  depth  #bytes  #requests  requests/s  (%s, %s)\n"
                   " %-7u %-6u %-7zu %-10lu %.0f\n",
                   gfr_poll_mode_str(opts->poll_mode), gfr_dispatch_str(opts->dispatch), g.nconns,
                   g.window, g.size, g.finished, rate);
    }
    return 0;
}

/* The usage text on OUT; returns STATUS, for main to return. */
static int
usage(FILE *out, int status)
{
    fprintf(out,
            "usage: gfr-perf server ADDR PORT [-o k=v]...      (-j: --json)\n"
            "       gfr-perf lat  ADDR PORT BIND [-s SIZE] [-n ITERS] [-j] [-o k=v]...\n"
            "       gfr-perf bw   ADDR PORT BIND [-s SIZE] [-w WINDOW] [-n COUNT] [-R] [-j]"
            " [-o k=v]...\n"
            "       gfr-perf rate ADDR PORT BIND [-c CONNS] [-d DEPTH] [-s SIZE] [-n OPS] [-j]"
            " [-o k=v]...\n"
            "       gfr-perf -h|--help\n");
    return status;
}

int
main(int argc, char **argv)
{
    struct gfr_rdma_opts opts;
    struct gfr_pool_opts pool_opts;
    struct gfr_pool *pool;
    struct gfr_rdma *engine;
    const char *mode;
    unsigned long n = 0;
    unsigned conns = 1;
    size_t size = 0;
    int json = 0;
    int opt;
    int rc;

    static const struct option long_opts[] = {{"json", no_argument, NULL, 'j'},
                                                {"help", no_argument, NULL, 'h'},
                                                {0}};

    gfr_rdma_opts_init(&opts);
    while ((opt = getopt_long(argc, argv, "hs:n:w:c:d:Rjo:", long_opts, NULL)) != -1) {
        char why[160];
        char *eq;

        switch (opt) {
        case 's': size = strtoul(optarg, NULL, 0); break;
        case 'n': n = strtoul(optarg, NULL, 10); break;
        case 'w':
        case 'd': g.window = (unsigned)strtoul(optarg, NULL, 10); break;
        case 'c': conns = (unsigned)strtoul(optarg, NULL, 10); break;
        case 'R': g.reverse = 1; break;
        case 'j': json = 1; break;
        case 'h': return usage(stdout, 0);
        case 'o':
            eq = strchr(optarg, '=');
            if (!eq)
                return usage(stderr, 2);
            *eq = 0;
            if (gfr_rdma_opts_set(&opts, optarg, eq + 1, why, sizeof(why)) != 0) {
                fprintf(stderr, "gfr-perf: %s\n", why);
                return 2;
            }
            break;
        default:
            return usage(stderr, 2);
        }
    }
    if (argc - optind < 3)
        return usage(stderr, 2);
    mode = argv[optind];
    if (strcmp(mode, "server") != 0) {
        if (argc - optind < 4 || conns == 0 || conns > MAX_CONNS)
            return usage(stderr, 2);
        g.mode = strcmp(mode, "lat") == 0 ? 'l' : strcmp(mode, "bw") == 0 ? 'b'
               : strcmp(mode, "rate") == 0 ? 'r' : 0;
        if (!g.mode || (g.mode != 'r' && conns != 1))
            return usage(stderr, 2);
        g.size = size ? size : g.mode == 'b' ? 1 << 20 : 64;
        g.target = n ? n : g.mode == 'l' ? 1000 : g.mode == 'b' ? 200 : 100000;
        if (!g.window)
            g.window = g.mode == 'b' ? 16 : g.mode == 'r' ? 8 : 1;
        if (g.size < sizeof(struct req_head) && g.mode != 'b')
            g.size = sizeof(struct req_head);
    }
    gfr_pool_opts_init(&pool_opts);
    pool_opts.name = "perf";
    if (gfr_pool_create(&pool_opts, &pool) != 0 ||
        gfr_rdma_create(&opts, pool, &engine) != 0) {
        fprintf(stderr, "gfr-perf: cannot start the engine\n");
        return 1;
    }
    if (!g.mode) {
        rc = run_server(engine, argv[optind + 1], argv[optind + 2]);
    } else {
        rc = connect_all(engine, argv[optind + 1], argv[optind + 2], argv[optind + 3],
                         conns);
        if (!rc && g.size > gfr_rdma_max_msg(g.conns[0].conn)) {
            fprintf(stderr, "gfr-perf: -s %zu is over the negotiated max-msg, %zu\n",
                    g.size, gfr_rdma_max_msg(g.conns[0].conn));
            rc = 2;
        }
        if (!rc)
            rc = g.mode == 'l' ? run_latency(&opts, json) : run_window(&opts, json);
        disconnect_all();
    }
    gfr_rdma_destroy(engine);
    gfr_pool_destroy(pool, GFR_POOL_DRAIN_RUN);
    return rc;
}
