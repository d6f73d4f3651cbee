/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Layer 5b of the engine: a bundle of rails, the connections that carry
 * one owner's connection over several devices (docs/multi-rail.md).  The
 * owner holds the lead, rail 0; the others join it after the handshake.
 * The bundle wraps the lead's callbacks, forwards every rail's to the
 * owner under the lead's handle, and serves the public calls on the lead
 * (gfr_rdma_submit, gfr_rdma_send, gfr_rdma_throttle, gfr_rdma_disconnect)
 * by choosing a rail.  The CM engine (rdma-engine.c) makes bundles and
 * their members; this layer never connects.
 */
#ifndef GFR_ENGINE_BUNDLE_H
#define GFR_ENGINE_BUNDLE_H

#include "engine-rx.h"

#include "gfr_calls.h"

/* Entries of a server's table of calls (gfr_calls.h): calls unanswered
 * and answers not yet acknowledged.  A client that leaves more unanswered
 * ends its bundle. */
#define GFR_BUNDLE_MAX_CALLS 65536

struct gfr_rdma_bundle {
    struct cds_list_head link; /* engine->bundles (a server's, until it ends) */
    struct gfr_rdma *engine;
    struct gfr_rdma_conn *lead; /* freed last: it frees the bundle */
    int is_server;
    uint32_t id; /* a client's: 0 until the server's accept names it */
    uint64_t token;
    const struct gfr_rdma_conn_ops *owner_ops;
    void *owner_arg;

    /* Under lock, taken by submitters, receive handlers, done callbacks
     * and the CM thread, and never with a connection's lock held: the
     * rails (NULL: a free slot; rails[0] is the lead for the bundle's
     * life, live or not), which are established and not ended, the
     * requests each has awaiting a reply, the round-robin turn; a
     * server's calls (gfr_calls.h); a client's kept calls by xid
     * (docs/multi-rail.md, "Failover without loss"); and whether the
     * bundle is ending (no failover any more: the owner disconnected, or
     * no rail is left). */
    pthread_mutex_t lock;
    struct gfr_rdma_conn *rails[GFR_CM_MAX_RAILS];
    int live[GFR_CM_MAX_RAILS];
    unsigned long inflight[GFR_CM_MAX_RAILS];
    unsigned turn;
    uint8_t last_rail_id; /* a client's: the id its newest member got */
    int throttled; /* the owner's last gfr_rdma_throttle */
    struct gfr_calls calls;
    struct cds_list_head kept[GFR_RDMA_XID_BUCKETS];
    int ending;
    int reason; /* the end's, for the owner */

    /* CM thread only: rails not yet ended (the lead and its members). */
    unsigned open;
};

/*
 * Makes conn, not yet connected or accepted, the lead of a new bundle:
 * its callbacks (conn->ops, conn->cb_arg, already the owner's) are
 * wrapped.  A server's bundle gets its id and token and is listed for
 * joining rails.  CM thread, or the connecting thread before the
 * connection is shared.  0 or -ENOMEM.
 */
int gfr_rdma_bundle_lead(struct gfr_rdma_conn *conn, int is_server);

/* Sets what snapshots show of conn's place in a bundle: the bundle's id
 * (a client learns it from the server's accept) and its rail.  Any
 * thread; takes conn->lock, under which snapshots read them. */
void gfr_rdma_bundle_name(struct gfr_rdma_conn *conn, uint32_t id, unsigned rail);

/* The server's bundle id with token, listed and its lead not ended, or
 * NULL.  The comparison of the token takes the same time wherever it
 * differs.  CM thread (the only one that unlists bundles); takes
 * engine->lock. */
struct gfr_rdma_bundle *gfr_rdma_bundle_find(struct gfr_rdma *engine, uint32_t id,
                                             uint64_t token);

/* Makes conn, not yet connected or accepted, a rail of bundle, with the
 * client's id of it: a server passes the id the joining rail's request
 * carried, a client 0 and gets a new one (conn->rail_id, never 0, the
 * lead's).  -ENOSPC when the bundle has GFR_CM_MAX_RAILS already,
 * -ESHUTDOWN when it is ending.  CM thread. */
int gfr_rdma_bundle_member(struct gfr_rdma_bundle *bundle, struct gfr_rdma_conn *conn,
                           uint8_t rail_id);

/* Frees a bundle whose lead is being freed (every rail has ended).  Its
 * lead's, once. */
void gfr_rdma_bundle_free(struct gfr_rdma_bundle *bundle);

#endif /* GFR_ENGINE_BUNDLE_H */
