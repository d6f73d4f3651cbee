/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Offers (lib/engine/rdma-offer.c) on a connection built by hand: what an offer
 * waits for, how the peer's DONE and reply move it on, when it ends and
 * with which status, and what a connection's end does with the rest.
 * Offers here register nothing, so no verbs call is made.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "fake-verbs.h"
#include "test-conn.h"

static unsigned done_calls;
static int done_status;
static char last_log[512];

/* cb_arg, when not NULL, is where the offer's own status goes. */
static void
done(void *cb_arg, int status)
{
    done_calls++;
    done_status = status;
    if (cb_arg)
        *(int *)cb_arg = status;
}

static void
capture_log(const char *msg, void *arg)
{
    (void)arg;
    snprintf(last_log, sizeof(last_log), "%s", msg);
}

static struct gfr_rdma_conn *
make_conn(void)
{
    test_conn_reset();
    done_calls = 0;
    done_status = 1;
    last_log[0] = 0;
    return test_conn_new(NULL, 8, GFR_CONN_ESTABLISHED);
}

static void
free_conn(struct gfr_rdma_conn *conn)
{
    test_conn_free(conn);
}

/* An offer for xid, on the connection's list, waiting for waits. */
static struct gfr_rdma_offer *
add_offer(struct gfr_rdma_conn *conn, uint32_t xid, unsigned waits)
{
    struct gfr_rdma_offer *o = gfr_rdma_offer_new();

    assert_non_null(o);
    o->xid = xid;
    o->waits = waits;
    o->done = done;
    cds_list_add_tail(&o->link, &conn->offers[xid % GFR_RDMA_XID_BUCKETS]);
    return o;
}

static void
test_waits_print_by_name(void **state)
{
    char buf[GFR_OFFER_WAITS_STR_MAX];

    (void)state;
    assert_string_equal(gfr_rdma_offer_waits_str(0, buf), "none");
    assert_string_equal(gfr_rdma_offer_waits_str(GFR_OFFER_SEND | GFR_OFFER_DELIVERY, buf),
                        "SEND|DELIVERY");
    assert_string_equal(gfr_rdma_offer_waits_str(0x1f, buf),
                        "SEND|DONE|REVOKE|REPLY|DELIVERY");
    assert_string_equal(gfr_rdma_offer_waits_str(GFR_OFFER_DONE | 0x40, buf), "DONE|0x40");
}

/* A request with a read list and a write list: it ends once its SEND, the
 * peer's DONE and its reply have all been dealt with, and done hears the
 * first failure. */
static void
test_an_offer_ends_when_nothing_is_left_to_wait_for(void **state)
{
    struct gfr_rdma_conn *conn = make_conn();
    struct gfr_rdma_offer *o =
        add_offer(conn, 7, GFR_OFFER_SEND | GFR_OFFER_DONE | GFR_OFFER_REPLY);

    (void)state;
    pthread_mutex_lock(&conn->lock);
    assert_ptr_equal(gfr_rdma_offer_find_locked(conn, 7, GFR_OFFER_DONE), o);
    assert_int_equal(gfr_rdma_offer_arrived_locked(conn, o, GFR_OFFER_DONE), 0);
    /* a second DONE finds nothing while the first is handled */
    assert_null(gfr_rdma_offer_find_locked(conn, 7, GFR_OFFER_DONE));
    assert_ptr_equal(gfr_rdma_offer_find_locked(conn, 7, GFR_OFFER_REPLY), o);
    assert_int_equal(gfr_rdma_offer_arrived_locked(conn, o, GFR_OFFER_REPLY), 0);
    assert_null(gfr_rdma_offer_find_locked(conn, 7, GFR_OFFER_REPLY));
    pthread_mutex_unlock(&conn->lock);
    assert_int_equal(o->waits, GFR_OFFER_SEND | GFR_OFFER_REVOKE | GFR_OFFER_DELIVERY);

    gfr_rdma_offer_settle(conn, o, GFR_OFFER_SEND, 0);
    gfr_rdma_offer_pulled(conn, o, -EREMOTEIO);
    assert_int_equal(done_calls, 0);
    gfr_rdma_offer_settle(conn, o, GFR_OFFER_DELIVERY, -ENOMEM);
    assert_int_equal(done_calls, 1);
    assert_int_equal(done_status, -EREMOTEIO);
    assert_true(cds_list_empty(&conn->offers[7]));
    free_conn(conn);
}

/* Events the offer does not wait for are our bugs: refused, logged with
 * what it does wait for, and the offer goes on as before. */
static void
test_an_event_not_awaited_changes_nothing(void **state)
{
    struct gfr_rdma_conn *conn = make_conn();
    struct gfr_rdma_offer *o = add_offer(conn, 9, GFR_OFFER_SEND);

    (void)state;
    gfr_rdma_set_log(capture_log, NULL);
    pthread_mutex_lock(&conn->lock);
    assert_int_equal(gfr_rdma_offer_arrived_locked(conn, o, GFR_OFFER_REPLY), -EINVAL);
    pthread_mutex_unlock(&conn->lock);
    assert_non_null(strstr(last_log, "the offer of xid 9 got REPLY but waits for SEND"));
    gfr_rdma_offer_settle(conn, o, GFR_OFFER_DELIVERY, 0);
    assert_non_null(strstr(last_log, "got DELIVERY but waits for SEND"));
    assert_int_equal(o->waits, GFR_OFFER_SEND);
    assert_int_equal(done_calls, 0);
    gfr_rdma_set_log(NULL, NULL);
    gfr_rdma_offer_settle(conn, o, GFR_OFFER_SEND, 0);
    assert_int_equal(done_calls, 1);
    assert_int_equal(done_status, 0);
    free_conn(conn);
}

/* The end of a connection ends every offer left: with its own failure if
 * one was recorded, else -ENOTCONN. */
static void
test_the_end_of_a_connection_ends_every_offer(void **state)
{
    struct gfr_rdma_conn *conn = make_conn();
    struct gfr_rdma_offer *o[3] = {
        add_offer(conn, 1, GFR_OFFER_SEND | GFR_OFFER_REPLY),
        add_offer(conn, 2, GFR_OFFER_SEND),
        add_offer(conn, 2 + GFR_RDMA_XID_BUCKETS, GFR_OFFER_DONE),
    };
    int status[3] = {1, 1, 1};

    (void)state;
    for (int i = 0; i < 3; i++)
        o[i]->cb_arg = &status[i];
    gfr_rdma_offer_settle(conn, o[0], GFR_OFFER_SEND, -EIO);
    gfr_rdma_offers_release_all(conn);
    assert_int_equal(done_calls, 3);
    assert_int_equal(status[0], -EIO);
    assert_int_equal(status[1], -ENOTCONN);
    assert_int_equal(status[2], -ENOTCONN);
    for (unsigned b = 0; b < GFR_RDMA_XID_BUCKETS; b++)
        assert_true(cds_list_empty(&conn->offers[b]));
    free_conn(conn);
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_waits_print_by_name),
        cmocka_unit_test(test_an_offer_ends_when_nothing_is_left_to_wait_for),
        cmocka_unit_test(test_an_event_not_awaited_changes_nothing),
        cmocka_unit_test(test_the_end_of_a_connection_ends_every_offer),
    };

    return cmocka_run_group_tests_name("rdma-offer", tests, NULL, NULL);
}
