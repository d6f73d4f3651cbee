/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * trace-bench: what transport.rdma.latency-stats costs an RPC on the CPU,
 * on the host.  One iteration is a whole RPC seen from both sides on one
 * test connection (tests/unit/test-conn.c, over fake verbs): the client
 * submits and posts a request, its SEND completes, the reply goes through
 * every received-message step; the server's request goes through them and
 * its reply is submitted and posted.  That is every trace point an RPC
 * meets, with the engine's own state changes around them.  Rounds with
 * latency statistics on and off alternate; the medians are compared.
 *
 *   trace-bench [ROUNDS [RPCS]]   (default 11 rounds of 200,000 RPCs each)
 *
 * Prints "on_ns_per_rpc", "off_ns_per_rpc", "cost_ns_per_rpc" and
 * `ratio rpc_path_on_vs_off <x>`.  Single-threaded: the cache-line traffic
 * of several pollers and workers adding to the same histograms is not in
 * it (docs/performance.md).
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gfr_clock.h"
#include "test-conn.h"

#define MAX_ROUNDS 101

static struct gfr_rdma_poller bench_poller;

/* A received data message through its steps, as rdma-rx.c moves an inline
 * one. */
static void
arrive(struct gfr_rdma_conn *conn, uint32_t xid, int is_reply)
{
    struct gfr_rdma_rxmsg m = {.state = GFR_RX_RECEIVED, .conn = conn, .data = 1,
                               .rx = {.xid = xid, .is_reply = is_reply}};

    pthread_mutex_lock(&conn->lock);
    gfr_rdma_rx_advance(&m, GFR_RX_CHECKED);
    pthread_mutex_unlock(&conn->lock);
    gfr_rdma_rx_advance(&m, GFR_RX_DELIVERING);
    gfr_rdma_rx_advance(&m, GFR_RX_OWNED);
    gfr_rdma_rx_advance(&m, GFR_RX_RELEASED);
}

static void
encode(uint8_t *buf, int type, uint32_t xid)
{
    struct gfr_wire_hdr hdr = {.type = (uint8_t)type, .xid = xid};

    if (gfr_wire_encode(&hdr, NULL, NULL, buf, GFR_WIRE_HDR_SIZE) != GFR_WIRE_HDR_SIZE) {
        fprintf(stderr, "trace-bench: cannot encode a header\n");
        exit(1);
    }
}

/* ns per RPC over rpcs RPCs. */
static double
round_ns(struct gfr_rdma_conn *conn, unsigned rpcs)
{
    uint8_t request[GFR_WIRE_HDR_SIZE], reply[GFR_WIRE_HDR_SIZE];
    uint64_t t0 = gfr_now_ns();

    for (unsigned i = 0; i < rpcs; i++) {
        struct gfr_rdma_wr ctx = {.conn = conn};
        uint32_t xid = i;

        encode(request, GFR_WIRE_MSG, xid);
        encode(reply, GFR_WIRE_REPLY, xid);
        /* client: the request out, its SEND completed, the reply in */
        pthread_mutex_lock(&conn->lock);
        gfr_rdma_trace_submit_locked(conn, xid, 0);
        gfr_rdma_trace_posted_locked(conn, &ctx, request,
                                     gfr_rdma_trace_stamp(conn->engine, request));
        gfr_rdma_trace_send_done_locked(conn, &ctx);
        pthread_mutex_unlock(&conn->lock);
        bench_poller.woke = i & 1;
        arrive(conn, xid, 1);
        /* server: the request in, the reply out */
        arrive(conn, xid, 0);
        pthread_mutex_lock(&conn->lock);
        gfr_rdma_trace_submit_locked(conn, xid, 1);
        gfr_rdma_trace_posted_locked(conn, &ctx, reply,
                                     gfr_rdma_trace_stamp(conn->engine, reply));
        pthread_mutex_unlock(&conn->lock);
    }
    return (double)(gfr_now_ns() - t0) / rpcs;
}

static int
cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;

    return (x > y) - (x < y);
}

static double
median(double *v, unsigned n)
{
    qsort(v, n, sizeof(*v), cmp_double);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

int
main(int argc, char **argv)
{
    unsigned rounds = argc > 1 ? (unsigned)strtoul(argv[1], NULL, 10) : 11;
    unsigned rpcs = argc > 2 ? (unsigned)strtoul(argv[2], NULL, 10) : 200000;
    double on[MAX_ROUNDS], off[MAX_ROUNDS], on_ns, off_ns;
    struct gfr_rdma_conn *conn;

    if (argc > 3 || rounds < 1 || rounds > MAX_ROUNDS || rpcs < 1) {
        fprintf(stderr, "usage: trace-bench [ROUNDS (1-%d) [RPCS]]\n", MAX_ROUNDS);
        return 64;
    }
    test_conn_reset();
    conn = test_conn_new(NULL, 8, GFR_CONN_ESTABLISHED);
    conn->poller = &bench_poller;
    test_engine.trace = 1;
    round_ns(conn, rpcs); /* warm-up */
    for (unsigned r = 0; r < rounds; r++) {
        test_engine.trace = 1;
        on[r] = round_ns(conn, rpcs);
        test_engine.trace = 0;
        off[r] = round_ns(conn, rpcs);
    }
    on_ns = median(on, rounds);
    off_ns = median(off, rounds);
    printf("trace-bench: %u alternating rounds of %u RPCs, both sides' trace points\n", rounds,
           rpcs);
    printf("on_ns_per_rpc %.1f\noff_ns_per_rpc %.1f\ncost_ns_per_rpc %.1f\n", on_ns, off_ns,
           on_ns - off_ns);
    printf("ratio rpc_path_on_vs_off %.3f\n", on_ns / off_ns);
    test_conn_free(conn);
    return 0;
}
