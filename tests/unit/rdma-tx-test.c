/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The send queue (lib/engine/rdma-tx.c) on a connection whose send side the
 * engine's own gfr_rdma_conn_setup_send_side built: messages wait for
 * credits in order, a CREDIT message goes out when one is due, and a SEND
 * completion frees its slot, the slots of the unsignaled SENDs before it,
 * and its offer's SEND.  fake-verbs.c records each work request posted.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#include "fake-verbs.h"
#include "gfr_clock.h"
#include "test-conn.h"

static unsigned done_calls;

static void
done(void *cb_arg, int status)
{
    (void)cb_arg;
    (void)status;
    done_calls++;
}

/* An established connection with `credits` credits each way and as many
 * send slots. */
static struct gfr_rdma_conn *
make_conn(uint32_t credits)
{
    test_conn_reset();
    done_calls = 0;
    return test_conn_new(NULL, credits, GFR_CONN_ESTABLISHED);
}

static void
free_conn(struct gfr_rdma_conn *conn)
{
    test_conn_free(conn);
}

/* The header of posted SEND i. */
static struct gfr_wire_hdr
posted_hdr(unsigned i)
{
    struct gfr_wire_limits limits = {.max_msg = 1 << 20, .max_segs = 16};
    struct gfr_wire_msg msg;
    const char *reason;

    assert_int_equal(gfr_wire_decode((const uint8_t *)(uintptr_t)fake_verbs.sent_sge[i].addr,
                                     fake_verbs.sent_sge[i].length, &limits, &msg, &reason), 0);
    return msg.hdr;
}

static int
send_xid(struct gfr_rdma_conn *conn, uint32_t xid, struct gfr_rdma_offer *offer)
{
    struct gfr_wire_hdr hdr = {.type = GFR_WIRE_MSG, .xid = xid, .inline_len = 4};
    struct iovec iov = {"ping", 4};
    int err;

    pthread_mutex_lock(&conn->lock);
    err = gfr_rdma_send_locked(conn, &hdr, NULL, NULL, &iov, 1, offer);
    pthread_mutex_unlock(&conn->lock);
    return err;
}

/* Messages beyond the credits wait, in order, and go out as the peer's
 * grants come, each SEND carrying this side's grant. */
static void
test_messages_wait_for_credits_in_order(void **state)
{
    struct gfr_rdma_conn *conn = make_conn(4);
    unsigned sent_first;

    (void)state;
    for (uint32_t xid = 1; xid <= 8; xid++)
        assert_int_equal(send_xid(conn, xid, NULL), 0);
    sent_first = fake_verbs.posts;
    assert_true(sent_first > 0 && sent_first < 8);
    assert_int_equal(conn->stats.queued_for_credits, 8 - sent_first);
    pthread_mutex_lock(&conn->lock);
    assert_int_equal(gfr_credits_on_receive(&conn->credits, (uint16_t)sent_first), 0);
    gfr_rdma_flush_locked(conn);
    pthread_mutex_unlock(&conn->lock);
    assert_true(fake_verbs.posts > sent_first);
    for (unsigned i = 0; i < fake_verbs.posts; i++) {
        assert_int_equal(fake_verbs.sent[i].opcode, IBV_WR_SEND);
        assert_int_equal(posted_hdr(i).xid, i + 1);
    }
    free_conn(conn);
}

/* Every payload byte copied is counted: once into a send slot, or into a
 * queued copy and then, with its header, from there into a slot. */
static void
test_copies_are_counted(void **state)
{
    struct gfr_rdma_conn *conn = make_conn(2);
    size_t queued_len = gfr_wire_hdr_len(0, 0) + 4;
    unsigned sent_first, flushed;

    (void)state;
    for (uint32_t xid = 1; xid <= 4; xid++)
        assert_int_equal(send_xid(conn, xid, NULL), 0);
    sent_first = fake_verbs.posts;
    assert_true(sent_first > 0 && sent_first < 4);
    assert_int_equal(conn->stats.copied_bytes, 4 * 4);
    pthread_mutex_lock(&conn->lock);
    assert_int_equal(gfr_credits_on_receive(&conn->credits, (uint16_t)sent_first), 0);
    gfr_rdma_flush_locked(conn);
    pthread_mutex_unlock(&conn->lock);
    flushed = fake_verbs.posts - sent_first;
    assert_true(flushed > 0);
    assert_int_equal(conn->stats.copied_bytes, 4 * 4 + flushed * queued_len);
    free_conn(conn);
}

/* The owner's copies (rdma.so's into GlusterFS's buffers) are counted with
 * the engine's, and gfr_rdma_conn_stats reports the sum. */
static void
test_the_owners_copies_are_counted_with_the_engines(void **state)
{
    struct gfr_rdma_conn *conn = make_conn(2);
    struct gfr_rdma_conn_stats stats;

    (void)state;
    assert_int_equal(send_xid(conn, 1, NULL), 0);
    gfr_rdma_conn_count_copied(conn, 4096);
    gfr_rdma_conn_count_copied(conn, 100);
    gfr_rdma_conn_stats(conn, &stats);
    assert_int_equal(stats.copied_bytes, 4 + 4096 + 100);
    free_conn(conn);
}

/* Receive buffers reposted but not yet announced make a CREDIT message go
 * out once enough have piled up, without using a data credit. */
static void
test_a_credit_update_goes_out_when_due(void **state)
{
    struct gfr_rdma_conn *conn = make_conn(8);

    (void)state;
    pthread_mutex_lock(&conn->lock);
    for (int i = 0; i < 8 && !gfr_credits_need_update(&conn->credits); i++) {
        assert_int_equal(gfr_credits_on_receive(&conn->credits, 0), 0);
        gfr_credits_on_repost(&conn->credits, 1);
    }
    assert_true(gfr_credits_need_update(&conn->credits));
    gfr_rdma_flush_locked(conn);
    pthread_mutex_unlock(&conn->lock);
    assert_int_equal(fake_verbs.posts, 1);
    assert_int_equal(posted_hdr(0).type, GFR_WIRE_CREDIT);
    assert_true(posted_hdr(0).credits > 0);
    assert_int_equal(conn->stats.credit_updates, 1);
    assert_int_equal(conn->stats.sent, 0);
    free_conn(conn);
}

/* A throttled connection takes the peer's messages and sends its own, but
 * returns no credit in them and sends no CREDIT message; lifting the
 * throttle returns the whole withheld grant at once. */
static void
test_throttle_withholds_credits_until_lifted(void **state)
{
    struct gfr_rdma_conn *conn = make_conn(8);
    uint32_t received = 0;

    (void)state;
    assert_int_equal(gfr_rdma_throttle(conn, 1), 0);
    assert_int_equal(gfr_rdma_throttle(conn, 1), 0); /* counted once */
    assert_int_equal(conn->stats.throttles, 1);
    pthread_mutex_lock(&conn->lock);
    while (gfr_credits_on_receive(&conn->credits, 0) == 0) {
        gfr_credits_on_repost(&conn->credits, 1);
        gfr_rdma_flush_locked(conn);
        received++;
    }
    pthread_mutex_unlock(&conn->lock);
    assert_int_equal(received, 8);
    assert_int_equal(fake_verbs.posts, 0); /* no CREDIT message */
    assert_int_equal(send_xid(conn, 1, NULL), 0);
    assert_int_equal(fake_verbs.posts, 1);
    assert_int_equal(posted_hdr(0).type, GFR_WIRE_MSG);
    assert_int_equal(posted_hdr(0).credits, 0);

    assert_int_equal(gfr_rdma_throttle(conn, 0), 0);
    assert_int_equal(fake_verbs.posts, 2);
    assert_int_equal(posted_hdr(1).type, GFR_WIRE_CREDIT);
    assert_int_equal(posted_hdr(1).credits, received);
    assert_int_equal(conn->credits.peer_avail, received);

    conn->state = GFR_CONN_DISCONNECTING;
    assert_int_equal(gfr_rdma_throttle(conn, 1), -ENOTCONN);
    assert_int_equal(gfr_rdma_throttle(NULL, 1), -EINVAL);
    conn->state = GFR_CONN_ESTABLISHED;
    free_conn(conn);
}

/* A message with an offer goes signaled; its completion frees its slot and
 * those of the unsignaled SENDs before it, and settles its offer's SEND
 * (the offer waited for nothing else: it ends). */
/* Inside the fake provider's ibv_post_send: when it was called, then
 * some time spent there, as rxe spends it carrying the SEND to the peer. */
static void
provider_works(void *arg)
{
    struct timespec work = {.tv_nsec = 1000000};

    *(uint64_t *)arg = gfr_now_ns();
    nanosleep(&work, NULL);
}

/* A traced request's queue stage ends when its SEND is handed to the
 * provider, not when ibv_post_send returns: rxe delivers the SEND to the
 * peer inside the call, and a later stamp let the client's stage overlap
 * the server's (a negative "wire" row in perf/stage-breakdown's tables). */
static void
test_the_queue_stage_ends_as_the_send_is_handed_over(void **state)
{
    struct gfr_rdma_conn *conn = make_conn(4);
    struct gfr_rdma_wr *ctx;
    struct gfr_hist queue;
    uint64_t called_ns = 0;

    (void)state;
    assert_true(conn->engine->trace);
    pthread_mutex_lock(&conn->lock);
    gfr_rdma_trace_submit_locked(conn, 7, 0);
    pthread_mutex_unlock(&conn->lock);
    fake_verbs.on_post_send = provider_works;
    fake_verbs.on_post_send_arg = &called_ns;
    assert_int_equal(send_xid(conn, 7, NULL), 0);
    assert_int_equal(fake_verbs.posts, 1);
    ctx = (struct gfr_rdma_wr *)(uintptr_t)fake_verbs.sent[0].wr_id;
    gfr_hist_snapshot(&conn->engine->stage[GFR_STAGE_REQ_QUEUE], &queue);
    assert_int_equal(queue.count, 1);
    assert_true(ctx->trace_posted_ns != 0);
    assert_true(ctx->trace_posted_ns <= called_ns);
    free_conn(conn);
}

static void
test_a_completion_frees_slots_and_settles_its_offer(void **state)
{
    struct gfr_rdma_conn *conn = make_conn(8);
    struct gfr_rdma_offer *offer = gfr_rdma_offer_new();
    uint32_t free_before = conn->nfree;

    (void)state;
    assert_non_null(offer);
    offer->xid = 3;
    offer->waits = GFR_OFFER_SEND;
    offer->done = done;
    cds_list_add_tail(&offer->link, &conn->offers[3]);
    assert_int_equal(send_xid(conn, 1, NULL), 0);
    assert_int_equal(send_xid(conn, 2, NULL), 0);
    assert_int_equal(send_xid(conn, 3, offer), 0);
    assert_int_equal(fake_verbs.posts, 3);
    assert_false(fake_verbs.sent[0].send_flags & IBV_SEND_SIGNALED);
    assert_true(fake_verbs.sent[2].send_flags & IBV_SEND_SIGNALED);
    assert_int_equal(conn->nfree, free_before - 3);
    gfr_rdma_send_complete((struct gfr_rdma_wr *)(uintptr_t)fake_verbs.sent[2].wr_id, 1);
    gfr_rdma_conn_put(conn); /* the completed one's, as the dispatcher does */
    assert_int_equal(conn->nfree, free_before);
    assert_int_equal(conn->sq_count, 0);
    assert_int_equal(conn->outstanding, 1);
    assert_int_equal(done_calls, 1);
    free_conn(conn);
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_messages_wait_for_credits_in_order),
        cmocka_unit_test(test_copies_are_counted),
        cmocka_unit_test(test_the_owners_copies_are_counted_with_the_engines),
        cmocka_unit_test(test_a_credit_update_goes_out_when_due),
        cmocka_unit_test(test_throttle_withholds_credits_until_lifted),
        cmocka_unit_test(test_a_completion_frees_slots_and_settles_its_offer),
        cmocka_unit_test(test_the_queue_stage_ends_as_the_send_is_handed_over),
    };

    return cmocka_run_group_tests_name("rdma-tx", tests, NULL, NULL);
}
