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

/*
 * A client's rail that ended joins again on its path (the server's rail
 * address it was connected to) after a backoff: GFR_BUNDLE_REJOIN_FIRST_MS
 * after a rail that had lasted GFR_BUNDLE_REJOIN_STABLE_MS, doubling with
 * every join in a row that failed or did not last that long, up to
 * GFR_BUNDLE_REJOIN_MAX_MS (docs/multi-rail.md, "A rail coming back").  A
 * link that comes back is joined within the longest backoff plus one
 * failed attempt (connect-timeout-ms).
 */
#define GFR_BUNDLE_REJOIN_FIRST_MS 500u
#define GFR_BUNDLE_REJOIN_MAX_MS 8000u
#define GFR_BUNDLE_REJOIN_STABLE_MS 10000u

/* Where a client's path is. */
enum gfr_rdma_path_state {
    GFR_PATH_JOINING, /* a rail is being connected on it */
    GFR_PATH_UP,      /* its rail is established */
    GFR_PATH_WAITING, /* its rail ended: it joins again at retry_ns */
};

/* A client's path: one of the server's rail addresses, and the rail on it. */
struct gfr_rdma_path {
    struct sockaddr_storage dst;
    enum gfr_rdma_path_state state;
    int rail;               /* the slot of its rail, -1: none */
    unsigned failures;      /* joins in a row that failed or did not last */
    unsigned long losses;   /* established rails it lost */
    unsigned attempts;      /* joins tried since it lost the last */
    uint64_t up_ns;         /* when its rail was established */
    uint64_t retry_ns;      /* GFR_PATH_WAITING: when it joins again */
    /* CM thread only: rails = DEV[:PORT],... named no port to join it
     * from at its last try (logged once, until one is found again). */
    int unsourced;
};

/* Entries of a server's table of calls (gfr_calls.h): calls unanswered
 * and answers not yet acknowledged.  A client that leaves more unanswered
 * ends its bundle. */
#define GFR_BUNDLE_MAX_CALLS 65536

/* A server keeps each reply that went out well until the client's mark
 * passes it (docs/multi-rail.md, "Failover without loss"); past either
 * bound the oldest are released, and a resend of one of their calls ends
 * the bundle rather than run the call twice. */
#define GFR_BUNDLE_KEPT_REPLIES 1024u
#define GFR_BUNDLE_KEPT_REPLY_BYTES (64u << 20)

struct gfr_rdma_bundle {
    struct cds_list_head link; /* engine->bundles until it ends (a client's once its
                                * rails are offered: its paths rejoin) */
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
    /* A server's replies, in the order they were submitted, until the
     * client holds them (rdma-bundle.c), and of them those that went out
     * well (answered) with their bytes. */
    struct cds_list_head replies;
    unsigned nanswered;
    size_t answered_bytes;
    int ending;
    int reason; /* the end's, for the owner */
    /* The owner heard of the end: a kept call or reply whose claim (a
     * submitter's) outlived it is finished by that claim's holder. */
    int closed;
    /* A client's paths (the lead's first) and the path each rail is on
     * (-1: none). */
    struct gfr_rdma_path paths[GFR_CM_MAX_RAILS];
    unsigned npaths;
    int path_of[GFR_CM_MAX_RAILS];

    /* uatomic, written under lock: the earliest retry_ns of a waiting
     * path, 0: none (the CM thread's tick reads it without the lock). */
    uint64_t rejoin_ns;

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

/*
 * A client's: the server's accept took lead into the server's bundle id
 * (with token), or, with id 0, took it into none (an older server, or one
 * without rails or rail addresses).  Only a bundle the server took marks
 * its calls (AWAITS_REPLY, RESEND, the mark in `written`, which the
 * server's table of calls reads): one it did not take sends what a
 * connection without rails sends, which is all an older server accepts
 * (docs/wire-protocol.md).  CM thread, before the lead's connected
 * callback, so that no call goes out before it is known; takes the
 * bundle's lock, under which send_copy reads the id.
 */
void gfr_rdma_bundle_taken(struct gfr_rdma_conn *lead, uint32_t id, uint64_t token);

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
 * carried and path -1, a client 0 and the path it connects on (from
 * gfr_rdma_bundle_add_path or gfr_rdma_bundle_rejoin_due), and gets a new
 * id (conn->rail_id, never 0, the lead's).  -ENOSPC when the bundle has
 * GFR_CM_MAX_RAILS already, -ESHUTDOWN when it is ending.  CM thread. */
int gfr_rdma_bundle_member(struct gfr_rdma_bundle *bundle, struct gfr_rdma_conn *conn,
                           uint8_t rail_id, int path);

/* A client's: the server's rail address dst becomes a path of the bundle,
 * joining; on, if not NULL, is the lead, established on it already.  The
 * path's index, or -ENOSPC (GFR_CM_MAX_RAILS paths).  CM thread; takes the
 * bundle's lock. */
int gfr_rdma_bundle_add_path(struct gfr_rdma_bundle *bundle, const struct sockaddr *dst,
                             struct gfr_rdma_conn *on);

/* A client's path whose rail has ended and whose backoff is over at now,
 * with its address copied into dst: it is joining from now on, and the
 * caller connects a member on it (or calls gfr_rdma_bundle_path_lost).
 * -1 when none is due or the bundle is ending.  CM thread; takes the
 * bundle's lock. */
int gfr_rdma_bundle_rejoin_due(struct gfr_rdma_bundle *bundle, uint64_t now,
                               struct sockaddr_storage *dst);

/* No rail could be made for a joining path: it waits its backoff again.
 * CM thread; takes the bundle's lock. */
void gfr_rdma_bundle_path_lost(struct gfr_rdma_bundle *bundle, int path);

/* Another live rail of rail's bundle whose sends made progress at or
 * after since_ns (the CM thread's moved_ns), or -1 (none, or rail is in
 * no bundle).  CM thread; takes the bundle's lock. */
int gfr_rdma_bundle_progressing(struct gfr_rdma_conn *rail, uint64_t since_ns);

/* The other live rails of rail's bundle, each with a reference the caller
 * puts, into others; how many (0 outside a bundle).  Any thread; takes the
 * bundle's lock. */
unsigned gfr_rdma_bundle_others(struct gfr_rdma_conn *rail,
                                struct gfr_rdma_conn *others[GFR_CM_MAX_RAILS]);

/* Frees a bundle whose lead is being freed (every rail has ended).  Its
 * lead's, once. */
void gfr_rdma_bundle_free(struct gfr_rdma_bundle *bundle);

#endif /* GFR_ENGINE_BUNDLE_H */
