/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The round-trip estimate: the bound before any sample is the ceiling;
 * a steady stream converges on its round trip with a small deviation; a
 * jittery one widens the bound; the bound stays within its floor and
 * ceiling; a zero-length round trip still counts as a sample.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "gfr_rtt.h"

#define US 1000ull
#define MS 1000000ull

static void
test_no_sample_gives_the_ceiling(void **state)
{
    struct gfr_rtt r;

    gfr_rtt_init(&r);
    assert_int_equal(gfr_rtt_bound(&r, 50 * US, 10 * MS), 10 * MS);
}

static void
test_first_sample_sets_mean_and_half_deviation(void **state)
{
    struct gfr_rtt r;

    gfr_rtt_init(&r);
    gfr_rtt_sample(&r, 1 * MS);
    assert_int_equal(r.srtt_ns, 1 * MS);
    assert_int_equal(r.rttvar_ns, 500 * US);
    assert_int_equal(gfr_rtt_bound(&r, 50 * US, 10 * MS), 3 * MS);
}

static void
test_steady_stream_converges(void **state)
{
    struct gfr_rtt r;

    gfr_rtt_init(&r);
    for (int i = 0; i < 100; i++)
        gfr_rtt_sample(&r, 1 * MS);
    assert_int_equal(r.srtt_ns, 1 * MS);
    assert_true(r.rttvar_ns < 10 * US);
    assert_true(gfr_rtt_bound(&r, 50 * US, 10 * MS) < 1040 * US);
}

static void
test_early_is_mean_less_two_deviations(void **state)
{
    struct gfr_rtt r;

    gfr_rtt_init(&r);
    assert_int_equal(gfr_rtt_early(&r), 0); /* no sample: at once */
    gfr_rtt_sample(&r, 1 * MS); /* deviation half the mean */
    assert_int_equal(gfr_rtt_early(&r), 0);
    for (int i = 0; i < 100; i++)
        gfr_rtt_sample(&r, 1 * MS);
    assert_true(gfr_rtt_early(&r) > 980 * US && gfr_rtt_early(&r) <= 1 * MS);
    assert_true(gfr_rtt_early(&r) < gfr_rtt_bound(&r, 0, 10 * MS));
}

static void
test_jitter_widens_the_bound(void **state)
{
    struct gfr_rtt steady, jittery;

    gfr_rtt_init(&steady);
    gfr_rtt_init(&jittery);
    for (int i = 0; i < 100; i++) {
        gfr_rtt_sample(&steady, 1 * MS);
        gfr_rtt_sample(&jittery, i % 2 ? 500 * US : 1500 * US);
    }
    assert_true(jittery.srtt_ns > 900 * US && jittery.srtt_ns < 1100 * US);
    assert_true(gfr_rtt_bound(&jittery, 0, 10 * MS) > 2500 * US);
    assert_true(gfr_rtt_bound(&jittery, 0, 10 * MS) > gfr_rtt_bound(&steady, 0, 10 * MS));
}

static void
test_bound_stays_within_floor_and_ceiling(void **state)
{
    struct gfr_rtt r;

    gfr_rtt_init(&r);
    for (int i = 0; i < 50; i++)
        gfr_rtt_sample(&r, 2 * US);
    assert_int_equal(gfr_rtt_bound(&r, 50 * US, 10 * MS), 50 * US);
    for (int i = 0; i < 50; i++)
        gfr_rtt_sample(&r, 100 * MS);
    assert_int_equal(gfr_rtt_bound(&r, 50 * US, 10 * MS), 10 * MS);
}

static void
test_zero_round_trip_is_a_sample(void **state)
{
    struct gfr_rtt r;

    gfr_rtt_init(&r);
    gfr_rtt_sample(&r, 0);
    assert_true(r.srtt_ns > 0);
    assert_int_equal(gfr_rtt_bound(&r, 50 * US, 10 * MS), 50 * US);
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_no_sample_gives_the_ceiling),
        cmocka_unit_test(test_first_sample_sets_mean_and_half_deviation),
        cmocka_unit_test(test_steady_stream_converges),
        cmocka_unit_test(test_early_is_mean_less_two_deviations),
        cmocka_unit_test(test_jitter_widens_the_bound),
        cmocka_unit_test(test_bound_stays_within_floor_and_ceiling),
        cmocka_unit_test(test_zero_round_trip_is_a_sample),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
