/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * A device's connections by QP number (lib/engine/rdma-conn-table.c): a
 * connection is found, with a reference taken, only while it is in the
 * table and holds references of its own.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
#include <urcu/urcu-memb.h>

#include "engine-conn.h"

/* Once its last reference is gone, or once it left the table, a late
 * completion finds nothing; another QP number never finds it. */
static void
test_a_connection_is_found_only_while_alive(void **state)
{
    struct gfr_rdma_dev dev = {0};
    struct gfr_rdma_conn conn = {.outstanding = 1};
    struct ibv_qp qp = {.qp_num = 4242};

    (void)state;
    assert_int_equal(gfr_rdma_conn_table_create(&dev), 0);
    conn.qp = &qp;
    gfr_rdma_conn_table_add(&dev, &conn);
    assert_ptr_equal(gfr_rdma_conn_table_get(&dev, 4242), &conn);
    assert_int_equal(conn.outstanding, 2);
    assert_null(gfr_rdma_conn_table_get(&dev, 4243));
    conn.outstanding = 0; /* its last reference dropped: going */
    assert_null(gfr_rdma_conn_table_get(&dev, 4242));
    conn.outstanding = 1;
    gfr_rdma_conn_table_remove(&dev, &conn);
    assert_null(gfr_rdma_conn_table_get(&dev, 4242));
    assert_int_equal(conn.outstanding, 1);
    gfr_rdma_conn_table_remove(&dev, &conn); /* twice is harmless */
    gfr_rdma_conn_table_destroy(&dev);
    assert_null(dev.conns);
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_a_connection_is_found_only_while_alive),
    };
    int failed;

    urcu_memb_register_thread();
    failed = cmocka_run_group_tests_name("rdma-conn-table", tests, NULL, NULL);
    urcu_memb_unregister_thread();
    return failed;
}
