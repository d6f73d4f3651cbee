/*
 * SPDX-License-Identifier: GPL-2.0-only
 *
 * The layout of rpc_transport_t as this project compiles it (with
 * GLUSTERFS_CPPFLAGS) must be the layout the installed libgfrpc uses, or
 * glusterfsd crashes inside rdma.so.  These tests ask the library itself:
 * libgfrpc allocates a transport (through rpc_clnt_new, loading Debian's
 * socket.so) with GlusterFS's memory accounting on, so the allocation header
 * records libgfrpc's sizeof; libgfrpc then writes and calls fields that we
 * read back at our offsets, and hands our own submit_request the request
 * it built (rpc_transport_req_t changed between GlusterFS 10 and 11).
 */
#include <glusterfs/api/glfs.h>
#include <glusterfs/glusterfs.h>
#include <glusterfs/globals.h>
#include <glusterfs/mem-pool.h>
#include <glusterfs/xlator.h>
#include <glusterfs/rpc/rpc-clnt.h>
#include <glusterfs/rpc/rpc-transport.h>

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "config.h"

/* Each supported GlusterFS line's layout.  10: verified on Debian's 10.3-5
 * by disassembly (GF_CALLOC(1, 0x4f8) in rpc_transport_load, `lock addq`
 * at 0x58, `call *0xa8` for notify).  11: upstream v11.1's headers
 * (notify_poller_death became an int; rpc_transport_req_t lost its leading
 * rpc_req pointer), checked against Debian 13's 11.1-6 by this test. */
static const struct layout {
    const char *line; /* GFR_GLUSTERFS_VERSION starts with it */
    size_t transport_size;
    size_t notify;
    size_t req_msg;
    size_t req_rsp;
} layouts[] = {
    {"10.", 1272, 168, 8, 56},
    {"11.", 1280, 168, 0, 48},
};

static glfs_t *probe_fs;

/* Checked before anything touches GlusterFS structures: with a wrong layout
 * the probes below would crash instead of explaining. */
static int
layout_is_plausible(void)
{
    for (size_t i = 0; i < sizeof(layouts) / sizeof(layouts[0]); i++) {
        const struct layout *l = &layouts[i];

        if (strncmp(GFR_GLUSTERFS_VERSION, l->line, strlen(l->line)) != 0)
            continue;
        if (sizeof(rpc_transport_t) == l->transport_size &&
            offsetof(rpc_transport_t, notify) == l->notify &&
            offsetof(rpc_transport_req_t, msg) == l->req_msg &&
            offsetof(rpc_transport_req_t, rsp) == l->req_rsp)
            return 1;
        fprintf(stderr,
                "gluster-abi: rpc_transport_t compiles to %zu bytes with notify at "
                "%zu, rpc_transport_req_t with msg at %zu and rsp at %zu; GlusterFS "
                "%sx uses %zu, %zu, %zu and %zu: GLUSTERFS_CPPFLAGS are wrong "
                "(HAVE_ATOMIC_BUILTINS missing?) or the headers are another "
                "version's\n",
                sizeof(rpc_transport_t), offsetof(rpc_transport_t, notify),
                offsetof(rpc_transport_req_t, msg), offsetof(rpc_transport_req_t, rsp),
                l->line, l->transport_size, l->notify, l->req_msg, l->req_rsp);
        return 0;
    }
    fprintf(stderr, "gluster-abi: no known layout for GlusterFS %s\n",
            GFR_GLUSTERFS_VERSION);
    return 0;
}

static int
probe_setup(void **state)
{
    if (!layout_is_plausible())
        return -1;
    probe_fs = glfs_new("gfr-abi-probe");
    if (!probe_fs) {
        fprintf(stderr, "gluster-abi: glfs_new failed: cannot set up a "
                        "GlusterFS context to probe libgfrpc\n");
        return -1;
    }
    if (glfs_set_logging(probe_fs, "/dev/null", GF_LOG_NONE) != 0)
        return -1;
    /* With accounting on, every GF_CALLOC is preceded by a mem_header
     * holding the requested size. */
    THIS->ctx->mem_acct_enable = 1;
    return 0;
}

static int
probe_teardown(void **state)
{
    glfs_fini(probe_fs);
    return 0;
}

static struct rpc_clnt *
new_probe_client(dict_t **options)
{
    struct rpc_clnt *rpc;
    dict_t *opts = dict_new();

    assert_non_null(opts);
    assert_int_equal(dict_set_str(opts, "transport-type", "socket"), 0);
    assert_int_equal(dict_set_str(opts, "remote-host", "127.0.0.1"), 0);
    assert_int_equal(dict_set_int32(opts, "remote-port", 24007), 0);
    /* rpc_transport_load sets the second-to-last field from this key. */
    assert_int_equal(dict_set_str(opts, "notify-poller-death", "on"), 0);

    rpc = rpc_clnt_new(opts, THIS, "gfr-abi-probe", 16);
    if (!rpc)
        fail_msg("rpc_clnt_new could not load socket.so from %s",
                 "the installed GlusterFS");
    *options = opts;
    return rpc;
}

static void
test_transport_size_matches_libgfrpc(void **state)
{
    dict_t *opts;
    struct rpc_clnt *rpc = new_probe_client(&opts);
    rpc_transport_t *trans = rpc->conn.trans;
    struct mem_header *header = (struct mem_header *)trans - 1;

    assert_non_null(trans);
    assert_int_equal(header->magic, GF_MEM_HEADER_MAGIC);
    if (header->size != sizeof(rpc_transport_t))
        fail_msg("libgfrpc allocates rpc_transport_t with %zu bytes, this "
                 "build compiles it to %zu: fix GLUSTERFS_CPPFLAGS",
                 header->size, sizeof(rpc_transport_t));
    rpc_clnt_unref(rpc);
    dict_unref(opts);
}

static void
test_fields_set_by_libgfrpc_are_at_our_offsets(void **state)
{
    dict_t *opts;
    struct rpc_clnt *rpc = new_probe_client(&opts);
    rpc_transport_t *trans = rpc->conn.trans;

    assert_string_equal(trans->name, "gfr-abi-probe");
    assert_ptr_equal(trans->options, opts);
    assert_ptr_equal(trans->ctx, THIS->ctx);
    assert_ptr_equal(trans->xl, THIS);
    assert_ptr_equal(trans->mydata, &rpc->conn);
    assert_non_null(trans->notify);
    assert_int_equal(GF_ATOMIC_GET(trans->refcount), 1);
    assert_int_equal(trans->notify_poller_death, 1);
    rpc_clnt_unref(rpc);
    dict_unref(opts);
}

struct probe_calls {
    int notified;
    int cleanup;
    int fini;
    rpc_transport_event_t last_event;
};

static struct probe_calls calls;

static int
probe_notify(rpc_transport_t *trans, void *mydata, rpc_transport_event_t event,
             void *data, ...)
{
    assert_ptr_equal(mydata, &calls);
    calls.notified++;
    calls.last_event = event;
    if (event == RPC_TRANSPORT_CLEANUP)
        calls.cleanup++;
    return 0;
}

static void
probe_fini(rpc_transport_t *trans)
{
    calls.fini++;
}

static rpc_transport_t *
new_own_transport(void)
{
    rpc_transport_t *trans = GF_CALLOC(1, sizeof(*trans),
                                       gf_common_mt_rpc_trans_t);

    assert_non_null(trans);
    trans->name = gf_strdup("gfr-abi-own");
    trans->notify = probe_notify;
    trans->mydata = &calls;
    trans->fini = probe_fini;
    pthread_mutex_init(&trans->lock, NULL);
    GF_ATOMIC_INIT(trans->refcount, 0);
    memset(&calls, 0, sizeof(calls));
    return trans;
}

static void
test_libgfrpc_calls_our_notify_and_counts_our_refcount(void **state)
{
    rpc_transport_t *trans = new_own_transport();
    dict_t *opts = dict_new();

    assert_non_null(opts);
    trans->options = dict_ref(opts);
    assert_ptr_equal(rpc_transport_ref(trans), trans);
    assert_int_equal(GF_ATOMIC_GET(trans->refcount), 1);

    assert_int_equal(rpc_transport_notify(trans, RPC_TRANSPORT_MSG_SENT, NULL), 0);
    assert_int_equal(calls.notified, 1);
    assert_int_equal(calls.last_event, RPC_TRANSPORT_MSG_SENT);

    /* The last unref notifies CLEANUP, calls fini, drops options and frees
     * name and the transport itself: every one at libgfrpc's offsets. */
    assert_int_equal(rpc_transport_unref(trans), 0);
    assert_int_equal(calls.cleanup, 1);
    assert_int_equal(calls.fini, 1);
    assert_int_equal(GF_ATOMIC_GET(opts->refcount), 1);
    dict_unref(opts);
}

/* What rpc_clnt_submit hands the transport, as read at our offsets. */
static rpc_transport_req_t seen_req;
static int seen_submits;

static int32_t
capture_submit(rpc_transport_t *trans, rpc_transport_req_t *req)
{
    seen_req = *req;
    seen_submits++;
    return -1; /* fails the call: rpc-clnt keeps no frame for it */
}

static int32_t
probe_connect(rpc_transport_t *trans, int port)
{
    return 0;
}

static int
probe_cbk(struct rpc_req *req, struct iovec *iov, int count, void *frame)
{
    return 0;
}

static void
test_request_fields_from_libgfrpc_are_at_our_offsets(void **state)
{
    static char *procnames[] = {"NULL", "PROBE"};
    rpc_clnt_prog_t prog = {.progname = "gfr-abi-probe", .prognum = 4242,
                            .progver = 1, .numproc = 2, .procnames = procnames};
    struct rpc_transport_ops ops = {.connect = probe_connect,
                                    .submit_request = capture_submit};
    char head[16] = "head", payload[32] = "payload";
    char rsp_head[16], rsp_payload[64];
    struct iovec proghdr = {head, sizeof(head)}, progpayload = {payload, sizeof(payload)};
    struct iovec rsphdr = {rsp_head, sizeof(rsp_head)};
    struct iovec rsp_data = {rsp_payload, sizeof(rsp_payload)};
    struct iobref *iobref = iobref_new(), *rsp_iobref = iobref_new();
    dict_t *opts;
    struct rpc_clnt *rpc = new_probe_client(&opts);
    struct rpc_transport_ops *socket_ops = rpc->conn.trans->ops;
    call_frame_t *frame = create_frame(THIS, THIS->ctx->pool);

    assert_non_null(iobref);
    assert_non_null(rsp_iobref);
    assert_non_null(frame);
    rpc->conn.trans->ops = &ops;
    seen_submits = 0;
    assert_int_equal(rpc_clnt_submit(rpc, &prog, 1, probe_cbk, &proghdr, 1, &progpayload,
                                     1, iobref, frame, &rsphdr, 1, &rsp_data, 1,
                                     rsp_iobref),
                     -1);
    rpc->conn.trans->ops = socket_ops;
    assert_int_equal(seen_submits, 1);
    assert_non_null(seen_req.msg.rpchdr);
    assert_int_equal(seen_req.msg.rpchdrcount, 1);
    assert_ptr_equal(seen_req.msg.proghdr, &proghdr);
    assert_int_equal(seen_req.msg.proghdrcount, 1);
    assert_ptr_equal(seen_req.msg.progpayload, &progpayload);
    assert_int_equal(seen_req.msg.progpayloadcount, 1);
    assert_ptr_equal(seen_req.msg.iobref, iobref);
    assert_ptr_equal(seen_req.rsp.rsphdr, &rsphdr);
    assert_int_equal(seen_req.rsp.rsphdr_count, 1);
    assert_ptr_equal(seen_req.rsp.rsp_payload, &rsp_data);
    assert_int_equal(seen_req.rsp.rsp_payload_count, 1);
    assert_ptr_equal(seen_req.rsp.rsp_iobref, rsp_iobref);
    STACK_DESTROY(frame->root);
    iobref_unref(iobref);
    iobref_unref(rsp_iobref);
    rpc_clnt_unref(rpc);
    dict_unref(opts);
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_transport_size_matches_libgfrpc),
        cmocka_unit_test(test_fields_set_by_libgfrpc_are_at_our_offsets),
        cmocka_unit_test(test_libgfrpc_calls_our_notify_and_counts_our_refcount),
        cmocka_unit_test(test_request_fields_from_libgfrpc_are_at_our_offsets),
    };

    return cmocka_run_group_tests_name("gluster-abi", tests, probe_setup,
                                       probe_teardown);
}
