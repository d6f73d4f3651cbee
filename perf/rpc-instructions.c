/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * rpc-instructions: what one RPC costs the engine, on the host, without a
 * device: a server engine and a client engine in one process over the
 * verbs model (tests/unit/verbs-model.h, its mlx5 profile, no fault), at
 * default options but event-driven polling (a poller that spins while
 * callgrind slows everything would count its waiting as work).  One RPC
 * at a time: a 128-byte request answered with 4 KiB, as a GlusterFS 4 KiB
 * read.  Run under valgrind's callgrind (perf/host-gluster-counts does):
 * the counters are zeroed after a warm-up and dumped after the measured
 * RPCs, so the dump holds those RPCs and nothing else; the client
 * requests that do it are no-ops outside valgrind.
 *
 *   rpc-instructions [RPCS]   (default 2,000)
 *
 * Prints "rpcs N" and "us_per_rpc X" (natively meaningful only); exit 1
 * when an RPC failed or the model found a breach.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <valgrind/callgrind.h>

#include "gfr_clock.h"
#include "gfr_pool.h"
#include "gfr_rdma.h"
#include "gfr_rdma_opts.h"
#include "verbs-model.h"

#define PORT 4791
#define REQUEST_LEN 128
#define REPLY_LEN 4096
#define WARM_UP 200

static struct {
    pthread_mutex_t lock;
    pthread_cond_t cond;
    struct gfr_rdma_conn *client;
    unsigned connected;
    unsigned disconnected;        /* the client's end */
    unsigned server_disconnected; /* the server's */
    unsigned replies;
    unsigned bad;
} bench = {.lock = PTHREAD_MUTEX_INITIALIZER, .cond = PTHREAD_COND_INITIALIZER};

static uint8_t request[REQUEST_LEN];
static uint8_t reply[REPLY_LEN];

static void
note(unsigned *flag)
{
    pthread_mutex_lock(&bench.lock);
    (*flag)++;
    pthread_cond_broadcast(&bench.cond);
    pthread_mutex_unlock(&bench.lock);
}

static void
on_connected(struct gfr_rdma_conn *conn, void *cb_arg)
{
    (void)conn;
    if (cb_arg == &bench)
        note(&bench.connected);
}

/* Server: answers every request with REPLY_LEN bytes; client: counts the
 * replies, checking their length. */
static void
on_received(struct gfr_rdma_conn *conn, const struct gfr_rdma_rx *rx, void *cb_arg)
{
    if (cb_arg != &bench) {
        struct iovec iov = {reply, sizeof(reply)};
        struct gfr_rdma_msg msg = {.xid = rx->xid, .is_reply = 1, .head = &iov, .head_cnt = 1};

        if (gfr_rdma_submit(conn, &msg) != 0)
            fprintf(stderr, "rpc-instructions: the server could not reply to %u\n", rx->xid);
        return;
    }
    pthread_mutex_lock(&bench.lock);
    if (rx->head_len + rx->bulk_len != REPLY_LEN)
        bench.bad++;
    bench.replies++;
    pthread_cond_broadcast(&bench.cond);
    pthread_mutex_unlock(&bench.lock);
}

static void
on_disconnected(struct gfr_rdma_conn *conn, int reason, void *cb_arg)
{
    (void)conn;
    (void)reason;
    note(cb_arg == &bench ? &bench.disconnected : &bench.server_disconnected);
}

static const struct gfr_rdma_conn_ops ops = {
    .connected = on_connected,
    .received = on_received,
    .disconnected = on_disconnected,
};

static struct gfr_rdma_conn *server_conn;

static int
on_accept(struct gfr_rdma_listener *l, struct gfr_rdma_conn *conn, void *cb_arg,
          const struct gfr_rdma_conn_ops **conn_ops, void **conn_cb_arg)
{
    (void)l;
    (void)cb_arg;
    server_conn = conn;
    *conn_ops = &ops;
    *conn_cb_arg = NULL;
    return 0;
}

/* Waits until *counter reaches at least want: 0, or -ETIMEDOUT after 30 s.
 * Takes bench.lock. */
static int
wait_for(const unsigned *counter, unsigned want)
{
    struct timespec until;
    int err = 0;

    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += 30;
    pthread_mutex_lock(&bench.lock);
    while (*counter < want && err != ETIMEDOUT)
        err = pthread_cond_timedwait(&bench.cond, &bench.lock, &until);
    err = *counter < want ? -ETIMEDOUT : 0;
    pthread_mutex_unlock(&bench.lock);
    return err;
}

/* n RPCs one after another; 0 or -errno. */
static int
rpcs(unsigned n, uint32_t *xid)
{
    struct iovec iov = {request, sizeof(request)};

    for (unsigned i = 0; i < n; i++) {
        struct gfr_rdma_msg msg = {.xid = ++*xid, .head = &iov, .head_cnt = 1};
        unsigned want;
        int err;

        pthread_mutex_lock(&bench.lock);
        want = bench.replies + 1;
        pthread_mutex_unlock(&bench.lock);
        err = gfr_rdma_submit(bench.client, &msg);
        if (err)
            return err;
        err = wait_for(&bench.replies, want);
        if (err)
            return err;
    }
    return 0;
}

int
main(int argc, char **argv)
{
    unsigned n = argc > 1 ? (unsigned)strtoul(argv[1], NULL, 10) : 2000;
    struct model_plan plan = {.fault = MODEL_FAULT_NONE};
    struct gfr_rdma_opts opts;
    struct gfr_pool_opts pool_opts;
    struct gfr_pool *pool = NULL;
    struct gfr_rdma *server = NULL, *client = NULL;
    struct gfr_rdma_listener *listener = NULL;
    struct sockaddr_in srv_addr, cli_addr;
    char report[4096];
    uint32_t xid = 0;
    uint64_t t0;
    int err;

    if (argc > 2 || n < 1) {
        fprintf(stderr, "usage: rpc-instructions [RPCS]\n");
        return 64;
    }
    gfr_rdma_opts_init(&opts);
    opts.poll_mode = GFR_POLL_EVENT;
    gfr_pool_opts_init(&pool_opts);
    pool_opts.name = "bench";
    model_addr(0, PORT, &srv_addr);
    model_addr(1, 0, &cli_addr);
    if (model_start(MODEL_MLX5, 1, &plan, NULL, NULL) != 0 ||
        gfr_pool_create(&pool_opts, &pool) != 0 || gfr_rdma_create(&opts, pool, &server) != 0 ||
        gfr_rdma_create(&opts, pool, &client) != 0 ||
        gfr_rdma_listen(server, (struct sockaddr *)&srv_addr, 4, NULL, on_accept, NULL, &listener) != 0 ||
        gfr_rdma_connect(client, (struct sockaddr *)&srv_addr, (struct sockaddr *)&cli_addr, NULL, &ops,
                         &bench, &bench.client) != 0 ||
        wait_for(&bench.connected, 1) != 0) {
        fprintf(stderr, "rpc-instructions: no connection over the verbs model\n");
        return 1;
    }
    err = rpcs(WARM_UP, &xid);
    CALLGRIND_ZERO_STATS;
    t0 = gfr_now_ns();
    if (!err)
        err = rpcs(n, &xid);
    CALLGRIND_DUMP_STATS_AT("rpcs");
    if (err) {
        fprintf(stderr, "rpc-instructions: an RPC failed: %s\n", strerror(-err));
        return 1;
    }
    printf("rpcs %u\nus_per_rpc %.1f\n", n, (double)(gfr_now_ns() - t0) / 1e3 / n);
    gfr_rdma_disconnect(bench.client);
    if (wait_for(&bench.disconnected, 1) != 0 || wait_for(&bench.server_disconnected, 1) != 0) {
        fprintf(stderr, "rpc-instructions: a side did not see the connection end\n");
        return 1;
    }
    gfr_rdma_conn_release(bench.client);
    gfr_rdma_conn_release(server_conn);
    gfr_rdma_listener_close(listener);
    gfr_rdma_destroy(client);
    gfr_rdma_destroy(server);
    gfr_pool_destroy(pool, GFR_POOL_DRAIN_RUN);
    if (model_stop(report, sizeof(report)) || bench.bad) {
        fprintf(stderr, "rpc-instructions: %u bad replies; the model found:\n%s", bench.bad, report);
        return 1;
    }
    return 0;
}
