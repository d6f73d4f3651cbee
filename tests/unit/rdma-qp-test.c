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
        gfr_rdma_sq_push_locked(conn, wr[i]);
    }
    assert_int_equal(gfr_rdma_sq_retire_locked(conn, wr[2]), 2);
    assert_int_equal(conn->sq_count, 0);
    /* the first two are free again; the completed one is its handler's */
    assert_int_equal(conn->nfree, nfree - 1);
    assert_int_equal(conn->free_slots[nfree - 3], wr[0]->slot);
    assert_int_equal(conn->free_slots[nfree - 2], wr[1]->slot);
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
