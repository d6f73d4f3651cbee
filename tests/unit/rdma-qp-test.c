/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The queue-pair layer (lib/rdma-qp.c) on a connection built by hand:
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
#include "rdma-internal.h"

static struct gfr_rdma engine;
static struct gfr_rdma_dev dev;

static struct gfr_rdma_conn *
make_conn(void)
{
    struct gfr_rdma_conn *conn;

    gfr_rdma_opts_init(&engine.opts);
    pthread_mutex_init(&engine.lock, NULL);
    CDS_INIT_LIST_HEAD(&engine.conns);
    fake_verbs_reset();
    conn = gfr_rdma_conn_new(&engine, NULL);
    assert_non_null(conn);
    conn->dev = &dev;
    conn->qp = &fake_qp;
    conn->sq_size = 8;
    conn->sq_ring = calloc(conn->sq_size, sizeof(*conn->sq_ring));
    conn->free_slots = calloc(conn->sq_size, sizeof(*conn->free_slots));
    assert_non_null(conn->sq_ring);
    assert_non_null(conn->free_slots);
    return conn;
}

static void
free_conn(struct gfr_rdma_conn *conn)
{
    cds_list_del(&conn->link);
    free(conn->sq_ring);
    free(conn->free_slots);
    pthread_mutex_destroy(&conn->lock);
    free(conn);
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
    static const enum gfr_conn_state path[] = {
        GFR_CONN_NEW, GFR_CONN_RESOLVING_ADDR, GFR_CONN_RESOLVING_ROUTE,
        GFR_CONN_CONNECTING, GFR_CONN_ESTABLISHED,
    };
    struct gfr_rdma_conn *conn = make_conn();

    pthread_mutex_lock(&conn->lock);
    if (at == GFR_CONN_DISCONNECTING)
        assert_int_equal(gfr_rdma_conn_set_state_locked(conn, at), 0);
    for (size_t i = 1; at != GFR_CONN_DISCONNECTING && conn->state != at; i++)
        assert_int_equal(gfr_rdma_conn_set_state_locked(conn, path[i]), 0);
    pthread_mutex_unlock(&conn->lock);
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
    struct gfr_rdma_conn *conn = make_conn();
    struct gfr_rdma_wr wr[3] = {
        {.conn = conn, .slot = 5, .kind = GFR_WR_SEND},
        {.conn = conn, .slot = 6, .kind = GFR_WR_SEND},
        {.conn = conn, .slot = 7, .kind = GFR_WR_SEND},
    };

    (void)state;
    for (int i = 0; i < 3; i++)
        gfr_rdma_sq_push_locked(conn, &wr[i]);
    assert_int_equal(gfr_rdma_sq_retire_locked(conn, &wr[2]), 2);
    assert_int_equal(conn->sq_count, 0);
    assert_int_equal(conn->nfree, 2);
    assert_int_equal(conn->free_slots[0], 5);
    assert_int_equal(conn->free_slots[1], 6);
    free_conn(conn);
}

/* The post helper: a reference and a ring entry per posted work request,
 * neither when the post fails (its error comes back positive, as
 * ibv_post_send's). */
static void
test_a_post_holds_a_reference_until_it_fails(void **state)
{
    struct gfr_rdma_conn *conn = make_conn();
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

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_documented_state_change_is_taken),
#ifndef GFR_DEBUG
        cmocka_unit_test(test_every_other_state_change_is_refused),
#endif
        cmocka_unit_test(test_a_completion_retires_the_sends_before_it),
        cmocka_unit_test(test_a_post_holds_a_reference_until_it_fails),
    };

    gfr_rdma_set_log(NULL, NULL);
    return cmocka_run_group_tests_name("rdma-qp", tests, NULL, NULL);
}
