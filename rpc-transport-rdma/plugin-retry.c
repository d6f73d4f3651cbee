/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Background retries (plugin-retry.h).  A thread per retry: they are rare
 * (a listener waiting for RDMA) and each lives only until it works.
 *
 * Locking: retry->lock guards stopping and done, and is held across an
 * attempt, so gfr_plugin_retry_stop returns only once no attempt runs.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <time.h>

#include "plugin-retry.h"

struct gfr_plugin_retry {
    gfr_plugin_retry_fn attempt;
    void *cb_arg;
    unsigned period_ms;
    pthread_t thread;
    pthread_mutex_t lock;
    pthread_cond_t wake;
    int stopping;
    int done;
};

static void *
retry_run(void *arg)
{
    struct gfr_plugin_retry *r = arg;
    struct timespec at;

    pthread_mutex_lock(&r->lock);
    while (!r->stopping && !r->done) {
        clock_gettime(CLOCK_MONOTONIC, &at);
        at.tv_sec += r->period_ms / 1000;
        at.tv_nsec += (long)(r->period_ms % 1000) * 1000000L;
        if (at.tv_nsec >= 1000000000L) {
            at.tv_sec++;
            at.tv_nsec -= 1000000000L;
        }
        while (!r->stopping && pthread_cond_timedwait(&r->wake, &r->lock, &at) != ETIMEDOUT)
            ;
        if (!r->stopping && r->attempt(r->cb_arg) == 0)
            r->done = 1;
    }
    pthread_mutex_unlock(&r->lock);
    return NULL;
}

int
gfr_plugin_retry_start(gfr_plugin_retry_fn attempt, void *cb_arg, unsigned period_ms,
                       const char *name, struct gfr_plugin_retry **retryp)
{
    struct gfr_plugin_retry *r;
    pthread_condattr_t attr;
    int err;

    if (!attempt || !period_ms || !retryp)
        return -EINVAL;
    r = calloc(1, sizeof(*r));
    if (!r)
        return -ENOMEM;
    r->attempt = attempt;
    r->cb_arg = cb_arg;
    r->period_ms = period_ms;
    pthread_mutex_init(&r->lock, NULL);
    pthread_condattr_init(&attr);
    pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
    pthread_cond_init(&r->wake, &attr);
    pthread_condattr_destroy(&attr);
    err = pthread_create(&r->thread, NULL, retry_run, r);
    if (err) {
        pthread_cond_destroy(&r->wake);
        pthread_mutex_destroy(&r->lock);
        free(r);
        return -err;
    }
    if (name)
        pthread_setname_np(r->thread, name);
    *retryp = r;
    return 0;
}

void
gfr_plugin_retry_stop(struct gfr_plugin_retry *retry)
{
    if (!retry)
        return;
    pthread_mutex_lock(&retry->lock);
    retry->stopping = 1;
    pthread_cond_signal(&retry->wake);
    pthread_mutex_unlock(&retry->lock);
    pthread_join(retry->thread, NULL);
    pthread_cond_destroy(&retry->wake);
    pthread_mutex_destroy(&retry->lock);
    free(retry);
}
