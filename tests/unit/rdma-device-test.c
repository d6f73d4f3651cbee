/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The rxe quirk of lib/engine/rdma-device.c: posts to a device that needs it go
 * one at a time, and a post that does not return (rxe's requester loop,
 * docs/softroce.md) is ended by moving its QP to the error state.  Over a
 * fake context whose post_send can be held inside, as rxe holds a thread
 * that loops; this file's ibv_modify_qp replaces libibverbs' for the
 * objects linked here and lets it go, as the error state ends rxe's loop.
 */
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>
#include <urcu/uatomic.h>

#include "engine-conn.h"

static pthread_mutex_t fake_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t fake_cond = PTHREAD_COND_INITIALIZER;
static int inside, most_inside, hold, qp_errors;

static void
pause_briefly(void)
{
    struct timespec ts = {0, 200000};

    nanosleep(&ts, NULL);
}

/* Counts the posts inside at once; with hold set, stays inside until the
 * QP is moved to error. */
static int
fake_post_send(struct ibv_qp *qp, struct ibv_send_wr *wr, struct ibv_send_wr **bad)
{
    (void)qp;
    (void)wr;
    (void)bad;
    pthread_mutex_lock(&fake_lock);
    if (++inside > most_inside)
        most_inside = inside;
    pthread_mutex_unlock(&fake_lock);
    pause_briefly();
    pthread_mutex_lock(&fake_lock);
    while (hold && !qp_errors)
        pthread_cond_wait(&fake_cond, &fake_lock);
    inside--;
    pthread_mutex_unlock(&fake_lock);
    return 0;
}

int
ibv_modify_qp(struct ibv_qp *qp, struct ibv_qp_attr *attr, int attr_mask)
{
    (void)qp;
    (void)attr_mask;
    pthread_mutex_lock(&fake_lock);
    if (attr->qp_state == IBV_QPS_ERR)
        qp_errors++;
    pthread_cond_broadcast(&fake_cond);
    pthread_mutex_unlock(&fake_lock);
    return 0;
}

static struct gfr_rdma engine;
static struct ibv_device fake_device;
static struct ibv_context fake_ctx;
static struct ibv_qp fake_qp;
static struct gfr_rdma_dev dev;

static int
setup(void **state)
{
    (void)state;
    memset(&engine, 0, sizeof(engine));
    pthread_mutex_init(&engine.lock, NULL);
    CDS_INIT_LIST_HEAD(&engine.devices);
    memset(&dev, 0, sizeof(dev));
    snprintf(fake_device.name, sizeof(fake_device.name), "rxe0");
    fake_ctx.device = &fake_device;
    fake_ctx.ops.post_send = fake_post_send;
    fake_qp.context = &fake_ctx;
    fake_qp.qp_num = 17;
    dev.engine = &engine;
    dev.verbs = &fake_ctx;
    dev.serialize_posts = 1;
    pthread_mutex_init(&dev.post_lock, NULL);
    cds_list_add_tail(&dev.link, &engine.devices);
    inside = most_inside = hold = qp_errors = 0;
    return 0;
}

static void *
poster(void *arg)
{
    struct ibv_send_wr wr = {.opcode = IBV_WR_SEND};
    long posts = (long)arg;

    for (long i = 0; i < posts; i++)
        assert_int_equal(gfr_rdma_dev_post_send(&dev, &fake_qp, &wr), 0);
    return NULL;
}

/* Four threads posting at once never have two posts inside the provider. */
static void
test_posts_go_one_at_a_time(void **state)
{
    pthread_t t[4];

    (void)state;
    for (int i = 0; i < 4; i++)
        assert_int_equal(pthread_create(&t[i], NULL, poster, (void *)50L), 0);
    for (int i = 0; i < 4; i++)
        pthread_join(t[i], NULL);
    assert_int_equal(most_inside, 1);
    assert_int_equal(qp_errors, 0);
    assert_int_equal(uatomic_read(&dev.posting_since_ns), 0);
}

/* A post held inside is left alone for GFR_RDMA_STUCK_POST_NS, then its
 * QP is moved to error, which lets it return; it is ended once. */
static void
test_a_stuck_post_is_ended(void **state)
{
    pthread_t t;
    uint64_t since;

    (void)state;
    hold = 1;
    assert_int_equal(pthread_create(&t, NULL, poster, (void *)1L), 0);
    while ((since = uatomic_read(&dev.posting_since_ns)) == 0)
        pause_briefly();
    assert_ptr_equal(uatomic_read(&dev.posting_qp), &fake_qp);

    gfr_rdma_dev_check_posts(&engine, since + GFR_RDMA_STUCK_POST_NS / 2);
    assert_int_equal(qp_errors, 0);
    /* A post that began after the caller read its clock is no older. */
    gfr_rdma_dev_check_posts(&engine, since - 1);
    assert_int_equal(qp_errors, 0);
    gfr_rdma_dev_check_posts(&engine, since + GFR_RDMA_STUCK_POST_NS);
    assert_int_equal(qp_errors, 1);
    pthread_join(t, NULL);
    assert_int_equal(uatomic_read(&dev.posting_since_ns), 0);
    gfr_rdma_dev_check_posts(&engine, since + 3 * GFR_RDMA_STUCK_POST_NS);
    assert_int_equal(qp_errors, 1);
}

/* A device without the quirk is not serialized and never watched. */
static void
test_without_the_quirk_posts_are_not_watched(void **state)
{
    (void)state;
    dev.serialize_posts = 0;
    poster((void *)3L);
    assert_int_equal(uatomic_read(&dev.posting_since_ns), 0);
    assert_null(uatomic_read(&dev.posting_qp));
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup(test_posts_go_one_at_a_time, setup),
        cmocka_unit_test_setup(test_a_stuck_post_is_ended, setup),
        cmocka_unit_test_setup(test_without_the_quirk_posts_are_not_watched, setup),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
