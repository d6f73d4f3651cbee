/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Completion dispatch (lib/engine/rdma-cq.c) over stubbed verbs: a completion is
 * traced to its connection by QP number and checked against what that
 * connection posted before its wr_id is followed, so a provider's
 * duplicate completion (siw flushes a READ it has queued but not started
 * twice) or a late one changes nothing and is said; and what a failed one
 * ends its connection with.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <cmocka.h>

#include "fake-verbs.h"
#include "test-conn.h"

#define QP_NUM 33

static char logged[512];
static struct gfr_rdma_poller poller;

static void
capture_log(const char *msg, void *arg)
{
    (void)arg;
    snprintf(logged, sizeof(logged), "%s", msg);
}

/* An established connection whose completions arrive on QP_NUM. */
static struct gfr_rdma_conn *
make_conn(void)
{
    struct gfr_rdma_conn *conn;

    test_conn_reset();
    test_engine.opts.rdma_depth = 4;
    conn = test_conn_new(NULL, 8, GFR_CONN_ESTABLISHED);
    test_conn_find_by_qp(conn, QP_NUM);
    if (poller.kick_fd > 0)
        close(poller.kick_fd);
    memset(&poller, 0, sizeof(poller));
    poller.dev = &test_dev;
    poller.kick_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    assert_true(poller.kick_fd > 0);
    __cds_wfcq_init(&poller.injected_head, &poller.injected_tail);
    conn->poller = &poller;
    test_engine.on_wc = gfr_rdma_cq_complete;
    logged[0] = 0;
    gfr_rdma_set_log(capture_log, NULL);
    return conn;
}

static void
free_conn(struct gfr_rdma_conn *conn)
{
    gfr_rdma_set_log(NULL, NULL);
    test_conn_free(conn);
}

static void
complete(uint64_t wr_id, enum ibv_wc_status status, uint32_t qp_num)
{
    struct ibv_wc wc = {.wr_id = wr_id, .status = status, .qp_num = qp_num};

    gfr_rdma_cq_complete(&poller, &wc);
}

/* A SEND of conn's, signaled and posted; its wr_id. */
static uint64_t
post_send(struct gfr_rdma_conn *conn)
{
    struct ibv_sge sge = {0};
    struct ibv_send_wr wr = {.opcode = IBV_WR_SEND, .send_flags = IBV_SEND_SIGNALED,
                             .sg_list = &sge, .num_sge = 1};
    struct gfr_rdma_wr *ctx;

    pthread_mutex_lock(&conn->lock);
    ctx = &conn->send_wr[conn->free_slots[--conn->nfree]];
    ctx->kind = GFR_WR_SEND;
    wr.wr_id = (uintptr_t)ctx;
    assert_int_equal(gfr_rdma_qp_post_locked(conn, ctx, &wr), 0);
    pthread_mutex_unlock(&conn->lock);
    return wr.wr_id;
}

/* siw, at a close: a READ in its ORQ that had not started is flushed from
 * the ORQ and again as the pending WQE.  The transfer ends once, when its
 * two READs have completed; the third completion is ignored and said,
 * without reading the freed transfer or dropping a reference it no longer
 * holds. */
static void
test_a_read_flushed_twice_ends_its_transfer_once(void **state)
{
    struct gfr_rdma_conn *conn = make_conn();
    uint64_t first;
    unsigned refs;

    (void)state;
    test_conn_start_pull(conn, 2);
    assert_int_equal(fake_verbs.posts, 2);
    first = fake_verbs.sent[0].wr_id;
    refs = conn->outstanding;
    complete(first, IBV_WC_WR_FLUSH_ERR, QP_NUM);
    complete(fake_verbs.sent[1].wr_id, IBV_WC_WR_FLUSH_ERR, QP_NUM);
    assert_int_equal(test_pulls_finished, 1);
    assert_int_equal(test_pull_status, -EIO);
    assert_int_equal(conn->outstanding, refs - 2);
    assert_int_equal(conn->rdma_inflight, 0);

    complete(first, IBV_WC_WR_FLUSH_ERR, QP_NUM);
    assert_int_equal(test_pulls_finished, 1);
    assert_int_equal(conn->outstanding, refs - 2);
    assert_int_equal(conn->rdma_inflight, 0);
    assert_non_null(strstr(logged, "QP 33 completed a work request that is not posted "
                                   "(Work Request Flushed Error): a duplicate completion; "
                                   "ignored"));
    free_conn(conn);
}

/* A signaled SEND completed twice frees its slot once: a slot freed twice
 * would be handed to two messages at once. */
static void
test_a_send_completed_twice_frees_its_slot_once(void **state)
{
    struct gfr_rdma_conn *conn = make_conn();
    uint64_t wr_id = post_send(conn);
    uint32_t free_before = conn->nfree;
    unsigned refs = conn->outstanding;

    (void)state;
    complete(wr_id, IBV_WC_SUCCESS, QP_NUM);
    assert_int_equal(conn->nfree, free_before + 1);
    assert_int_equal(conn->outstanding, refs - 1);
    complete(wr_id, IBV_WC_SUCCESS, QP_NUM);
    assert_int_equal(conn->nfree, free_before + 1);
    assert_int_equal(conn->outstanding, refs - 1);
    assert_non_null(strstr(logged, "QP 33 completed a work request that is not posted "
                                   "(success): a duplicate completion; ignored"));
    free_conn(conn);
}

/* siw completes a SEND whose TCP stream the peer's close or reset cut off
 * (even one already handed to TCP) with a local QP operation error: on
 * iWARP the connection ends as reset, which a server expects of a client
 * that goes away; elsewhere that status is a fault. */
static void
test_on_iwarp_a_broken_stream_ends_the_connection_as_reset(void **state)
{
    struct gfr_rdma_conn *conn = make_conn();

    (void)state;
    complete(post_send(conn), IBV_WC_LOC_QP_OP_ERR, QP_NUM);
    assert_int_equal(conn->reason, -EIO);
    assert_null(strstr(logged, "on iWARP"));
    free_conn(conn);

    conn = make_conn();
    test_dev.iwarp = 1;
    complete(post_send(conn), IBV_WC_LOC_QP_OP_ERR, QP_NUM);
    assert_int_equal(conn->reason, -ECONNRESET);
    assert_non_null(strstr(logged, "a SEND work request failed: local QP operation error "
                                   "(vendor error 0): on iWARP, the TCP connection under the "
                                   "QP closed or was reset; disconnecting"));
    free_conn(conn);
}

/* siw leaves a work request posted to a QP already in error (its peer
 * closed) in its ring, where no flush reaches it.  Once the connection's
 * CM side is done and connect-timeout-ms has passed, what it still has
 * posted is completed as flushed by its poller: the reference goes, and
 * the connection can be freed.  Once: a second call finds nothing. */
static void
test_work_the_provider_never_completes_is_flushed_by_the_poller(void **state)
{
    struct gfr_rdma_conn *conn = make_conn();
    unsigned refs;

    (void)state;
    post_send(conn);
    refs = conn->outstanding;
    pthread_mutex_lock(&conn->lock);
    gfr_rdma_conn_fail_locked(conn, 0);
    pthread_mutex_unlock(&conn->lock);
    gfr_rdma_cq_flush_stranded(conn);
    assert_true(conn->stranded_flushed);
    assert_non_null(strstr(logged, "QP 33: 1 work request(s) not completed 5000 ms after the "
                                   "connection failed, its QP in the error state: the "
                                   "provider will not complete them; completing them as "
                                   "flushed"));
    assert_int_equal(conn->outstanding, refs); /* the poller has not run yet */
    gfr_rdma_poller_run_injected(&poller);
    assert_int_equal(conn->outstanding, refs - 1);
    assert_int_equal(gfr_rdma_sq_outstanding_locked(conn), 0);

    logged[0] = 0;
    gfr_rdma_cq_flush_stranded(conn);
    gfr_rdma_poller_run_injected(&poller);
    assert_int_equal(conn->outstanding, refs - 1);
    assert_string_equal(logged, "");
    free_conn(conn);
}

/* A flush while the connection is still up: the QP went to error by the
 * peer's doing.  With READs of ours in flight the peer cut them off (an
 * iWARP peer refuses a READ with a TERMINATE that only the kernel log
 * shows): said, and the connection ends as reset.  With none it ends in
 * order, the QP's error said. */
static void
test_a_flush_under_reads_in_flight_ends_the_connection_as_reset(void **state)
{
    struct gfr_rdma_conn *conn = make_conn();

    (void)state;
    test_conn_start_pull(conn, 2);
    complete(fake_verbs.sent[0].wr_id, IBV_WC_WR_FLUSH_ERR, QP_NUM);
    assert_int_equal(conn->reason, -ECONNRESET);
    assert_non_null(strstr(logged, "the connection closed under 2 RDMA READ(s) of ours in "
                                   "flight (the peer closed it or refused one; an iWARP peer's "
                                   "TERMINATE shows only in the kernel log); disconnecting"));
    complete(fake_verbs.sent[1].wr_id, IBV_WC_WR_FLUSH_ERR, QP_NUM);
    assert_int_equal(test_pulls_finished, 1);
    free_conn(conn);

    conn = make_conn();
    complete(post_send(conn), IBV_WC_WR_FLUSH_ERR, QP_NUM);
    assert_int_equal(conn->reason, 0);
    assert_non_null(strstr(logged, "QP 33 went to the error state with no error completion of "
                                   "ours"));
    free_conn(conn);
}

/* A completion of a QP no live connection has (its connection ended, and
 * its memory may be gone) is said and ignored: its wr_id is never read. */
static void
test_a_completion_of_an_unknown_qp_is_never_followed(void **state)
{
    struct gfr_rdma_conn *conn = make_conn();
    struct gfr_rdma_wr *bogus = (struct gfr_rdma_wr *)(uintptr_t)0x10; /* unreadable */
    unsigned refs = conn->outstanding;

    (void)state;
    complete((uintptr_t)bogus, IBV_WC_WR_FLUSH_ERR, QP_NUM + 1);
    assert_int_equal(conn->outstanding, refs);
    assert_non_null(strstr(logged, "fake0: a completion of QP 34 (Work Request Flushed Error) "
                                   "arrived after its connection ended; ignored"));
    /* nor one that names its own QP but no work request of its own */
    complete((uintptr_t)bogus, IBV_WC_WR_FLUSH_ERR, QP_NUM);
    assert_int_equal(conn->outstanding, refs);
    assert_non_null(strstr(logged, "a duplicate completion; ignored"));
    free_conn(conn);
}

/* A shared receive buffer completed while it is not posted (its repost
 * failed, or a provider repeats a completion) is not posted again: the
 * queue would count one buffer twice. */
static void
test_a_shared_buffer_completed_twice_is_not_reposted(void **state)
{
    struct ibv_device_attr attr = {.max_srq_wr = 16};
    struct gfr_rdma_conn *conn = make_conn();
    uint64_t wr_id;
    unsigned posts;

    (void)state;
    assert_int_equal(gfr_rdma_srq_create(&test_dev, &attr), 0);
    assert_int_equal(gfr_rdma_srq_reserve(&test_dev, 1), 0);
    wr_id = fake_verbs.last_srq_wr_id;
    assert_true(wr_id & GFR_WR_ID_SRQ);
    fake_verbs.srq_post_result = ENOMEM; /* the repost fails: the buffer stays out */
    complete(wr_id, IBV_WC_WR_FLUSH_ERR, QP_NUM + 1);
    assert_non_null(strstr(logged, "reposting a shared receive buffer failed"));
    posts = fake_verbs.srq_posts;
    fake_verbs.srq_post_result = 0;
    complete(wr_id, IBV_WC_WR_FLUSH_ERR, QP_NUM + 1);
    assert_int_equal(fake_verbs.srq_posts, posts);
    assert_int_equal(test_dev.srq->posted, 0);
    assert_non_null(strstr(logged, "fake0: QP 34 completed a shared receive buffer that was "
                                   "not posted (Work Request Flushed Error): a duplicate "
                                   "completion; ignored"));
    gfr_rdma_srq_destroy(&test_dev);
    free_conn(conn);
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_a_read_flushed_twice_ends_its_transfer_once),
        cmocka_unit_test(test_a_send_completed_twice_frees_its_slot_once),
        cmocka_unit_test(test_a_completion_of_an_unknown_qp_is_never_followed),
        cmocka_unit_test(test_a_shared_buffer_completed_twice_is_not_reposted),
        cmocka_unit_test(test_on_iwarp_a_broken_stream_ends_the_connection_as_reset),
        cmocka_unit_test(test_work_the_provider_never_completes_is_flushed_by_the_poller),
        cmocka_unit_test(test_a_flush_under_reads_in_flight_ends_the_connection_as_reset),
    };

    return cmocka_run_group_tests_name("rdma-cq", tests, NULL, NULL);
}
