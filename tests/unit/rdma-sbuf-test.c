/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Staging buffers (lib/engine/rdma-sbuf.c) of one test connection: reuse without
 * a new registration, the two kinds and their access, the size classes
 * and what each keeps, the copies in and out across iovecs, and nothing
 * left registered after the drain.
 * fake-verbs.c counts the registrations.
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

static struct gfr_rdma_conn *conn;
static unsigned base_regs, base_deregs;

static int
setup(void **state)
{
    (void)state;
    test_conn_reset();
    conn = test_conn_new(NULL, 8, GFR_CONN_ESTABLISHED);
    base_regs = fake_verbs.registered;
    base_deregs = fake_verbs.deregistered;
    return 0;
}

static int
teardown(void **state)
{
    (void)state;
    gfr_rdma_sbuf_drain(conn);
    assert_int_equal(fake_verbs.deregistered - base_deregs, fake_verbs.registered - base_regs);
    test_conn_free(conn);
    return 0;
}

static void
test_a_returned_buffer_is_reused(void **state)
{
    struct gfr_rdma_sbuf *a, *b;

    (void)state;
    assert_int_equal(gfr_rdma_sbuf_get(conn, GFR_SBUF_REMOTE, 100 << 10, &a), 0);
    assert_true(a->mr->length >= 100 << 10);
    gfr_rdma_sbuf_put(conn, a);
    assert_int_equal(gfr_rdma_sbuf_get(conn, GFR_SBUF_REMOTE, 200 << 10, &b), 0); /* same class */
    assert_ptr_equal(a, b);
    assert_int_equal(fake_verbs.registered - base_regs, 1);
    gfr_rdma_sbuf_put(conn, b);
}

static void
test_each_class_keeps_a_few_and_lets_the_rest_go(void **state)
{
    struct gfr_rdma_sbuf *b[6];

    (void)state;
    for (int i = 0; i < 6; i++)
        assert_int_equal(gfr_rdma_sbuf_get(conn, GFR_SBUF_LOCAL, 1 << 20, &b[i]), 0);
    for (int i = 0; i < 6; i++)
        gfr_rdma_sbuf_put(conn, b[i]);
    assert_int_equal(fake_verbs.registered - base_regs, 6);
    assert_int_equal(fake_verbs.deregistered - base_deregs, 2); /* the 1 MiB class keeps 4 */
    assert_int_equal(gfr_rdma_sbuf_get(conn, GFR_SBUF_LOCAL, gfr_rdma_sbuf_max() + 1, &b[0]),
                     -EINVAL);
}

/* On a provider that replays READs late (rxe), a buffer the peer could
 * reach that a class lets go stays registered, and its memory ours, for
 * the revoke grace, as a revoked read list does; a push source, which no
 * peer reaches, goes at once. */
static void
test_a_reachable_buffer_let_go_waits_out_the_grace(void **state)
{
    struct gfr_rdma_sbuf *b[6];

    (void)state;
    test_dev.keep_revoked_mrs = 1;
    conn->opts.qp_timeout = 31; /* a grace of hours: nothing expires here */
    for (int i = 0; i < 6; i++)
        assert_int_equal(gfr_rdma_sbuf_get(conn, GFR_SBUF_REMOTE, 1 << 20, &b[i]), 0);
    for (int i = 0; i < 6; i++)
        gfr_rdma_sbuf_put(conn, b[i]);
    assert_int_equal(fake_verbs.deregistered - base_deregs, 0);
    assert_false(cds_list_empty(&conn->retired));
    for (int i = 0; i < 6; i++)
        assert_int_equal(gfr_rdma_sbuf_get(conn, GFR_SBUF_LOCAL, 1 << 20, &b[i]), 0);
    for (int i = 0; i < 6; i++)
        gfr_rdma_sbuf_put(conn, b[i]);
    assert_int_equal(fake_verbs.deregistered - base_deregs, 2);
    gfr_rdma_mr_reap_retired(conn, 1);
    assert_int_equal(fake_verbs.deregistered - base_deregs, 4);
    assert_true(cds_list_empty(&conn->retired));
    test_dev.keep_revoked_mrs = 0;
}

static void
test_copies_follow_the_iovecs(void **state)
{
    char out1[3], out2[10];
    struct iovec in[] = {{"abc", 3}, {"", 0}, {"defgh", 5}};
    struct iovec out[] = {{out1, sizeof(out1)}, {out2, sizeof(out2)}};
    struct gfr_rdma_sbuf *b;
    size_t end;

    (void)state;
    assert_int_equal(gfr_rdma_sbuf_get(conn, GFR_SBUF_LOCAL, 64, &b), 0);
    end = gfr_rdma_sbuf_copy_in(b, 0, in, 3);
    assert_int_equal(end, 8);
    assert_int_equal(gfr_rdma_sbuf_copy_in(b, end, in, 1), 11);
    memset(out2, 0, sizeof(out2));
    gfr_rdma_sbuf_copy_out(b, 10, out, 2);
    assert_memory_equal(out1, "abc", 3);
    assert_memory_equal(out2, "defghab\0\0", 10);
    gfr_rdma_sbuf_put(conn, b);
}

/* A buffer given back after the connection's end is freed, not kept. */
static void
test_a_buffer_back_after_the_drain_is_freed(void **state)
{
    struct gfr_rdma_sbuf *b;

    (void)state;
    assert_int_equal(gfr_rdma_sbuf_get(conn, GFR_SBUF_REMOTE, 1000, &b), 0);
    gfr_rdma_sbuf_drain(conn);
    gfr_rdma_sbuf_put(conn, b);
    assert_int_equal(fake_verbs.deregistered - base_deregs, 1);
    assert_null(conn->sbuf_free[GFR_SBUF_REMOTE][0]);
}

/* A push source has no remote access; a read list or landing has both;
 * one kind is never handed out for the other. */
static void
test_the_kinds_keep_their_access(void **state)
{
    struct gfr_rdma_sbuf *local, *remote;

    (void)state;
    assert_int_equal(gfr_rdma_sbuf_get(conn, GFR_SBUF_LOCAL, 1000, &local), 0);
    assert_int_equal(fake_verbs.last_access, IBV_ACCESS_LOCAL_WRITE);
    gfr_rdma_sbuf_put(conn, local);
    assert_int_equal(gfr_rdma_sbuf_get(conn, GFR_SBUF_REMOTE, 1000, &remote), 0);
    assert_ptr_not_equal(remote, local);
    assert_int_equal(fake_verbs.last_access, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ |
                                                 IBV_ACCESS_REMOTE_WRITE);
    gfr_rdma_sbuf_put(conn, remote);
    assert_int_equal(gfr_rdma_sbuf_get(conn, 7, 1000, &remote), -EINVAL);
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_a_returned_buffer_is_reused, setup, teardown),
        cmocka_unit_test_setup_teardown(test_each_class_keeps_a_few_and_lets_the_rest_go,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(test_a_reachable_buffer_let_go_waits_out_the_grace, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_copies_follow_the_iovecs, setup, teardown),
        cmocka_unit_test_setup_teardown(test_a_buffer_back_after_the_drain_is_freed, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_the_kinds_keep_their_access, setup, teardown),
    };

    return cmocka_run_group_tests_name("rdma-sbuf", tests, NULL, NULL);
}
