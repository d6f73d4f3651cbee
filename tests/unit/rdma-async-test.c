/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The devices' asynchronous events (lib/engine/rdma-async.c) on connections built
 * by hand: this file's ibv_get_async_event hands out queued events, and
 * its ibv_modify_qp and rdma_disconnect replace the libraries' for the
 * objects linked here, so every port, QP and device event can be sent on
 * demand, which rxe does not allow.
 */
#include <errno.h>
#include <poll.h>
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

#include "engine-conn.h"

#define MAX_EVENTS 8

static struct ibv_async_event queued[MAX_EVENTS];
static unsigned nqueued, next_event, acked;
static unsigned qp_errors, disconnects;
/* The connection whose QP's flushed completions a poller handles as soon
 * as the QP reaches the error state (before the async handler takes the
 * connection's lock), as rdma-cq.c does: an orderly end, reason 0. */
static struct gfr_rdma_conn *flushed_at_once;
/* The connection whose lock ibv_modify_qp looks at, and what it saw: 1
 * when the caller held it. */
static struct gfr_rdma_conn *lock_watched;
static int moved_under_lock;

int
ibv_get_async_event(struct ibv_context *context, struct ibv_async_event *event)
{
    (void)context;
    if (next_event == nqueued) {
        errno = EAGAIN;
        return -1;
    }
    *event = queued[next_event++];
    return 0;
}

void
ibv_ack_async_event(struct ibv_async_event *event)
{
    (void)event;
    acked++;
}

int
ibv_modify_qp(struct ibv_qp *qp, struct ibv_qp_attr *attr, int attr_mask)
{
    (void)qp;
    (void)attr_mask;
    if (attr->qp_state == IBV_QPS_ERR) {
        struct gfr_rdma_conn *conn = flushed_at_once;

        qp_errors++;
        if (lock_watched && lock_watched->qp == qp && moved_under_lock < 0) {
            moved_under_lock = pthread_mutex_trylock(&lock_watched->lock) == EBUSY;
            if (!moved_under_lock)
                pthread_mutex_unlock(&lock_watched->lock);
        }
        if (conn && conn->qp == qp) {
            flushed_at_once = NULL;
            gfr_rdma_conn_fail(conn, 0);
        }
    }
    return 0;
}

int
rdma_disconnect(struct rdma_cm_id *id)
{
    (void)id;
    disconnects++;
    return 0;
}

static struct gfr_rdma engine;
static struct ibv_device fake_device[2];
static struct ibv_context fake_ctx[2];
static struct gfr_rdma_dev devs[2];

/* A test connection: its own QP and CM id, on devs[dev] port port. */
struct test_conn {
    struct gfr_rdma_conn *conn;
    struct ibv_qp qp;
    struct rdma_cm_id id;
};

static void
queue_event(enum ibv_event_type type, struct ibv_qp *qp, int port)
{
    struct ibv_async_event *ev = &queued[nqueued++];

    memset(ev, 0, sizeof(*ev));
    ev->event_type = type;
    if (qp)
        ev->element.qp = qp;
    else
        ev->element.port_num = port;
}

static int
setup(void **state)
{
    (void)state;
    memset(&engine, 0, sizeof(engine));
    gfr_rdma_opts_init(&engine.opts);
    pthread_mutex_init(&engine.lock, NULL);
    pthread_mutex_init(&engine.note_lock, NULL);
    CDS_INIT_LIST_HEAD(&engine.conns);
    CDS_INIT_LIST_HEAD(&engine.devices);
    CDS_INIT_LIST_HEAD(&engine.removed);
    for (int i = 0; i < 2; i++) {
        memset(&devs[i], 0, sizeof(devs[i]));
        snprintf(fake_device[i].name, sizeof(fake_device[i].name), "fake%d", i);
        fake_ctx[i].device = &fake_device[i];
        fake_ctx[i].async_fd = 100 + i;
        devs[i].engine = &engine;
        devs[i].verbs = &fake_ctx[i];
        cds_list_add_tail(&devs[i].link, &engine.devices);
    }
    nqueued = next_event = acked = 0;
    qp_errors = disconnects = 0;
    return 0;
}

static void
make_conn(struct test_conn *t, int dev, int port, int established)
{
    memset(t, 0, sizeof(*t));
    t->conn = gfr_rdma_conn_new(&engine, &engine.opts, NULL);
    assert_non_null(t->conn);
    t->id.port_num = (uint8_t)port;
    t->conn->id = &t->id;
    t->conn->qp = &t->qp;
    t->conn->dev = &devs[dev];
    pthread_mutex_lock(&t->conn->lock);
    assert_int_equal(gfr_rdma_conn_set_state_locked(t->conn, GFR_CONN_CONNECTING), 0);
    if (established)
        assert_int_equal(gfr_rdma_conn_set_state_locked(t->conn, GFR_CONN_ESTABLISHED), 0);
    pthread_mutex_unlock(&t->conn->lock);
    t->conn->was_connected = established;
}

static void
free_conn(struct test_conn *t)
{
    cds_list_del(&t->conn->link);
    pthread_mutex_destroy(&t->conn->lock);
    free(t->conn);
}

static int
ended(const struct test_conn *t)
{
    return t->conn->state == GFR_CONN_DISCONNECTING;
}

/* A port that goes down ends every established connection on that port
 * of that device, with ENETDOWN, and moves their QPs to error; nothing
 * else: not another port, not another device, not a handshake (the CM
 * ends those). */
static void
test_port_err_ends_the_ports_connections(void **state)
{
    struct test_conn a, b, other_port, other_dev, handshake;

    (void)state;
    make_conn(&a, 0, 1, 1);
    make_conn(&b, 0, 1, 1);
    make_conn(&other_port, 0, 2, 1);
    make_conn(&other_dev, 1, 1, 1);
    make_conn(&handshake, 0, 1, 0);
    queue_event(IBV_EVENT_PORT_ERR, NULL, 1);
    gfr_rdma_async_handle(&engine, &devs[0], POLLIN);

    assert_int_equal(acked, 1);
    assert_true(ended(&a) && ended(&b));
    assert_int_equal(a.conn->reason, -ENETDOWN);
    assert_int_equal(b.conn->reason, -ENETDOWN);
    assert_false(ended(&other_port) || ended(&other_dev) || ended(&handshake));
    /* Each QP moved to error before its lock is taken, then by the fail. */
    assert_true(qp_errors >= 2);
    assert_int_equal(disconnects, 2);

    /* A second report changes nothing: each connection ends once. */
    queue_event(IBV_EVENT_PORT_ERR, NULL, 1);
    gfr_rdma_async_handle(&engine, &devs[0], POLLIN);
    assert_int_equal(disconnects, 2);
    assert_int_equal(a.conn->reason, -ENETDOWN);

    free_conn(&a);
    free_conn(&b);
    free_conn(&other_port);
    free_conn(&other_dev);
    free_conn(&handshake);
}

/* The QP goes to the error state before the handler takes the lock (rxe's
 * requester loop, rdma-async.c), so a poller may see its flushed
 * completions first: the connection still ends with the port's reason,
 * not as an orderly disconnect. */
static void
test_a_flush_seen_first_carries_the_faults_reason(void **state)
{
    struct test_conn a, b;

    (void)state;
    make_conn(&a, 0, 1, 1);
    make_conn(&b, 0, 1, 1);
    flushed_at_once = a.conn;
    queue_event(IBV_EVENT_PORT_ERR, NULL, 1);
    gfr_rdma_async_handle(&engine, &devs[0], POLLIN);
    assert_null(flushed_at_once);
    assert_true(ended(&a) && ended(&b));
    assert_int_equal(a.conn->reason, -ENETDOWN);

    /* A QP the adapter breaks: likewise EIO. */
    free_conn(&a);
    make_conn(&a, 0, 1, 1);
    flushed_at_once = a.conn;
    queue_event(IBV_EVENT_QP_FATAL, &a.qp, 0);
    gfr_rdma_async_handle(&engine, &devs[0], POLLIN);
    assert_int_equal(a.conn->reason, -EIO);
    free_conn(&a);
    free_conn(&b);
}

/* rxe's requester loop needs the QP moved to error before the lock is
 * taken; on iWARP a post that slipped in between would never complete
 * (siw), so there the QP moves under the connection's lock. */
static void
test_on_iwarp_the_qp_moves_under_the_lock(void **state)
{
    struct test_conn a;

    (void)state;
    make_conn(&a, 0, 1, 1);
    lock_watched = a.conn;
    moved_under_lock = -1;
    queue_event(IBV_EVENT_QP_FATAL, &a.qp, 0);
    gfr_rdma_async_handle(&engine, &devs[0], POLLIN);
    assert_int_equal(moved_under_lock, 0);
    free_conn(&a);

    devs[0].iwarp = 1;
    make_conn(&a, 0, 1, 1);
    lock_watched = a.conn;
    moved_under_lock = -1;
    queue_event(IBV_EVENT_QP_FATAL, &a.qp, 0);
    gfr_rdma_async_handle(&engine, &devs[0], POLLIN);
    assert_int_equal(moved_under_lock, 1);
    /* on iWARP the QP's TCP stream broke: the peer's close or a reset */
    assert_int_equal(a.conn->reason, -ECONNRESET);
    lock_watched = NULL;
    free_conn(&a);
}

/* IBV_EVENT_QP_LAST_WQE_REACHED marks its QP's connection (which may then
 * have its QP destroyed after a pass over the CQ), and ends nothing. */
static void
test_last_wqe_reached_marks_its_connection(void **state)
{
    struct test_conn a, b;

    (void)state;
    make_conn(&a, 0, 1, 1);
    make_conn(&b, 0, 1, 1);
    b.conn->dev->last_wqe_missed = 1; /* an earlier QP's event was too late */
    queue_event(IBV_EVENT_QP_LAST_WQE_REACHED, &b.qp, 0);
    gfr_rdma_async_handle(&engine, &devs[0], POLLIN);
    assert_int_equal(a.conn->last_wqe_reached, 0);
    assert_int_equal(b.conn->last_wqe_reached, 1);
    assert_int_equal(b.conn->dev->last_wqe_missed, 0); /* the device raises them */
    assert_false(ended(&a) || ended(&b));
    free_conn(&a);
    free_conn(&b);
}

/* IBV_EVENT_CQ_ERR breaks the poller of that CQ (the CM thread then ends
 * its connections, rdma-cq.c), and no other. */
static void
test_cq_err_breaks_its_poller(void **state)
{
    struct gfr_rdma_poller pollers[2];
    struct ibv_cq cqs[2];

    (void)state;
    memset(pollers, 0, sizeof(pollers));
    engine.wake_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    for (int i = 0; i < 2; i++) {
        pollers[i].dev = &devs[0];
        pollers[i].index = (unsigned)i;
        pollers[i].cq = &cqs[i];
        pollers[i].kick_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    }
    devs[0].pollers = pollers;
    devs[0].npollers = 2;
    queued[nqueued++] = (struct ibv_async_event){.event_type = IBV_EVENT_CQ_ERR,
                                                 .element.cq = &cqs[1]};
    gfr_rdma_async_handle(&engine, &devs[0], POLLIN);
    assert_int_equal(pollers[0].broken, 0);
    assert_int_equal(pollers[1].broken, 1);
    devs[0].pollers = NULL;
    devs[0].npollers = 0;
    for (int i = 0; i < 2; i++)
        close(pollers[i].kick_fd);
    close(engine.wake_fd);
}

/* More connections than one batch of end_conns: all of them end. */
static void
test_port_err_ends_more_than_a_batch(void **state)
{
    enum { N = 150 };
    struct test_conn *t = calloc(N, sizeof(*t));

    (void)state;
    assert_non_null(t);
    for (int i = 0; i < N; i++)
        make_conn(&t[i], 0, 1, 1);
    queue_event(IBV_EVENT_PORT_ERR, NULL, 1);
    gfr_rdma_async_handle(&engine, &devs[0], POLLIN);
    for (int i = 0; i < N; i++) {
        assert_true(ended(&t[i]));
        free_conn(&t[i]);
    }
    assert_int_equal(disconnects, N);
    free(t);
}

/* A QP the adapter reports broken ends its connection alone, with EIO. */
static void
test_qp_fatal_ends_its_connection(void **state)
{
    struct test_conn a, b;

    (void)state;
    make_conn(&a, 0, 1, 1);
    make_conn(&b, 0, 1, 1);
    queue_event(IBV_EVENT_QP_FATAL, &b.qp, 0);
    queue_event(IBV_EVENT_QP_ACCESS_ERR, &b.qp, 0);
    gfr_rdma_async_handle(&engine, &devs[0], POLLIN);
    assert_int_equal(acked, 2);
    assert_false(ended(&a));
    assert_true(ended(&b));
    assert_int_equal(b.conn->reason, -EIO);
    /* said once, against the connection (the log names its peer) */
    assert_int_equal(b.conn->nerrors, 1);
    assert_non_null(strstr(b.conn->last_error, "fake0: local work queue catastrophic error"));
    assert_int_equal(a.conn->nerrors, 0);
    free_conn(&a);
    free_conn(&b);
}

/* A fatal device error ends every connection on the device, and the
 * device is given up as if removed. */
static void
test_device_fatal_ends_the_devices_connections(void **state)
{
    struct test_conn a, b, other_dev;

    (void)state;
    make_conn(&a, 0, 1, 1);
    make_conn(&b, 0, 2, 1);
    make_conn(&other_dev, 1, 1, 1);
    queue_event(IBV_EVENT_DEVICE_FATAL, NULL, 0);
    gfr_rdma_async_handle(&engine, &devs[0], POLLIN);
    assert_true(ended(&a) && ended(&b));
    assert_int_equal(a.conn->reason, -EIO);
    assert_false(ended(&other_dev));
    /* The device is treated as removed: no new connection gets it. */
    assert_ptr_equal(engine.removed.next, &devs[0].link);
    assert_ptr_equal(engine.devices.next, &devs[1].link);
    free_conn(&a);
    free_conn(&b);
    free_conn(&other_dev);
}

/* Events that are no fault end nothing. */
static void
test_harmless_events_end_nothing(void **state)
{
    struct test_conn a;

    (void)state;
    make_conn(&a, 0, 1, 1);
    queue_event(IBV_EVENT_PORT_ACTIVE, NULL, 1);
    queue_event(IBV_EVENT_COMM_EST, &a.qp, 0);
    queue_event(IBV_EVENT_GID_CHANGE, NULL, 1);
    gfr_rdma_async_handle(&engine, &devs[0], POLLIN);
    assert_int_equal(acked, 3);
    assert_false(ended(&a));
    assert_int_equal(qp_errors, 0);
    free_conn(&a);
}

/* The CM thread polls every device's async fd until one reports an error
 * (a device being removed keeps it readable with an error): then that
 * device is no longer polled, or the CM thread would spin. */
static void
test_error_on_the_fd_stops_polling_it(void **state)
{
    struct pollfd pfds[4];
    struct gfr_rdma_dev *polled[4];

    (void)state;
    assert_int_equal(gfr_rdma_async_fds(&engine, pfds, polled, 4), 2);
    assert_int_equal(pfds[0].fd, 100);
    assert_ptr_equal(polled[1], &devs[1]);
    gfr_rdma_async_handle(&engine, &devs[0], POLLERR);
    assert_int_equal(gfr_rdma_async_fds(&engine, pfds, polled, 4), 1);
    assert_int_equal(pfds[0].fd, 101);
    assert_ptr_equal(polled[0], &devs[1]);
    /* Never more than the caller has room for. */
    devs[0].async_closed = 0;
    assert_int_equal(gfr_rdma_async_fds(&engine, pfds, polled, 1), 1);
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup(test_port_err_ends_the_ports_connections, setup),
        cmocka_unit_test_setup(test_port_err_ends_more_than_a_batch, setup),
        cmocka_unit_test_setup(test_a_flush_seen_first_carries_the_faults_reason, setup),
        cmocka_unit_test_setup(test_on_iwarp_the_qp_moves_under_the_lock, setup),
        cmocka_unit_test_setup(test_last_wqe_reached_marks_its_connection, setup),
        cmocka_unit_test_setup(test_cq_err_breaks_its_poller, setup),
        cmocka_unit_test_setup(test_qp_fatal_ends_its_connection, setup),
        cmocka_unit_test_setup(test_device_fatal_ends_the_devices_connections, setup),
        cmocka_unit_test_setup(test_harmless_events_end_nothing, setup),
        cmocka_unit_test_setup(test_error_on_the_fd_stops_polling_it, setup),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
