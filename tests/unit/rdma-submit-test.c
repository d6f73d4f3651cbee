/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * How a submitted message's bulk travels (lib/engine/rdma-submit.c, with the
 * staging buffers of lib/engine/rdma-sbuf.c): up to copy-max it is copied into a
 * buffer the connection registered once and keeps, as a read list, as the
 * source of a push, or as the write list a request offers (copied out into
 * the caller's buffers when the reply comes); above it, or with copy-max
 * 0, the caller's memory is registered for the transfer.  fake-verbs.c
 * counts registrations and keeps the posted work requests.
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

#define BULK (100u << 10)

static uint8_t bulk[BULK];
static uint8_t reply_buf[BULK];
static unsigned done_calls;
/* Registrations of the connection's own (its send buffers), made and
 * undone by test-conn.c: the tests count what submitting adds. */
static unsigned base_regs;
#define REGS (fake_verbs.registered - base_regs)
#define DEREGS (fake_verbs.deregistered)

static void
done(void *cb_arg, int status)
{
    (void)cb_arg;
    (void)status;
    done_calls++;
}

static struct gfr_rdma_conn *
make_conn(uint32_t copy_max)
{
    struct gfr_rdma_conn *conn;

    test_conn_reset();
    test_engine.opts.reply_spin_max_us = 0; /* no poller here */
    test_engine.opts.copy_max = copy_max;
    done_calls = 0;
    for (size_t i = 0; i < BULK; i++)
        bulk[i] = (uint8_t)(i * 7 + 3);
    conn = test_conn_new(NULL, 8, GFR_CONN_ESTABLISHED);
    base_regs = fake_verbs.registered;
    return conn;
}

/* The posted SEND i, decoded. */
static struct gfr_wire_msg
posted(unsigned i)
{
    struct gfr_wire_limits limits = {.max_msg = 1 << 20, .max_segs = 16};
    struct gfr_wire_msg msg;
    const char *reason;

    assert_int_equal(fake_verbs.sent[i].opcode, IBV_WR_SEND);
    assert_int_equal(gfr_wire_decode((const uint8_t *)(uintptr_t)fake_verbs.sent_sge[i].addr,
                                     fake_verbs.sent_sge[i].length, &limits, &msg, &reason), 0);
    return msg;
}

static int
send_request(struct gfr_rdma_conn *conn, uint32_t xid, const struct iovec *reply)
{
    struct iovec head = {"head", 4};
    struct iovec body = {bulk, BULK};
    struct gfr_rdma_msg m = {.xid = xid, .head = &head, .head_cnt = 1,
                             .bulk = reply ? NULL : &body, .bulk_cnt = reply ? 0 : 1,
                             .reply = reply, .reply_cnt = reply ? 1 : 0, .done = done};

    return gfr_rdma_submit(conn, &m);
}

/* The peer pulled xid's read list (DONE) and its SEND completed. */
static void
peer_pulled(struct gfr_rdma_conn *conn, uint32_t xid)
{
    struct gfr_rdma_offer *offer;

    pthread_mutex_lock(&conn->lock);
    offer = gfr_rdma_offer_find_locked(conn, xid, GFR_OFFER_DONE);
    assert_non_null(offer);
    gfr_rdma_offer_arrived_locked(conn, offer, GFR_OFFER_DONE);
    pthread_mutex_unlock(&conn->lock);
    gfr_rdma_offer_settle(conn, offer, GFR_OFFER_SEND, 0);
    gfr_rdma_offer_pulled(conn, offer, 0);
}

/* The peer's request xid offered a write list of BULK bytes (rkey 77). */
static void
peer_offered_write_list(struct gfr_rdma_conn *conn, uint32_t xid)
{
    struct gfr_wire_msg request = {.hdr = {.type = GFR_WIRE_MSG, .xid = xid, .n_write = 1}};

    request.write[0] = (struct gfr_wire_seg){.addr = 0x10000, .rkey = 77, .length = BULK};
    pthread_mutex_lock(&conn->lock);
    assert_int_equal(gfr_rdma_peer_wl_add_locked(conn, &request), 0);
    pthread_mutex_unlock(&conn->lock);
}

static void
test_bulk_is_staged_in_a_buffer_registered_once(void **state)
{
    struct gfr_rdma_conn *conn = make_conn(4 << 20);
    struct gfr_wire_msg msg;

    (void)state;
    assert_int_equal(send_request(conn, 1, NULL), 0);
    msg = posted(0);
    assert_int_equal(msg.hdr.n_read, 1);
    assert_int_equal(msg.read[0].length, BULK);
    assert_ptr_not_equal((void *)(uintptr_t)msg.read[0].addr, bulk);
    assert_memory_equal((void *)(uintptr_t)msg.read[0].addr, bulk, BULK);
    assert_int_equal(REGS, 1);
    assert_int_equal(conn->stats.staged_bytes, BULK);
    assert_true(conn->stats.copied_bytes >= BULK);
    peer_pulled(conn, 1);
    assert_int_equal(done_calls, 1);

    /* The next message reuses the buffer: no registration. */
    assert_int_equal(send_request(conn, 2, NULL), 0);
    assert_int_equal(posted(1).read[0].addr, msg.read[0].addr);
    assert_int_equal(REGS, 1);
    peer_pulled(conn, 2);
    test_conn_free(conn);
    assert_int_equal(DEREGS, fake_verbs.registered);
}

/* A request its peer will answer asks the peer to let the reply end its
 * read list (no DONE); one that will not be answered, or that has no read
 * list, does not; a reply cannot ask it. */
static void
test_a_request_that_will_be_answered_waives_its_done(void **state)
{
    struct gfr_rdma_conn *conn = make_conn(4 << 20);
    struct iovec head = {"head", 4};
    struct iovec body = {bulk, BULK};
    struct gfr_rdma_msg m = {.xid = 1, .head = &head, .head_cnt = 1, .bulk = &body,
                             .bulk_cnt = 1, .expects_reply = 1, .done = done};
    struct gfr_rdma_offer *offer;

    (void)state;
    assert_int_equal(gfr_rdma_submit(conn, &m), 0);
    assert_int_equal(posted(0).hdr.flags, GFR_WIRE_F_REPLY_ENDS_READS);
    pthread_mutex_lock(&conn->lock);
    offer = gfr_rdma_offer_find_locked(conn, 1, GFR_OFFER_DONE);
    pthread_mutex_unlock(&conn->lock);
    assert_non_null(offer);
    assert_true(offer->reply_ends_reads);
    peer_pulled(conn, 1);
    assert_int_equal(done_calls, 1);

    m.xid = 2;
    m.expects_reply = 0;
    assert_int_equal(gfr_rdma_submit(conn, &m), 0);
    assert_int_equal(posted(1).hdr.flags, 0);
    peer_pulled(conn, 2);

    m.xid = 3;
    m.expects_reply = 1;
    m.bulk_cnt = 0;
    assert_int_equal(gfr_rdma_submit(conn, &m), 0);
    assert_int_equal(posted(2).hdr.n_read, 0);
    assert_int_equal(posted(2).hdr.flags, 0);

    m.is_reply = 1;
    assert_int_equal(gfr_rdma_submit(conn, &m), -EINVAL);
    test_conn_free(conn);
}

static void
test_without_staging_the_callers_memory_is_registered(void **state)
{
    struct gfr_rdma_conn *conn = make_conn(0);
    struct gfr_wire_msg msg;

    (void)state;
    assert_int_equal(send_request(conn, 1, NULL), 0);
    msg = posted(0);
    assert_int_equal(msg.hdr.n_read, 1);
    assert_ptr_equal((void *)(uintptr_t)msg.read[0].addr, bulk);
    assert_int_equal(REGS, 1);
    assert_int_equal(conn->stats.staged_bytes, 0);
    peer_pulled(conn, 1);
    assert_int_equal(DEREGS, 1);
    test_conn_free(conn);
}

/* A request's reply buffer is offered as a staging buffer; what the peer
 * writes there reaches the caller's buffer before the reply is delivered. */
static void
test_a_reply_lands_in_staging_and_is_copied_out(void **state)
{
    struct gfr_rdma_conn *conn = make_conn(4 << 20);
    struct iovec reply = {reply_buf, BULK};
    struct gfr_rdma_offer *offer;
    struct gfr_wire_msg msg;
    uint8_t *landing;

    (void)state;
    memset(reply_buf, 0, BULK);
    assert_int_equal(send_request(conn, 5, &reply), 0);
    msg = posted(0);
    assert_int_equal(msg.hdr.n_write, 1);
    assert_int_equal(msg.write[0].length, BULK);
    landing = (uint8_t *)(uintptr_t)msg.write[0].addr;
    assert_ptr_not_equal(landing, reply_buf);
    memcpy(landing, bulk, 1000); /* the peer's RDMA WRITE */

    pthread_mutex_lock(&conn->lock);
    offer = gfr_rdma_offer_find_locked(conn, 5, GFR_OFFER_REPLY);
    assert_non_null(offer);
    gfr_rdma_offer_arrived_locked(conn, offer, GFR_OFFER_REPLY);
    pthread_mutex_unlock(&conn->lock);
    gfr_rdma_offer_revoke_writes(conn, offer, 1000);
    assert_memory_equal(reply_buf, bulk, 1000);
    assert_int_equal(reply_buf[1000], 0);
    assert_int_equal(conn->stats.staged_bytes, 1000);
    gfr_rdma_offer_settle(conn, offer, GFR_OFFER_SEND, 0);
    gfr_rdma_offer_settle(conn, offer, GFR_OFFER_DELIVERY, 0);
    assert_int_equal(done_calls, 1);
    assert_int_equal(REGS, 1);
    assert_int_equal(DEREGS, 0); /* kept for the next one */
    test_conn_free(conn);
    assert_int_equal(DEREGS, fake_verbs.registered);
}

/* A reply into the write list the peer's request offered is pushed from a
 * staging buffer: the RDMA WRITE's source is the copy. */
static void
test_a_reply_is_pushed_from_staging(void **state)
{
    struct gfr_rdma_conn *conn = make_conn(4 << 20);
    struct iovec head = {"head", 4};
    struct iovec body = {bulk, BULK};
    struct gfr_rdma_msg m = {.xid = 9, .is_reply = 1, .head = &head, .head_cnt = 1,
                             .bulk = &body, .bulk_cnt = 1, .done = done};

    (void)state;
    peer_offered_write_list(conn, 9);
    assert_int_equal(gfr_rdma_submit(conn, &m), 0);
    assert_int_equal(fake_verbs.posts, 2); /* the WRITE, and the reply right behind it */
    assert_int_equal(posted(1).hdr.type, GFR_WIRE_REPLY);
    assert_int_equal(posted(1).hdr.written, BULK);
    assert_int_equal(fake_verbs.sent[0].opcode, IBV_WR_RDMA_WRITE);
    assert_int_equal(fake_verbs.sent[0].wr.rdma.rkey, 77);
    assert_ptr_not_equal((void *)(uintptr_t)fake_verbs.sent_sge[0].addr, bulk);
    assert_memory_equal((void *)(uintptr_t)fake_verbs.sent_sge[0].addr, bulk,
                        fake_verbs.sent_sge[0].length);
    assert_int_equal(REGS, 1);
    assert_int_equal(conn->stats.staged_bytes, BULK);
    assert_true(conn->stats.copied_bytes >= BULK);
    gfr_rdma_xfer_complete((struct gfr_rdma_wr *)(uintptr_t)fake_verbs.sent[0].wr_id, 1);
    test_conn_free(conn);
    assert_int_equal(DEREGS, fake_verbs.registered);
}

/* With room for one WRITE in flight, the reply follows the last WRITE as
 * soon as it is posted, not its completion. */
static void
test_a_reply_follows_the_last_write_posted(void **state)
{
    struct gfr_rdma_conn *conn = make_conn(4 << 20);
    struct iovec body = {bulk, BULK};
    struct gfr_rdma_msg m = {.xid = 9, .is_reply = 1, .bulk = &body, .bulk_cnt = 1,
                             .done = done};

    (void)state;
    conn->opts.rdma_depth = 1;
    conn->opts.segment_size = 64 << 10;
    peer_offered_write_list(conn, 9);
    assert_int_equal(gfr_rdma_submit(conn, &m), 0);
    assert_int_equal(fake_verbs.posts, 1);
    assert_int_equal(fake_verbs.sent[0].opcode, IBV_WR_RDMA_WRITE);
    gfr_rdma_xfer_complete((struct gfr_rdma_wr *)(uintptr_t)fake_verbs.sent[0].wr_id, 1);
    assert_int_equal(fake_verbs.posts, 3);
    assert_int_equal(fake_verbs.sent[1].opcode, IBV_WR_RDMA_WRITE);
    assert_int_equal(posted(2).hdr.type, GFR_WIRE_REPLY);
    assert_int_equal(done_calls, 0); /* the reply's SEND has not completed */
    gfr_rdma_xfer_complete((struct gfr_rdma_wr *)(uintptr_t)fake_verbs.sent[1].wr_id, 1);
    test_conn_free(conn);
    assert_int_equal(done_calls, 1);
}

/* On a connection a listener accepted, other clients share the device's
 * protection domain: a read list registers the caller's memory for its
 * one transfer, and only a push (no remote access) is staged. */
static void
test_a_server_stages_only_what_needs_no_remote_access(void **state)
{
    struct gfr_rdma_conn *conn = make_conn(4 << 20);
    struct iovec body = {bulk, BULK};
    struct gfr_rdma_msg pushed = {.xid = 9, .is_reply = 1, .bulk = &body, .bulk_cnt = 1};
    struct gfr_rdma_msg listed = {.xid = 10, .is_reply = 1, .bulk = &body, .bulk_cnt = 1};

    (void)state;
    conn->is_server = 1;
    assert_int_equal(send_request(conn, 1, NULL), 0);
    assert_ptr_equal((void *)(uintptr_t)posted(0).read[0].addr, bulk);
    assert_int_equal(fake_verbs.last_access, IBV_ACCESS_REMOTE_READ);
    assert_int_equal(gfr_rdma_submit(conn, &listed), 0);
    assert_ptr_equal((void *)(uintptr_t)posted(1).read[0].addr, bulk);

    peer_offered_write_list(conn, 9);
    assert_int_equal(gfr_rdma_submit(conn, &pushed), 0);
    assert_int_equal(fake_verbs.sent[2].opcode, IBV_WR_RDMA_WRITE);
    assert_ptr_not_equal((void *)(uintptr_t)fake_verbs.sent_sge[2].addr, bulk);
    assert_int_equal(fake_verbs.last_access, IBV_ACCESS_LOCAL_WRITE);
    assert_int_equal(conn->stats.staged_bytes, BULK);
    assert_true(conn->stats.copied_bytes >= BULK);
    gfr_rdma_xfer_complete((struct gfr_rdma_wr *)(uintptr_t)fake_verbs.sent[2].wr_id, 1);
    test_conn_free(conn);
    assert_int_equal(DEREGS, fake_verbs.registered);
}

/* Sixteen pieces of bulk behind a head that leaves room for one read
 * segment: offered as one copy, so the SEND never outgrows what the peer
 * agreed to receive, whether it goes at once or waits for a credit (the
 * send slots are only that large). */
static void
test_a_read_list_never_outgrows_the_inline_size(void **state)
{
    static uint8_t head_bytes[8192];
    struct iovec head = {head_bytes, 8192 - GFR_WIRE_HDR_SIZE - GFR_WIRE_SEG_SIZE - 8};
    struct iovec pieces[16];
    struct gfr_rdma_msg m = {.head = &head, .head_cnt = 1, .bulk = pieces, .bulk_cnt = 16,
                             .done = done};
    struct gfr_rdma_conn *conn = make_conn(0); /* no staging: the pieces are registered */

    (void)state;
    for (unsigned i = 0; i < 16; i++)
        pieces[i] = (struct iovec){bulk + i * (BULK / 16), BULK / 16};
    m.xid = 1;
    assert_int_equal(gfr_rdma_submit(conn, &m), 0);
    assert_true(fake_verbs.sent_sge[0].length <= conn->agreed.inline_max);
    assert_int_equal(posted(0).hdr.n_read, 1);

    /* Out of credits: the encoded message waits, and must fit a slot too. */
    conn->credits.send_avail = 1;
    m.xid = 2;
    assert_int_equal(gfr_rdma_submit(conn, &m), 0);
    assert_int_equal(fake_verbs.posts, 1);
    conn->credits.send_avail = 4;
    gfr_rdma_send_flush(conn);
    assert_int_equal(fake_verbs.posts, 2);
    assert_true(fake_verbs.sent_sge[1].length <= conn->agreed.inline_max);
    assert_int_equal(posted(1).hdr.n_read, 1);
    assert_memory_equal((const uint8_t *)(uintptr_t)posted(1).read[0].addr, bulk, BULK);
    test_conn_free(conn);
    assert_int_equal(DEREGS, fake_verbs.registered);
}

/* Fifteen reply buffers need a header larger than a 256-byte inline size:
 * refused as too large, with nothing registered left behind, and never
 * queued to overrun a send slot when no credit is free. */
static void
test_more_reply_buffers_than_a_header_holds_are_refused(void **state)
{
    struct iovec head = {"head", 4};
    struct iovec replies[15];
    struct gfr_rdma_msg m = {.xid = 3, .head = &head, .head_cnt = 1, .reply = replies,
                             .reply_cnt = 15, .done = done};
    struct gfr_rdma_conn *conn = make_conn(0);

    (void)state;
    for (unsigned i = 0; i < 15; i++)
        replies[i] = (struct iovec){reply_buf + i * 1024, 1024};
    conn->agreed.inline_max = 256;
    conn->credits.send_avail = 1;
    assert_int_equal(gfr_rdma_submit(conn, &m), -EMSGSIZE);
    assert_true(cds_list_empty(&conn->pending));
    conn->credits.send_avail = 4;
    assert_int_equal(gfr_rdma_submit(conn, &m), -EMSGSIZE);
    assert_int_equal(fake_verbs.posts, 0);
    assert_int_equal(done_calls, 0);
    assert_int_equal(DEREGS, REGS);
    test_conn_free(conn);
}

static int reaped_during_registration;

/* The device goes away while a submission registers its bulk: the CM
 * thread fails the connection and drops its reference, as on
 * RDMA_CM_EVENT_DEVICE_REMOVAL.  Had that been the last reference, the
 * connection would be finalized now and the device's PD freed under the
 * registration. */
static void
device_removed(void *arg)
{
    struct gfr_rdma_conn *conn = arg;

    fake_verbs.on_reg_mr = NULL;
    gfr_rdma_conn_fail(conn, -ENODEV);
    gfr_rdma_conn_cm_done(conn);
    reaped_during_registration = !cds_list_empty(&test_engine.reap);
}

static void
test_a_submission_keeps_its_device_while_it_registers(void **state)
{
    struct gfr_rdma_conn *conn = make_conn(0);

    (void)state;
    reaped_during_registration = -1;
    fake_verbs.on_reg_mr = device_removed;
    fake_verbs.on_reg_mr_arg = conn;
    assert_int_equal(send_request(conn, 1, NULL), -ENOTCONN);
    assert_int_equal(reaped_during_registration, 0);
    /* Its registration undone, the submission let go: now it is reaped. */
    assert_int_equal(DEREGS, REGS);
    assert_int_equal(conn->outstanding, 0);
    assert_false(cds_list_empty(&test_engine.reap));
    cds_list_del(&conn->reap_link);
    assert_int_equal(done_calls, 0);
    test_conn_free(conn);
}

/* Only a read list that went out counts as offered (the statistic is
 * written under conn->lock with the rest). */
static void
test_a_failed_submission_is_not_counted_as_offered(void **state)
{
    struct gfr_rdma_conn *conn = make_conn(0);

    (void)state;
    fake_verbs.reg_mr_errno = ENOMEM;
    assert_int_equal(send_request(conn, 1, NULL), -ENOMEM);
    assert_int_equal(conn->stats.bulk_offered, 0);
    fake_verbs.reg_mr_errno = 0;
    assert_int_equal(send_request(conn, 2, NULL), 0);
    assert_int_equal(conn->stats.bulk_offered, 1);
    test_conn_free(conn);
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_bulk_is_staged_in_a_buffer_registered_once),
        cmocka_unit_test(test_a_request_that_will_be_answered_waives_its_done),
        cmocka_unit_test(test_without_staging_the_callers_memory_is_registered),
        cmocka_unit_test(test_a_reply_lands_in_staging_and_is_copied_out),
        cmocka_unit_test(test_a_reply_is_pushed_from_staging),
        cmocka_unit_test(test_a_reply_follows_the_last_write_posted),
        cmocka_unit_test(test_a_server_stages_only_what_needs_no_remote_access),
        cmocka_unit_test(test_a_read_list_never_outgrows_the_inline_size),
        cmocka_unit_test(test_more_reply_buffers_than_a_header_holds_are_refused),
        cmocka_unit_test(test_a_submission_keeps_its_device_while_it_registers),
        cmocka_unit_test(test_a_failed_submission_is_not_counted_as_offered),
    };

    return cmocka_run_group_tests_name("rdma-submit", tests, NULL, NULL);
}
