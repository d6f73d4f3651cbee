/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * engine-test: drives lib/'s RDMA engine over soft-RoCE.
 *
 *   engine-test server ADDR PORT [-o key=value]...
 *       accepts one connection, echoes every message back with its bytes
 *       inverted, exits 0 after an orderly disconnect
 *   engine-test client ADDR PORT BINDADDR [-n COUNT] [-b BURST] [-o key=value]...
 *       sends COUNT messages of pseudo-random sizes (1 byte to the maximum
 *       payload) in bursts of BURST without waiting, checks every echo byte
 *       by byte, disconnects; exits 0 when all were verified
 *
 * Options (-o) are the engine's (lib/gfr_rdma_opts.h), e.g. -o credits=4
 * or -o dispatch=inline (the default hands messages to a gfr_pool).
 * Every wait is bounded; a failure says what failed and exits 1.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "gfr_rdma.h"

#define WAIT_MS 60000

struct state {
    pthread_mutex_t lock;
    pthread_cond_t cond;
    int connected;
    int disconnected;
    int reason;
    unsigned long received;
    unsigned long bad;
    struct gfr_rdma_conn *conn;
    int is_server;
};

static struct state st = {
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
    pthread_mutex_lock(&st.lock);
    st.connected = 1;
    st.conn = conn;
    pthread_cond_broadcast(&st.cond);
    pthread_mutex_unlock(&st.lock);
}

static void
on_received(struct gfr_rdma_conn *conn, const void *data, size_t len, void *cb_arg)
{
    const uint8_t *p = data;

    if (st.is_server) {
        uint8_t *echo = malloc(len);
        int err;

        if (!echo)
            abort();
        for (size_t i = 0; i < len; i++)
            echo[i] = (uint8_t)~p[i];
        err = gfr_rdma_send(conn, echo, len);
        free(echo);
        if (err)
            fprintf(stderr, "engine-test: server: echo failed: %s\n", strerror(-err));
    } else {
        uint32_t seq;
        int ok = len >= 4;

        if (ok) {
            memcpy(&seq, p, 4);
            seq = ~seq;
            for (size_t i = 4; i < len && ok; i++) {
                uint8_t got = (uint8_t)(p[i] ^ 0xffu);
                uint8_t want = pattern(seq, i);

                ok = got == want;
            }
        }
        pthread_mutex_lock(&st.lock);
        if (!ok)
            st.bad++;
        pthread_mutex_unlock(&st.lock);
    }
    pthread_mutex_lock(&st.lock);
    st.received++;
    pthread_cond_broadcast(&st.cond);
    pthread_mutex_unlock(&st.lock);
}

static void
on_disconnected(struct gfr_rdma_conn *conn, int reason, void *cb_arg)
{
    pthread_mutex_lock(&st.lock);
    st.disconnected++;
    st.reason = reason;
    st.conn = NULL;
    pthread_cond_broadcast(&st.cond);
    pthread_mutex_unlock(&st.lock);
}

static const struct gfr_rdma_conn_ops ops = {
    .connected = on_connected,
    .received = on_received,
    .disconnected = on_disconnected,
};

static int
accept_one(struct gfr_rdma_listener *l, struct gfr_rdma_conn *conn, void *cb_arg,
           const struct gfr_rdma_conn_ops **conn_ops, void **conn_cb_arg)
{
    *conn_ops = &ops;
    *conn_cb_arg = NULL;
    return 0;
}

/* Waits until cond holds (st.lock held); 0, or -ETIMEDOUT. */
#define WAIT_FOR(pred)                                                      \
    ({                                                                      \
        struct timespec deadline_;                                          \
        int rc_ = 0;                                                        \
        clock_gettime(CLOCK_REALTIME, &deadline_);                          \
        deadline_.tv_sec += WAIT_MS / 1000;                                 \
        while (!(pred) && rc_ == 0)                                         \
            rc_ = pthread_cond_timedwait(&st.cond, &st.lock, &deadline_);   \
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
die(const char *what)
{
    fprintf(stderr, "engine-test: %s\n", what);
    return 1;
}

static int
run_server(struct gfr_rdma *engine, const char *addr, const char *port)
{
    struct sockaddr_storage ss;
    struct gfr_rdma_listener *listener;
    int err;

    st.is_server = 1;
    if (parse_addr(addr, port, &ss))
        return die("server: bad address");
    err = gfr_rdma_listen(engine, (struct sockaddr *)&ss, 16, accept_one, NULL, &listener);
    if (err)
        return die("server: listen failed");
    printf("engine-test: server: listening on %s port %s\n", addr, port);
    fflush(stdout);
    pthread_mutex_lock(&st.lock);
    err = WAIT_FOR(st.disconnected > 0);
    pthread_mutex_unlock(&st.lock);
    if (err)
        return die("server: no client came and went within the time limit");
    printf("engine-test: server: echoed %lu messages, disconnected with reason %d\n",
           st.received, st.reason);
    return st.reason == 0 ? 0 : 1;
}

static int
run_client(struct gfr_rdma *engine, const char *addr, const char *port,
           const char *bind_addr, unsigned long count, unsigned burst)
{
    struct sockaddr_storage dst;
    struct sockaddr_storage src;
    struct gfr_rdma_conn *conn;
    struct gfr_rdma_conn_stats stats;
    uint8_t *buf;
    size_t max;
    unsigned long sent = 0;
    int err;

    if (parse_addr(addr, port, &dst) || parse_addr(bind_addr, "0", &src))
        return die("client: bad address");
    err = gfr_rdma_connect(engine, (struct sockaddr *)&dst, (struct sockaddr *)&src,
                           &ops, NULL, &conn);
    if (err)
        return die("client: connect failed");
    pthread_mutex_lock(&st.lock);
    err = WAIT_FOR(st.connected || st.disconnected);
    pthread_mutex_unlock(&st.lock);
    if (err || !st.connected) {
        fprintf(stderr, "engine-test: client: not connected (reason %d: %s)\n",
                st.reason, strerror(-st.reason));
        return 2;
    }
    max = gfr_rdma_max_payload(conn);
    buf = malloc(max);
    if (!buf)
        return die("client: out of memory");
    srand(7);
    while (sent < count) {
        for (unsigned b = 0; b < burst && sent < count; b++, sent++) {
            size_t len = 4 + (size_t)rand() % (max - 3);
            uint32_t seq = (uint32_t)sent;

            if (len > max)
                len = max;
            memcpy(buf, &seq, 4);
            for (size_t i = 4; i < len; i++)
                buf[i] = pattern(seq, i);
            err = gfr_rdma_send(conn, buf, len);
            if (err) {
                fprintf(stderr, "engine-test: client: send %lu failed: %s\n", sent,
                        strerror(-err));
                return 1;
            }
        }
        pthread_mutex_lock(&st.lock);
        err = WAIT_FOR(st.received >= sent || st.disconnected);
        pthread_mutex_unlock(&st.lock);
        if (err || st.disconnected)
            return die("client: echoes stopped coming");
    }
    gfr_rdma_conn_stats(conn, &stats);
    free(buf);
    gfr_rdma_disconnect(conn);
    pthread_mutex_lock(&st.lock);
    err = WAIT_FOR(st.disconnected > 0);
    pthread_mutex_unlock(&st.lock);
    if (err)
        return die("client: the disconnect did not complete");
    printf("engine-test: client: %lu messages of 4..%zu bytes verified both ways, "
           "%lu bad; %lu sends waited for credits, %lu credit updates; "
           "disconnect reason %d\n",
           st.received, max, st.bad, stats.queued_for_credits, stats.credit_updates,
           st.reason);
    return st.bad == 0 && st.received == count && st.reason == 0 ? 0 : 1;
}

int
main(int argc, char **argv)
{
    struct gfr_rdma_opts opts;
    struct gfr_pool_opts pool_opts;
    struct gfr_pool *pool;
    struct gfr_rdma *engine;
    unsigned long count = 1000;
    unsigned burst = 1;
    int opt;
    int rc;

    gfr_rdma_opts_init(&opts);
    while ((opt = getopt(argc, argv, "n:b:o:")) != -1) {
        char why[160];
        char *eq;

        switch (opt) {
        case 'n': count = strtoul(optarg, NULL, 10); break;
        case 'b': burst = (unsigned)strtoul(optarg, NULL, 10); break;
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
            return die("usage: engine-test server ADDR PORT | client ADDR PORT BIND [-n N] [-b B] [-o k=v]");
        }
    }
    if (argc - optind < 3 || burst == 0)
        return die("usage: engine-test server ADDR PORT | client ADDR PORT BIND [-n N] [-b B] [-o k=v]");
    gfr_pool_opts_init(&pool_opts);
    pool_opts.name = "et-pool";
    if (gfr_pool_create(&pool_opts, &pool) != 0)
        return die("cannot create the worker pool");
    if (gfr_rdma_create(&opts, pool, &engine) != 0)
        return die("cannot create the engine");
    if (strcmp(argv[optind], "server") == 0)
        rc = run_server(engine, argv[optind + 1], argv[optind + 2]);
    else if (strcmp(argv[optind], "client") == 0 && argc - optind >= 4)
        rc = run_client(engine, argv[optind + 1], argv[optind + 2], argv[optind + 3],
                        count, burst);
    else
        rc = die("first argument: server or client");
    gfr_rdma_destroy(engine);
    gfr_pool_destroy(pool, GFR_POOL_DRAIN_RUN);
    return rc;
}
