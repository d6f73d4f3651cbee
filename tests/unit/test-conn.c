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
    memset(&test_dev, 0, sizeof(test_dev));
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
    struct gfr_rdma_conn *conn = gfr_rdma_conn_new(&test_engine, peer);

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
test_conn_free(struct gfr_rdma_conn *conn)
{
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
