/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Bulk transfer planning: segment size limits, buffer boundaries, up to
 * 4 MiB, and the peer-controlled cases that must be refused.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include <cmocka.h>

#include "gfr_xfer.h"

/* Plans, then checks every op against the buffers and returns their count. */
static int
plan_and_check(const struct gfr_xfer_local *local, unsigned n_local,
               const struct gfr_wire_seg *remote, unsigned n_remote,
               uint64_t total, uint32_t seg)
{
    struct gfr_xfer xfer;
    struct gfr_xfer_op op;
    uint64_t done = 0;
    uint64_t expect_local = local[0].addr;
    uint64_t expect_remote = remote[0].addr;
    unsigned li = 0, ri = 0;
    uint64_t loff = 0, roff = 0;
    int ops = 0;

    assert_int_equal(gfr_xfer_init(&xfer, local, n_local, remote, n_remote, total, seg), 0);
    while (gfr_xfer_next(&xfer, &op)) {
        while (loff == local[li].length) { li++; loff = 0; expect_local = local[li].addr; }
        while (roff == remote[ri].length) { ri++; roff = 0; expect_remote = remote[ri].addr; }
        assert_true(op.length > 0 && op.length <= seg);
        assert_int_equal(op.local_addr, expect_local);
        assert_int_equal(op.remote_addr, expect_remote);
        assert_int_equal(op.lkey, local[li].lkey);
        assert_int_equal(op.rkey, remote[ri].rkey);
        assert_true(loff + op.length <= local[li].length);
        assert_true(roff + op.length <= remote[ri].length);
        loff += op.length;
        roff += op.length;
        expect_local += op.length;
        expect_remote += op.length;
        done += op.length;
        ops++;
    }
    assert_int_equal(done, total);
    return ops;
}

static void
test_four_mib_in_one_mib_segments(void **state)
{
    struct gfr_xfer_local local = {0x100000000ull, 4 << 20, 11};
    struct gfr_wire_seg remote = {0x7f0000000000ull, 22, 4 << 20};

    assert_int_equal(plan_and_check(&local, 1, &remote, 1, 4 << 20, 1 << 20), 4);
}

static void
test_ops_never_cross_buffer_boundaries(void **state)
{
    struct gfr_xfer_local local[3] = {{0x1000, 5000, 1}, {0x90000, 0, 2}, {0x200000, 300000, 3}};
    struct gfr_wire_seg remote[3] = {{0x10000000, 7, 100000}, {0x20000000, 8, 1}, {0x30000000, 9, 205000}};

    /* 305000 bytes: boundaries at 5000 (local), 100000 and 100001 (remote). */
    int ops = plan_and_check(local, 3, remote, 3, 305000, 65536);

    assert_true(ops >= 7);
}

static void
test_write_list_larger_than_reply(void **state)
{
    struct gfr_xfer_local local = {0x1000, 4096, 1};
    struct gfr_wire_seg remote = {0x2000, 2, 1 << 20};

    assert_int_equal(plan_and_check(&local, 1, &remote, 1, 4096, 1 << 20), 1);
}

static void
test_refusals(void **state)
{
    struct gfr_xfer xfer;
    struct gfr_xfer_local local = {0x1000, 4096, 1};
    struct gfr_wire_seg small = {0x2000, 2, 100};
    struct gfr_wire_seg wraps = {UINT64_MAX - 10, 2, 100};
    struct gfr_wire_seg big = {0x2000, 2, 8192};

    assert_int_equal(gfr_xfer_init(&xfer, &local, 1, &small, 1, 4096, 4096), -EMSGSIZE);
    assert_int_equal(gfr_xfer_init(&xfer, &local, 1, &big, 1, 8192, 4096), -EMSGSIZE);
    assert_int_equal(gfr_xfer_init(&xfer, &local, 1, &wraps, 1, 50, 4096), -EPROTO);
    assert_int_equal(gfr_xfer_init(&xfer, &local, 1, &big, 1, 4096, 0), -EINVAL);
    assert_int_equal(gfr_xfer_init(NULL, &local, 1, &big, 1, 4096, 1), -EINVAL);
    assert_int_equal(gfr_xfer_init(&xfer, NULL, 1, &big, 1, 4096, 1), -EINVAL);
}

static void
test_random_layouts(void **state)
{
    srand(4242);
    for (int round = 0; round < 500; round++) {
        struct gfr_xfer_local local[8];
        struct gfr_wire_seg remote[GFR_WIRE_MAX_SEGS];
        unsigned nl = 1 + (unsigned)rand() % 8;
        unsigned nr = 1 + (unsigned)rand() % GFR_WIRE_MAX_SEGS;
        uint64_t lsum = 0, rsum = 0, total;
        uint64_t addr = 0x10000;

        for (unsigned i = 0; i < nl; i++) {
            local[i] = (struct gfr_xfer_local){addr, 1 + (uint32_t)rand() % 600000, i};
            addr += local[i].length + 4096;
            lsum += local[i].length;
        }
        for (unsigned i = 0; i < nr; i++) {
            remote[i] = (struct gfr_wire_seg){addr, 100 + i, 1 + (uint32_t)rand() % 600000};
            addr += remote[i].length;
            rsum += remote[i].length;
        }
        total = (lsum < rsum ? lsum : rsum) - (uint64_t)rand() % 100;
        if ((int64_t)total <= 0)
            continue;
        plan_and_check(local, nl, remote, nr, total, 1 + (uint32_t)rand() % (1 << 20));
    }
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_four_mib_in_one_mib_segments),
        cmocka_unit_test(test_ops_never_cross_buffer_boundaries),
        cmocka_unit_test(test_write_list_larger_than_reply),
        cmocka_unit_test(test_refusals),
        cmocka_unit_test(test_random_layouts),
    };

    return cmocka_run_group_tests_name("xfer", tests, NULL, NULL);
}
