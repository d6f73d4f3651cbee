/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Transfers (lib/engine/rdma-transfer.c) on a connection built by hand: at most
 * rdma-depth READs or WRITEs in flight, each completion letting the next
 * one go, and a transfer ending exactly once through its finished
 * callback: 0 when everything moved, -EIO when an operation failed,
 * -ECANCELED when the connection ended first.  fake-verbs.c records each
 * work request posted.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "fake-verbs.h"
#include "test-conn.h"


/* An established connection whose transfers may have depth operations in
 * flight. */
static struct gfr_rdma_conn *
make_conn(unsigned depth)
{
    test_conn_reset();
    test_engine.opts.rdma_depth = depth;
    return test_conn_new(NULL, 8, GFR_CONN_ESTABLISHED);
}

static void
free_conn(struct gfr_rdma_conn *conn)
{
    test_conn_free(conn);
}

/* Completes the posted work request i as the poller would: the
 * connection's reference for it is dropped by the dispatcher. */
static void
complete(struct gfr_rdma_conn *conn, unsigned i, int ok)
{
    gfr_rdma_xfer_complete((struct gfr_rdma_wr *)(uintptr_t)fake_verbs.sent[i].wr_id, ok);
    gfr_rdma_conn_put(conn);
}

static void
test_no_more_than_rdma_depth_are_in_flight(void **state)
{
    struct gfr_rdma_conn *conn = make_conn(2);

    (void)state;
    test_conn_start_pull(conn, 5);
    assert_int_equal(fake_verbs.posts, 2);
    assert_int_equal(conn->rdma_inflight, 2);
    assert_int_equal(fake_verbs.sent[0].opcode, IBV_WR_RDMA_READ);
    assert_int_equal(fake_verbs.sent[1].wr.rdma.remote_addr, 0x20000);
    for (unsigned i = 0; i < 5; i++) {
        assert_int_equal(test_pulls_finished, 0);
        complete(conn, i, 1);
        assert_true(conn->rdma_inflight <= 2);
    }
    assert_int_equal(fake_verbs.posts, 5);
    assert_int_equal(test_pulls_finished, 1);
    assert_int_equal(test_pull_status, 0);
    assert_int_equal(conn->rdma_inflight, 0);
    assert_int_equal(conn->outstanding, 1); /* the CM side's only */
    free_conn(conn);
}

/* A failed operation fails the transfer, once, after the operations in
 * flight have completed; nothing more is posted on a failing connection. */
static void
test_a_failed_operation_ends_the_transfer_with_eio(void **state)
{
    struct gfr_rdma_conn *conn = make_conn(4);

    (void)state;
    test_conn_start_pull(conn, 3);
    assert_int_equal(fake_verbs.posts, 3);
    complete(conn, 0, 1);
    complete(conn, 1, 0);
    assert_int_equal(test_pulls_finished, 0);
    complete(conn, 2, 0);
    assert_int_equal(test_pulls_finished, 1);
    assert_int_equal(test_pull_status, -EIO);
    free_conn(conn);
}

/* A transfer still waiting to post when its connection ends is ended by
 * gfr_rdma_xfers_release_all, with -ECANCELED. */
static void
test_the_end_of_a_connection_cancels_what_was_not_posted(void **state)
{
    struct gfr_rdma_conn *conn = make_conn(1);

    (void)state;
    test_conn_start_pull(conn, 3);
    gfr_rdma_conn_fail(conn, -EIO); /* also fake_verbs.posts the drain */
    complete(conn, 0, 0);
    for (unsigned i = 1; i < fake_verbs.posts; i++)
        assert_int_not_equal(fake_verbs.sent[i].opcode, IBV_WR_RDMA_READ);
    assert_int_equal(test_pulls_finished, 0);
    gfr_rdma_xfers_release_all(conn);
    assert_int_equal(test_pulls_finished, 1);
    assert_int_equal(test_pull_status, -ECANCELED);
    free_conn(conn);
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_no_more_than_rdma_depth_are_in_flight),
        cmocka_unit_test(test_a_failed_operation_ends_the_transfer_with_eio),
        cmocka_unit_test(test_the_end_of_a_connection_cancels_what_was_not_posted),
    };

    return cmocka_run_group_tests_name("rdma-transfer", tests, NULL, NULL);
}
