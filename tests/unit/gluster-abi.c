/*
 * SPDX-License-Identifier: GPL-2.0-only
 *
 * The layout of rpc_transport_t as this project compiles it (with
 * GLUSTERFS_CPPFLAGS) must be the layout the installed libgfrpc uses, or
 * glusterfsd crashes inside rdma.so.  These tests ask the library itself:
 * libgfrpc allocates a transport (through rpc_clnt_new, loading Debian's
 * socket.so) with GlusterFS's memory accounting on, so the allocation header
 * records libgfrpc's sizeof; libgfrpc then writes and calls fields that we
 * read back at our offsets.
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

/* Verified on Debian's 10.3-5 by disassembly: GF_CALLOC(1, 0x4f8) in
 * rpc_transport_load, `lock addq` at 0x58, `call *0xa8` for notify. */
#define GLUSTERFS_10_3_TRANSPORT_SIZE 1272
#define GLUSTERFS_10_3_NOTIFY_OFFSET 168

static glfs_t *probe_fs;

/* Checked before anything touches GlusterFS structures: with a wrong layout
 * the probes below would crash instead of explaining. */
static int
layout_is_plausible(void)
{
    if (strcmp(GFR_GLUSTERFS_VERSION, "10.3") != 0)
        return 1;
    if (sizeof(rpc_transport_t) == GLUSTERFS_10_3_TRANSPORT_SIZE &&
        offsetof(rpc_transport_t, notify) == GLUSTERFS_10_3_NOTIFY_OFFSET)
        return 1;
    fprintf(stderr,
            "gluster-abi: rpc_transport_t compiles to %zu bytes with notify "
            "at %zu; GlusterFS 10.3 uses %d and %d: GLUSTERFS_CPPFLAGS are "
            "wrong (HAVE_ATOMIC_BUILTINS missing?)\n",
            sizeof(rpc_transport_t), offsetof(rpc_transport_t, notify),
            GLUSTERFS_10_3_TRANSPORT_SIZE, GLUSTERFS_10_3_NOTIFY_OFFSET);
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

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_transport_size_matches_libgfrpc),
        cmocka_unit_test(test_fields_set_by_libgfrpc_are_at_our_offsets),
        cmocka_unit_test(test_libgfrpc_calls_our_notify_and_counts_our_refcount),
    };

    return cmocka_run_group_tests_name("gluster-abi", tests, probe_setup,
                                       probe_teardown);
}
