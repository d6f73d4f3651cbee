/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * A device's shared receive queue (lib/engine/rdma-srq.c) over stubbed verbs:
 * it grows while the live connections promise more receives than it holds,
 * stops at its maximum and says so once, and keeps its buffers when
 * connections leave; over the stubbed verbs of fake-verbs.c.
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
#include "engine-conn.h"

static char logged[512];

static void
capture_log(const char *msg, void *arg)
{
    (void)arg;
    snprintf(logged, sizeof(logged), "%s", msg);
}

static struct gfr_rdma engine;
static struct gfr_rdma_dev dev;

/* A device whose SRQ may hold max buffers. */
static void
make_dev(uint32_t max)
{
    struct ibv_device_attr attr = {.max_srq_wr = (int)max};

    memset(&dev, 0, sizeof(dev));
    gfr_rdma_opts_init(&engine.opts);
    engine.opts.inline_max = 256;
    fake_verbs_reset();
    dev.engine = &engine;
    dev.verbs = &fake_ctx;
    logged[0] = 0;
    assert_int_equal(gfr_rdma_srq_create(&dev, &attr), 0);
}

static void
test_the_queue_grows_with_promises_up_to_its_maximum(void **state)
{
    (void)state;
    make_dev(100);
    gfr_rdma_set_log(capture_log, NULL);
    assert_int_equal(gfr_rdma_srq_reserve(&dev, 40), 0);
    assert_int_equal(dev.srq->total, 40);
    assert_int_equal(fake_verbs.srq_posts, 40);
    assert_int_equal(gfr_rdma_srq_reserve(&dev, 40), 0);
    assert_int_equal(dev.srq->total, 80);
    /* past the maximum: what is left, then sharing, said once */
    assert_int_equal(gfr_rdma_srq_reserve(&dev, 40), 0);
    assert_int_equal(dev.srq->total, 100);
    assert_int_equal(gfr_rdma_srq_reserve(&dev, 40), 0);
    assert_int_equal(dev.srq->total, 100);
    assert_non_null(strstr(logged, "fake0: shared receive queue at its maximum of 100 buffers"));
    /* buffers stay when connections leave; promises come back */
    gfr_rdma_srq_unreserve(&dev, 160);
    assert_int_equal(dev.srq->promised, 0);
    assert_int_equal(gfr_rdma_srq_reserve(&dev, 50), 0);
    assert_int_equal(dev.srq->total, 100);
    assert_int_equal(fake_verbs.srq_posts, 100);
    gfr_rdma_set_log(NULL, NULL);
    gfr_rdma_srq_destroy(&dev);
}

/* iWARP has no RNR retry: a SEND that finds the queue empty ends its
 * connection, so a promise the queue cannot back refuses the connection
 * instead of being shared, and takes nothing with it. */
static void
test_on_iwarp_every_promise_is_backed(void **state)
{
    (void)state;
    make_dev(100);
    dev.iwarp = 1;
    gfr_rdma_set_log(capture_log, NULL);
    assert_int_equal(gfr_rdma_srq_reserve(&dev, 60), 0);
    assert_int_equal(gfr_rdma_srq_reserve(&dev, 40), 0);
    assert_int_equal(dev.srq->total, 100);
    assert_int_equal(gfr_rdma_srq_reserve(&dev, 1), -ENOSPC);
    assert_int_equal(dev.srq->promised, 100);
    assert_non_null(strstr(logged, "iWARP has no receiver-not-ready retry"));
    gfr_rdma_srq_unreserve(&dev, 40);
    assert_int_equal(gfr_rdma_srq_reserve(&dev, 40), 0);

    /* No memory for more buffers: refused too, not shared. */
    gfr_rdma_srq_unreserve(&dev, 100);
    assert_int_equal(gfr_rdma_srq_reserve(&dev, 50), 0);
    fake_verbs.reg_mr_errno = ENOMEM;
    dev.srq->max = 200;
    assert_int_equal(gfr_rdma_srq_reserve(&dev, 60), -ENOSPC);
    assert_int_equal(dev.srq->promised, 50);
    fake_verbs.reg_mr_errno = 0;
    gfr_rdma_set_log(NULL, NULL);
    gfr_rdma_srq_destroy(&dev);
}

/* receive-queue=auto: shared where a SEND that finds no receive waits on
 * RNR, a connection's own on iWARP, where one peer's overrun would end
 * the others'; srq asked for on iWARP is kept, and said to be risky. */
static void
test_auto_shares_receives_except_on_iwarp(void **state)
{
    struct gfr_rdma_dev d = {.engine = &engine, .verbs = &fake_ctx};

    (void)state;
    gfr_rdma_opts_init(&engine.opts);
    fake_verbs_reset();
    assert_int_equal(engine.opts.receive_queue, GFR_RQ_AUTO);
    gfr_rdma_set_log(capture_log, NULL);
    logged[0] = 0;
    assert_true(gfr_rdma_srq_wanted(&d));
    d.iwarp = 1;
    assert_false(gfr_rdma_srq_wanted(&d));
    engine.opts.receive_queue = GFR_RQ_PER_CONN;
    assert_false(gfr_rdma_srq_wanted(&d));
    assert_int_equal(logged[0], 0);
    engine.opts.receive_queue = GFR_RQ_SRQ;
    assert_true(gfr_rdma_srq_wanted(&d));
    assert_non_null(strstr(logged, "receive-queue=srq on iWARP"));
    d.iwarp = 0;
    logged[0] = 0;
    assert_true(gfr_rdma_srq_wanted(&d));
    engine.opts.receive_queue = GFR_RQ_PER_CONN;
    assert_false(gfr_rdma_srq_wanted(&d));
    assert_int_equal(logged[0], 0);
    gfr_rdma_set_log(NULL, NULL);
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_the_queue_grows_with_promises_up_to_its_maximum),
        cmocka_unit_test(test_on_iwarp_every_promise_is_backed),
        cmocka_unit_test(test_auto_shares_receives_except_on_iwarp),
    };
    return cmocka_run_group_tests_name("rdma-srq", tests, NULL, NULL);
}
