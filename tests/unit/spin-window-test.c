/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The adaptive polling window: it grows to cover waits shorter than its
 * ceiling, halves back to its floor when the waits are longer, keeps still
 * when fixed, and a simulated stream of messages is caught by polling
 * after a few sleeps.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "gfr_spin_window.h"

#define US 1000ull
#define MS 1000000ull

static void
test_starts_at_min(void **state)
{
    struct gfr_spin_window w;

    gfr_spin_window_init(&w, 50 * US, 2 * MS);
    assert_int_equal(w.cur_ns, 50 * US);
}

static void
test_fixed_when_max_not_above_min(void **state)
{
    struct gfr_spin_window w;

    gfr_spin_window_init(&w, 50 * US, 50 * US);
    gfr_spin_window_slept(&w, 60 * US);
    assert_int_equal(w.cur_ns, 50 * US);
    gfr_spin_window_slept(&w, 100 * MS);
    assert_int_equal(w.cur_ns, 50 * US);

    gfr_spin_window_init(&w, 50 * US, 0);
    gfr_spin_window_slept(&w, 60 * US);
    assert_int_equal(w.cur_ns, 50 * US);
}

static void
test_grows_to_cover_the_wait(void **state)
{
    struct gfr_spin_window w;

    gfr_spin_window_init(&w, 50 * US, 2 * MS);
    gfr_spin_window_slept(&w, 1 * MS);
    assert_int_equal(w.cur_ns, 1250 * US);
}

static void
test_grows_at_least_double(void **state)
{
    struct gfr_spin_window w;

    gfr_spin_window_init(&w, 50 * US, 2 * MS);
    gfr_spin_window_slept(&w, 60 * US);
    assert_int_equal(w.cur_ns, 100 * US);
}

static void
test_grows_from_zero(void **state)
{
    struct gfr_spin_window w;

    gfr_spin_window_init(&w, 0, 2 * MS);
    gfr_spin_window_slept(&w, 300 * US);
    assert_int_equal(w.cur_ns, 375 * US);
}

static void
test_capped_at_max(void **state)
{
    struct gfr_spin_window w;

    gfr_spin_window_init(&w, 50 * US, 2 * MS);
    gfr_spin_window_slept(&w, 1900 * US);
    assert_int_equal(w.cur_ns, 2 * MS);
    gfr_spin_window_slept(&w, 2 * MS);
    assert_int_equal(w.cur_ns, 2 * MS);
}

static void
test_halves_to_min_after_long_sleeps(void **state)
{
    static const uint64_t expect[] = {1 * MS, 500 * US, 250 * US, 125 * US,
                                      62500, 50 * US, 50 * US};
    struct gfr_spin_window w;

    gfr_spin_window_init(&w, 50 * US, 2 * MS);
    gfr_spin_window_slept(&w, 2 * MS);
    for (size_t i = 0; i < sizeof(expect) / sizeof(expect[0]); i++) {
        gfr_spin_window_slept(&w, 100 * MS);
        assert_int_equal(w.cur_ns, expect[i]);
    }
}

/* Messages every `gap`: returns how many of `n` found the poller asleep. */
static unsigned
sleeps_for_stream(struct gfr_spin_window *w, uint64_t gap, unsigned n)
{
    unsigned sleeps = 0;

    for (unsigned i = 0; i < n; i++) {
        if (w->cur_ns >= gap)
            continue;
        sleeps++;
        gfr_spin_window_slept(w, gap);
    }
    return sleeps;
}

static void
test_stream_in_reach_is_polled(void **state)
{
    struct gfr_spin_window w;

    gfr_spin_window_init(&w, 50 * US, 2 * MS);
    /* 800 us apart: the first message sleeps, the window then covers it. */
    assert_int_equal(sleeps_for_stream(&w, 800 * US, 1000), 1);
    assert_true(w.cur_ns >= 800 * US && w.cur_ns <= 2 * MS);
    /* A gap that creeps up is followed, each step costing one sleep at
     * most (a window that doubles may already cover the next). */
    assert_in_range(sleeps_for_stream(&w, 1100 * US, 1000), 0, 1);
    assert_in_range(sleeps_for_stream(&w, 1500 * US, 1000), 0, 1);
    assert_in_range(sleeps_for_stream(&w, 1900 * US, 1000), 0, 1);
    assert_true(w.cur_ns >= 1900 * US);
}

static void
test_stream_out_of_reach_falls_back(void **state)
{
    struct gfr_spin_window w;

    gfr_spin_window_init(&w, 50 * US, 2 * MS);
    sleeps_for_stream(&w, 1500 * US, 10);
    /* Messages now 5 ms apart: every one sleeps, and polling shrinks. */
    assert_int_equal(sleeps_for_stream(&w, 5 * MS, 10), 10);
    assert_int_equal(w.cur_ns, 50 * US);
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_starts_at_min),
        cmocka_unit_test(test_fixed_when_max_not_above_min),
        cmocka_unit_test(test_grows_to_cover_the_wait),
        cmocka_unit_test(test_grows_at_least_double),
        cmocka_unit_test(test_grows_from_zero),
        cmocka_unit_test(test_capped_at_max),
        cmocka_unit_test(test_halves_to_min_after_long_sleeps),
        cmocka_unit_test(test_stream_in_reach_is_polled),
        cmocka_unit_test(test_stream_out_of_reach_falls_back),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
