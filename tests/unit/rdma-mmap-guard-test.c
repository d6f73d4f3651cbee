/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * lib/engine/rdma-mmap-guard.c: the CQ that keeps siw's reserved mmap offset from
 * being handed to a queue of ours.  This file's ibv_create_cq and
 * ibv_destroy_cq replace libibverbs' for the objects linked here.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>
#include <rdma/siw-abi.h>

#include "gfr_mmap_guard.h"
#include "gfr_rdma.h"

static struct ibv_cq fake_cq;
static int asked_entries, destroyed, refuse;
static struct ibv_comp_channel *asked_channel;
static char logged[512];

struct ibv_cq *
ibv_create_cq(struct ibv_context *ctx, int cqe, void *cq_context, struct ibv_comp_channel *channel,
              int comp_vector)
{
    (void)ctx;
    (void)cq_context;
    (void)comp_vector;
    asked_entries = cqe;
    asked_channel = channel;
    if (refuse) {
        errno = ENOMEM;
        return NULL;
    }
    return &fake_cq;
}

int
ibv_destroy_cq(struct ibv_cq *cq)
{
    assert_ptr_equal(cq, &fake_cq);
    destroyed++;
    return 0;
}

static void
capture_log(const char *msg, void *arg)
{
    (void)arg;
    snprintf(logged, sizeof(logged), "%s", msg);
}

static struct ibv_device fake_device;
static struct ibv_context fake_ctx;

static int
setup(void **state)
{
    (void)state;
    snprintf(fake_device.name, sizeof(fake_device.name), "siw0");
    fake_ctx.device = &fake_device;
    asked_entries = destroyed = refuse = 0;
    asked_channel = (struct ibv_comp_channel *)&fake_ctx;
    logged[0] = 0;
    gfr_rdma_set_log(capture_log, NULL);
    return 0;
}

static int
teardown(void **state)
{
    (void)state;
    gfr_rdma_set_log(NULL, NULL);
    return 0;
}

/* The guard's mapping, its entries then the control word, reaches past
 * the start of the page libsiw refuses, so made first it covers that
 * page. */
static void
test_the_guard_covers_the_reserved_page(void **state)
{
    struct ibv_cq *guard;

    (void)state;
    guard = gfr_mmap_guard_create(&fake_ctx);
    assert_ptr_equal(guard, &fake_cq);
    assert_null(asked_channel);
    assert_true((uint64_t)asked_entries * sizeof(struct siw_cqe) + sizeof(struct siw_cq_ctrl) >
                SIW_INVAL_UOBJ_KEY);
    assert_int_equal(logged[0], 0);
    gfr_mmap_guard_destroy(guard);
    assert_int_equal(destroyed, 1);
}

/* A guard the provider refuses is said, naming the device, the offset and
 * why, and the device goes on without it. */
static void
test_a_refused_guard_is_said_and_not_fatal(void **state)
{
    (void)state;
    refuse = 1;
    assert_null(gfr_mmap_guard_create(&fake_ctx));
    assert_non_null(strstr(logged, "siw0: "));
    assert_non_null(strstr(logged, "0x90000"));
    assert_non_null(strstr(logged, strerror(ENOMEM)));
    gfr_mmap_guard_destroy(NULL);
    assert_int_equal(destroyed, 0);
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_the_guard_covers_the_reserved_page, setup, teardown),
        cmocka_unit_test_setup_teardown(test_a_refused_guard_is_said_and_not_fatal, setup,
                                        teardown),
    };

    return cmocka_run_group_tests_name("rdma-mmap-guard", tests, NULL, NULL);
}
