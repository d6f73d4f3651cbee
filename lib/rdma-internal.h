/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The engine's shared state.  Who touches what:
 *  - engine lists (devices, conns, listeners) and the reap list: under
 *    engine->lock;
 *  - a connection's send side (slots, pending queue, credits) and state:
 *    under conn->lock;
 *  - conn->outstanding: references, uatomic: one for the CM side until no
 *    CM event can come (cm_done), one per posted work request, one per
 *    message handed to the pool; the thread that drops the last queues the
 *    connection for the CM thread to free, so a poller handling a
 *    completion always sees a live connection;
 *  - CM events are handled only on the CM thread, which also runs every
 *    finalisation, so no event can arrive for a freed connection.
 */
#ifndef GFR_RDMA_INTERNAL_H
#define GFR_RDMA_INTERNAL_H

#include <pthread.h>
#include <stdint.h>

#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>
#include <urcu/list.h>

#include "gfr_cm_private.h"
#include "gfr_credits.h"
#include "gfr_rdma.h"
#include "gfr_wire.h"

/* Where a connection is; the CM thread moves it forward. */
enum gfr_conn_state {
    GFR_CONN_RESOLVING_ADDR,  /* client: rdma_resolve_addr issued */
    GFR_CONN_RESOLVING_ROUTE, /* client: rdma_resolve_route issued */
    GFR_CONN_CONNECTING,      /* connect sent / accept sent */
    GFR_CONN_ESTABLISHED,     /* messages flow */
    GFR_CONN_DISCONNECTING,   /* QP in error, work requests flushing */
};

struct gfr_rdma_dev {
    struct cds_list_head link;
    struct gfr_rdma *engine;
    struct ibv_context *verbs;
    struct ibv_pd *pd;
    struct ibv_comp_channel *channel;
    struct ibv_cq *cq;
    int cq_size;
    int cq_reserved; /* entries promised to QPs, under engine->lock */
    uint32_t max_inline;
    pthread_t poller;
    int stopping;
};

/* The context of one work request (its wr_id). */
struct gfr_rdma_wr {
    struct gfr_rdma_conn *conn;
    uint32_t slot;
    uint8_t is_recv;
};

struct gfr_rdma_pending {
    struct cds_list_head link;
    size_t len;
    uint8_t data[];
};

/* What an rdma_cm_id's context points to: the first member of both. */
enum gfr_cm_ctx_kind {
    GFR_CM_CTX_CONN = 1,
    GFR_CM_CTX_LISTENER = 2,
};

struct gfr_rdma_conn {
    enum gfr_cm_ctx_kind kind;
    struct gfr_rdma *engine;
    struct gfr_rdma_dev *dev;
    struct rdma_cm_id *id;
    struct ibv_qp *qp;
    const struct gfr_rdma_conn_ops *ops;
    void *cb_arg;
    struct cds_list_head link; /* engine->conns */
    struct cds_list_head reap_link;

    pthread_mutex_t lock;
    enum gfr_conn_state state;
    struct gfr_cm_params agreed;
    struct gfr_wire_limits limits;
    struct gfr_credits credits;
    struct cds_list_head pending;
    struct gfr_rdma_conn_stats stats;
    uint32_t xid;

    uint32_t nrecv;      /* receive buffers (local credits) */
    uint32_t nsend;      /* send slots */
    uint8_t *recv_buf;
    uint8_t *send_buf;
    struct ibv_mr *recv_mr;
    struct ibv_mr *send_mr;
    struct gfr_rdma_wr *recv_wr;
    struct gfr_rdma_wr *send_wr;
    uint32_t *free_slots;
    uint32_t nfree;

    unsigned long outstanding;
    int cm_done;      /* no CM event will come any more */
    int reason;       /* for disconnected */
    int was_connected;
    int is_server;
    struct gfr_pool_client *pool_client; /* dispatch=pool */
    int finalized; /* verbs resources gone; under engine->lock */
    int released;  /* the owner let go; under engine->lock */
};

/* A received message on its way through the worker pool: a copy of the
 * payload, and one unit of conn->outstanding until it has been handled. */
struct gfr_rdma_delivery {
    struct gfr_pool_job job;
    struct gfr_rdma_conn *conn;
    size_t len;
    uint8_t data[];
};

struct gfr_rdma_listener {
    enum gfr_cm_ctx_kind kind;
    struct gfr_rdma *engine;
    struct rdma_cm_id *id;
    gfr_rdma_accept_fn accept;
    void *cb_arg;
    struct cds_list_head link;
};

struct gfr_rdma {
    struct gfr_rdma_opts opts;
    struct gfr_pool *pool; /* dispatch=pool, else NULL */
    struct rdma_event_channel *channel;
    int wake_fd; /* eventfd: the reap list has work */
    pthread_t cm_thread;
    int stopping;
    int destroying; /* the CM thread disconnects every connection */
    pthread_mutex_t lock;
    struct cds_list_head devices;
    struct cds_list_head conns;
    struct cds_list_head listeners;
    struct cds_list_head reap;
    struct cds_list_head dead; /* finalized, not yet released */
};

/* rdma-device.c */
int gfr_rdma_dev_get(struct gfr_rdma *engine, struct ibv_context *verbs,
                     int cq_entries, struct gfr_rdma_dev **dev);
void gfr_rdma_dev_put(struct gfr_rdma_dev *dev, int cq_entries);
void gfr_rdma_dev_destroy_all(struct gfr_rdma *engine);

/* rdma-conn.c */
struct gfr_rdma_conn *gfr_rdma_conn_new(struct gfr_rdma *engine);
int gfr_rdma_conn_setup(struct gfr_rdma_conn *conn);
void gfr_rdma_conn_local_params(const struct gfr_rdma *engine,
                                struct gfr_cm_params *params);
int gfr_rdma_conn_negotiate(struct gfr_rdma_conn *conn,
                            const struct gfr_cm_params *peer);
void gfr_rdma_conn_fail(struct gfr_rdma_conn *conn, int reason);
void gfr_rdma_send_flush(struct gfr_rdma_conn *conn);
void gfr_rdma_conn_cm_done(struct gfr_rdma_conn *conn);
void gfr_rdma_conn_finalize(struct gfr_rdma_conn *conn);
void gfr_rdma_conn_free_dead(struct gfr_rdma *engine);
void gfr_rdma_conn_complete(struct ibv_wc *wc);

/* Logging (stderr until the GlusterFS plugin sets its own). */
void gfr_rdma_log(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#endif /* GFR_RDMA_INTERNAL_H */
