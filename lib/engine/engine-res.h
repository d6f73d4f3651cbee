/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Layer 1 of the engine (tests/layering/layers): logging, the trace
 * points of a call's stages, a device's registered resources (MRs, staging
 * and pull buffers, the SRQ) and its connections by QP number.
 */
#ifndef GFR_ENGINE_RES_H
#define GFR_ENGINE_RES_H

#include "engine-state.h"

/*
 * The engine's files, lowest first (tests/layering/layers): a file calls
 * only the files above it in this list, and upward only through the
 * callbacks above (on_wc, a transfer's finished, the pool's jobs, the
 * owner's gfr_rdma_conn_ops).
 */

/* rdma-log.c: log messages (stderr until the embedding program sets its own) */
void gfr_rdma_log(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void gfr_rdma_conn_log(struct gfr_rdma_conn *conn, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
void gfr_rdma_peer_name(const struct sockaddr *sa, char name[GFR_RDMA_PEER_NAME_MAX]);

/* rdma-trace.c: per-stage latency (transport.rdma.latency-stats) */
void gfr_rdma_trace_submit_locked(struct gfr_rdma_conn *conn, uint32_t xid, int is_reply);
uint64_t gfr_rdma_trace_stamp(const struct gfr_rdma *engine, const uint8_t *msg);
void gfr_rdma_trace_posted_locked(struct gfr_rdma_conn *conn, struct gfr_rdma_wr *ctx,
                                  const uint8_t *msg, uint64_t posted_ns);
void gfr_rdma_trace_send_done_locked(struct gfr_rdma_conn *conn, struct gfr_rdma_wr *ctx);
void gfr_rdma_trace_rx(struct gfr_rdma_rxmsg *m, enum gfr_rx_state to);

/* rdma-mr.c: registering, deregistering and revoking a connection's MRs */
int gfr_rdma_mr_register(struct gfr_rdma_conn *conn, void *addr, size_t len, int access,
                         struct ibv_mr **mr);
void gfr_rdma_mr_deregister(struct gfr_rdma_conn *conn, struct ibv_mr **mr, unsigned n);
void gfr_rdma_mr_revoke(struct gfr_rdma_conn *conn, struct ibv_mr **mr, unsigned n);
void gfr_rdma_mr_revoke_buffer(struct gfr_rdma_conn *conn, struct ibv_mr *mr, void *mem);
void gfr_rdma_mr_reap_retired(struct gfr_rdma_conn *conn, int all);

/* rdma-sbuf.c: a connection's registered buffers for its own bulk */
size_t gfr_rdma_sbuf_max(void);
int gfr_rdma_sbuf_get(struct gfr_rdma_conn *conn, enum gfr_sbuf_kind kind, size_t len,
                      struct gfr_rdma_sbuf **b);
void gfr_rdma_sbuf_put(struct gfr_rdma_conn *conn, struct gfr_rdma_sbuf *b);
void gfr_rdma_sbuf_drain(struct gfr_rdma_conn *conn);
size_t gfr_rdma_sbuf_copy_in(struct gfr_rdma_sbuf *b, size_t off, const struct iovec *iov,
                             unsigned n);
void gfr_rdma_sbuf_copy_out(const struct gfr_rdma_sbuf *b, size_t len, const struct iovec *iov,
                            unsigned n);

/* rdma-pbuf.c: registered buffers to pull into, and the buffer classes */
size_t gfr_rdma_buf_class_size(int cls);
int gfr_rdma_buf_class_of(size_t len);
struct gfr_rdma_pbuf *gfr_rdma_pbuf_get(struct gfr_rdma_poller *p, size_t len);
void gfr_rdma_pbuf_put(struct gfr_rdma_pbuf *b);
void gfr_rdma_pbuf_drain(struct gfr_rdma_poller *p);

/* rdma-srq.c: the device's shared receive queue */
int gfr_rdma_srq_wanted(const struct gfr_rdma_dev *dev);
int gfr_rdma_srq_create(struct gfr_rdma_dev *dev, const struct ibv_device_attr *attr);
int gfr_rdma_srq_reserve(struct gfr_rdma_dev *dev, uint32_t n);
void gfr_rdma_srq_unreserve(struct gfr_rdma_dev *dev, uint32_t n);
void gfr_rdma_srq_post(struct gfr_rdma_dev *dev, struct gfr_rdma_rbuf *rb);
void gfr_rdma_srq_taken(struct gfr_rdma_dev *dev);
void gfr_rdma_srq_destroy(struct gfr_rdma_dev *dev);

/* rdma-conn-table.c: a device's connections by QP number */
int gfr_rdma_conn_table_create(struct gfr_rdma_dev *dev);
void gfr_rdma_conn_table_destroy(struct gfr_rdma_dev *dev);
void gfr_rdma_conn_table_add(struct gfr_rdma_dev *dev, struct gfr_rdma_conn *conn);
void gfr_rdma_conn_table_remove(struct gfr_rdma_dev *dev, struct gfr_rdma_conn *conn);
struct gfr_rdma_conn *gfr_rdma_conn_table_get(struct gfr_rdma_dev *dev, uint32_t qp_num);

#endif /* GFR_ENGINE_RES_H */
