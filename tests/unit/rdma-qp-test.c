/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The queue-pair layer (lib/engine/rdma-qp.c) on a connection built by hand:
 * the connection's state changes (every legal one taken, every other one
 * refused), the send-queue ring that retires unsignaled SENDs, and the
 * post helper's references, over the stubbed verbs of fake-verbs.c.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif
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


static struct gfr_rdma_conn *
make_conn(enum gfr_conn_state at)
{
    test_conn_reset();
    return test_conn_new(NULL, 8, at);
}

static void
free_conn(struct gfr_rdma_conn *conn)
{
    test_conn_free(conn);
}

/* The steps enum gfr_conn_state documents, written out independently of
 * rdma-qp.c's table. */
static int
documented(enum gfr_conn_state from, enum gfr_conn_state to)
{
    if (to == GFR_CONN_DISCONNECTING)
        return from != GFR_CONN_DISCONNECTING;
    return (from == GFR_CONN_NEW && to == GFR_CONN_RESOLVING_ADDR) ||
           (from == GFR_CONN_RESOLVING_ADDR && to == GFR_CONN_RESOLVING_ROUTE) ||
           (from == GFR_CONN_RESOLVING_ROUTE && to == GFR_CONN_CONNECTING) ||
           (from == GFR_CONN_NEW && to == GFR_CONN_CONNECTING) ||
           (from == GFR_CONN_CONNECTING && to == GFR_CONN_ESTABLISHED);
}

/* A connection in state `at`, reached by legal steps from NEW. */
static struct gfr_rdma_conn *
conn_in(enum gfr_conn_state at)
{
    struct gfr_rdma_conn *conn = make_conn(at);

    assert_int_equal(gfr_rdma_conn_state(conn), at);
    return conn;
}

static void
test_every_documented_state_change_is_taken(void **state)
{
    unsigned taken = 0;

    (void)state;
    for (int from = GFR_CONN_NEW; from <= GFR_CONN_DISCONNECTING; from++)
        for (int to = GFR_CONN_NEW; to <= GFR_CONN_DISCONNECTING; to++) {
            struct gfr_rdma_conn *conn;

            if (!documented(from, to))
                continue;
            conn = conn_in(from);
            pthread_mutex_lock(&conn->lock);
            assert_int_equal(gfr_rdma_conn_set_state_locked(conn, to), 0);
            pthread_mutex_unlock(&conn->lock);
            assert_int_equal(conn->state, to);
            free_conn(conn);
            taken++;
        }
    assert_int_equal(taken, 10);
}

#ifndef GFR_DEBUG /* there a refusal stops the program, by design */
static void
test_every_other_state_change_is_refused(void **state)
{
    unsigned refused = 0;

    (void)state;
    for (int from = GFR_CONN_NEW; from <= GFR_CONN_DISCONNECTING; from++)
        for (int to = GFR_CONN_NEW; to <= GFR_CONN_DISCONNECTING + 1; to++) {
            struct gfr_rdma_conn *conn;

            if (to <= GFR_CONN_DISCONNECTING && documented(from, to))
                continue;
            conn = conn_in(from);
            pthread_mutex_lock(&conn->lock);
            assert_int_equal(gfr_rdma_conn_set_state_locked(conn, to), -EINVAL);
            pthread_mutex_unlock(&conn->lock);
            assert_int_equal(conn->state, from);
            free_conn(conn);
            refused++;
        }
    assert_int_equal(refused, 6 * 7 - 10);
}
#endif

/* A signaled completion retires the unsignaled SENDs posted before it and
 * frees their slots; the caller drops their references. */
static void
test_a_completion_retires_the_sends_before_it(void **state)
{
    struct gfr_rdma_conn *conn = make_conn(GFR_CONN_ESTABLISHED);
    struct gfr_rdma_wr *wr[3];
    uint32_t nfree = conn->nfree;

    (void)state;
    for (int i = 0; i < 3; i++) { /* three SENDs take their slots */
        wr[i] = &conn->send_wr[conn->free_slots[--conn->nfree]];
        gfr_rdma_sq_push_locked(conn, wr[i], i == 2);
    }
    assert_int_equal(gfr_rdma_sq_retire_locked(conn, wr[2]), 2);
    assert_int_equal(conn->sq_count, 0);
    /* the first two are free again; the completed one is its handler's */
    assert_int_equal(conn->nfree, nfree - 1);
    assert_int_equal(conn->free_slots[nfree - 3], wr[0]->slot);
    assert_int_equal(conn->free_slots[nfree - 2], wr[1]->slot);
    free_conn(conn);
}

/* siw completes an RDMA READ when its response arrives, after a SEND posted
 * behind it has completed.  Each completion retires its own entry and no
 * other signaled one, so every reference is dropped exactly once: before,
 * the SEND's completion retired the READ as if it were an unsignaled SEND,
 * and the READ's own completion then retired everything left, dropping
 * references that were not its own and ending the connection early. */
static void
test_completions_out_of_order_retire_each_entry_once(void **state)
{
    struct gfr_rdma_conn *conn = make_conn(GFR_CONN_ESTABLISHED);
    struct gfr_rdma_xfer *x = gfr_rdma_xfer_new(conn, 1, NULL);
    struct gfr_rdma_wr *send[2];
    uint32_t nfree = conn->nfree;

    (void)state;
    assert_non_null(x);
    pthread_mutex_lock(&conn->lock);
    gfr_rdma_sq_push_locked(conn, &x->ctx, 1); /* READ */
    for (int i = 0; i < 2; i++) {
        send[i] = &conn->send_wr[conn->free_slots[--conn->nfree]];
        gfr_rdma_sq_push_locked(conn, send[i], 1);
    }
    gfr_rdma_sq_push_locked(conn, &x->ctx, 1); /* a second READ of the transfer */
    assert_int_equal(gfr_rdma_sq_retire_locked(conn, send[1]), 0); /* the SENDs first */
    assert_int_equal(gfr_rdma_sq_retire_locked(conn, send[0]), 0);
    assert_int_equal(conn->sq_count, 4); /* the first READ holds the head */
    assert_int_equal(gfr_rdma_sq_retire_locked(conn, &x->ctx), 0);
    assert_int_equal(conn->sq_count, 1);
    assert_int_equal(gfr_rdma_sq_retire_locked(conn, &x->ctx), 0);
    assert_int_equal(conn->sq_count, 0);
    /* The SENDs' slots are their completions' to free, not the ring's. */
    assert_int_equal(conn->nfree, nfree - 2);
    pthread_mutex_unlock(&conn->lock);
    free(x);
    free_conn(conn);
}

/* Completions out of order leave done entries behind an undone head (siw
 * answers an RDMA READ, a pull's or the keepalive's, after SENDs posted
 * behind it, and those SENDs' slots are free again meanwhile): the ring
 * must take a new work request without overwriting the head.  Before, the
 * push wrapped onto the READ's entry, whose completion then matched
 * nothing (seen on siw with a probe every 20 ms). */
static void
test_a_full_ring_of_done_entries_keeps_its_head(void **state)
{
    struct gfr_rdma_conn *conn = make_conn(GFR_CONN_ESTABLISHED);
    struct gfr_rdma_wr read = {.conn = conn, .kind = GFR_WR_RDMA};
    uint32_t size = conn->sq_size;
    struct gfr_rdma_wr *send = calloc(size, sizeof(*send));

    (void)state;
    assert_non_null(send);
    pthread_mutex_lock(&conn->lock);
    gfr_rdma_sq_push_locked(conn, &read, 1);
    for (uint32_t i = 0; i + 1 < size; i++) {
        send[i] = (struct gfr_rdma_wr){.conn = conn, .kind = GFR_WR_SEND};
        gfr_rdma_sq_push_locked(conn, &send[i], 1);
    }
    for (uint32_t i = 0; i + 1 < size; i++)
        gfr_rdma_sq_retire_locked(conn, &send[i]);
    assert_int_equal(conn->sq_count, size); /* the READ holds the head */
    send[size - 1] = (struct gfr_rdma_wr){.conn = conn, .kind = GFR_WR_SEND};
    gfr_rdma_sq_push_locked(conn, &send[size - 1], 1);
    assert_true(conn->sq_count <= size);
    assert_ptr_equal(conn->sq_ring[conn->sq_head], &read);
    gfr_rdma_sq_retire_locked(conn, &read);
    assert_int_equal(conn->sq_count, 1);
    gfr_rdma_sq_retire_locked(conn, &send[size - 1]);
    assert_int_equal(conn->sq_count, 0);
    pthread_mutex_unlock(&conn->lock);
    free(send);
    free_conn(conn);
}

/* The post helper: a reference and a ring entry per posted work request,
 * neither when the post fails (its error comes back positive, as
 * ibv_post_send's). */
static void
test_a_post_holds_a_reference_until_it_fails(void **state)
{
    struct gfr_rdma_conn *conn = make_conn(GFR_CONN_ESTABLISHED);
    struct gfr_rdma_wr ctx = {.conn = conn, .kind = GFR_WR_SEND};
    struct ibv_send_wr wr = {.wr_id = (uintptr_t)&ctx, .opcode = IBV_WR_SEND};

    (void)state;
    assert_int_equal(gfr_rdma_qp_post_locked(conn, &ctx, &wr), 0);
    assert_int_equal(conn->outstanding, 2);
    assert_int_equal(conn->sq_count, 1);
    fake_verbs.post_send_result = ENOMEM;
    assert_int_equal(gfr_rdma_qp_post_locked(conn, &ctx, &wr), ENOMEM);
    assert_int_equal(conn->outstanding, 2);
    assert_int_equal(conn->sq_count, 1);
    assert_int_equal(fake_verbs.posts, 2);
    free_conn(conn);
}

/* What an adapter does with the work requests on the send queue when they
 * all went out: each signaled one completes, an unsignaled one says
 * nothing.  Returns how many completions that made. */
static unsigned
complete_what_signals(struct gfr_rdma_conn *conn, unsigned from)
{
    unsigned n = 0;

    for (unsigned i = from; i < fake_verbs.posts && i < FAKE_MAX_SENT; i++) {
        struct gfr_rdma_wr *ctx = (struct gfr_rdma_wr *)(uintptr_t)fake_verbs.sent[i].wr_id;

        if (!(fake_verbs.sent[i].send_flags & IBV_SEND_SIGNALED))
            continue;
        gfr_rdma_send_complete(ctx, !fake_verbs.qp_in_error);
        gfr_rdma_conn_put(conn); /* the work request's, as rdma-cq.c drops it */
        n++;
    }
    return n;
}

static void
send_some(struct gfr_rdma_conn *conn, unsigned n)
{
    struct gfr_wire_hdr hdr = {.type = GFR_WIRE_MSG, .inline_len = 2};
    struct iovec iov = {"hi", 2};

    for (unsigned i = 0; i < n; i++) {
        hdr.xid = i + 1;
        pthread_mutex_lock(&conn->lock);
        assert_int_equal(gfr_rdma_send_locked(conn, &hdr, NULL, NULL, &iov, 1, NULL), 0);
        pthread_mutex_unlock(&conn->lock);
    }
}

/* iWARP: cxgb4 refuses a post on a QP in error and siw never completes
 * one, so no drain may follow the error.  Every SEND is signaled there,
 * and a connection whose SENDs all went out before it failed gets every
 * reference back without one. */
static void
test_on_iwarp_no_drain_follows_an_error(void **state)
{
    struct gfr_rdma_conn *conn = make_conn(GFR_CONN_ESTABLISHED);
    unsigned posted;

    (void)state;
    test_dev.iwarp = 1;
    fake_verbs.posts_fail_in_error = 1;
    send_some(conn, 3);
    assert_int_equal(complete_what_signals(conn, 0), 3);
    gfr_rdma_conn_fail(conn, -EIO);
    posted = fake_verbs.posts;
    assert_int_equal(posted, 3);
    complete_what_signals(conn, posted);
    assert_int_equal(conn->sq_count, 0);
    assert_int_equal(conn->nfree, conn->nsend);
    assert_int_equal(conn->outstanding, 1); /* only the CM side's */
    free_conn(conn);
}

/* iWARP: rdma_disconnect is a graceful close, which on siw flushes
 * nothing while its transmitter is idle, so a READ still waiting for its
 * response would never complete.  With work requests outstanding the QP
 * goes to error first; with none the close stays graceful. */
static void
test_on_iwarp_outstanding_work_flushes_before_the_close(void **state)
{
    struct gfr_rdma_conn *conn = make_conn(GFR_CONN_ESTABLISHED);
    struct rdma_cm_id id = {.qp = &fake_qp};

    (void)state;
    test_dev.iwarp = 1;
    conn->id = &id;
    conn->was_connected = 1;
    send_some(conn, 2);
    gfr_rdma_conn_fail(conn, 0);
    assert_int_equal(fake_verbs.disconnects, 1);
    assert_true(fake_verbs.qp_in_error_at_disconnect);
    complete_what_signals(conn, 0);
    assert_int_equal(conn->sq_count, 0);
    conn->id = NULL;
    free_conn(conn);

    conn = make_conn(GFR_CONN_ESTABLISHED);
    test_dev.iwarp = 1;
    conn->id = &id;
    conn->was_connected = 1;
    send_some(conn, 2);
    assert_int_equal(complete_what_signals(conn, 0), 2);
    gfr_rdma_conn_fail(conn, 0);
    assert_int_equal(fake_verbs.disconnects, 1);
    assert_false(fake_verbs.qp_in_error_at_disconnect);
    assert_true(fake_verbs.qp_in_error);
    conn->id = NULL;
    free_conn(conn);
}

/* A post refused because the QP was in error already (its peer closed:
 * cxgb4 says EINVAL) ends the connection in order, not as a fault; one
 * refused on a QP that was not ends it with -EIO. */
static void
test_a_post_refused_after_the_peer_closed_is_no_fault(void **state)
{
    struct gfr_rdma_conn *conn = make_conn(GFR_CONN_ESTABLISHED);
    struct gfr_wire_hdr hdr = {.type = GFR_WIRE_MSG, .xid = 1, .inline_len = 2};
    struct iovec iov = {"hi", 2};

    (void)state;
    test_dev.iwarp = 1;
    fake_verbs.posts_fail_in_error = 1;
    fake_verbs.qp_in_error = 1;
    pthread_mutex_lock(&conn->lock);
    assert_int_equal(gfr_rdma_send_locked(conn, &hdr, NULL, NULL, &iov, 1, NULL), -ENOTCONN);
    pthread_mutex_unlock(&conn->lock);
    assert_int_equal(conn->state, GFR_CONN_DISCONNECTING);
    assert_int_equal(conn->reason, 0);
    free_conn(conn);

    conn = make_conn(GFR_CONN_ESTABLISHED);
    fake_verbs.post_send_result = ENOMEM;
    pthread_mutex_lock(&conn->lock);
    assert_int_equal(gfr_rdma_send_locked(conn, &hdr, NULL, NULL, &iov, 1, NULL), -ENOTCONN);
    pthread_mutex_unlock(&conn->lock);
    assert_int_equal(conn->reason, -EIO);
    free_conn(conn);
}

/* A provider that returns a negative errno from a post (siw: -EINVAL,
 * -ENOMEM, and -1 after its peer's close) is still said in words. */
static void
test_a_negative_post_result_is_still_an_errno(void **state)
{
    struct gfr_wire_hdr hdr = {.type = GFR_WIRE_MSG, .xid = 1, .inline_len = 2};
    struct iovec iov = {"hi", 2};
    const struct {
        int ret, err;
        const char *said;
    } cases[] = {{-EINVAL, 0, "Invalid argument"}, {-1, 0, "Input/output error"},
                 {-1, ENOTCONN, "Transport endpoint is not connected"}};

    (void)state;
    for (unsigned i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct gfr_rdma_conn *conn = make_conn(GFR_CONN_ESTABLISHED);

        fake_verbs.post_send_result = cases[i].ret;
        errno = cases[i].err;
        pthread_mutex_lock(&conn->lock);
        assert_int_equal(gfr_rdma_send_locked(conn, &hdr, NULL, NULL, &iov, 1, NULL),
                         -ENOTCONN);
        pthread_mutex_unlock(&conn->lock);
        assert_non_null(strstr(conn->last_error, cases[i].said));
        assert_null(strstr(conn->last_error, "Unknown error"));
        assert_int_equal(conn->reason, -EIO);
        free_conn(conn);
    }
}

/* InfiniBand and RoCE: unsignaled SENDs at the tail of the send queue are
 * retired by a drain posted after the error; with a signaled one last,
 * its own (flushed) completion does it, and no drain is needed. */
static void
test_a_drain_follows_only_an_unsignaled_tail(void **state)
{
    struct gfr_rdma_conn *conn = make_conn(GFR_CONN_ESTABLISHED);

    (void)state;
    send_some(conn, 2);
    assert_int_equal(complete_what_signals(conn, 0), 0);
    gfr_rdma_conn_fail(conn, -EIO);
    assert_int_equal(fake_verbs.posts, 3);
    assert_ptr_equal((void *)(uintptr_t)fake_verbs.sent[2].wr_id, &conn->drain_wr);
    assert_int_equal(complete_what_signals(conn, 2), 1);
    assert_int_equal(conn->outstanding, 1);
    free_conn(conn);

    conn = make_conn(GFR_CONN_ESTABLISHED);
    send_some(conn, 4); /* the fourth of 8 slots is signaled */
    assert_true(fake_verbs.sent[3].send_flags & IBV_SEND_SIGNALED);
    gfr_rdma_conn_fail(conn, -EIO);
    assert_int_equal(fake_verbs.posts, 4);
    assert_int_equal(complete_what_signals(conn, 0), 1);
    assert_int_equal(conn->outstanding, 1);
    free_conn(conn);
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_documented_state_change_is_taken),
#ifndef GFR_DEBUG
        cmocka_unit_test(test_every_other_state_change_is_refused),
#endif
        cmocka_unit_test(test_a_completion_retires_the_sends_before_it),
        cmocka_unit_test(test_completions_out_of_order_retire_each_entry_once),
        cmocka_unit_test(test_a_full_ring_of_done_entries_keeps_its_head),
        cmocka_unit_test(test_a_post_holds_a_reference_until_it_fails),
        cmocka_unit_test(test_on_iwarp_no_drain_follows_an_error),
        cmocka_unit_test(test_a_drain_follows_only_an_unsignaled_tail),
        cmocka_unit_test(test_on_iwarp_outstanding_work_flushes_before_the_close),
        cmocka_unit_test(test_a_negative_post_result_is_still_an_errno),
        cmocka_unit_test(test_a_post_refused_after_the_peer_closed_is_no_fault),
    };

    gfr_rdma_set_log(NULL, NULL);
    return cmocka_run_group_tests_name("rdma-qp", tests, NULL, NULL);
}
