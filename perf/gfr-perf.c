/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * gfr-perf: measures lib/'s RDMA engine.
 *
 *   gfr-perf server ADDR PORT [-o key=value]...
 *       echoes every message back, serves one client, exits when it leaves
 *   gfr-perf lat ADDR PORT BINDADDR [-s SIZE] [-n ITERS] [-j] [-o key=value]...
 *       ping-pong of SIZE-byte messages (default 64, 1000 iterations);
 *       prints the round trip's minimum, typical (median), average, p99 and
 *       p99.9 in microseconds, like perftest's ib_send_lat (which reports
 *       half of it); -j prints one JSON object instead
 *
 * The next message is sent from the received callback itself, so a round
 * trip includes the engine's dispatch (pool or inline, -o dispatch=...) and
 * poll mode (-o poll-mode=...) but no hand-off to another benchmark thread.
 * Bandwidth and RPC-rate modes need bulk transfers, which the engine does
 * not have yet (docs/engine.md).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <netdb.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "gfr_rdma.h"

#define WAIT_S 120

static struct {
    pthread_mutex_t lock;
    pthread_cond_t cond;
    int server;
    int connected;
    int disconnected;
    int reason;
    struct gfr_rdma_conn *conn;
    uint8_t *msg;
    size_t size;
    unsigned long iters;
    unsigned long done;
    uint64_t sent_ns;
    uint64_t *rtt_ns;
} g = {
    .lock = PTHREAD_MUTEX_INITIALIZER,
    .cond = PTHREAD_COND_INITIALIZER,
};

static uint64_t
now_ns(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void
signal_main(void)
{
    pthread_mutex_lock(&g.lock);
    pthread_cond_broadcast(&g.cond);
    pthread_mutex_unlock(&g.lock);
}

static void
on_connected(struct gfr_rdma_conn *conn, void *cb_arg)
{
    pthread_mutex_lock(&g.lock);
    g.connected = 1;
    g.conn = conn;
    pthread_cond_broadcast(&g.cond);
    pthread_mutex_unlock(&g.lock);
}

static void
on_received(struct gfr_rdma_conn *conn, const void *data, size_t len, void *cb_arg)
{
    uint64_t t = now_ns();

    if (g.server) {
        if (gfr_rdma_send(conn, data, len) != 0)
            fprintf(stderr, "gfr-perf: server: echo failed\n");
        return;
    }
    g.rtt_ns[g.done++] = t - g.sent_ns;
    if (g.done == g.iters) {
        signal_main();
        return;
    }
    g.sent_ns = now_ns();
    if (gfr_rdma_send(conn, g.msg, g.size) != 0) {
        fprintf(stderr, "gfr-perf: send failed\n");
        signal_main();
    }
}

static void
on_disconnected(struct gfr_rdma_conn *conn, int reason, void *cb_arg)
{
    pthread_mutex_lock(&g.lock);
    g.disconnected = 1;
    g.reason = reason;
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
parse_addr(const char *host, const char *port, struct sockaddr_storage *ss)
{
    struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_flags = AI_NUMERICHOST};
    struct addrinfo *res;

    if (getaddrinfo(host, port, &hints, &res) != 0)
        return -EINVAL;
    memcpy(ss, res->ai_addr, res->ai_addrlen);
    freeaddrinfo(res);
    return 0;
}

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
    if (parse_addr(addr, port, &ss) ||
        gfr_rdma_listen(engine, (struct sockaddr *)&ss, 16, accept_conn, NULL, &listener)) {
        fprintf(stderr, "gfr-perf: cannot listen on %s port %s\n", addr, port);
        return 1;
    }
    printf("gfr-perf: server listening on %s port %s\n", addr, port);
    fflush(stdout);
    pthread_mutex_lock(&g.lock);
    while (!g.disconnected)
        pthread_cond_wait(&g.cond, &g.lock);
    err = g.reason;
    pthread_mutex_unlock(&g.lock);
    return err == 0 ? 0 : 1;
}

static int
run_latency(struct gfr_rdma *engine, const struct gfr_rdma_opts *opts,
            const char *addr, const char *port, const char *bind_addr,
            int json)
{
    struct sockaddr_storage dst;
    struct sockaddr_storage src;
    struct gfr_rdma_conn *conn;
    double sum = 0;
    uint64_t *r;
    unsigned long n = g.iters;
    int err;

    if (parse_addr(addr, port, &dst) || parse_addr(bind_addr, "0", &src))
        return 2;
    g.msg = calloc(1, g.size);
    g.rtt_ns = calloc(n, sizeof(uint64_t));
    if (!g.msg || !g.rtt_ns)
        return 1;
    if (gfr_rdma_connect(engine, (struct sockaddr *)&dst, (struct sockaddr *)&src,
                         &ops, NULL, &conn) != 0)
        return 1;
    pthread_mutex_lock(&g.lock);
    err = WAIT_FOR(g.connected || g.disconnected);
    pthread_mutex_unlock(&g.lock);
    if (err || !g.connected) {
        fprintf(stderr, "gfr-perf: not connected (reason %d)\n", g.reason);
        return 1;
    }
    if (g.size > gfr_rdma_max_payload(conn)) {
        fprintf(stderr, "gfr-perf: -s %zu is over the largest message, %zu bytes "
                        "(bulk transfers are not implemented yet)\n",
                g.size, gfr_rdma_max_payload(conn));
        return 2;
    }
    pthread_mutex_lock(&g.lock);
    g.sent_ns = now_ns();
    err = gfr_rdma_send(conn, g.msg, g.size);
    if (!err)
        err = WAIT_FOR(g.done == n || g.disconnected);
    pthread_mutex_unlock(&g.lock);
    gfr_rdma_disconnect(conn);
    if (err || g.done != n) {
        fprintf(stderr, "gfr-perf: %lu of %lu round trips completed\n", g.done, n);
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
               g.size, n, gfr_poll_mode_str(opts->poll_mode),
               opts->dispatch == GFR_DISPATCH_POOL ? "pool" : "inline", US(r[0]),
               US(r[n / 2]), US(sum / (double)n), US(r[(n * 99) / 100]),
               US(r[(n * 999) / 1000]));
    else
        printf(" #bytes #iterations  rtt_min[us]  rtt_typical[us]  rtt_avg[us]  "
               "rtt_p99[us]  rtt_p99.9[us]  (%s, %s)\n %-6zu %-11lu  %-11.2f  %-15.2f  "
               "%-11.2f  %-11.2f  %.2f\n",
               gfr_poll_mode_str(opts->poll_mode),
               opts->dispatch == GFR_DISPATCH_POOL ? "pool" : "inline", g.size, n,
               US(r[0]), US(r[n / 2]), US(sum / (double)n), US(r[(n * 99) / 100]),
               US(r[(n * 999) / 1000]));
    return 0;
}

static int
usage(void)
{
    fprintf(stderr, "usage: gfr-perf server ADDR PORT [-o k=v]...\n"
                    "       gfr-perf lat ADDR PORT BIND [-s SIZE] [-n ITERS] [-j] [-o k=v]...\n");
    return 2;
}

int
main(int argc, char **argv)
{
    struct gfr_rdma_opts opts;
    struct gfr_pool_opts pool_opts;
    struct gfr_pool *pool;
    struct gfr_rdma *engine;
    int json = 0;
    int opt;
    int rc;

    gfr_rdma_opts_init(&opts);
    g.size = 64;
    g.iters = 1000;
    while ((opt = getopt(argc, argv, "s:n:jo:")) != -1) {
        char why[160];
        char *eq;

        switch (opt) {
        case 's': g.size = strtoul(optarg, NULL, 10); break;
        case 'n': g.iters = strtoul(optarg, NULL, 10); break;
        case 'j': json = 1; break;
        case 'o':
            eq = strchr(optarg, '=');
            if (!eq)
                return usage();
            *eq = 0;
            if (gfr_rdma_opts_set(&opts, optarg, eq + 1, why, sizeof(why)) != 0) {
                fprintf(stderr, "gfr-perf: %s\n", why);
                return 2;
            }
            break;
        default:
            return usage();
        }
    }
    if (argc - optind < 3 || g.size == 0 || g.iters == 0)
        return usage();
    gfr_pool_opts_init(&pool_opts);
    pool_opts.name = "perf";
    if (gfr_pool_create(&pool_opts, &pool) != 0 ||
        gfr_rdma_create(&opts, pool, &engine) != 0) {
        fprintf(stderr, "gfr-perf: cannot start the engine\n");
        return 1;
    }
    if (strcmp(argv[optind], "server") == 0)
        rc = run_server(engine, argv[optind + 1], argv[optind + 2]);
    else if (strcmp(argv[optind], "lat") == 0 && argc - optind >= 4)
        rc = run_latency(engine, &opts, argv[optind + 1], argv[optind + 2],
                         argv[optind + 3], json);
    else
        rc = usage();
    gfr_rdma_destroy(engine);
    gfr_pool_destroy(pool, GFR_POOL_DRAIN_RUN);
    return rc;
}
