/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Latency histograms: every value lands in the bucket that holds it,
 * percentiles stay within a bucket's width of the truth, merging adds,
 * and snapshots taken while several threads record never see more than
 * was recorded, nor lose a count once the threads are done (run under
 * ThreadSanitizer by ./scripts/check).
 */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "gfr_hist.h"

static void
test_buckets_hold_their_values(void **state)
{
    (void)state;
    for (uint64_t v = 0; v < (1ull << 20); v = v < 64 ? v + 1 : v + v / 7 + 1) {
        unsigned b = gfr_hist_bucket(v);

        assert_true(gfr_hist_bucket_low(b) <= v);
        assert_true(v < gfr_hist_bucket_low(b + 1));
    }
    for (unsigned b = 0; b + 1 < GFR_HIST_BUCKETS; b++) {
        assert_int_equal(gfr_hist_bucket(gfr_hist_bucket_low(b)), b);
        assert_true(gfr_hist_bucket_low(b) < gfr_hist_bucket_low(b + 1));
    }
    assert_int_equal(gfr_hist_bucket(UINT64_MAX), GFR_HIST_BUCKETS - 1);
}

static void
test_percentiles_within_a_bucket(void **state)
{
    static struct gfr_hist h, snap;

    (void)state;
    memset(&h, 0, sizeof(h));
    /* 1..10000 us: p50 is 5000 us, p99 9900 us, p999 9990 us. */
    for (uint64_t us = 1; us <= 10000; us++)
        gfr_hist_add(&h, us * 1000);
    gfr_hist_snapshot(&h, &snap);
    assert_int_equal(snap.count, 10000);
    assert_int_equal(snap.max_ns, 10000 * 1000ull);
    assert_int_equal(gfr_hist_mean(&snap), 5000500ull);
    struct { double q; double want; } cases[] = {
        {0.5, 5000e3}, {0.99, 9900e3}, {0.999, 9990e3}, {1.0, 10000e3}};
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        double got = (double)gfr_hist_percentile(&snap, cases[i].q);

        assert_true(got >= cases[i].want * 0.875 && got <= cases[i].want * 1.125);
    }
    assert_true(gfr_hist_percentile(&snap, 1.0) <= snap.max_ns);
}

static void
test_empty_and_merge(void **state)
{
    static struct gfr_hist a, b, sa, sb;

    (void)state;
    memset(&a, 0, sizeof(a));
    memset(&b, 0, sizeof(b));
    gfr_hist_snapshot(&a, &sa);
    assert_int_equal(sa.count, 0);
    assert_int_equal(gfr_hist_percentile(&sa, 0.5), 0);
    assert_int_equal(gfr_hist_mean(&sa), 0);
    gfr_hist_add(&a, 100);
    gfr_hist_add(&b, 300);
    gfr_hist_add(&b, 0);
    gfr_hist_snapshot(&a, &sa);
    gfr_hist_snapshot(&b, &sb);
    gfr_hist_merge(&sa, &sb);
    assert_int_equal(sa.count, 3);
    assert_int_equal(sa.sum_ns, 400);
    assert_int_equal(sa.max_ns, 300);
    assert_int_equal(sa.bucket[0], 1);
}

#define WRITERS 4
#define PER_WRITER 200000

static struct gfr_hist shared;

static void *
writer(void *arg)
{
    uint64_t base = (uintptr_t)arg;

    for (uint64_t i = 0; i < PER_WRITER; i++)
        gfr_hist_add(&shared, base + (i % 5000));
    return NULL;
}

static void
test_snapshots_while_recording(void **state)
{
    static struct gfr_hist snap;
    pthread_t threads[WRITERS];
    uint64_t last = 0;
    int snapshots = 0;

    (void)state;
    memset(&shared, 0, sizeof(shared));
    for (uintptr_t t = 0; t < WRITERS; t++)
        assert_int_equal(pthread_create(&threads[t], NULL, writer, (void *)(t * 1000)), 0);
    do {
        gfr_hist_snapshot(&shared, &snap);
        /* Counters only grow: a later snapshot never sees fewer. */
        assert_true(snap.count >= last);
        assert_true(snap.count <= (uint64_t)WRITERS * PER_WRITER);
        last = snap.count;
        snapshots++;
    } while (snap.count < (uint64_t)WRITERS * PER_WRITER && snapshots < 10000000);
    for (int t = 0; t < WRITERS; t++)
        pthread_join(threads[t], NULL);
    gfr_hist_snapshot(&shared, &snap);
    assert_int_equal(snap.count, (uint64_t)WRITERS * PER_WRITER);
    assert_int_equal(snap.max_ns, (WRITERS - 1) * 1000 + 4999);
    /* Each writer adds sum(i % 5000) + PER_WRITER * base. */
    uint64_t per = 0;
    for (uint64_t i = 0; i < PER_WRITER; i++)
        per += i % 5000;
    assert_int_equal(snap.sum_ns, WRITERS * per + PER_WRITER * (0 + 1000 + 2000 + 3000));
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_buckets_hold_their_values),
        cmocka_unit_test(test_percentiles_within_a_bucket),
        cmocka_unit_test(test_empty_and_merge),
        cmocka_unit_test(test_snapshots_while_recording),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
