/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * A server's bundle keeps its replies (lib/engine/rdma-bundle.c,
 * docs/multi-rail.md "Failover without loss"): a reply to a call the
 * client tagged stays kept after its SEND completed well, until the
 * client's mark passes its xid; a resend of the call gets another copy, on
 * the resend's rail, after any copy still out; a failed copy goes again on
 * another rail; past the bounds the oldest is released, and a resend of a
 * released reply ends the connection rather than run the call twice.
 *
 * Two rails of test-conn.c over fake-verbs.c (one device: the bundle logs
 * that they share a port), a request's arrival played through the rail's
 * received callback and a SEND's completion through
 * gfr_rdma_send_complete, as the poller would.  One thread.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "engine-bundle.h"
#include "fake-verbs.h"
#include "test-conn.h"

static struct gfr_rdma_conn *rail[2];
static struct gfr_rdma_bundle *bundle;

/* What the owner (GlusterFS, for rdma.so) saw. */
static unsigned delivered;     /* requests handed on */
static unsigned replies_done;  /* its replies' done callbacks */
static int last_done_status;
static unsigned disconnects;
static int disconnect_reason;

static void
owner_received(struct gfr_rdma_conn *conn, const struct gfr_rdma_rx *rx, void *cb_arg)
{
    (void)cb_arg;
    (void)rx;
    assert_ptr_equal(conn, rail[0]); /* the lead's handle, whichever rail */
    delivered++;
}

static void
owner_disconnected(struct gfr_rdma_conn *conn, int reason, void *cb_arg)
{
    (void)conn;
    (void)cb_arg;
    disconnects++;
    disconnect_reason = reason;
}

static const struct gfr_rdma_conn_ops owner_ops = {
    .received = owner_received,
    .disconnected = owner_disconnected,
};

static void
reply_done(void *cb_arg, int status)
{
    (void)cb_arg;
    replies_done++;
    last_done_status = status;
}

/* A server's bundle of two live rails, nothing posted yet. */
static void
make_server(void)
{
    test_conn_reset();
    test_engine.opts.reply_spin_max_us = 0; /* no poller here */
    CDS_INIT_LIST_HEAD(&test_engine.bundles);
    delivered = replies_done = disconnects = 0;
    last_done_status = disconnect_reason = 1;
    for (unsigned i = 0; i < 2; i++)
        rail[i] = test_conn_new(NULL, 64, GFR_CONN_ESTABLISHED);
    rail[0]->ops = &owner_ops;
    assert_int_equal(gfr_rdma_bundle_lead(rail[0], 1), 0);
    bundle = rail[0]->bundle;
    assert_int_equal(gfr_rdma_bundle_member(bundle, rail[1], 0, -1), 0);
    assert_int_equal(rail[1]->rail, 1);
    for (unsigned i = 0; i < 2; i++)
        rail[i]->ops->connected(rail[i], rail[i]->cb_arg);
}

/* Both rails end (rail 1 first), with reason; the owner hears once. */
static void
end_server(int reason)
{
    rail[1]->ops->disconnected(rail[1], reason, rail[1]->cb_arg);
    rail[0]->ops->disconnected(rail[0], reason, rail[0]->cb_arg);
    assert_int_equal(disconnects, 1);
    gfr_rdma_bundle_free(bundle);
    for (unsigned i = 0; i < 2; i++)
        test_conn_free(rail[i]);
}

/* The client's request xid, tagged with its mark, arrives on rail r. */
static void
request_arrives(unsigned r, uint32_t xid, uint32_t mark, int resend)
{
    struct gfr_rdma_rx rx = {.xid = xid, .awaits_reply = 1, .resend = resend,
                             .written = mark};

    rail[r]->ops->received(rail[r], &rx, rail[r]->cb_arg);
}

static void
submit_reply(uint32_t xid)
{
    static const char body[] = "reply";
    struct iovec head = {(void *)body, sizeof(body)};
    struct gfr_rdma_msg m = {.xid = xid, .is_reply = 1, .head = &head, .head_cnt = 1,
                             .done = reply_done};

    assert_int_equal(gfr_rdma_submit(rail[0], &m), 0);
}

/* The work request posted i-th, a SEND of the reply to xid: which rail. */
static unsigned
reply_posted_on(unsigned i, uint32_t xid)
{
    struct gfr_wire_limits limits = {.max_msg = 1 << 20, .max_segs = 16};
    struct gfr_rdma_wr *wr = (struct gfr_rdma_wr *)(uintptr_t)fake_verbs.sent[i].wr_id;
    struct gfr_wire_msg msg;
    const char *reason;

    assert_true(i < fake_verbs.posts);
    assert_int_equal(fake_verbs.sent[i].opcode, IBV_WR_SEND);
    assert_int_equal(gfr_wire_decode((const uint8_t *)(uintptr_t)fake_verbs.sent_sge[i].addr,
                                     fake_verbs.sent_sge[i].length, &limits, &msg, &reason), 0);
    assert_int_equal(msg.hdr.type, GFR_WIRE_REPLY);
    assert_int_equal(msg.hdr.xid, xid);
    assert_true(wr->conn == rail[0] || wr->conn == rail[1]);
    return wr->conn->rail;
}

/* The i-th work request completes (ok) or is flushed. */
static void
complete(unsigned i, int ok)
{
    gfr_rdma_send_complete((struct gfr_rdma_wr *)(uintptr_t)fake_verbs.sent[i].wr_id, ok);
}

static void
test_a_reply_stays_kept_until_the_clients_mark_passes_it(void **state)
{
    (void)state;
    make_server();
    request_arrives(0, 10, 10, 0);
    assert_int_equal(delivered, 1);
    submit_reply(10);
    assert_int_equal(reply_posted_on(0, 10), 0); /* its request's rail */
    complete(0, 1);
    /* sent well, but the client may yet lose it with its device */
    assert_int_equal(replies_done, 0);
    request_arrives(1, 11, 11, 0); /* the client awaits nothing before 11 */
    assert_int_equal(replies_done, 1);
    assert_int_equal(last_done_status, 0);
    end_server(0);
    assert_int_equal(disconnect_reason, 0);
    assert_int_equal(replies_done, 1);
}

static void
test_a_resend_of_an_answered_call_gets_the_kept_reply_on_the_resends_rail(void **state)
{
    (void)state;
    make_server();
    request_arrives(0, 10, 10, 0);
    submit_reply(10);
    complete(0, 1);
    request_arrives(1, 10, 10, 1);
    assert_int_equal(delivered, 1); /* not run again */
    assert_int_equal(uatomic_read(&rail[1]->rail_duplicates), 1);
    assert_int_equal(fake_verbs.posts, 2);
    assert_int_equal(reply_posted_on(1, 10), 1);
    assert_int_equal(uatomic_read(&rail[1]->rail_resends), 1);
    complete(1, 1);
    assert_int_equal(replies_done, 0);
    request_arrives(0, 11, 11, 0);
    assert_int_equal(replies_done, 1);
    assert_int_equal(last_done_status, 0);
    end_server(0);
    assert_int_equal(replies_done, 1);
}

static void
test_a_resend_while_a_copy_is_out_gets_a_copy_after_it(void **state)
{
    (void)state;
    make_server();
    request_arrives(0, 10, 10, 0);
    submit_reply(10);
    request_arrives(1, 10, 10, 1);
    assert_int_equal(delivered, 1);
    assert_int_equal(fake_verbs.posts, 1); /* waits for the copy out */
    complete(0, 1);
    assert_int_equal(fake_verbs.posts, 2);
    assert_int_equal(reply_posted_on(1, 10), 1);
    complete(1, 1);
    assert_int_equal(replies_done, 0);
    request_arrives(1, 11, 11, 0);
    assert_int_equal(replies_done, 1);
    end_server(0);
}

static void
test_a_failed_copy_goes_again_on_another_rail(void **state)
{
    (void)state;
    make_server();
    request_arrives(0, 10, 10, 0);
    submit_reply(10);
    assert_int_equal(reply_posted_on(0, 10), 0);
    complete(0, 0);
    assert_int_equal(fake_verbs.posts, 2);
    assert_int_equal(reply_posted_on(1, 10), 1);
    assert_int_equal(replies_done, 0);
    complete(1, 1);
    request_arrives(1, 11, 11, 0);
    assert_int_equal(replies_done, 1);
    assert_int_equal(last_done_status, 0);
    end_server(0);
}

/* A blocking call holds the client's mark at 1 while GFR_BUNDLE_KEPT_REPLIES
 * + 1 calls after it are answered. */
static void
test_past_the_bounds_the_oldest_goes_and_its_resend_ends_the_connection(void **state)
{
    const uint32_t n = GFR_BUNDLE_KEPT_REPLIES + 1;

    (void)state;
    make_server();
    for (uint32_t xid = 1; xid <= n; xid++) {
        request_arrives(xid % 2, xid, 1, 0);
        fake_verbs.posts = 0; /* the next SEND in sent[0] */
        submit_reply(xid);
        assert_int_equal(reply_posted_on(0, xid), xid % 2);
        complete(0, 1);
        /* the client's next message returns the reply's credit, and its
         * receive buffer goes back for the client */
        pthread_mutex_lock(&rail[xid % 2]->lock);
        assert_int_equal(gfr_credits_on_receive(&rail[xid % 2]->credits, 1), 0);
        gfr_credits_on_repost(&rail[xid % 2]->credits, 1);
        pthread_mutex_unlock(&rail[xid % 2]->lock);
    }
    assert_int_equal(delivered, n);
    assert_int_equal(replies_done, 1); /* the oldest, xid 1 */
    fake_verbs.posts = 0;
    request_arrives(0, 1, 1, 1);
    assert_int_equal(delivered, n); /* not run twice */
    assert_int_equal(fake_verbs.posts, 0);
    end_server(-ECONNRESET);
    assert_int_equal(disconnect_reason, -EPROTO); /* the bundle's reason, not the rails' */
    assert_int_equal(replies_done, n); /* the rest, each answered */
    assert_int_equal(last_done_status, 0);
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_a_reply_stays_kept_until_the_clients_mark_passes_it),
        cmocka_unit_test(test_a_resend_of_an_answered_call_gets_the_kept_reply_on_the_resends_rail),
        cmocka_unit_test(test_a_resend_while_a_copy_is_out_gets_a_copy_after_it),
        cmocka_unit_test(test_a_failed_copy_goes_again_on_another_rail),
        cmocka_unit_test(test_past_the_bounds_the_oldest_goes_and_its_resend_ends_the_connection),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
