/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The engine's checks of received headers against this side's own state
 * (credits, the offers it made, the requests it was sent), and the send
 * path when posting fails, on a connection built by hand over the stubbed
 * verbs of fake-verbs.c: errors rxe cannot be made to produce on demand.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif
#include <arpa/inet.h>
#include <errno.h>
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

#include "fake-verbs.h"
#include "test-conn.h"


/* An established connection with 8 credits each way and 8 send slots,
 * with a peer at peer (NULL: unknown). */
static struct gfr_rdma_conn *
make_conn_with(const struct sockaddr *peer)
{
    test_conn_reset();
    return test_conn_new(peer, 8, GFR_CONN_ESTABLISHED);
}

static struct gfr_rdma_conn *
make_conn(void)
{
    return make_conn_with(NULL);
}

static void
free_conn(struct gfr_rdma_conn *conn)
{
    struct gfr_rdma_offer *o;

    /* Offers made by hand have no done callback: ended quietly. */
    for (unsigned b = 0; b < GFR_RDMA_XID_BUCKETS; b++)
        cds_list_for_each_entry(o, &conn->offers[b], link)
            o->done = NULL;
    test_conn_free(conn);
}

/* An offer of ours for xid awaiting a DONE and/or a reply with write_total
 * bytes of buffers. */
static struct gfr_rdma_offer *
add_offer(struct gfr_rdma_conn *conn, uint32_t xid, int await_done, uint64_t write_total)
{
    struct gfr_rdma_offer *o = gfr_rdma_offer_new();

    assert_non_null(o);
    o->xid = xid;
    o->write_total = write_total;
    o->waits = GFR_OFFER_SEND | (await_done ? GFR_OFFER_DONE : 0) |
               (write_total ? GFR_OFFER_REPLY : 0);
    cds_list_add_tail(&o->link, &conn->offers[xid % GFR_RDMA_XID_BUCKETS]);
    return o;
}

static int
check(struct gfr_rdma_conn *conn, const struct gfr_wire_msg *msg,
      struct gfr_rdma_rx_plan *plan, const char **reason)
{
    int err;

    memset(plan, 0, sizeof(*plan));
    *reason = NULL;
    pthread_mutex_lock(&conn->lock);
    err = gfr_rdma_rx_accept_locked(conn, msg, plan, reason);
    pthread_mutex_unlock(&conn->lock);
    return err;
}

static void
test_done_must_name_an_offered_read_list(void **state)
{
    struct gfr_rdma_conn *conn = make_conn();
    struct gfr_wire_msg msg = {.hdr = {.type = GFR_WIRE_DONE, .xid = 5}};
    struct gfr_rdma_rx_plan plan;
    struct gfr_rdma_offer *o;
    const char *reason;

    (void)state;
    assert_int_equal(check(conn, &msg, &plan, &reason), -EPROTO);
    assert_string_equal(reason, "DONE or ERROR for a message that offered no read list");

    /* An offer awaiting only its reply does not count. */
    add_offer(conn, 5, 0, 4096);
    assert_int_equal(check(conn, &msg, &plan, &reason), -EPROTO);

    o = add_offer(conn, 5, 1, 0);
    assert_int_equal(check(conn, &msg, &plan, &reason), 0);
    assert_ptr_equal(plan.done_for, o);
    assert_int_equal(plan.done_status, 0);
    assert_int_equal(o->waits, GFR_OFFER_SEND | GFR_OFFER_REVOKE);
    /* A second DONE for it is a violation. */
    assert_int_equal(check(conn, &msg, &plan, &reason), -EPROTO);

    msg.hdr.type = GFR_WIRE_ERROR;
    o = add_offer(conn, 6, 1, 0);
    msg.hdr.xid = 6;
    assert_int_equal(check(conn, &msg, &plan, &reason), 0);
    assert_ptr_equal(plan.done_for, o);
    assert_int_equal(plan.done_status, -EREMOTEIO);
    free_conn(conn);
}

static void
test_reply_may_not_claim_more_than_was_offered(void **state)
{
    struct gfr_rdma_conn *conn = make_conn();
    struct gfr_wire_msg msg = {.hdr = {.type = GFR_WIRE_REPLY, .xid = 9, .written = 1}};
    struct gfr_rdma_rx_plan plan;
    struct gfr_rdma_offer *o;
    const char *reason;

    (void)state;
    /* Nothing offered for xid 9: no byte may have been written. */
    assert_int_equal(check(conn, &msg, &plan, &reason), -EPROTO);
    assert_string_equal(reason, "reply claims more written bytes than its request offered");
    msg.hdr.written = 0;
    assert_int_equal(check(conn, &msg, &plan, &reason), 0);
    assert_null(plan.reply_to);

    o = add_offer(conn, 9, 0, 4096);
    msg.hdr.written = 4097;
    assert_int_equal(check(conn, &msg, &plan, &reason), -EPROTO);
    msg.hdr.written = 4096;
    assert_int_equal(check(conn, &msg, &plan, &reason), 0);
    assert_ptr_equal(plan.reply_to, o);
    assert_int_equal(o->waits, GFR_OFFER_SEND | GFR_OFFER_DELIVERY);
    /* The offer is answered: a second reply may write nothing. */
    assert_int_equal(check(conn, &msg, &plan, &reason), -EPROTO);
    free_conn(conn);
}

static void
test_request_xid_with_write_list_may_not_repeat(void **state)
{
    struct gfr_rdma_conn *conn = make_conn();
    struct gfr_wire_msg msg = {.hdr = {.type = GFR_WIRE_MSG, .xid = 3, .n_write = 1},
                               .write = {{0x1000, 7, 65536}}};
    struct gfr_rdma_rx_plan plan;
    struct gfr_rdma_peer_wl *wl;
    const char *reason;

    (void)state;
    assert_int_equal(check(conn, &msg, &plan, &reason), 0);
    assert_int_equal(check(conn, &msg, &plan, &reason), -EPROTO);
    assert_string_equal(reason, "a second request with the xid of one not yet answered");
    /* Once answered, the xid may be used again. */
    pthread_mutex_lock(&conn->lock);
    wl = gfr_rdma_peer_wl_take_locked(conn, 3);
    pthread_mutex_unlock(&conn->lock);
    assert_non_null(wl);
    assert_int_equal(wl->total, 65536);
    free(wl);
    assert_int_equal(check(conn, &msg, &plan, &reason), 0);
    free_conn(conn);
}

/* A call tagged for rails (AWAITS_REPLY, RESEND, a mark in written) is a
 * violation on a connection that is no rail of a bundle, as it is for an
 * older peer, which knows no tags, and from a server, which never tags;
 * from a client to a server's rail it is a call. */
static void
test_a_call_tagged_for_rails_needs_a_bundle(void **state)
{
    static const struct {
        uint16_t flags;
        uint32_t written;
    } tags[] = {{GFR_WIRE_F_AWAITS_REPLY, 0}, {GFR_WIRE_F_AWAITS_REPLY, 3},
                {GFR_WIRE_F_AWAITS_REPLY | GFR_WIRE_F_RESEND, 3}, {0, 3}};
    struct gfr_rdma_conn *conn = make_conn();
    struct gfr_wire_msg msg = {.hdr = {.type = GFR_WIRE_MSG, .xid = 4}};
    struct gfr_rdma_rx_plan plan;
    const char *reason;
    char rail;

    (void)state;
    assert_int_equal(check(conn, &msg, &plan, &reason), 0);
    for (size_t i = 0; i < sizeof(tags) / sizeof(tags[0]); i++) {
        msg.hdr.flags = tags[i].flags;
        msg.hdr.written = tags[i].written;
        assert_int_equal(check(conn, &msg, &plan, &reason), -EPROTO);
        assert_string_equal(reason,
                            "a call tagged for rails on a connection that is no rail of a bundle");
    }
    conn->bundle = (struct gfr_rdma_bundle *)&rail; /* only its presence is read */
    msg.hdr.flags = GFR_WIRE_F_AWAITS_REPLY;
    msg.hdr.written = 4;
    conn->is_server = 0; /* a client's rail: the server sent it */
    assert_int_equal(check(conn, &msg, &plan, &reason), -EPROTO);
    assert_string_equal(reason, "a call tagged for rails from a server (only clients tag calls)");
    conn->is_server = 1;
    assert_int_equal(check(conn, &msg, &plan, &reason), 0);
    conn->bundle = NULL;
    free_conn(conn);
}

static void
test_sending_without_a_credit_is_a_violation(void **state)
{
    struct gfr_rdma_conn *conn = make_conn();
    struct gfr_wire_msg msg = {.hdr = {.type = GFR_WIRE_CREDIT}};
    struct gfr_rdma_rx_plan plan;
    const char *reason;

    (void)state;
    for (int i = 0; i < 8; i++)
        assert_int_equal(check(conn, &msg, &plan, &reason), 0);
    assert_int_equal(check(conn, &msg, &plan, &reason), -EPROTO);
    assert_string_equal(reason, "peer sent without a credit, or granted more than the window");
    free_conn(conn);
}

/* A post that fails at once gives back its slot, its credit and the
 * grant it carried, and ends the connection: a QP that refused one post
 * takes no other, and a caller told of the failure may rely on the end
 * being reported (rdma.so does). */
static void
test_a_failed_post_gives_everything_back_and_ends_the_connection(void **state)
{
    struct gfr_rdma_conn *conn = make_conn();
    struct gfr_wire_hdr hdr = {.type = GFR_WIRE_MSG, .xid = 1, .inline_len = 4};
    struct iovec iov = {"abcd", 4};
    struct gfr_credits before;
    int err;

    (void)state;
    pthread_mutex_lock(&conn->lock);
    gfr_credits_on_repost(&conn->credits, 3); /* a grant that rides on the next SEND */
    before = conn->credits;
    pthread_mutex_unlock(&conn->lock);
    fake_verbs.post_send_result = ENOMEM;
    pthread_mutex_lock(&conn->lock);
    err = gfr_rdma_send_locked(conn, &hdr, NULL, NULL, &iov, 1, NULL);
    pthread_mutex_unlock(&conn->lock);
    assert_int_equal(err, -ENOTCONN); /* the connection ended, not the message's fault */
    assert_int_equal(fake_verbs.posts, 1);
    assert_int_equal(conn->nfree, conn->nsend);
    assert_int_equal(conn->sq_count, 0);
    assert_int_equal(conn->outstanding, 1); /* only the CM side's */
    assert_int_equal(conn->credits.send_avail, before.send_avail);
    assert_int_equal(conn->credits.pending_grant, before.pending_grant);
    assert_int_equal(conn->credits.peer_avail, before.peer_avail);
    assert_int_equal(conn->state, GFR_CONN_DISCONNECTING);
    assert_int_equal(conn->reason, -EIO);
    free_conn(conn);
}

static void
test_a_failed_flush_ends_the_connection_and_keeps_the_message(void **state)
{
    struct gfr_rdma_conn *conn = make_conn();
    struct gfr_wire_hdr hdr = {.type = GFR_WIRE_MSG, .xid = 2, .inline_len = 4};
    struct iovec iov = {"wxyz", 4};
    struct gfr_rdma_pending *p;

    (void)state;
    /* Out of credits: the message waits. */
    conn->credits.send_avail = 1;
    pthread_mutex_lock(&conn->lock);
    assert_int_equal(gfr_rdma_send_locked(conn, &hdr, NULL, NULL, &iov, 1, NULL), 0);
    pthread_mutex_unlock(&conn->lock);
    assert_int_equal(fake_verbs.posts, 0);
    assert_false(cds_list_empty(&conn->pending));

    /* Credits come back, but the post fails: the connection ends, the
     * message stays queued for the end of the connection to release. */
    fake_verbs.post_send_result = EIO;
    pthread_mutex_lock(&conn->lock);
    conn->credits.send_avail = 4;
    gfr_rdma_flush_locked(conn);
    pthread_mutex_unlock(&conn->lock);
    assert_int_equal(conn->state, GFR_CONN_DISCONNECTING);
    assert_int_equal(conn->reason, -EIO);
    assert_int_equal(fake_verbs.qp_errors, 1);
    assert_false(cds_list_empty(&conn->pending));
    p = cds_list_first_entry(&conn->pending, struct gfr_rdma_pending, link);
    assert_memory_equal(p->data + GFR_WIRE_HDR_SIZE, "wxyz", 4);
    assert_int_equal(conn->nfree, conn->nsend);
    free_conn(conn);
}

static unsigned received_calls;

static void
count_received(struct gfr_rdma_conn *conn, const struct gfr_rdma_rx *rx, void *cb_arg)
{
    (void)conn;
    (void)rx;
    (void)cb_arg;
    received_calls++;
}

static const struct gfr_rdma_conn_ops counting_ops = {.received = count_received};

static struct gfr_rdma_poller poller;

/* Receive buffers of the connection's own, and a poller (with its pull
 * buffers) on the test device. */
static void
give_receives(struct gfr_rdma_conn *conn)
{
    uint32_t size = test_engine.opts.inline_max;

    conn->recv_buf = calloc(conn->nrecv, size);
    conn->recv_wr = calloc(conn->nrecv, sizeof(*conn->recv_wr));
    conn->recv_mr = (ibv_reg_mr)(NULL, conn->recv_buf, (size_t)conn->nrecv * size, 0);
    for (uint32_t i = 0; i < conn->nrecv; i++)
        conn->recv_wr[i] = (struct gfr_rdma_wr){.conn = conn, .slot = i, .kind = GFR_WR_RECV};
    memset(&poller, 0, sizeof(poller));
    poller.dev = &test_dev;
    __cds_wfcq_init(&poller.pbuf_returns_head, &poller.pbuf_returns_tail);
    conn->poller = &poller;
    conn->ops = &counting_ops;
    test_conn_find_by_qp(conn, 21);
}

static void
free_receives(struct gfr_rdma_conn *conn)
{
    gfr_rdma_pbuf_drain(&poller);
    ibv_dereg_mr(conn->recv_mr);
    free(conn->recv_buf);
    free(conn->recv_wr);
}

/*
 * A receive completion of the connection's own buffer 0, which holds a
 * complete MSG of xid 7 (with a read list of read_len bytes when that is
 * not 0), as the poller hands it on: opcode says what consumed the buffer.
 */
static void
complete_msg_with(struct gfr_rdma_conn *conn, enum ibv_wc_opcode opcode, uint32_t read_len,
                  uint16_t flags)
{
    struct gfr_wire_seg read = {.addr = 0x100000, .rkey = 99, .length = read_len};
    struct gfr_wire_hdr hdr = {.type = GFR_WIRE_MSG, .xid = 7, .inline_len = 4,
                               .n_read = read_len ? 1 : 0, .flags = flags};
    uint32_t size = test_engine.opts.inline_max;
    size_t hdr_len = gfr_wire_hdr_len(hdr.n_read, 0);
    struct ibv_wc wc = {.status = IBV_WC_SUCCESS, .opcode = opcode,
                        .byte_len = (uint32_t)hdr_len + 4};

    if (!conn->recv_buf)
        give_receives(conn);
    assert_int_equal(gfr_wire_encode(&hdr, &read, NULL, conn->recv_buf, size), hdr_len);
    memcpy(conn->recv_buf + hdr_len, "data", 4);
    wc.wr_id = (uintptr_t)&conn->recv_wr[0];
    wc.qp_num = conn->qp_num;
    conn->recv_wr[0].posted = 1;
    gfr_rdma_conn_get(conn); /* the receive's reference, dropped by the completion */
    gfr_rdma_cq_complete(&poller, &wc);
}

static void
complete_msg(struct gfr_rdma_conn *conn, enum ibv_wc_opcode opcode, uint32_t read_len)
{
    complete_msg_with(conn, opcode, read_len, 0);
}

static void
complete_receive(struct gfr_rdma_conn *conn, enum ibv_wc_opcode opcode)
{
    complete_msg(conn, opcode, 0);
}

static int lock_was_free;

/* ibv_reg_mr's hook: may the connection's lock be taken now? */
static void
note_lock(void *arg)
{
    struct gfr_rdma_conn *conn = arg;

    lock_was_free = pthread_mutex_trylock(&conn->lock) == 0;
    if (lock_was_free)
        pthread_mutex_unlock(&conn->lock);
}

/* The READ of the read list: its sink's registration, its completion. */
static const struct ibv_send_wr *
posted_read(void)
{
    for (unsigned i = 0; i < fake_verbs.posts && i < FAKE_MAX_SENT; i++)
        if (fake_verbs.sent[i].opcode == IBV_WR_RDMA_READ)
            return &fake_verbs.sent[i];
    fail_msg("no RDMA READ was posted");
    return NULL;
}

/* A message whose read list needs a pull buffer not yet registered: the
 * buffer is registered without the connection's lock, which submitters
 * wait on.  The sink takes local write access only (no peer is given its
 * key), and no per-transfer registration is made. */
static void
test_a_pull_buffer_is_registered_without_the_lock(void **state)
{
    struct gfr_rdma_conn *conn = make_conn();
    const struct ibv_send_wr *rd;
    unsigned regs;

    (void)state;
    received_calls = 0;
    give_receives(conn);
    regs = fake_verbs.registered;
    lock_was_free = -1;
    fake_verbs.on_reg_mr = note_lock;
    fake_verbs.on_reg_mr_arg = conn;
    complete_msg(conn, IBV_WC_RECV, 100000);
    fake_verbs.on_reg_mr = NULL;
    assert_int_equal(lock_was_free, 1);
    assert_int_equal(fake_verbs.registered, regs + 1);
    rd = posted_read();
    assert_int_equal(fake_verbs.access_of[rd->sg_list->lkey], IBV_ACCESS_LOCAL_WRITE);
    gfr_rdma_xfer_complete((struct gfr_rdma_wr *)(uintptr_t)rd->wr_id, 1);
    gfr_rdma_conn_put(conn); /* the READ's reference */
    assert_int_equal(received_calls, 1);
    free_receives(conn);
    free_conn(conn);
}

/* iWARP: an RDMA READ's sink must allow remote write (the READ response is
 * a tagged write into it).  Pull buffers are shared by a poller's
 * connections, so the sink is registered for the one transfer with that
 * access, and deregistered once the pull is over. */
static void
test_on_iwarp_a_read_sink_is_registered_for_its_transfer(void **state)
{
    struct gfr_rdma_conn *conn = make_conn();
    const struct ibv_send_wr *rd;
    uint32_t sink;

    (void)state;
    received_calls = 0;
    test_dev.iwarp = 1;
    complete_msg(conn, IBV_WC_RECV, 100000);
    rd = posted_read();
    sink = rd->sg_list->lkey;
    assert_int_equal(fake_verbs.access_of[sink],
                     IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
    assert_true(fake_verbs.live_key[sink]);
    gfr_rdma_xfer_complete((struct gfr_rdma_wr *)(uintptr_t)rd->wr_id, 1);
    gfr_rdma_conn_put(conn);
    assert_false(fake_verbs.live_key[sink]);
    assert_int_equal(received_calls, 1);
    free_receives(conn);
    free_conn(conn);
}

/* The SENDs posted so far whose header says type. */
static unsigned
sends_of_type(uint8_t type)
{
    unsigned n = 0;

    for (unsigned i = 0; i < fake_verbs.posts && i < FAKE_MAX_SENT; i++)
        if (fake_verbs.sent[i].opcode == IBV_WR_SEND &&
            ((const uint8_t *)(uintptr_t)fake_verbs.sent_sge[i].addr)[1] == type)
            n++;
    return n;
}

/* A pulled request answers DONE, unless it said its reply will end the
 * read list: then it is delivered with no SEND at all. */
static void
test_a_request_whose_reply_ends_its_read_list_gets_no_done(void **state)
{
    const struct ibv_send_wr *rd;

    (void)state;
    for (int waived = 0; waived <= 1; waived++) {
        struct gfr_rdma_conn *conn = make_conn();

        received_calls = 0;
        complete_msg_with(conn, IBV_WC_RECV, 100000,
                          waived ? GFR_WIRE_F_REPLY_ENDS_READS : 0);
        rd = posted_read();
        gfr_rdma_xfer_complete((struct gfr_rdma_wr *)(uintptr_t)rd->wr_id, 1);
        gfr_rdma_conn_put(conn); /* the READ's reference */
        assert_int_equal(received_calls, 1);
        assert_int_equal(sends_of_type(GFR_WIRE_DONE), waived ? 0 : 1);
        free_receives(conn);
        free_conn(conn);
    }
}

/* The sender's side: the REPLY to a request that waived its DONE ends the
 * read list as the DONE would (revoked, then settled); a DONE after that
 * is a violation.  A request that did not waive it still waits for the
 * DONE after its reply (an older peer's order: DONE, then REPLY). */
static void
test_a_reply_ends_the_read_list_its_request_waived_the_done_for(void **state)
{
    struct gfr_rdma_conn *conn = make_conn();
    struct gfr_wire_msg reply = {.hdr = {.type = GFR_WIRE_REPLY, .xid = 5}};
    struct gfr_wire_msg done = {.hdr = {.type = GFR_WIRE_DONE, .xid = 5}};
    struct gfr_rdma_rx_plan plan;
    struct gfr_rdma_offer *o;
    const char *reason;

    (void)state;
    o = add_offer(conn, 5, 1, 0);
    o->reply_ends_reads = 1;
    assert_int_equal(check(conn, &reply, &plan, &reason), 0);
    assert_ptr_equal(plan.done_for, o);
    assert_int_equal(plan.done_status, 0);
    assert_null(plan.reply_to);
    assert_int_equal(o->waits, GFR_OFFER_SEND | GFR_OFFER_REVOKE);
    assert_int_equal(check(conn, &done, &plan, &reason), -EPROTO);

    /* With reply buffers too: the one REPLY ends both lists. */
    o = add_offer(conn, 6, 1, 4096);
    o->reply_ends_reads = 1;
    reply.hdr.xid = 6;
    assert_int_equal(check(conn, &reply, &plan, &reason), 0);
    assert_ptr_equal(plan.done_for, o);
    assert_ptr_equal(plan.reply_to, o);
    assert_int_equal(o->waits, GFR_OFFER_SEND | GFR_OFFER_REVOKE | GFR_OFFER_DELIVERY);

    o = add_offer(conn, 8, 1, 0);
    reply.hdr.xid = 8;
    done.hdr.xid = 8;
    assert_int_equal(check(conn, &reply, &plan, &reason), 0);
    assert_null(plan.done_for);
    assert_int_equal(o->waits, GFR_OFFER_SEND | GFR_OFFER_DONE);
    assert_int_equal(check(conn, &done, &plan, &reason), 0);
    assert_ptr_equal(plan.done_for, o);
    free_conn(conn);
}

/* A receive consumed by an RDMA WRITE with immediate data holds the bytes
 * of whatever the buffer held before: never delivered as a message; the
 * peer broke the protocol. */
static void
test_only_a_send_is_read_as_a_message(void **state)
{
    struct gfr_rdma_conn *conn = make_conn();

    (void)state;
    received_calls = 0;
    complete_receive(conn, IBV_WC_RECV);
    assert_int_equal(received_calls, 1);
    assert_int_equal(conn->state, GFR_CONN_ESTABLISHED);

    complete_receive(conn, IBV_WC_RECV_RDMA_WITH_IMM);
    assert_int_equal(received_calls, 1);
    assert_int_equal(conn->state, GFR_CONN_DISCONNECTING);
    assert_int_equal(conn->reason, -EPROTO);
    /* The CM side's and the receive reposted after the first message:
     * the second completion's own was dropped, its buffer not reposted. */
    assert_int_equal(conn->outstanding, 2);
    assert_int_equal(fake_verbs.recv_posts, 1);
    free_receives(conn);
    free_conn(conn);
}

/* A broken CQ (a failed poll, IBV_EVENT_CQ_ERR) will never deliver the
 * completions its connections wait for: the CM thread ends them and
 * completes their work requests as flushed (the send queue in post order,
 * the connection's own receives), so every reference comes back, the
 * connection is reaped and its owner told, instead of hanging. */
static void
test_a_broken_cqs_connections_end_and_let_go(void **state)
{
    struct gfr_rdma_conn *conn = make_conn();
    struct gfr_wire_hdr hdr = {.type = GFR_WIRE_MSG, .inline_len = 2};
    struct iovec iov = {"hi", 2};

    (void)state;
    give_receives(conn);
    poller.kick_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    pthread_mutex_init(&poller.poll_lock, NULL);
    test_dev.pollers = &poller;
    test_dev.npollers = 1;
    cds_list_add(&test_dev.link, &test_engine.devices);
    pthread_mutex_lock(&conn->lock);
    for (uint32_t i = 0; i < 4; i++)
        assert_int_equal(gfr_rdma_post_recv(conn, i), 0);
    for (uint32_t xid = 1; xid <= 3; xid++) {
        hdr.xid = xid;
        assert_int_equal(gfr_rdma_send_locked(conn, &hdr, NULL, NULL, &iov, 1, NULL), 0);
    }
    pthread_mutex_unlock(&conn->lock);
    assert_int_equal(conn->outstanding, 1 + 4 + 3);

    gfr_rdma_poller_broken(&poller, "a test");
    gfr_rdma_cq_abandon_broken(&test_engine);
    assert_true(poller.abandoned);
    assert_int_equal(conn->state, GFR_CONN_DISCONNECTING);
    assert_int_equal(conn->reason, -EIO);
    assert_int_equal(conn->sq_count, 0);
    assert_int_equal(conn->nfree, conn->nsend);
    assert_int_equal(conn->outstanding, 1); /* only the CM side's */
    assert_true(gfr_rdma_poller_passed(&poller, poller.drained_polls));

    /* Once is enough. */
    gfr_rdma_cq_abandon_broken(&test_engine);
    assert_int_equal(conn->outstanding, 1);
    cds_list_del(&test_dev.link);
    pthread_mutex_destroy(&poller.poll_lock);
    close(poller.kick_fd);
    free_receives(conn);
    free_conn(conn);
}

static char logged[512];

static void
capture_log(const char *msg, void *arg)
{
    (void)arg;
    snprintf(logged, sizeof(logged), "%s", msg);
}

/* What the engine logs about one connection of many names the peer. */
static void
test_messages_about_a_connection_name_its_peer(void **state)
{
    struct sockaddr_in in = {.sin_family = AF_INET, .sin_port = htons(4791)};
    struct sockaddr_in6 in6 = {.sin6_family = AF_INET6, .sin6_port = htons(20000)};
    const struct {
        const struct sockaddr *peer;
        const char *name;
    } cases[] = {
        {(const struct sockaddr *)&in, "10.1.2.3 port 4791"},
        {(const struct sockaddr *)&in6, "fd99::2 port 20000"},
        {NULL, "an unknown address"},
    };
    struct gfr_wire_hdr hdr = {.type = GFR_WIRE_MSG, .xid = 1, .inline_len = 4};
    struct iovec iov = {"abcd", 4};
    char want[256];

    (void)state;
    inet_pton(AF_INET, "10.1.2.3", &in.sin_addr);
    inet_pton(AF_INET6, "fd99::2", &in6.sin6_addr);
    gfr_rdma_set_log(capture_log, NULL);
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct gfr_rdma_conn *conn = make_conn_with(cases[i].peer);

        logged[0] = 0;
        fake_verbs.post_send_result = ENOMEM;
        pthread_mutex_lock(&conn->lock);
        assert_int_equal(gfr_rdma_send_locked(conn, &hdr, NULL, NULL, &iov, 1, NULL), -ENOTCONN);
        pthread_mutex_unlock(&conn->lock);
        snprintf(want, sizeof(want), "connection with %s: ibv_post_send failed: %s; disconnecting",
                 cases[i].name, strerror(ENOMEM));
        assert_string_equal(logged, want);
        free_conn(conn);
    }
    gfr_rdma_set_log(NULL, NULL);
}

/* The steps enum gfr_rx_state documents, written out independently of
 * rdma-rx.c's table. */
static int
rx_documented(enum gfr_rx_state from, enum gfr_rx_state to)
{
    switch (from) {
    case GFR_RX_RECEIVED: return to == GFR_RX_CHECKED || to == GFR_RX_RELEASED;
    case GFR_RX_CHECKED:
        return to == GFR_RX_PULLING || to == GFR_RX_DELIVERING || to == GFR_RX_RELEASED;
    case GFR_RX_PULLING: return to == GFR_RX_PULLED || to == GFR_RX_RELEASED;
    case GFR_RX_PULLED: return to == GFR_RX_DELIVERING;
    case GFR_RX_DELIVERING: return to == GFR_RX_OWNED || to == GFR_RX_RELEASED;
    case GFR_RX_OWNED: return to == GFR_RX_RELEASED;
    case GFR_RX_RELEASED: return 0;
    }
    return 0;
}

/* Every documented step of a received message is taken; every other one
 * (checked only where a refusal does not stop the program) is refused,
 * with a message naming the message and both stages, and changes
 * nothing. */
static void
test_a_received_message_moves_only_by_its_documented_steps(void **state)
{
    struct gfr_rdma_conn *conn = make_conn();
    unsigned taken = 0, refused = 0;

    (void)state;
    gfr_rdma_set_log(capture_log, NULL);
    for (int from = GFR_RX_RECEIVED; from <= GFR_RX_RELEASED; from++)
        for (int to = GFR_RX_RECEIVED; to <= GFR_RX_RELEASED + 1; to++) {
            struct gfr_rdma_rxmsg m = {.state = from, .conn = conn, .rx = {.xid = 77}};
            int legal = to <= GFR_RX_RELEASED && rx_documented(from, to);

#ifdef GFR_DEBUG
            if (!legal)
                continue;
#endif
            logged[0] = 0;
            assert_int_equal(gfr_rdma_rx_advance(&m, to), legal ? 0 : -EINVAL);
            assert_int_equal(m.state, legal ? to : from);
            if (legal) {
                taken++;
                continue;
            }
            refused++;
            assert_non_null(strstr(logged, "refusing to move the received message of xid 77"));
            assert_non_null(strstr(logged, gfr_rdma_rx_state_str(from)));
        }
    gfr_rdma_set_log(NULL, NULL);
    assert_int_equal(taken, 11);
#ifndef GFR_DEBUG
    assert_int_equal(refused, 7 * 8 - 11);
#endif
    free_conn(conn);
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_done_must_name_an_offered_read_list),
        cmocka_unit_test(test_reply_may_not_claim_more_than_was_offered),
        cmocka_unit_test(test_request_xid_with_write_list_may_not_repeat),
        cmocka_unit_test(test_sending_without_a_credit_is_a_violation),
        cmocka_unit_test(test_a_call_tagged_for_rails_needs_a_bundle),
        cmocka_unit_test(test_a_failed_post_gives_everything_back_and_ends_the_connection),
        cmocka_unit_test(test_only_a_send_is_read_as_a_message),
        cmocka_unit_test(test_a_pull_buffer_is_registered_without_the_lock),
        cmocka_unit_test(test_on_iwarp_a_read_sink_is_registered_for_its_transfer),
        cmocka_unit_test(test_a_request_whose_reply_ends_its_read_list_gets_no_done),
        cmocka_unit_test(test_a_reply_ends_the_read_list_its_request_waived_the_done_for),
        cmocka_unit_test(test_a_broken_cqs_connections_end_and_let_go),
        cmocka_unit_test(test_a_failed_flush_ends_the_connection_and_keeps_the_message),
        cmocka_unit_test(test_messages_about_a_connection_name_its_peer),
        cmocka_unit_test(test_a_received_message_moves_only_by_its_documented_steps),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
