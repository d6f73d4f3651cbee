/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * A server's calls by xid (gfr_calls.h): verdicts on arriving requests,
 * the mark, answers forgotten and evicted, serial-number wrap, and random
 * operations checked against a plain list.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "gfr_calls.h"

static enum gfr_call_verdict
arrive(struct gfr_calls *c, uint32_t xid, uint32_t mark, bool resend, unsigned rail)
{
    enum gfr_call_verdict v = (enum gfr_call_verdict)-1;

    assert_int_equal(gfr_calls_arrived(c, xid, mark, resend, rail, &v), 0);
    return v;
}

static void
test_init_refuses_bad_limits(void **state)
{
    struct gfr_calls c;

    (void)state;
    assert_int_equal(gfr_calls_init(NULL, 8), -EINVAL);
    assert_int_equal(gfr_calls_init(&c, 1), -EINVAL);
    assert_int_equal(gfr_calls_init(&c, 2), 0);
    gfr_calls_fini(&c);
}

static void
test_serial_order_wraps(void **state)
{
    (void)state;
    assert_true(gfr_xid_before(1, 2));
    assert_false(gfr_xid_before(2, 2));
    assert_true(gfr_xid_before(0xfffffff0u, 5));
    assert_false(gfr_xid_before(5, 0xfffffff0u));
}

static void
test_a_call_moves_through_its_states(void **state)
{
    struct gfr_calls c;
    unsigned rail = 9;

    (void)state;
    gfr_calls_init(&c, 16);
    assert_int_equal(gfr_calls_state(&c, 10, NULL), 0);
    assert_int_equal(arrive(&c, 10, 10, false, 0), GFR_CALL_NEW);
    assert_int_equal(gfr_calls_state(&c, 10, &rail), GFR_CALL_RUNNING);
    assert_int_equal(rail, 0);
    /* a copy that comes on another rail while it runs: the reply goes there */
    assert_int_equal(arrive(&c, 10, 10, true, 1), GFR_CALL_DUPLICATE);
    assert_int_equal(gfr_calls_state(&c, 10, &rail), GFR_CALL_RUNNING);
    assert_int_equal(rail, 1);
    assert_int_equal(gfr_calls_replying(&c, 10, 1), 0);
    assert_int_equal(arrive(&c, 10, 10, true, 0), GFR_CALL_DUPLICATE);
    assert_int_equal(gfr_calls_state(&c, 10, &rail), GFR_CALL_REPLYING);
    assert_int_equal(rail, 1); /* a reply on its way stays where it is */
    /* its offer failed: submitted again on another rail */
    assert_int_equal(gfr_calls_replying(&c, 10, 0), 0);
    assert_int_equal(gfr_calls_answered(&c, 10), 0);
    assert_int_equal(gfr_calls_state(&c, 10, NULL), GFR_CALL_ANSWERED);
    assert_int_equal(arrive(&c, 10, 10, true, 1), GFR_CALL_DUPLICATE);
    assert_int_equal(gfr_calls_answered(&c, 10), -ENOENT);
    assert_int_equal(gfr_calls_replying(&c, 10, 0), -ENOENT);
    assert_int_equal(gfr_calls_replying(&c, 11, 0), -ENOENT);
    assert_int_equal(gfr_calls_answered(&c, 11), -ENOENT);
    gfr_calls_fini(&c);
}

static void
test_the_mark_moves_on_only(void **state)
{
    struct gfr_calls c;
    enum gfr_call_verdict v;

    (void)state;
    gfr_calls_init(&c, 16);
    assert_int_equal(gfr_calls_arrived(&c, 5, 6, false, 0, &v), -EPROTO);
    assert_int_equal(arrive(&c, 20, 15, false, 0), GFR_CALL_NEW);
    assert_int_equal(c.mark, 15);
    assert_int_equal(arrive(&c, 21, 12, false, 0), GFR_CALL_NEW); /* late, older mark */
    assert_int_equal(c.mark, 15);
    gfr_calls_fini(&c);
}

static void
test_only_a_resend_before_the_mark_is_stale(void **state)
{
    struct gfr_calls c;

    (void)state;
    gfr_calls_init(&c, 16);
    assert_int_equal(arrive(&c, 100, 100, false, 0), GFR_CALL_NEW);
    /* GlusterFS took xid 99 before 100 but submitted it after: new */
    assert_int_equal(arrive(&c, 99, 99, false, 0), GFR_CALL_NEW);
    assert_int_equal(arrive(&c, 101, 101, false, 0), GFR_CALL_NEW);
    /* the client holds 98's reply: a resend of it is stale */
    assert_int_equal(arrive(&c, 98, 98, true, 1), GFR_CALL_STALE);
    /* a resend the table does not know, after the mark: it never ran */
    assert_int_equal(arrive(&c, 102, 101, true, 1), GFR_CALL_NEW);
    gfr_calls_fini(&c);
}

static void
test_answers_go_once_the_mark_passes(void **state)
{
    struct gfr_calls c;

    (void)state;
    gfr_calls_init(&c, 1024);
    for (uint32_t x = 1; x <= 20; x++) {
        assert_int_equal(arrive(&c, x, 1, false, 0), GFR_CALL_NEW);
        gfr_calls_replying(&c, x, 0);
        gfr_calls_answered(&c, x);
    }
    assert_int_equal(c.answered, 20);
    assert_int_equal(arrive(&c, 21, 21, false, 0), GFR_CALL_NEW);
    assert_int_equal(arrive(&c, 5, 5, true, 1), GFR_CALL_DUPLICATE);
    /* an answer the mark has passed already is not kept at all */
    assert_int_equal(arrive(&c, 0, 0, false, 0), GFR_CALL_NEW);
    assert_int_equal(gfr_calls_replying(&c, 0, 0), 0);
    assert_int_equal(gfr_calls_answered(&c, 0), 0);
    assert_int_equal(gfr_calls_state(&c, 0, NULL), 0);
    assert_int_equal(c.answered, 20);
    /* the others stay until room is needed */
    assert_int_equal(gfr_calls_state(&c, 3, NULL), GFR_CALL_ANSWERED);
    for (uint32_t x = 22; x < 200; x++)
        assert_int_equal(arrive(&c, x, 21, false, 0), GFR_CALL_NEW);
    assert_int_equal(gfr_calls_state(&c, 3, NULL), 0);
    assert_int_equal(c.answered, 0);
    assert_false(c.evicted);
    assert_int_equal(arrive(&c, 3, 3, true, 0), GFR_CALL_STALE); /* its own mark */
    gfr_calls_fini(&c);
}

static void
test_a_full_table_evicts_answers_and_then_refuses(void **state)
{
    struct gfr_calls c;
    enum gfr_call_verdict v;

    (void)state;
    gfr_calls_init(&c, 8);
    /* 1 is left unanswered (a blocking lock): the mark stays at 1 */
    assert_int_equal(arrive(&c, 1, 1, false, 0), GFR_CALL_NEW);
    for (uint32_t x = 2; x <= 8; x++) {
        assert_int_equal(arrive(&c, x, 1, false, 0), GFR_CALL_NEW);
        gfr_calls_replying(&c, x, 0);
        gfr_calls_answered(&c, x);
    }
    assert_int_equal(c.used, 8);
    assert_int_equal(arrive(&c, 9, 1, false, 0), GFR_CALL_NEW);
    assert_true(c.evicted);
    assert_int_equal(c.evicted_to, 8);
    assert_int_equal(c.evictions, 7);
    assert_int_equal(c.used, 2);
    /* a resend into what was evicted cannot be judged; beyond it, new */
    assert_int_equal(arrive(&c, 4, 1, true, 1), GFR_CALL_AMBIGUOUS);
    assert_int_equal(arrive(&c, 10, 1, true, 1), GFR_CALL_NEW);
    /* an original in that range is new (it went on a rail not fenced) */
    assert_int_equal(arrive(&c, 7, 1, false, 1), GFR_CALL_NEW);
    assert_int_equal(arrive(&c, 1, 1, true, 1), GFR_CALL_DUPLICATE);
    for (uint32_t x = 11; x <= 14; x++)
        assert_int_equal(arrive(&c, x, 1, false, 0), GFR_CALL_NEW);
    assert_int_equal(c.used, 8);
    assert_int_equal(gfr_calls_arrived(&c, 15, 1, false, 0, &v), -ENOSPC);
    gfr_calls_fini(&c);
}

static void
test_xids_wrap(void **state)
{
    struct gfr_calls c;

    (void)state;
    gfr_calls_init(&c, 64);
    for (uint32_t x = 0xfffffff8u; x != 8; x++) {
        assert_int_equal(arrive(&c, x, 0xfffffff8u, false, 0), GFR_CALL_NEW);
        gfr_calls_replying(&c, x, 0);
        gfr_calls_answered(&c, x);
    }
    assert_int_equal(arrive(&c, 8, 2, false, 0), GFR_CALL_NEW);
    assert_int_equal(arrive(&c, 0xfffffffeu, 0xfffffffeu, true, 0), GFR_CALL_DUPLICATE);
    assert_int_equal(c.mark, 2);
    assert_int_equal(arrive(&c, 0xfffffff0u, 0xfffffff0u, true, 0), GFR_CALL_STALE);
    gfr_calls_fini(&c);
}

/* Random arrivals, replies and answers against a plain list of (xid,
 * state, rail), with a mark that trails the oldest unanswered call: every
 * lookup agrees, and deletion (of answers the mark passed) never hides an
 * entry. */
static void
test_random_operations_match_a_list(void **state)
{
    enum { N = 400 };
    struct {
        uint32_t xid;
        unsigned state, rail;
    } ref[N];
    unsigned nref = 0;
    struct gfr_calls c;
    uint32_t next = 0xffffff00u;
    unsigned seed = 12345;

    (void)state;
    gfr_calls_init(&c, 4096);
    for (int step = 0; step < 20000; step++) {
        /* one arrival for two replies and two answers: calls get answered */
        unsigned op = ((unsigned)rand_r(&seed) % 5 + 1) / 2;
        unsigned i = nref ? (unsigned)rand_r(&seed) % nref : 0;

        /* half the time the oldest call not answered, so the mark moves */
        if (rand_r(&seed) % 2)
            for (unsigned k = 0; k < nref; k++)
                if (ref[k].state != GFR_CALL_ANSWERED &&
                    (ref[i].state == GFR_CALL_ANSWERED || gfr_xid_before(ref[k].xid, ref[i].xid)))
                    i = k;

        if (op == 0 && nref < N) {
            uint32_t mark = next;

            for (unsigned k = 0; k < nref; k++)
                if (ref[k].state != GFR_CALL_ANSWERED && gfr_xid_before(ref[k].xid, mark))
                    mark = ref[k].xid;
            assert_int_equal(arrive(&c, next, mark, false, next % 4), GFR_CALL_NEW);
            ref[nref].xid = next;
            ref[nref].state = GFR_CALL_RUNNING;
            ref[nref].rail = next % 4;
            nref++;
            next++;
        } else if (op == 1 && nref && ref[i].state != GFR_CALL_ANSWERED) {
            assert_int_equal(gfr_calls_replying(&c, ref[i].xid, 3), 0);
            ref[i].state = GFR_CALL_REPLYING;
            ref[i].rail = 3;
        } else if (op == 2 && nref && ref[i].state == GFR_CALL_REPLYING) {
            assert_int_equal(gfr_calls_answered(&c, ref[i].xid), 0);
            ref[i].state = GFR_CALL_ANSWERED;
        }
        /* an answer the table let go of is the mark's: drop it too */
        for (unsigned k = 0; k < nref; k++) {
            unsigned rail;
            unsigned got = gfr_calls_state(&c, ref[k].xid, &rail);

            if (!got && ref[k].state == GFR_CALL_ANSWERED &&
                gfr_xid_before(ref[k].xid, c.mark)) {
                ref[k--] = ref[--nref];
                continue;
            }
            assert_int_equal(got, ref[k].state);
            assert_int_equal(rail, ref[k].rail);
        }
        assert_int_equal(c.used, nref);
    }
    /* answers went as the mark passed them, and nothing had to be evicted */
    assert_true(next - 0xffffff00u > 2 * N);
    assert_false(c.evicted);
    gfr_calls_fini(&c);
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_init_refuses_bad_limits),
        cmocka_unit_test(test_serial_order_wraps),
        cmocka_unit_test(test_a_call_moves_through_its_states),
        cmocka_unit_test(test_the_mark_moves_on_only),
        cmocka_unit_test(test_only_a_resend_before_the_mark_is_stale),
        cmocka_unit_test(test_answers_go_once_the_mark_passes),
        cmocka_unit_test(test_a_full_table_evicts_answers_and_then_refuses),
        cmocka_unit_test(test_xids_wrap),
        cmocka_unit_test(test_random_operations_match_a_list),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
