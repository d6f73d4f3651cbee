/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * A device's shared receive queue: pre-registered receive buffers of
 * inline-max bytes, in chunks registered once each, shared by every
 * connection on the device (receive-queue=srq).  It grows while the live
 * connections promise their peers (`credits` each) more than it holds,
 * until the device's limit (or 16,384 buffers);
 * past it connections share what there is and a peer that finds it empty
 * waits on RNR (throttled, not dropped).  Running low is logged.
 *
 * A receive completion names a buffer, not a connection: the poller finds
 * the connection by QP number (rdma-conn-table.c); a late (flushed)
 * completion finds none and only reposts its buffer.  SRQ buffers live as
 * long as the device.
 *
 * Locking: grow and the chunk list under engine->lock; posted is uatomic.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <urcu/uatomic.h>

#include "engine-res.h"

#define SRQ_BUFFERS_WANTED 16384

struct gfr_rdma_rchunk {
    struct gfr_rdma_rchunk *next;
    struct ibv_mr *mr;
    uint8_t *mem;
    uint32_t n;
    struct gfr_rdma_rbuf bufs[];
};

/*
 * Does dev get a shared receive queue?  receive-queue=auto gives it one
 * where a SEND that finds no receive waits on RNR and is retried
 * (InfiniBand, RoCE).  On iWARP such a SEND terminates its connection, so
 * a peer that sends beyond its credits would take the buffers behind
 * other peers' credits and end their connections; and since there every
 * credit must be backed by a buffer (overcommit), sharing saves no
 * memory.  So on iWARP a connection's receives are its own, unless
 * receive-queue=srq asks otherwise (logged).  Reads only dev's options
 * and kind; any thread.
 */
int
gfr_rdma_srq_wanted(const struct gfr_rdma_dev *dev)
{
    switch (dev->engine->opts.receive_queue) {
    case GFR_RQ_SRQ:
        if (dev->iwarp)
            gfr_rdma_log("%s: receive-queue=srq on iWARP: a peer that sends beyond its "
                         "credits can take the receives that back other connections' "
                         "credits, and end them (no receiver-not-ready retry)",
                         ibv_get_device_name(dev->verbs->device));
        return 1;
    case GFR_RQ_AUTO:
        return !dev->iwarp;
    default:
        return 0;
    }
}

int
gfr_rdma_srq_create(struct gfr_rdma_dev *dev, const struct ibv_device_attr *attr)
{
    const char *name = ibv_get_device_name(dev->verbs->device);
    struct ibv_srq_init_attr init = {0};
    struct gfr_rdma_srq *srq = calloc(1, sizeof(*srq));

    if (!srq)
        return -ENOMEM;
    srq->max = attr->max_srq_wr < SRQ_BUFFERS_WANTED ? (uint32_t)attr->max_srq_wr
                                                     : SRQ_BUFFERS_WANTED;
    srq->buf_size = dev->engine->opts.inline_max;
    init.attr.max_wr = srq->max;
    init.attr.max_sge = 1;
    srq->srq = srq->max ? ibv_create_srq(dev->pd, &init) : NULL;
    if (!srq->srq) {
        int err = errno ? errno : EOPNOTSUPP;

        gfr_rdma_log("%s: cannot create a shared receive queue of %u entries (%s); "
                     "receive-queue=per-connection works without one",
                     name, srq->max, strerror(err));
        free(srq);
        return -err;
    }
    dev->srq = srq;
    return 0;
}

/* Posts one buffer.  Any thread. */
void
gfr_rdma_srq_post(struct gfr_rdma_dev *dev, struct gfr_rdma_rbuf *rb)
{
    struct gfr_rdma_srq *srq = dev->srq;
    struct ibv_sge sge = {.addr = (uintptr_t)rb->addr, .length = srq->buf_size,
                          .lkey = rb->lkey};
    struct ibv_recv_wr wr = {.wr_id = (uintptr_t)&rb->wr | GFR_WR_ID_SRQ, .sg_list = &sge,
                             .num_sge = 1};
    struct ibv_recv_wr *bad;
    unsigned long posted;
    int err;

    uatomic_set(&rb->wr.posted, 1);
    err = gfr_rdma_post_errno(ibv_post_srq_recv(srq->srq, &wr, &bad));
    if (err) {
        uatomic_set(&rb->wr.posted, 0);
        gfr_rdma_log("%s: reposting a shared receive buffer failed: %s; the queue "
                     "shrinks by one", ibv_get_device_name(dev->verbs->device),
                     strerror(err));
        return;
    }
    posted = uatomic_add_return(&srq->posted, 1);
    if (posted > srq->total / 2)
        uatomic_set(&srq->low_reported, 0);
}

/* A buffer was consumed: report a queue that runs low, once per dip. */
void
gfr_rdma_srq_taken(struct gfr_rdma_dev *dev)
{
    struct gfr_rdma_srq *srq = dev->srq;
    unsigned long posted = uatomic_sub_return(&srq->posted, 1);

    if (posted < srq->total / 8 && !uatomic_xchg(&srq->low_reported, 1))
        gfr_rdma_log("%s: shared receive queue low: %lu of %u buffers posted "
                     "(handlers slower than the peers send; peers now wait on RNR)",
                     ibv_get_device_name(dev->verbs->device), posted, srq->total);
}

/*
 * Can the SRQ promise less than it holds?  Where a SEND that finds no
 * receive waits on RNR and is retried (InfiniBand, RoCE), yes: connections
 * share what there is.  iWARP has no RNR: such a SEND terminates the
 * connection, so there every promise must be backed by a buffer, and a
 * connection the queue cannot back is refused.  Caller holds engine->lock.
 */
static int
overcommit(struct gfr_rdma_dev *dev, uint32_t n, const char *why)
{
    struct gfr_rdma_srq *srq = dev->srq;
    const char *name = ibv_get_device_name(dev->verbs->device);

    if (dev->iwarp) {
        gfr_rdma_log("%s: the shared receive queue cannot back %u more credits (%s of %u "
                     "buffers, %u promised) and iWARP has no receiver-not-ready retry: "
                     "connection refused", name, n, why, srq->total, srq->promised);
        srq->promised -= n;
        return -ENOSPC;
    }
    if (!srq->full_reported)
        gfr_rdma_log("%s: shared receive queue %s of %u buffers: further connections share "
                     "them, and a peer that finds none waits on RNR", name, why, srq->total);
    srq->full_reported = 1;
    return 0;
}

/*
 * A new connection promises its peer n receives: the queue grows (one
 * registered chunk) when the live connections promise more than it holds.
 * Buffers are kept when connections leave, so it holds what the busiest
 * moment needed.  Caller holds engine->lock.  0; or a negative errno when
 * nothing could be added and the queue is empty, or on iWARP whenever the
 * promise cannot be backed (overcommit).
 */
int
gfr_rdma_srq_reserve(struct gfr_rdma_dev *dev, uint32_t n)
{
    struct gfr_rdma_srq *srq = dev->srq;
    const char *name = ibv_get_device_name(dev->verbs->device);
    uint32_t asked = n;
    struct gfr_rdma_rchunk *c;
    size_t bytes;

    srq->promised += n;
    if (srq->promised <= srq->total)
        return 0;
    n = srq->promised - srq->total;
    if (srq->total + n > srq->max)
        n = srq->max - srq->total;
    if (n == 0)
        return overcommit(dev, asked, "at its maximum");
    bytes = (size_t)n * srq->buf_size;
    c = calloc(1, sizeof(*c) + n * sizeof(c->bufs[0]));
    if (c)
        c->mem = aligned_alloc(4096, (bytes + 4095) & ~(size_t)4095);
    if (c && c->mem)
        c->mr = ibv_reg_mr(dev->pd, c->mem, bytes, IBV_ACCESS_LOCAL_WRITE);
    if (!c || !c->mem || !c->mr) {
        gfr_rdma_log("%s: cannot add %u shared receive buffers (%zu bytes): %s", name, n,
                     bytes, strerror(errno ? errno : ENOMEM));
        if (c)
            free(c->mem);
        free(c);
        if (!srq->total) {
            srq->promised -= asked;
            return -ENOMEM;
        }
        return overcommit(dev, asked, "out of memory at");
    }
    c->n = n;
    c->next = srq->chunks;
    srq->chunks = c;
    srq->total += n;
    for (uint32_t i = 0; i < n; i++) {
        c->bufs[i].wr.kind = GFR_WR_RECV;
        c->bufs[i].addr = c->mem + (size_t)i * srq->buf_size;
        c->bufs[i].lkey = c->mr->lkey;
        gfr_rdma_srq_post(dev, &c->bufs[i]);
    }
    if (srq->promised > srq->total) /* capped by the device's maximum */
        return overcommit(dev, asked, "at its maximum");
    return 0;
}

/* A connection's promise ends (engine->lock held). */
void
gfr_rdma_srq_unreserve(struct gfr_rdma_dev *dev, uint32_t n)
{
    dev->srq->promised -= n;
}

/* Engine destruction, after every QP and poller is gone. */
void
gfr_rdma_srq_destroy(struct gfr_rdma_dev *dev)
{
    struct gfr_rdma_srq *srq = dev->srq;

    if (!srq)
        return;
    ibv_destroy_srq(srq->srq);
    while (srq->chunks) {
        struct gfr_rdma_rchunk *c = srq->chunks;

        srq->chunks = c->next;
        ibv_dereg_mr(c->mr);
        free(c->mem);
        free(c);
    }
    free(srq);
    dev->srq = NULL;
}
