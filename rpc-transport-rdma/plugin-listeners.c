/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The process's listening transports, and telling rpcsvc that a thread
 * which handed it requests has exited.
 *
 * rpcsvc (GlusterFS 10) gives every thread that hands it a file operation
 * a request queue and a handler thread of its own, keyed by the calling
 * thread, until it hears RPC_TRANSPORT_EVENT_THREAD_DIED from that thread
 * (socket.so sends it when an event thread exits).  Requests reach rpcsvc
 * on worker-pool threads, which come and go with the load, so without the
 * notice a brick gathers one idle handler thread per worker that ever
 * served it (12 in one run of t-gfapi) up to EVENT_MAX_THREADS.  The pool
 * calls gfr_plugin_thread_exit on each exiting worker; it notifies the
 * death through every listener (its notify is rpcsvc's), with one
 * generation number per death so that rpcsvc takes it once.
 *
 * Locking: listeners_lock guards the list and is held across the notify,
 * so a listener cannot be closed meanwhile; rpcsvc does not call the
 * transport back from that event.
 */
#include <urcu/uatomic.h>

#include "gfr_plugin.h"

static pthread_mutex_t listeners_lock = PTHREAD_MUTEX_INITIALIZER;
static CDS_LIST_HEAD(listeners); /* struct gfr_trans by listening_link */
static unsigned long generation;

/* Called once listen succeeded; any thread. */
void
gfr_plugin_listeners_add(struct gfr_trans *priv)
{
    pthread_mutex_lock(&listeners_lock);
    cds_list_add(&priv->listening_link, &listeners);
    pthread_mutex_unlock(&listeners_lock);
}

/* Called when the listener closes, before its memory goes; any thread but
 * one inside gfr_plugin_thread_exit. */
void
gfr_plugin_listeners_remove(struct gfr_trans *priv)
{
    pthread_mutex_lock(&listeners_lock);
    cds_list_del(&priv->listening_link);
    pthread_mutex_unlock(&listeners_lock);
}

/* The pool's thread_exit hook: on the exiting worker, no pool lock held. */
void
gfr_plugin_thread_exit(void *cb_arg)
{
    void *gen = (void *)uatomic_add_return(&generation, 1);
    xlator_t *was = THIS;
    struct gfr_trans *priv;

    (void)cb_arg;
    pthread_mutex_lock(&listeners_lock);
    cds_list_for_each_entry(priv, &listeners, listening_link) {
        THIS = priv->trans->xl;
        rpc_transport_notify(priv->trans, RPC_TRANSPORT_EVENT_THREAD_DIED, gen);
    }
    pthread_mutex_unlock(&listeners_lock);
    THIS = was;
}
