/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The process's RDMA engines and its one worker pool.
 *
 * Transports whose options agree on every engine-wide one (the pollers,
 * dispatch, shared receive buffers: gfr_rdma_opts_engine_conflict) share one
 * engine (one CM thread, one set of pollers per device), each connection
 * running by its own transport's options otherwise; the node's file
 * (node-conf.h) refuses volume sections that would split a process's
 * engine, so a process normally has exactly one.  The pool is created
 * with the first engine and destroyed after the last.  Engine and pool
 * threads run GlusterFS code (notify), so the last reference may be
 * dropped on one of them; destruction then runs on a detached thread,
 * since neither can join its own threads.
 *
 * The engine's diagnostics go to GlusterFS's log (gf_msg) from the first
 * engine on.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "gfr_plugin.h"

struct gfr_plugin_engine {
    struct gfr_rdma_opts opts; /* its first user's: the engine-wide ones count */
    struct gfr_rdma *rdma;
    unsigned refs;          /* engines_lock */
    struct gfr_plugin_engine *next;
};

static pthread_mutex_t engines_lock = PTHREAD_MUTEX_INITIALIZER;
static struct gfr_plugin_engine *engines; /* engines_lock */
static struct gfr_pool *pool;             /* engines_lock; with the first engine */
static unsigned pool_users;               /* engines_lock: engines alive or dying */

static void
log_to_gluster(const char *msg, void *arg)
{
    (void)arg;
    gf_msg(GFR_PLUGIN_DOMAIN, GF_LOG_WARNING, 0, GFR_MSG_ENGINE, "%s", msg);
}

static pthread_once_t log_once = PTHREAD_ONCE_INIT;

static void
install_log(void)
{
    gfr_rdma_set_log(log_to_gluster, NULL);
}

/* The engine a connection with options opts may run on, or NULL. */
static struct gfr_plugin_engine *
find_locked(const struct gfr_rdma_opts *opts)
{
    for (struct gfr_plugin_engine *e = engines; e; e = e->next)
        if (!gfr_rdma_opts_engine_conflict(&e->opts, opts))
            return e;
    return NULL;
}

static int
pool_get_locked(void)
{
    struct gfr_pool_opts popts;
    int err;

    if (!pool) {
        gfr_pool_opts_init(&popts);
        popts.name = "gfr-rdma";
        popts.thread_exit = gfr_plugin_thread_exit;
        err = gfr_pool_create(&popts, &pool);
        if (err)
            return err;
    }
    pool_users++;
    return 0;
}

/* Called without engines_lock, off the pool's threads. */
static void
pool_put(void)
{
    struct gfr_pool *last = NULL;

    pthread_mutex_lock(&engines_lock);
    if (--pool_users == 0) {
        last = pool;
        pool = NULL;
    }
    pthread_mutex_unlock(&engines_lock);
    if (last)
        gfr_pool_destroy(last, GFR_POOL_DRAIN_RUN);
}

int
gfr_plugin_engine_get(const struct gfr_rdma_opts *opts, struct gfr_plugin_engine **enginep)
{
    struct gfr_plugin_engine *e;
    int err;

    pthread_once(&log_once, install_log);
    pthread_mutex_lock(&engines_lock);
    e = find_locked(opts);
    if (e) {
        e->refs++;
        pthread_mutex_unlock(&engines_lock);
        *enginep = e;
        return 0;
    }
    e = calloc(1, sizeof(*e));
    if (!e) {
        pthread_mutex_unlock(&engines_lock);
        return -ENOMEM;
    }
    e->opts = *opts;
    e->refs = 1;
    err = pool_get_locked();
    if (!err) {
        err = gfr_rdma_create(&e->opts, pool, &e->rdma);
        if (err)
            pool_users--;
    }
    if (err) {
        pthread_mutex_unlock(&engines_lock);
        free(e);
        return err;
    }
    e->next = engines;
    engines = e;
    pthread_mutex_unlock(&engines_lock);
    *enginep = e;
    return 0;
}

struct gfr_rdma *
gfr_plugin_engine_rdma(struct gfr_plugin_engine *engine)
{
    return engine->rdma;
}

void
gfr_plugin_engine_ref(struct gfr_plugin_engine *engine)
{
    pthread_mutex_lock(&engines_lock);
    engine->refs++;
    pthread_mutex_unlock(&engines_lock);
}

static void *
destroy_main(void *arg)
{
    struct gfr_plugin_engine *engine = arg;

    gfr_rdma_destroy(engine->rdma);
    free(engine);
    pool_put();
    return NULL;
}

void
gfr_plugin_engine_put(struct gfr_plugin_engine *engine)
{
    struct gfr_plugin_engine **link;
    pthread_t thread;

    if (!engine)
        return;
    pthread_mutex_lock(&engines_lock);
    if (--engine->refs > 0) {
        pthread_mutex_unlock(&engines_lock);
        return;
    }
    for (link = &engines; *link != engine; link = &(*link)->next)
        ;
    *link = engine->next;
    pthread_mutex_unlock(&engines_lock);
    if (gf_thread_create_detached(&thread, destroy_main, engine, "gfrdestroy") != 0) {
        /* Leaking the engine beats joining threads from one of them. */
        gf_msg(GFR_PLUGIN_DOMAIN, GF_LOG_ERROR, errno, GFR_MSG_NO_MEMORY,
               "cannot start a thread to destroy an unused RDMA engine; it stays");
    }
}

int
gfr_plugin_engines_snapshot(struct gfr_rdma_snapshot ***snapsp, unsigned *np,
                            struct gfr_pool_stats *pool_stats, int *have_pool)
{
    struct gfr_plugin_engine **held;
    struct gfr_rdma_snapshot **snaps;
    unsigned n = 0, taken = 0;
    int err = 0;

    pthread_mutex_lock(&engines_lock);
    for (struct gfr_plugin_engine *e = engines; e; e = e->next)
        n++;
    held = calloc(n ? n : 1, sizeof(*held));
    snaps = calloc(n ? n : 1, sizeof(*snaps));
    if (!held || !snaps) {
        pthread_mutex_unlock(&engines_lock);
        free(held);
        free(snaps);
        return -ENOMEM;
    }
    n = 0;
    for (struct gfr_plugin_engine *e = engines; e; e = e->next) {
        e->refs++;
        held[n++] = e;
    }
    *have_pool = pool && gfr_pool_stats_get(pool, pool_stats) == 0;
    pthread_mutex_unlock(&engines_lock);

    for (unsigned i = 0; i < n; i++) {
        if (!err)
            err = gfr_rdma_snapshot(held[i]->rdma, &snaps[taken]);
        if (!err)
            taken++;
        gfr_plugin_engine_put(held[i]);
    }
    free(held);
    if (err) {
        for (unsigned i = 0; i < taken; i++)
            gfr_rdma_snapshot_free(snaps[i]);
        free(snaps);
        return err;
    }
    *snapsp = snaps;
    *np = taken;
    return 0;
}
