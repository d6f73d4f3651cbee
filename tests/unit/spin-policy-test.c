/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Spin or sleep: a poller spins only while something is due, to the later
 * of the window's end and the reply's latest arrival; a reply that cannot
 * come yet is slept for with a timer that ends a learnt lead before its
 * earliest arrival, and the lead follows how late timers fire.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "gfr_spin_policy.h"

#define US 1000ull
#define MS 1000000ull
#define T0 (5000 * MS)

/* A policy whose timers fire late_ns late, steadily. */
static struct gfr_spin_policy
late_by(uint64_t late_ns)
{
    struct gfr_spin_policy sp;

    gfr_spin_policy_init(&sp);
    for (int i = 0; i < 60; i++)
        gfr_spin_policy_woke(&sp, T0, T0 + late_ns);
    return sp;
}

static void
test_nothing_due_sleeps(void **state)
{
    struct gfr_spin_policy sp;
    uint64_t until = 1, wake = 1;

    (void)state;
    gfr_spin_policy_init(&sp);
    assert_int_equal(gfr_spin_policy_decide(&sp, T0, 0, 0, 0, &until, &wake),
                     GFR_SLEEP_NOTHING_DUE);
    assert_int_equal(until, 0);
    assert_int_equal(wake, 0);
    /* A reply whose latest arrival has passed is not waited for. */
    assert_int_equal(gfr_spin_policy_decide(&sp, T0, 0, T0 - MS, T0, &until, &wake),
                     GFR_SLEEP_NOTHING_DUE);
}

static void
test_spins_to_the_later_of_window_and_reply(void **state)
{
    struct gfr_spin_policy sp;
    uint64_t until = 0, wake = 1;

    (void)state;
    gfr_spin_policy_init(&sp);
    assert_int_equal(gfr_spin_policy_decide(&sp, T0, 50 * US, 0, 0, &until, &wake),
                     GFR_SPIN_WINDOW);
    assert_int_equal(until, T0 + 50 * US);
    assert_int_equal(wake, 0);
    assert_int_equal(gfr_spin_policy_decide(&sp, T0, 0, T0, T0 + 3 * MS, &until, &wake),
                     GFR_SPIN_REPLY);
    assert_int_equal(until, T0 + 3 * MS);
    assert_int_equal(gfr_spin_policy_decide(&sp, T0, 2 * MS, T0, T0 + 3 * MS, &until, &wake),
                     GFR_SPIN_REPLY);
    assert_int_equal(until, T0 + 3 * MS);
    assert_int_equal(gfr_spin_policy_decide(&sp, T0, 4 * MS, T0, T0 + 3 * MS, &until, &wake),
                     GFR_SPIN_WINDOW);
    assert_int_equal(until, T0 + 4 * MS);
}

static void
test_a_reply_not_due_is_slept_for_with_a_timer(void **state)
{
    struct gfr_spin_policy sp;
    uint64_t until = 1, wake = 0;

    (void)state;
    gfr_spin_policy_init(&sp);
    /* No lateness seen yet: wake when the reply may come, even with a
     * window (the reply is the better guess), then spin to its latest. */
    assert_int_equal(gfr_spin_policy_decide(&sp, T0, 50 * US, T0 + MS, T0 + 3 * MS, &until, &wake),
                     GFR_SLEEP_UNTIL_DUE);
    assert_int_equal(wake, T0 + MS);
    assert_int_equal(until, 0);
    assert_int_equal(gfr_spin_policy_decide(&sp, T0 + MS, 0, T0 + MS, T0 + 3 * MS, &until, &wake),
                     GFR_SPIN_REPLY);
    assert_int_equal(until, T0 + 3 * MS);
    assert_int_equal(wake, 0);
}

static void
test_the_lead_follows_how_late_timers_fire(void **state)
{
    struct gfr_spin_policy sp = late_by(100 * US);
    uint64_t until, wake;

    (void)state;
    /* Twice the lateness, for its jitter. */
    assert_true(gfr_spin_policy_lead(&sp) > 195 * US && gfr_spin_policy_lead(&sp) <= 200 * US);
    assert_int_equal(gfr_spin_policy_decide(&sp, T0, 0, T0 + MS, T0 + 3 * MS, &until, &wake),
                     GFR_SLEEP_UNTIL_DUE);
    assert_int_equal(wake, T0 + MS - gfr_spin_policy_lead(&sp));
    /* Within the lead of the earliest arrival: spin now. */
    assert_int_equal(gfr_spin_policy_decide(&sp, T0 + 850 * US, 0, T0 + MS, T0 + 3 * MS, &until,
                                            &wake),
                     GFR_SPIN_REPLY);
    /* Timers as late as the round trip (the TCG VM): the reply is spun
     * for from the start. */
    sp = late_by(MS);
    assert_int_equal(gfr_spin_policy_decide(&sp, T0, 0, T0 + MS, T0 + 3 * MS, &until, &wake),
                     GFR_SPIN_REPLY);
    /* Timers that fire early or on time bring the lead back down. */
    for (int i = 0; i < 60; i++)
        gfr_spin_policy_woke(&sp, T0 + MS, T0);
    assert_true(gfr_spin_policy_lead(&sp) < 1 * US);
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_nothing_due_sleeps),
        cmocka_unit_test(test_spins_to_the_later_of_window_and_reply),
        cmocka_unit_test(test_a_reply_not_due_is_slept_for_with_a_timer),
        cmocka_unit_test(test_the_lead_follows_how_late_timers_fire),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
