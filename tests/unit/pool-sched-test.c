/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The pool's scheduler on its own, single-threaded: FIFO per client and
 * class, priorities, the starvation limit, round-robin between clients and
 * the release of clients.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "pool-sched.h"

#define NJOBS 64

struct fixture {
    struct gfr_sched sched;
    struct gfr_pool_client *a;
    struct gfr_pool_client *b;
    struct gfr_pool_job jobs[NJOBS];
    int used;
};

static struct gfr_pool_client *
new_client(struct fixture *f)
{
    struct gfr_pool_client *client = gfr_sched_client_new(&f->sched, NULL);

    assert_non_null(client);
    return client;
}

static int
setup(void **state)
{
    struct fixture *f;

    /* The scheduler's queues are cache-line aligned. */
    if (posix_memalign((void **)&f, CAA_CACHE_LINE_SIZE, sizeof(*f)))
        return -1;
    memset(f, 0, sizeof(*f));
    gfr_sched_init(&f->sched, 4);
    f->a = new_client(f);
    f->b = new_client(f);
    *state = f;
    return 0;
}

static int
teardown(void **state)
{
    struct fixture *f = *state;

    gfr_sched_fini(&f->sched);
    free(f);
    return 0;
}

/* Queues job number f->used for client at prio; returns its index. */
static int
add(struct fixture *f, struct gfr_pool_client *client, enum gfr_pool_prio prio)
{
    struct gfr_pool_job *job = &f->jobs[f->used];

    assert_true(f->used < NJOBS);
    memset(job, 0, sizeof(*job));
    gfr_sched_enqueue(&f->sched, client, prio, job);
    return f->used++;
}

static int
take(struct fixture *f)
{
    int blocked = 0;
    struct gfr_pool_job *job = gfr_sched_take(&f->sched, &blocked);

    /* Single-threaded: no enqueue is ever half-finished. */
    assert_int_equal(blocked, 0);
    return job ? (int)(job - f->jobs) : -1;
}

static void
test_empty_scheduler_gives_nothing(void **state)
{
    struct fixture *f = *state;

    assert_int_equal(take(f), -1);
}

static void
test_fifo_within_one_client_and_class(void **state)
{
    struct fixture *f = *state;

    for (int i = 0; i < 10; i++)
        add(f, f->a, GFR_POOL_PRIO_NORMAL);
    for (int i = 0; i < 10; i++)
        assert_int_equal(take(f), i);
    assert_int_equal(take(f), -1);
    assert_false(gfr_sched_has_work(&f->sched));
}

static void
test_enqueue_reports_only_the_first_ready_transition(void **state)
{
    struct fixture *f = *state;
    struct gfr_pool_job *job = &f->jobs[0];

    memset(f->jobs, 0, 3 * sizeof(f->jobs[0]));
    assert_int_equal(gfr_sched_enqueue(&f->sched, f->a, GFR_POOL_PRIO_NORMAL, job), 1);
    job = &f->jobs[1];
    assert_int_equal(gfr_sched_enqueue(&f->sched, f->a, GFR_POOL_PRIO_NORMAL, job), 0);
    job = &f->jobs[2];
    assert_int_equal(gfr_sched_enqueue(&f->sched, f->b, GFR_POOL_PRIO_NORMAL, job), 0);
    assert_true(gfr_sched_has_work(&f->sched));
    f->used = 3;
    assert_int_equal(take(f), 0);
    assert_int_equal(take(f), 2);
    assert_int_equal(take(f), 1);
    assert_int_equal(take(f), -1);
}

static void
test_higher_class_first(void **state)
{
    struct fixture *f = *state;
    int low = add(f, f->a, GFR_POOL_PRIO_LOW);
    int normal = add(f, f->a, GFR_POOL_PRIO_NORMAL);
    int high = add(f, f->a, GFR_POOL_PRIO_HIGH);

    assert_int_equal(take(f), high);
    assert_int_equal(take(f), normal);
    assert_int_equal(take(f), low);
}

static void
test_starving_class_served_within_limit(void **state)
{
    struct fixture *f = *state;
    int low = add(f, f->b, GFR_POOL_PRIO_LOW);
    int picks = 0;
    int got;

    for (int i = 0; i < 20; i++)
        add(f, f->a, GFR_POOL_PRIO_HIGH);
    while ((got = take(f)) != low) {
        assert_int_not_equal(got, -1);
        picks++;
    }
    /* starvation_limit is 4: skipped at most 4 times. */
    assert_true(picks <= 4);
    assert_int_equal(picks, 4);
}

static void
test_two_starving_classes_wait_at_most_limit_plus_one(void **state)
{
    struct fixture *f = *state;
    int normal = add(f, f->b, GFR_POOL_PRIO_NORMAL);
    int low = add(f, f->b, GFR_POOL_PRIO_LOW);
    int pos_normal = -1;
    int pos_low = -1;

    for (int i = 0; i < 20; i++)
        add(f, f->a, GFR_POOL_PRIO_HIGH);
    for (int pick = 0; pick < 22; pick++) {
        int got = take(f);
        if (got == normal)
            pos_normal = pick;
        if (got == low)
            pos_low = pick;
    }
    assert_in_range(pos_normal, 0, 5);
    assert_in_range(pos_low, 0, 5);
}

static void
test_clients_alternate_one_job_per_turn(void **state)
{
    struct fixture *f = *state;
    int b_job;
    int position = 0;

    for (int i = 0; i < 30; i++)
        add(f, f->a, GFR_POOL_PRIO_NORMAL);
    b_job = add(f, f->b, GFR_POOL_PRIO_NORMAL);
    while (take(f) != b_job)
        position++;
    /* A's 30 jobs delay B's single job by one. */
    assert_int_equal(position, 1);
}

static void
test_round_robin_keeps_each_clients_order(void **state)
{
    struct fixture *f = *state;
    int last_a = -1;
    int last_b = -1;
    int got;

    for (int i = 0; i < 8; i++) {
        add(f, f->a, GFR_POOL_PRIO_NORMAL);
        add(f, f->b, GFR_POOL_PRIO_NORMAL);
    }
    while ((got = take(f)) != -1) {
        if (got % 2 == 0) { /* even jobs are a's */
            assert_true(got > last_a);
            last_a = got;
        } else {
            assert_true(got > last_b);
            last_b = got;
        }
    }
}

static int
count_clients(struct fixture *f)
{
    struct cds_list_head *pos;
    int clients = 0;

    cds_list_for_each(pos, &f->sched.clients)
        clients++;
    return clients;
}

static void
test_released_client_freed_after_its_last_job(void **state)
{
    struct fixture *f = *state;
    struct gfr_pool_client *c = new_client(f);
    int first = add(f, c, GFR_POOL_PRIO_NORMAL);
    int second = add(f, c, GFR_POOL_PRIO_LOW);

    gfr_sched_release(&f->sched, c);
    assert_int_equal(count_clients(f), 3); /* still has jobs */
    assert_int_equal(take(f), first);
    assert_int_equal(count_clients(f), 3);
    assert_int_equal(take(f), second);
    assert_int_equal(count_clients(f), 2);
    assert_int_equal(take(f), -1);
}

static void
test_released_idle_client_freed_at_once(void **state)
{
    struct fixture *f = *state;
    struct gfr_pool_client *c = new_client(f);

    assert_int_equal(count_clients(f), 3);
    gfr_sched_release(&f->sched, c);
    assert_int_equal(count_clients(f), 2);
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_empty_scheduler_gives_nothing, setup, teardown),
        cmocka_unit_test_setup_teardown(test_fifo_within_one_client_and_class, setup, teardown),
        cmocka_unit_test_setup_teardown(test_enqueue_reports_only_the_first_ready_transition, setup, teardown),
        cmocka_unit_test_setup_teardown(test_higher_class_first, setup, teardown),
        cmocka_unit_test_setup_teardown(test_starving_class_served_within_limit, setup, teardown),
        cmocka_unit_test_setup_teardown(test_two_starving_classes_wait_at_most_limit_plus_one, setup, teardown),
        cmocka_unit_test_setup_teardown(test_clients_alternate_one_job_per_turn, setup, teardown),
        cmocka_unit_test_setup_teardown(test_round_robin_keeps_each_clients_order, setup, teardown),
        cmocka_unit_test_setup_teardown(test_released_client_freed_after_its_last_job, setup, teardown),
        cmocka_unit_test_setup_teardown(test_released_idle_client_freed_at_once, setup, teardown),
    };

    return cmocka_run_group_tests_name("pool-sched", tests, NULL, NULL);
}
