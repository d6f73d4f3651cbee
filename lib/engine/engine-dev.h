/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Layer 2 of the engine: devices, posting to their QPs, and their pollers
 * (which call up through engine->on_wc and run deferred deliveries through
 * their pool jobs).
 */
#ifndef GFR_ENGINE_DEV_H
#define GFR_ENGINE_DEV_H

#include "engine-res.h"

/* rdma-device.c: devices, their pollers, and posting to their QPs */
int gfr_rdma_dev_get(struct gfr_rdma *engine, struct ibv_context *verbs,
                     int cq_entries, struct gfr_rdma_dev **dev,
                     struct gfr_rdma_poller **poller);
void gfr_rdma_dev_put(struct gfr_rdma_poller *poller, int cq_entries);
int gfr_rdma_dev_post_send(struct gfr_rdma_dev *dev, struct ibv_qp *qp, struct ibv_send_wr *wr);
void gfr_rdma_dev_check_posts(struct gfr_rdma *engine, uint64_t now_ns);
void gfr_rdma_dev_removed(struct gfr_rdma *engine, struct ibv_context *verbs);
void gfr_rdma_dev_free_removed(struct gfr_rdma *engine);
void gfr_rdma_dev_destroy_all(struct gfr_rdma *engine);

/* rdma-poller.c: the pollers, reply-expected polling, direct dispatch */
#define GFR_RELAY_AFTER_MS 20 /* a handler run this long gets a relay */
int gfr_rdma_poller_start(struct gfr_rdma_dev *dev, struct gfr_rdma_poller *p, int cq_size,
                          const char *name);
void gfr_rdma_poller_stop(struct gfr_rdma_poller *p);
void gfr_rdma_poller_expect(struct gfr_rdma_poller *p, uint64_t early_ns, uint64_t bound_ns);
void gfr_rdma_poller_replied(struct gfr_rdma_poller *p, unsigned long n);
void gfr_rdma_poller_defer(struct gfr_rdma_poller *p, struct gfr_pool_job *job);
int gfr_rdma_pollers_watch(struct gfr_rdma *engine, uint64_t now_ns);
void gfr_rdma_poller_broken(struct gfr_rdma_poller *p, const char *why);
int gfr_rdma_poller_inject(struct gfr_rdma_poller *p, const struct ibv_wc *wcs, unsigned n);
int gfr_rdma_poller_run_injected(struct gfr_rdma_poller *p);
unsigned long gfr_rdma_poller_pass_begin(struct gfr_rdma_poller *p);
int gfr_rdma_poller_passed(struct gfr_rdma_poller *p, unsigned long from);

#endif /* GFR_ENGINE_DEV_H */
