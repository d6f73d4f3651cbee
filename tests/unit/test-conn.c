/* SPDX-License-Identifier: GPL-2.0-only */
/* Connections for the engine's host unit tests: test-conn.h. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>

#include <cmocka.h>
#include <urcu/urcu-memb.h>

#include "fake-verbs.h"
#include "test-conn.h"

struct gfr_rdma test_engine;
struct gfr_rdma_dev test_dev;

void
test_conn_reset(void)
{
    fake_verbs_reset();
    gfr_rdma_opts_init(&test_engine.opts);
    test_engine.trace = test_engine.opts.latency_stats == GFR_LATENCY_STATS_ON;
    memset(test_engine.stage, 0, sizeof(test_engine.stage));
    test_engine.untraced = 0;
    pthread_mutex_init(&test_engine.lock, NULL);
    pthread_mutex_init(&test_engine.note_lock, NULL);
    CDS_INIT_LIST_HEAD(&test_engine.conns);
    CDS_INIT_LIST_HEAD(&test_engine.devices);
    CDS_INIT_LIST_HEAD(&test_engine.reap);
    if (test_engine.wake_fd <= 0) /* a connection's last reference wakes the CM thread */
        test_engine.wake_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    assert_true(test_engine.wake_fd > 0);
    static int registered;

    if (!registered) /* finds connections by QP number, as the pollers do */
        urcu_memb_register_thread();
    registered = 1;
    gfr_rdma_conn_table_destroy(&test_dev);
    memset(&test_dev, 0, sizeof(test_dev));
    test_pulls_finished = 0;
    test_pull_status = 1;
    test_dev.engine = &test_engine;
    test_dev.verbs = &fake_ctx;
}

struct gfr_rdma_conn *
test_conn_new(const struct sockaddr *peer, uint32_t credits, enum gfr_conn_state at)
{
    static const enum gfr_conn_state client_path[] = {
        GFR_CONN_RESOLVING_ADDR, GFR_CONN_RESOLVING_ROUTE, GFR_CONN_CONNECTING,
        GFR_CONN_ESTABLISHED,
    };
    struct gfr_rdma_conn *conn = gfr_rdma_conn_new(&test_engine, &test_engine.opts, peer);

    assert_non_null(conn);
    conn->dev = &test_dev;
    conn->qp = &fake_qp;
    conn->nsend = conn->nrecv = credits;
    conn->agreed = (struct gfr_cm_params){.credits = (uint16_t)credits, .inline_max = 8192,
                                          .max_msg = 1 << 20, .max_segs = 16};
    conn->limits = (struct gfr_wire_limits){.max_msg = 1 << 20, .max_segs = 16};
    gfr_credits_init(&conn->credits, credits);
    assert_int_equal(gfr_rdma_conn_setup_send_side(conn), 0);
    pthread_mutex_lock(&conn->lock);
    if (at == GFR_CONN_DISCONNECTING)
        assert_int_equal(gfr_rdma_conn_set_state_locked(conn, at), 0);
    for (size_t i = 0; conn->state != at; i++) {
        assert_true(i < sizeof(client_path) / sizeof(client_path[0]));
        assert_int_equal(gfr_rdma_conn_set_state_locked(conn, client_path[i]), 0);
    }
    pthread_mutex_unlock(&conn->lock);
    return conn;
}

void
test_conn_find_by_qp(struct gfr_rdma_conn *conn, uint32_t qp_num)
{
    if (!test_dev.conns)
        assert_int_equal(gfr_rdma_conn_table_create(&test_dev), 0);
    fake_qp.qp_num = qp_num;
    gfr_rdma_conn_table_add(&test_dev, conn);
}

unsigned test_pulls_finished;
int test_pull_status;

static void
pull_finished(struct gfr_rdma_xfer *x, int status)
{
    test_pulls_finished++;
    test_pull_status = status;
    free(x);
}

struct gfr_rdma_xfer *
test_conn_start_pull(struct gfr_rdma_conn *conn, unsigned n)
{
    static uint8_t buf[16 * 4096];
    struct gfr_rdma_xfer *x = gfr_rdma_xfer_new(conn, 1, pull_finished);

    assert_true(n <= 16);
    assert_non_null(x);
    x->local[0] = (struct gfr_xfer_local){(uintptr_t)buf, n * 4096, 11};
    for (unsigned i = 0; i < n; i++)
        x->remote[i] = (struct gfr_wire_seg){0x10000 * (i + 1), 22, 4096};
    assert_int_equal(gfr_xfer_init(&x->plan, x->local, 1, x->remote, n, n * 4096ull, 4096), 0);
    pthread_mutex_lock(&conn->lock);
    gfr_rdma_xfer_start_locked(conn, x);
    pthread_mutex_unlock(&conn->lock);
    return x;
}

void
test_conn_free(struct gfr_rdma_conn *conn)
{
    if (conn->in_table) {
        gfr_rdma_conn_table_remove(&test_dev, conn);
        gfr_rdma_conn_table_destroy(&test_dev);
    }
    gfr_rdma_xfers_release_all(conn);
    gfr_rdma_tx_release_all(conn);
    gfr_rdma_offers_release_all(conn);
    gfr_rdma_sbuf_drain(conn);
    pthread_mutex_lock(&test_engine.lock);
    cds_list_del(&conn->link);
    pthread_mutex_unlock(&test_engine.lock);
    gfr_rdma_conn_free_send_side(conn);
    pthread_mutex_destroy(&conn->lock);
    free(conn);
}
