/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The trace points of rdma-trace.c and the engine snapshot of
 * rdma-stats.c: a client's call and a server's call each end their stages
 * once, nothing is recorded with latency-stats off, only requests and
 * replies read the clock as they are posted, a call whose slot a
 * newer one takes is counted untraced, and snapshots taken while another
 * thread records calls see counts that only grow and add up at the end
 * (run under ThreadSanitizer by ./scripts/check).
 */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "fake-verbs.h"
#include "test-conn.h"

static struct gfr_rdma_poller test_poller;

static struct gfr_rdma_conn *
make_conn(void)
{
    struct gfr_rdma_conn *conn;

    test_conn_reset();
    memset(&test_poller, 0, sizeof(test_poller));
    conn = test_conn_new(NULL, 8, GFR_CONN_ESTABLISHED);
    conn->poller = &test_poller;
    return conn;
}

static uint64_t
count(enum gfr_rdma_stage stage)
{
    struct gfr_hist snap;

    gfr_hist_snapshot(&test_engine.stage[stage], &snap);
    return snap.count;
}

/* Our request xid is submitted and its SEND posted, as rdma-submit.c and
 * rdma-tx.c do it (the post through a fake ctx). */
static void
request_out(struct gfr_rdma_conn *conn, uint32_t xid, struct gfr_rdma_wr *ctx)
{
    struct gfr_wire_hdr hdr = {.type = GFR_WIRE_MSG, .xid = xid};
    uint8_t buf[GFR_WIRE_HDR_SIZE];

    assert_int_equal(gfr_wire_encode(&hdr, NULL, NULL, buf, sizeof(buf)), GFR_WIRE_HDR_SIZE);
    pthread_mutex_lock(&conn->lock);
    gfr_rdma_trace_submit_locked(conn, xid, 0);
    gfr_rdma_trace_posted_locked(conn, ctx, buf, gfr_rdma_trace_stamp(conn->engine, buf));
    pthread_mutex_unlock(&conn->lock);
}

/* A data message arrives and goes through the stages of an inline one. */
static void
arrive_and_deliver(struct gfr_rdma_conn *conn, uint32_t xid, int is_reply)
{
    struct gfr_rdma_rxmsg m = {.state = GFR_RX_RECEIVED, .conn = conn, .data = 1,
                               .rx = {.xid = xid, .is_reply = is_reply}};

    pthread_mutex_lock(&conn->lock);
    assert_int_equal(gfr_rdma_rx_advance(&m, GFR_RX_CHECKED), 0);
    pthread_mutex_unlock(&conn->lock);
    assert_int_equal(gfr_rdma_rx_advance(&m, GFR_RX_DELIVERING), 0);
    assert_int_equal(gfr_rdma_rx_advance(&m, GFR_RX_OWNED), 0);
    assert_int_equal(gfr_rdma_rx_advance(&m, GFR_RX_RELEASED), 0);
}

static void
test_a_client_call_ends_each_client_stage_once(void **state)
{
    struct gfr_rdma_conn *conn = make_conn();
    struct gfr_rdma_wr ctx = {.conn = conn};

    (void)state;
    request_out(conn, 5, &ctx);
    assert_int_equal(ctx.trace_stage, GFR_STAGE_REQ_WIRE);
    pthread_mutex_lock(&conn->lock);
    gfr_rdma_trace_send_done_locked(conn, &ctx);
    pthread_mutex_unlock(&conn->lock);
    test_poller.woke = 1; /* the reply wakes the poller */
    arrive_and_deliver(conn, 5, 1);

    for (int s = 0; s < GFR_STAGE_COUNT; s++) {
        int client = s == GFR_STAGE_REQ_QUEUE || s == GFR_STAGE_REQ_WIRE ||
                     s == GFR_STAGE_RTT_SLEEPING || s == GFR_STAGE_REPLY_DISPATCH ||
                     s == GFR_STAGE_REPLY_OWNER || s == GFR_STAGE_CALL;

        assert_int_equal(count(s), client ? 1 : 0);
    }
    /* The call is over: a second reply with its xid times nothing more. */
    arrive_and_deliver(conn, 5, 1);
    assert_int_equal(count(GFR_STAGE_CALL), 1);
    assert_int_equal(count(GFR_STAGE_REPLY_OWNER), 2);
    test_conn_free(conn);
}

static void
test_a_server_call_ends_each_server_stage_once(void **state)
{
    struct gfr_rdma_conn *conn = make_conn();
    struct gfr_wire_hdr hdr = {.type = GFR_WIRE_REPLY, .xid = 9};
    struct iovec iov = {"reply", 5};

    (void)state;
    arrive_and_deliver(conn, 9, 0);
    pthread_mutex_lock(&conn->lock);
    gfr_rdma_trace_submit_locked(conn, 9, 1);
    assert_int_equal(gfr_rdma_send_locked(conn, &hdr, NULL, NULL, &iov, 1, NULL), 0);
    pthread_mutex_unlock(&conn->lock);
    assert_int_equal(fake_verbs.posts, 1);

    for (int s = 0; s < GFR_STAGE_COUNT; s++) {
        int server = s == GFR_STAGE_REQ_DISPATCH || s == GFR_STAGE_REQ_OWNER ||
                     s == GFR_STAGE_SERVE || s == GFR_STAGE_REPLY_QUEUE;

        assert_int_equal(count(s), server ? 1 : 0);
    }
    gfr_rdma_send_complete((struct gfr_rdma_wr *)(uintptr_t)fake_verbs.sent[0].wr_id, 1);
    assert_int_equal(count(GFR_STAGE_REPLY_WIRE), 1);
    test_conn_free(conn);
}

static void
test_nothing_is_timed_with_latency_stats_off(void **state)
{
    struct gfr_rdma_conn *conn = make_conn();
    struct gfr_rdma_wr ctx = {.conn = conn};

    (void)state;
    test_engine.trace = 0;
    request_out(conn, 5, &ctx);
    arrive_and_deliver(conn, 5, 1);
    arrive_and_deliver(conn, 6, 0);
    for (int s = 0; s < GFR_STAGE_COUNT; s++)
        assert_int_equal(count(s), 0);
    test_conn_free(conn);
}

/* Only a message a stage ends at reads the clock as it is posted: a
 * CREDIT update, sent as often as requests, is not stamped. */
static void
test_only_requests_and_replies_are_stamped(void **state)
{
    struct gfr_rdma_conn *conn = make_conn();
    uint8_t buf[GFR_WIRE_HDR_SIZE];
    const uint8_t types[] = {GFR_WIRE_MSG, GFR_WIRE_REPLY, GFR_WIRE_CREDIT};

    (void)state;
    for (size_t i = 0; i < sizeof(types); i++) {
        struct gfr_wire_hdr hdr = {.type = types[i], .xid = 1};

        assert_int_equal(gfr_wire_encode(&hdr, NULL, NULL, buf, sizeof(buf)), GFR_WIRE_HDR_SIZE);
        if (types[i] == GFR_WIRE_CREDIT)
            assert_int_equal(gfr_rdma_trace_stamp(conn->engine, buf), 0);
        else
            assert_int_not_equal(gfr_rdma_trace_stamp(conn->engine, buf), 0);
    }
    test_engine.trace = 0;
    buf[1] = GFR_WIRE_MSG;
    assert_int_equal(gfr_rdma_trace_stamp(conn->engine, buf), 0);
    test_conn_free(conn);
}

static void
test_a_displaced_call_is_untraced_not_mistimed(void **state)
{
    struct gfr_rdma_conn *conn = make_conn();
    struct gfr_rdma_wr ctx = {.conn = conn};

    (void)state;
    request_out(conn, 3, &ctx);
    request_out(conn, 3 + GFR_RDMA_TRACE_CALLS, &ctx); /* the same slot */
    assert_int_equal(test_engine.untraced, 1);
    arrive_and_deliver(conn, 3, 1); /* its stamps are gone */
    assert_int_equal(count(GFR_STAGE_CALL), 0);
    arrive_and_deliver(conn, 3 + GFR_RDMA_TRACE_CALLS, 1);
    assert_int_equal(count(GFR_STAGE_CALL), 1);
    test_conn_free(conn);
}

#define CALLS 20000

static void *
caller(void *arg)
{
    struct gfr_rdma_conn *conn = arg;
    struct gfr_rdma_wr ctx = {.conn = conn};

    for (uint32_t xid = 1; xid <= CALLS; xid++) {
        request_out(conn, xid, &ctx);
        arrive_and_deliver(conn, xid, 1);
        arrive_and_deliver(conn, xid, 0); /* and a request from the peer */
    }
    return NULL;
}

static void
test_snapshots_while_calls_are_recorded(void **state)
{
    struct gfr_rdma_conn *conn = make_conn();
    struct gfr_rdma_snapshot *snap;
    uint64_t last = 0;
    pthread_t thread;

    (void)state;
    assert_int_equal(pthread_create(&thread, NULL, caller, conn), 0);
    do {
        assert_int_equal(gfr_rdma_snapshot(&test_engine, &snap), 0);
        assert_int_equal(snap->nconns, 1);
        assert_int_equal(snap->latency_stats, 1);
        assert_true(snap->stage[GFR_STAGE_CALL].count >= last);
        assert_true(snap->stage[GFR_STAGE_CALL].count <= CALLS);
        last = snap->stage[GFR_STAGE_CALL].count;
        gfr_rdma_snapshot_free(snap);
    } while (last < CALLS);
    pthread_join(thread, NULL);
    assert_int_equal(gfr_rdma_snapshot(&test_engine, &snap), 0);
    assert_int_equal(snap->stage[GFR_STAGE_CALL].count, CALLS);
    assert_int_equal(snap->stage[GFR_STAGE_REQ_OWNER].count, CALLS);
    assert_int_equal(snap->stage[GFR_STAGE_REPLY_OWNER].count, CALLS);
    /* The peer's requests were never answered: each took the slot of one
     * GFR_RDMA_TRACE_CALLS before it. */
    assert_int_equal(snap->untraced, CALLS - GFR_RDMA_TRACE_CALLS);
    assert_string_equal(snap->conns[0].state, "ESTABLISHED");
    assert_int_equal(snap->conns[0].credits_window, 8);
    gfr_rdma_snapshot_free(snap);
    test_conn_free(conn);
}

static void
test_every_stage_has_a_name(void **state)
{
    (void)state;
    for (int s = 0; s < GFR_STAGE_COUNT; s++) {
        assert_non_null(gfr_rdma_stage_name(s));
        assert_non_null(gfr_rdma_stage_about(s));
    }
    assert_null(gfr_rdma_stage_name(GFR_STAGE_COUNT));
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_a_client_call_ends_each_client_stage_once),
        cmocka_unit_test(test_a_server_call_ends_each_server_stage_once),
        cmocka_unit_test(test_nothing_is_timed_with_latency_stats_off),
        cmocka_unit_test(test_only_requests_and_replies_are_stamped),
        cmocka_unit_test(test_a_displaced_call_is_untraced_not_mistimed),
        cmocka_unit_test(test_snapshots_while_calls_are_recorded),
        cmocka_unit_test(test_every_stage_has_a_name),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
