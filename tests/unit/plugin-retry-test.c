/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * plugin-retry.c: attempts repeat every period until one works, never two
 * at once, and none runs after stop returns.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>
#include <urcu/uatomic.h>

#include "plugin-retry.h"

struct counter {
    int attempts;
    int works_at; /* the attempt that returns 0; 0: none */
    int running;
    int overlapped;
};

static int
attempt(void *cb_arg)
{
    struct counter *c = cb_arg;
    int n;

    if (uatomic_add_return(&c->running, 1) != 1)
        uatomic_set(&c->overlapped, 1);
    n = uatomic_add_return(&c->attempts, 1);
    usleep(1000);
    uatomic_dec(&c->running);
    return n == c->works_at ? 0 : -ENODEV;
}

/* Waits up to 5 s for c->attempts to reach n. */
static void
wait_attempts(struct counter *c, int n)
{
    for (int i = 0; i < 5000 && uatomic_read(&c->attempts) < n; i++)
        usleep(1000);
    assert_true(uatomic_read(&c->attempts) >= n);
}

static void
attempts_stop_once_one_works(void **state)
{
    struct counter c = {.works_at = 3};
    struct gfr_plugin_retry *r;

    (void)state;
    assert_int_equal(gfr_plugin_retry_start(attempt, &c, 5, "test-retry", &r), 0);
    wait_attempts(&c, 3);
    usleep(50 * 1000); /* ten periods more: no fourth attempt */
    assert_int_equal(uatomic_read(&c.attempts), 3);
    gfr_plugin_retry_stop(r);
    assert_int_equal(c.overlapped, 0);
}

static void
nothing_runs_after_stop(void **state)
{
    struct counter c = {0};
    struct gfr_plugin_retry *r;
    int seen;

    (void)state;
    assert_int_equal(gfr_plugin_retry_start(attempt, &c, 1, NULL, &r), 0);
    wait_attempts(&c, 5);
    gfr_plugin_retry_stop(r);
    seen = uatomic_read(&c.attempts);
    assert_int_equal(uatomic_read(&c.running), 0);
    usleep(20 * 1000);
    assert_int_equal(uatomic_read(&c.attempts), seen);
}

static void
first_attempt_waits_a_period(void **state)
{
    struct counter c = {0};
    struct gfr_plugin_retry *r;

    (void)state;
    assert_int_equal(gfr_plugin_retry_start(attempt, &c, 60 * 1000, NULL, &r), 0);
    usleep(20 * 1000);
    gfr_plugin_retry_stop(r); /* wakes the wait: no 60 s delay */
    assert_int_equal(c.attempts, 0);
}

static void
bad_arguments_are_refused(void **state)
{
    struct counter c = {0};
    struct gfr_plugin_retry *r;

    (void)state;
    assert_int_equal(gfr_plugin_retry_start(NULL, &c, 5, NULL, &r), -EINVAL);
    assert_int_equal(gfr_plugin_retry_start(attempt, &c, 0, NULL, &r), -EINVAL);
    assert_int_equal(gfr_plugin_retry_start(attempt, &c, 5, NULL, NULL), -EINVAL);
    gfr_plugin_retry_stop(NULL);
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(attempts_stop_once_one_works),
        cmocka_unit_test(nothing_runs_after_stop),
        cmocka_unit_test(first_attempt_waits_a_period),
        cmocka_unit_test(bad_arguments_are_refused),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
