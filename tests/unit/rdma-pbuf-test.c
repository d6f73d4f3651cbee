/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Pull buffers (lib/engine/rdma-pbuf.c) on a poller built by hand: fake-verbs.c
 * counts the registrations, so reuse, the per-class cap and the returns
 * queue show without a device.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "fake-verbs.h"
#include "engine-conn.h"

static struct ibv_pd fake_pd;
static struct gfr_rdma_dev dev = {.pd = &fake_pd};
static struct gfr_rdma_poller poller;

static int
setup(void **state)
{
    (void)state;
    memset(&poller, 0, sizeof(poller));
    poller.dev = &dev;
    __cds_wfcq_init(&poller.pbuf_returns_head, &poller.pbuf_returns_tail);
    fake_verbs_reset();
    return 0;
}

static int
teardown(void **state)
{
    (void)state;
    gfr_rdma_pbuf_drain(&poller);
    assert_int_equal(fake_verbs.registered, fake_verbs.deregistered);
    return 0;
}

static void
test_a_returned_buffer_is_reused_without_registering_again(void **state)
{
    struct gfr_rdma_pbuf *b = gfr_rdma_pbuf_get(&poller, 100 << 10);

    (void)state;
    assert_non_null(b);
    assert_true(b->mr->length >= 100 << 10);
    gfr_rdma_pbuf_put(b);
    assert_ptr_equal(gfr_rdma_pbuf_get(&poller, 200 << 10), b);
    assert_int_equal(fake_verbs.registered, 1);
    gfr_rdma_pbuf_put(b);
}

static void
test_a_message_beyond_the_classes_gets_a_buffer_of_its_own(void **state)
{
    struct gfr_rdma_pbuf *b = gfr_rdma_pbuf_get(&poller, (4 << 20) + 1);

    (void)state;
    assert_non_null(b);
    assert_int_equal(b->mr->length, (4 << 20) + 1);
    gfr_rdma_pbuf_put(b);
    assert_int_equal(fake_verbs.deregistered, 1);
}

static void
test_returns_beyond_a_class_cap_are_freed(void **state)
{
    enum { many = 40 }; /* the 64 KiB class keeps 32 */
    struct gfr_rdma_pbuf *b[many];

    (void)state;
    for (int i = 0; i < many; i++)
        b[i] = gfr_rdma_pbuf_get(&poller, 4096);
    for (int i = 0; i < many; i++)
        gfr_rdma_pbuf_put(b[i]);
    gfr_rdma_pbuf_put(gfr_rdma_pbuf_get(&poller, 4096)); /* takes the returns */
    assert_int_equal(fake_verbs.registered, many);
    assert_int_equal(fake_verbs.deregistered, many - 32);
}

/*
 * A returner preempted inside cds_wfcq_enqueue has swung the tail to its
 * buffer but not yet linked it.  The poller must not wait for that thread:
 * it registers a new buffer, and takes the returned one once it is linked.
 */
static void
test_a_return_still_being_linked_does_not_hold_the_poller(void **state)
{
    struct gfr_rdma_pbuf *held = gfr_rdma_pbuf_get(&poller, 4096);
    struct cds_wfcq_node *before;
    struct gfr_rdma_pbuf *fresh;

    (void)state;
    alarm(60); /* a poller that waits would wait here for ever */
    cds_wfcq_node_init(&held->node);
    before = uatomic_xchg(&poller.pbuf_returns_tail.p, &held->node);

    fresh = gfr_rdma_pbuf_get(&poller, 4096);
    assert_non_null(fresh);
    assert_ptr_not_equal(fresh, held);
    assert_int_equal(fake_verbs.registered, 2);

    CMM_STORE_SHARED(before->next, &held->node);
    assert_ptr_equal(gfr_rdma_pbuf_get(&poller, 4096), held);
    assert_int_equal(fake_verbs.registered, 2);
    alarm(0);
    gfr_rdma_pbuf_put(held);
    gfr_rdma_pbuf_put(fresh);
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_a_returned_buffer_is_reused_without_registering_again,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(test_a_message_beyond_the_classes_gets_a_buffer_of_its_own,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(test_returns_beyond_a_class_cap_are_freed, setup, teardown),
        cmocka_unit_test_setup_teardown(test_a_return_still_being_linked_does_not_hold_the_poller,
                                        setup, teardown),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
