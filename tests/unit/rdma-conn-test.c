/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * A connection's setup (lib/engine/rdma-conn.c) where providers differ: the QP's
 * inline size, stepped down while the provider refuses it and never
 * lowered for the device's other QPs; the InfiniBand-only ACK timeout;
 * and the credits both sides start from once the parameters are agreed.
 * fake-verbs.c plays the provider (rdma_create_qp refuses sizes above a
 * limit, or fails outright).
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <cmocka.h>
#include <urcu/uatomic.h>

#include "fake-verbs.h"
#include "test-conn.h"

static struct gfr_rdma_poller poller;
static struct rdma_cm_id cm_id;

/* A connection in CONNECTING whose QP is not yet made. */
static struct gfr_rdma_conn *
make_conn(void)
{
    struct gfr_rdma_conn *conn;

    test_conn_reset();
    test_dev.max_inline = 256;
    conn = test_conn_new(NULL, 8, GFR_CONN_CONNECTING);
    memset(&cm_id, 0, sizeof(cm_id));
    cm_id.verbs = &fake_ctx;
    conn->id = &cm_id;
    conn->poller = &poller;
    conn->qp = NULL;
    return conn;
}

/* siw takes 80 bytes of inline data and refuses more with EINVAL: the QP
 * gets the most the provider takes, not none at all. */
static void
test_inline_steps_down_to_what_the_provider_takes(void **state)
{
    struct gfr_rdma_conn *conn = make_conn();

    (void)state;
    fake_verbs.qp_inline_limit = 80;
    assert_int_equal(gfr_rdma_conn_create_qp(conn), 0);
    assert_ptr_equal(conn->qp, &fake_qp);
    assert_int_equal(conn->max_inline, 80);
    assert_int_equal(fake_verbs.create_qp_inline[0], 256);
    assert_int_equal(fake_verbs.create_qp_inline[fake_verbs.create_qp_calls - 1], 80);
    /* Each QP asks afresh: one refusal lowers nothing for the device. */
    assert_int_equal(test_dev.max_inline, 256);
    test_conn_free(conn);
}

/* A provider that takes no inline data at all still gets its QP. */
static void
test_a_provider_without_inline_gets_a_qp(void **state)
{
    struct gfr_rdma_conn *conn = make_conn();

    (void)state;
    fake_verbs.qp_inline_limit = 1; /* refuses every size but 0 (and 1) */
    assert_int_equal(gfr_rdma_conn_create_qp(conn), 0);
    assert_int_equal(conn->max_inline, 0);
    test_conn_free(conn);
}

/* A QP refused for another reason (out of memory) is not retried with
 * less inline data, and the next connection asks for the full size. */
static void
test_only_a_refused_size_steps_down(void **state)
{
    struct gfr_rdma_conn *conn = make_conn();

    (void)state;
    fake_verbs.create_qp_errno = ENOMEM;
    assert_int_equal(gfr_rdma_conn_create_qp(conn), -ENOMEM);
    assert_int_equal(fake_verbs.create_qp_calls, 1);
    assert_null(conn->qp);
    fake_verbs.create_qp_errno = 0;
    assert_int_equal(gfr_rdma_conn_create_qp(conn), 0);
    assert_int_equal(fake_verbs.create_qp_inline[1], 256);
    assert_int_equal(conn->max_inline, 256);
    test_conn_free(conn);
}

/* qp-timeout is an InfiniBand transport attribute: set on RoCE and IB,
 * not on iWARP, whose liveness is TCP's. */
static void
test_the_ack_timeout_is_set_only_where_it_means_something(void **state)
{
    struct gfr_rdma_conn *conn = make_conn();

    (void)state;
    assert_int_equal(gfr_rdma_conn_create_qp(conn), 0);
    assert_int_equal(fake_verbs.ack_timeouts_set, 1);
    conn->qp = NULL;
    test_dev.iwarp = 1;
    assert_int_equal(gfr_rdma_conn_create_qp(conn), 0);
    assert_int_equal(fake_verbs.ack_timeouts_set, 1);
    test_conn_free(conn);
}

/* Both sides start from the agreed window: a peer that agreed to fewer
 * credits than we have buffers may send only that many, counting what it
 * sent before the agreement was applied here. */
static void
test_the_peer_starts_from_the_agreed_window(void **state)
{
    struct gfr_rdma_conn *conn;
    struct gfr_cm_params peer;

    (void)state;
    test_conn_reset();
    test_engine.opts.credits = 32;
    conn = test_conn_new(NULL, 32, GFR_CONN_CONNECTING);
    gfr_rdma_conn_local_params(&test_engine.opts, &peer);
    peer.credits = 8;

    /* Two messages came before the parameters were applied. */
    pthread_mutex_lock(&conn->lock);
    assert_int_equal(gfr_credits_on_receive(&conn->credits, 0), 0);
    assert_int_equal(gfr_credits_on_receive(&conn->credits, 0), 0);
    pthread_mutex_unlock(&conn->lock);

    assert_int_equal(gfr_rdma_conn_negotiate(conn, &peer), 0);
    assert_int_equal(conn->agreed.credits, 8);
    assert_int_equal(conn->credits.window, 8);
    assert_int_equal(conn->credits.send_avail, 8);
    assert_int_equal(conn->credits.peer_avail, 6);

    /* Six more are fine; a seventh without a grant breaks the protocol. */
    pthread_mutex_lock(&conn->lock);
    for (int i = 0; i < 6; i++)
        assert_int_equal(gfr_credits_on_receive(&conn->credits, 0), 0);
    assert_int_equal(gfr_credits_on_receive(&conn->credits, 0), -EPROTO);
    pthread_mutex_unlock(&conn->lock);
    test_conn_free(conn);
}

/* The keepalive probe: a zero-length RDMA WRITE where the adapter's
 * acknowledgement proves the peer alive (InfiniBand, RoCE).  On iWARP a
 * WRITE proves nothing and siw mishandles a zero-length READ: there the
 * probe reads the one byte the peer offered for it, into the device's
 * sink, registered with the remote write an iWARP sink needs; a peer that
 * offered none is not probed (TCP finds a silent one). */
static void
test_the_keepalive_probe_only_where_it_proves_the_peer_alive(void **state)
{
    struct gfr_rdma_conn *conn;
    uint8_t sink[8];
    struct ibv_mr *sink_mr;
    struct ibv_pd pd = {.context = &fake_ctx};

    (void)state;
    test_conn_reset();
    conn = test_conn_new(NULL, 8, GFR_CONN_ESTABLISHED);
    gfr_rdma_conn_keepalive(conn);
    assert_int_equal(fake_verbs.posts, 1);
    assert_int_equal(fake_verbs.sent[0].opcode, IBV_WR_RDMA_WRITE);
    assert_int_equal(fake_verbs.sent[0].num_sge, 0);
    test_conn_free(conn);

    test_conn_reset();
    test_dev.iwarp = 1;
    sink_mr = ibv_reg_mr(&pd, sink, sizeof(sink),
                         IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
    assert_non_null(sink_mr);
    test_dev.probe_sink_mr = sink_mr;
    conn = test_conn_new(NULL, 8, GFR_CONN_ESTABLISHED);
    gfr_rdma_conn_keepalive(conn); /* the peer offered no byte */
    assert_int_equal(fake_verbs.posts, 0);
    assert_int_equal(conn->state, GFR_CONN_ESTABLISHED);
    conn->peer_probe_addr = 0x7f0000004000ull;
    conn->peer_probe_rkey = 0x99;
    gfr_rdma_conn_keepalive(conn);
    assert_int_equal(fake_verbs.posts, 1);
    assert_int_equal(fake_verbs.sent[0].opcode, IBV_WR_RDMA_READ);
    assert_int_equal(fake_verbs.sent[0].wr.rdma.remote_addr, 0x7f0000004000ull);
    assert_int_equal(fake_verbs.sent[0].wr.rdma.rkey, 0x99);
    assert_int_equal(fake_verbs.sent[0].num_sge, 1);
    assert_int_equal(fake_verbs.sent_sge[0].length, 1);
    assert_int_equal(fake_verbs.sent_sge[0].lkey, sink_mr->lkey);
    assert_int_equal(fake_verbs.access_of[sink_mr->lkey],
                     IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
    assert_true(fake_verbs.sent[0].send_flags & IBV_SEND_SIGNALED);
    test_conn_free(conn);
    ibv_dereg_mr(sink_mr);
}

/*
 * Before a QP on the SRQ is destroyed, the receive buffers it took must
 * all come back through the CQ (mlx5 drops a destroyed QP's unpolled
 * completions, and their buffers with them): the QP reports its last
 * work request (or 100 ms pass: rxe never does), then the poller makes a
 * pass over the CQ (two polls that drained it after it was asked).
 */
static void
test_a_qp_on_the_srq_waits_for_its_last_receives(void **state)
{
    struct gfr_rdma_srq srq = {0};
    struct gfr_rdma_conn *conn = make_conn();
    uint64_t count;

    (void)state;
    test_dev.srq = &srq;
    conn->qp = &fake_qp;
    poller.kick_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    poller.drained_polls = 7;

    assert_int_equal(gfr_rdma_conn_quiesce(conn, 1000), 0);
    assert_int_equal(gfr_rdma_conn_quiesce(conn, 2000), 0);
    assert_int_equal(read(poller.kick_fd, &count, sizeof(count)), -1); /* not yet asked */
    uatomic_set(&conn->last_wqe_reached, 1);
    assert_int_equal(gfr_rdma_conn_quiesce(conn, 3000), 0);
    assert_int_equal(read(poller.kick_fd, &count, sizeof(count)), sizeof(count)); /* kicked */
    poller.drained_polls++; /* a poll that may have begun before the ask */
    assert_int_equal(gfr_rdma_conn_quiesce(conn, 4000), 0);
    poller.drained_polls++;
    assert_int_equal(gfr_rdma_conn_quiesce(conn, 5000), 1);

    /* No event within 10 s: the pass is asked for all the same, and the
     * device's next QPs wait 100 ms (it may raise none); so do those of a
     * provider known to raise none (rxe). */
    for (int k = 0; k < 3; k++) {
        uint64_t wait_ms = k ? 100 : 10000;

        test_dev.no_last_wqe_event = k == 2;
        if (k == 2)
            test_dev.last_wqe_missed = 0;
        conn->quiesce = GFR_QUIESCE_START;
        conn->last_wqe_reached = 0;
        assert_int_equal(gfr_rdma_conn_quiesce(conn, 0), 0);
        assert_int_equal(gfr_rdma_conn_quiesce(conn, (wait_ms - 1) * 1000000ull), 0);
        assert_int_equal(conn->quiesce, GFR_QUIESCE_LAST_WQE);
        assert_int_equal(gfr_rdma_conn_quiesce(conn, wait_ms * 1000000ull), 0);
        assert_int_equal(conn->quiesce, GFR_QUIESCE_CQ_PASS);
        assert_int_equal(test_dev.last_wqe_missed, k < 2);
    }
    conn->quiesce = GFR_QUIESCE_START;
    assert_int_equal(gfr_rdma_conn_quiesce(conn, 0), 0);
    assert_int_equal(gfr_rdma_conn_quiesce(conn, 100 * 1000000ull), 0);
    assert_int_equal(conn->quiesce, GFR_QUIESCE_CQ_PASS);
    /* A poller that never polls again: given up after 2 s, and said. */
    assert_int_equal(gfr_rdma_conn_quiesce(conn, 2099 * 1000000ull), 0);
    assert_int_equal(gfr_rdma_conn_quiesce(conn, 2100 * 1000000ull), 1);

    /* A device removed or dead raises no more events: the pass is asked
     * for at once. */
    test_dev.no_last_wqe_event = 0;
    test_dev.last_wqe_missed = 0;
    for (int k = 0; k < 2; k++) {
        test_dev.gone = k == 0;
        test_dev.async_closed = k == 1;
        conn->quiesce = GFR_QUIESCE_START;
        assert_int_equal(gfr_rdma_conn_quiesce(conn, 0), 0);
        assert_int_equal(conn->quiesce, GFR_QUIESCE_CQ_PASS);
        assert_int_equal(test_dev.last_wqe_missed, 0);
    }
    test_dev.gone = 0;
    test_dev.async_closed = 0;

    /* Without an SRQ, receives are the connection's own: no wait. */
    test_dev.srq = NULL;
    conn->quiesce = GFR_QUIESCE_START;
    assert_int_equal(gfr_rdma_conn_quiesce(conn, 0), 1);
    close(poller.kick_fd);
    conn->qp = NULL;
    test_conn_free(conn);
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_inline_steps_down_to_what_the_provider_takes),
        cmocka_unit_test(test_a_provider_without_inline_gets_a_qp),
        cmocka_unit_test(test_only_a_refused_size_steps_down),
        cmocka_unit_test(test_the_ack_timeout_is_set_only_where_it_means_something),
        cmocka_unit_test(test_the_peer_starts_from_the_agreed_window),
        cmocka_unit_test(test_the_keepalive_probe_only_where_it_proves_the_peer_alive),
        cmocka_unit_test(test_a_qp_on_the_srq_waits_for_its_last_receives),
    };

    return cmocka_run_group_tests_name("rdma-conn", tests, NULL, NULL);
}
