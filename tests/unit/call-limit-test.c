/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The brick's outstanding calls per connection (rpc-transport-rdma/
 * call-limit.c): rpcsvc's rounding of the limit, the count crossing it and
 * coming back, replies to calls it never counted, repeated xids, and no
 * tracking at all without a limit.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "call-limit.h"

static void
test_the_limit_is_rounded_as_rpcsvc_does(void **state)
{
    (void)state;
    assert_int_equal(gfr_call_limit_round(0), 0);
    assert_int_equal(gfr_call_limit_round(-5), 0);
    assert_int_equal(gfr_call_limit_round(1), 8);
    assert_int_equal(gfr_call_limit_round(8), 8);
    assert_int_equal(gfr_call_limit_round(9), 16);
    assert_int_equal(gfr_call_limit_round(64), 64);
    assert_int_equal(gfr_call_limit_round(70000), 65536);
}

static void
test_over_the_limit_until_replies_bring_it_down(void **state)
{
    struct gfr_call_limit cl;

    (void)state;
    gfr_call_limit_init(&cl, 8);
    for (uint32_t xid = 1; xid <= 8; xid++) {
        assert_int_equal(gfr_call_limit_called(&cl, xid), 0);
        assert_false(gfr_call_limit_over(&cl));
    }
    assert_int_equal(gfr_call_limit_called(&cl, 9), 0);
    assert_true(gfr_call_limit_over(&cl));
    assert_int_equal(gfr_call_limit_called(&cl, 9 + GFR_CALL_LIMIT_BUCKETS), 0);
    gfr_call_limit_replied(&cl, 1);
    assert_true(gfr_call_limit_over(&cl)); /* 9 left */
    gfr_call_limit_replied(&cl, 9 + GFR_CALL_LIMIT_BUCKETS); /* same bucket as 9 */
    assert_false(gfr_call_limit_over(&cl));
    assert_int_equal(cl.counted, 8);
    gfr_call_limit_clear(&cl);
    assert_int_equal(cl.counted, 0);
}

/* A reply to a call that did not count (a lock, a handshake) or to one
 * already answered changes nothing; a repeated xid counts twice. */
static void
test_uncounted_replies_and_repeated_xids(void **state)
{
    struct gfr_call_limit cl;

    (void)state;
    gfr_call_limit_init(&cl, 8);
    assert_int_equal(gfr_call_limit_called(&cl, 7), 0);
    assert_int_equal(gfr_call_limit_called(&cl, 7), 0);
    gfr_call_limit_replied(&cl, 42);
    assert_int_equal(cl.counted, 2);
    gfr_call_limit_replied(&cl, 7);
    gfr_call_limit_replied(&cl, 7);
    gfr_call_limit_replied(&cl, 7);
    assert_int_equal(cl.counted, 0);
    gfr_call_limit_clear(&cl);
}

static void
test_no_limit_tracks_nothing(void **state)
{
    struct gfr_call_limit cl;

    (void)state;
    gfr_call_limit_init(&cl, 0);
    for (uint32_t xid = 0; xid < 1000; xid++)
        assert_int_equal(gfr_call_limit_called(&cl, xid), 0);
    assert_int_equal(cl.counted, 0);
    assert_false(gfr_call_limit_over(&cl));
    gfr_call_limit_replied(&cl, 3);
    gfr_call_limit_clear(&cl);
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_the_limit_is_rounded_as_rpcsvc_does),
        cmocka_unit_test(test_over_the_limit_until_replies_bring_it_down),
        cmocka_unit_test(test_uncounted_replies_and_repeated_xids),
        cmocka_unit_test(test_no_limit_tracks_nothing),
    };

    return cmocka_run_group_tests_name("call-limit", tests, NULL, NULL);
}
