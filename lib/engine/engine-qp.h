/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Layer 3 of the engine: the queue pair: references, the state machine,
 * failing and draining, the send-queue ring.
 */
#ifndef GFR_ENGINE_QP_H
#define GFR_ENGINE_QP_H

#include "engine-dev.h"

/* rdma-qp.c: references, failing and draining, the send-queue ring */
typedef int (*gfr_rdma_conn_match_fn)(const struct gfr_rdma_conn *conn, const void *arg);
unsigned gfr_rdma_conns_collect(struct gfr_rdma *engine, gfr_rdma_conn_match_fn match,
                                const void *arg, unsigned skip, struct gfr_rdma_conn **batch,
                                unsigned max);
void gfr_rdma_conn_get(struct gfr_rdma_conn *conn);
void gfr_rdma_conn_put(struct gfr_rdma_conn *conn);
void gfr_rdma_conn_cm_done(struct gfr_rdma_conn *conn);
int gfr_rdma_post_recv(struct gfr_rdma_conn *conn, uint32_t slot);
int gfr_rdma_conn_set_state_locked(struct gfr_rdma_conn *conn, enum gfr_conn_state to);
enum gfr_conn_state gfr_rdma_conn_state(const struct gfr_rdma_conn *conn);
const char *gfr_rdma_conn_state_str(enum gfr_conn_state state);
void gfr_rdma_conn_fail(struct gfr_rdma_conn *conn, int reason);
void gfr_rdma_conn_fail_locked(struct gfr_rdma_conn *conn, int reason);
void gfr_rdma_sq_push_locked(struct gfr_rdma_conn *conn, struct gfr_rdma_wr *ctx,
                             int signaled);
uint32_t gfr_rdma_sq_outstanding_locked(const struct gfr_rdma_conn *conn);
uint32_t gfr_rdma_sq_signaled_locked(const struct gfr_rdma_conn *conn);
int gfr_rdma_conn_cut_off_locked(struct gfr_rdma_conn *conn);
int gfr_rdma_sq_holds_locked(const struct gfr_rdma_conn *conn, const struct gfr_rdma_wr *ctx);
unsigned gfr_rdma_sq_retire_locked(struct gfr_rdma_conn *conn, struct gfr_rdma_wr *ctx);
void gfr_rdma_sq_put(struct gfr_rdma_conn *conn, unsigned n);
int gfr_rdma_qp_post_locked(struct gfr_rdma_conn *conn, struct gfr_rdma_wr *ctx,
                            struct ibv_send_wr *wr);
void gfr_rdma_post_failed_locked(struct gfr_rdma_conn *conn, const char *what, int err);

#endif /* GFR_ENGINE_QP_H */
