/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Layer 6 of the engine: completions by kind, a connection's setup,
 * keepalives and end, listeners and the devices' asynchronous events; the
 * CM engine (rdma-engine.c) and its statistics (rdma-stats.c) sit on it.
 */
#ifndef GFR_ENGINE_CONN_H
#define GFR_ENGINE_CONN_H

#include "engine-bundle.h"

struct gfr_rdma_listener {
    enum gfr_cm_ctx_kind kind;
    struct gfr_rdma *engine;
    /* NULL while its device is gone: the CM thread, the only one that
     * changes it, listens again on addr every second until a device
     * takes the address. */
    struct rdma_cm_id *id;
    struct sockaddr_storage addr; /* as bound, with its port */
    int backlog;
    struct gfr_rdma_opts opts;    /* given to the connections it accepts */
    uint64_t relisten_ns;         /* next attempt */
    gfr_rdma_accept_fn accept;
    void *cb_arg;
    struct cds_list_head link; /* engine->listeners, then engine->closing */
    int closed;                /* the CM thread destroyed id (engine->lock) */
    unsigned long rails_unoffered; /* CM thread: clients with rails it could not offer any */
};

/* rdma-cq.c: work completions by kind */
void gfr_rdma_cq_complete(struct gfr_rdma_poller *poller, struct ibv_wc *wc);
void gfr_rdma_cq_flush_stranded(struct gfr_rdma_conn *conn);
void gfr_rdma_cq_abandon_broken(struct gfr_rdma *engine);

/* rdma-conn.c: a connection's setup, keepalives and end */
struct gfr_rdma_conn *gfr_rdma_conn_new(struct gfr_rdma *engine, const struct gfr_rdma_opts *opts,
                                        const struct sockaddr *peer);
int gfr_rdma_conn_setup(struct gfr_rdma_conn *conn);
int gfr_rdma_conn_create_qp(struct gfr_rdma_conn *conn);
int gfr_rdma_conn_setup_send_side(struct gfr_rdma_conn *conn);
void gfr_rdma_conn_free_send_side(struct gfr_rdma_conn *conn);
void gfr_rdma_conn_local_params(const struct gfr_rdma_opts *opts,
                                struct gfr_cm_params *params);
int gfr_rdma_conn_negotiate(struct gfr_rdma_conn *conn,
                            const struct gfr_cm_params *peer);
void gfr_rdma_conn_keepalive(struct gfr_rdma_conn *conn);
void gfr_rdma_conn_end(struct gfr_rdma_conn *conn);
int gfr_rdma_conn_quiesce(struct gfr_rdma_conn *conn, uint64_t now_ns);
void gfr_rdma_conn_finalize(struct gfr_rdma_conn *conn);
void gfr_rdma_conn_free_dead(struct gfr_rdma *engine);
/* The connection's statistics with its error count, and its last logged
 * problem into last_error when that is not NULL. */
void gfr_rdma_conn_read_stats(struct gfr_rdma_conn *conn, struct gfr_rdma_conn_stats *stats,
                              char last_error[GFR_RDMA_ERROR_STR]);
int gfr_rdma_copy_addr(const struct sockaddr *from, struct sockaddr *addr, socklen_t *len);

/* rdma-async.c: the devices' asynchronous events (CM thread) */
struct pollfd;
unsigned gfr_rdma_async_fds(struct gfr_rdma *engine, struct pollfd *pfds,
                            struct gfr_rdma_dev **devs, unsigned max);
void gfr_rdma_async_handle(struct gfr_rdma *engine, struct gfr_rdma_dev *dev, short revents);

#endif /* GFR_ENGINE_CONN_H */
