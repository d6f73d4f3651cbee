/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * rdma.so's submissions (rpc-transport-rdma/plugin-tx.c) against a stubbed
 * engine: the engine, which registers memory in gfr_rdma_submit, is called
 * without the transport's lock, which the pollers' done callbacks and
 * every other submission need; and each submission counts itself while it
 * uses the connection, so that the disconnected callback can wait for it
 * before releasing the connection (plugin-conn.c).
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "gfr_plugin.h"

static struct gfr_trans priv;
static struct gfr_rdma_conn *const the_conn = (struct gfr_rdma_conn *)&priv; /* a handle */
static int lock_free_in_submit;
static unsigned submitting_in_submit;
static gfr_rdma_done_fn last_done;
static void *last_cb_arg;
static int last_expects_reply;

/* The engine, stubbed: what the submission saw when it called it. */
int
gfr_rdma_submit(struct gfr_rdma_conn *conn, const struct gfr_rdma_msg *msg)
{
    assert_ptr_equal(conn, the_conn);
    lock_free_in_submit = pthread_mutex_trylock(&priv.lock) == 0;
    if (lock_free_in_submit) {
        submitting_in_submit = priv.submitting;
        pthread_mutex_unlock(&priv.lock);
    }
    last_done = msg->done;
    last_cb_arg = msg->cb_arg;
    last_expects_reply = msg->expects_reply;
    return 0;
}

size_t
gfr_rdma_max_inline(const struct gfr_rdma_conn *conn)
{
    (void)conn;
    return 1024;
}

void
gfr_plugin_call_replied(struct gfr_trans *p, uint32_t xid)
{
    (void)p;
    (void)xid;
}

static rpc_transport_t trans = {.name = "plugin-tx-test", .private = &priv};

static void
submit(size_t payload, struct iovec *offer)
{
    static uint8_t hdr[64] = {0, 0, 0, 42};
    static uint8_t data[64 << 10];
    struct iovec rpchdr = {hdr, sizeof(hdr)};
    struct iovec body = {data, payload};
    rpc_transport_req_t req;

    memset(&req, 0, sizeof(req));
    req.msg.rpchdr = &rpchdr;
    req.msg.rpchdrcount = 1;
    req.msg.progpayload = payload ? &body : NULL;
    req.msg.progpayloadcount = payload ? 1 : 0;
    req.rsp.rsp_payload = offer;
    req.rsp.rsp_payload_count = offer ? 1 : 0;
    lock_free_in_submit = -1;
    last_done = NULL;
    assert_int_equal(gfr_plugin_submit_request(&trans, &req), 0);
    assert_int_equal(lock_free_in_submit, 1);
    assert_int_equal(submitting_in_submit, 1);
    assert_int_equal(priv.submitting, 0);
}

static void
test_the_engine_is_called_without_the_transports_lock(void **state)
{
    static uint8_t reply[64 << 10];
    struct iovec offer = {reply, sizeof(reply)};

    (void)state;
    memset(&priv, 0, sizeof(priv));
    priv.trans = &trans;
    priv.role = GFR_TRANS_ACCEPTED; /* no RPC_TRANSPORT_MSG_SENT to notify */
    priv.conn = the_conn;
    pthread_mutex_init(&priv.lock, NULL);
    pthread_cond_init(&priv.no_submitter, NULL);
    CDS_INIT_LIST_HEAD(&priv.offered);

    submit(16, NULL); /* inline: nothing kept */
    assert_null(last_done);

    submit(sizeof(reply), NULL); /* a read list: kept until done */
    assert_non_null(last_done);
    last_done(last_cb_arg, 0);

    submit(0, &offer); /* a READ offering its reply buffer: listed while out */
    assert_false(cds_list_empty(&priv.offered));
    last_done(last_cb_arg, 0);
    assert_true(cds_list_empty(&priv.offered));

    pthread_cond_destroy(&priv.no_submitter);
    pthread_mutex_destroy(&priv.lock);
}

/* A client's call is answered (the brick then sends no DONE for its
 * bulk); a brick's callback, submitted as a request too, is not, and a
 * reply never is. */
static void
test_only_a_clients_calls_expect_a_reply(void **state)
{
    static uint8_t hdr[64] = {0, 0, 0, 43};
    static uint8_t data[64 << 10];
    struct iovec rpchdr = {hdr, sizeof(hdr)};
    struct iovec body = {data, sizeof(data)};
    rpc_transport_req_t req;
    rpc_transport_reply_t reply;

    (void)state;
    memset(&priv, 0, sizeof(priv));
    priv.trans = &trans;
    priv.conn = the_conn;
    pthread_mutex_init(&priv.lock, NULL);
    pthread_cond_init(&priv.no_submitter, NULL);
    CDS_INIT_LIST_HEAD(&priv.offered);
    memset(&req, 0, sizeof(req));
    req.msg.rpchdr = &rpchdr;
    req.msg.rpchdrcount = 1;
    req.msg.progpayload = &body;
    req.msg.progpayloadcount = 1;

    priv.role = GFR_TRANS_CLIENT;
    assert_int_equal(gfr_plugin_submit_request(&trans, &req), 0);
    assert_true(last_expects_reply);
    last_done(last_cb_arg, 0);

    priv.role = GFR_TRANS_ACCEPTED;
    assert_int_equal(gfr_plugin_submit_request(&trans, &req), 0);
    assert_false(last_expects_reply);
    last_done(last_cb_arg, 0);

    memset(&reply, 0, sizeof(reply));
    reply.msg = req.msg;
    assert_int_equal(gfr_plugin_submit_reply(&trans, &reply), 0);
    assert_false(last_expects_reply);
    last_done(last_cb_arg, 0);

    pthread_cond_destroy(&priv.no_submitter);
    pthread_mutex_destroy(&priv.lock);
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_the_engine_is_called_without_the_transports_lock),
        cmocka_unit_test(test_only_a_clients_calls_expect_a_reply),
    };

    return cmocka_run_group_tests_name("plugin-tx", tests, NULL, NULL);
}
