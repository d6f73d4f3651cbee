/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Per device (ibv_context): one PD and `pollers` poller threads, each with
 * its own completion channel and CQ shared by the connections assigned to
 * it (the least loaded one at connect time).  Devices are created on first
 * use and live until the engine is destroyed, or until the kernel removes
 * them (rdma link delete, a hot-unplugged HCA): then they move to the
 * engine's removed list and are freed as soon as no connection uses them,
 * because the kernel finishes the removal only once every process has
 * closed the device (rxe cannot take resources away from a process).
 *
 * Locking: the device lists and cq_reserved under engine->lock; pollers
 * (rdma-poller.c) poll their CQs under their own poll_lock.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <urcu/arch.h>
#include <urcu/uatomic.h>

#include "gfr_clock.h"
#include "gfr_mmap_guard.h"
#include "engine-dev.h"

#define CQ_ENTRIES_WANTED 16384

static void
probe_free(struct gfr_rdma_dev *dev)
{
    if (dev->probe_src_mr)
        ibv_dereg_mr(dev->probe_src_mr);
    if (dev->probe_sink_mr)
        ibv_dereg_mr(dev->probe_sink_mr);
    free(dev->probe_buf);
    dev->probe_src_mr = dev->probe_sink_mr = NULL;
    dev->probe_buf = NULL;
}

/* The buffer and keys of the iWARP liveness probe (struct gfr_rdma_dev).
 * Without them the device's connections offer no probe and send none:
 * said, not fatal.  Creator's thread, before the device is listed. */
static void
probe_create(struct gfr_rdma_dev *dev, const char *name)
{
    enum { PROBE_BUF = 64, SINK_AT = 32, PROBE_BYTES = 8 };

    if (posix_memalign((void **)&dev->probe_buf, PROBE_BUF, PROBE_BUF) != 0) {
        dev->probe_buf = NULL;
        gfr_rdma_log("%s: no memory for the liveness probe; its connections send none", name);
        return;
    }
    memset(dev->probe_buf, 0, PROBE_BUF);
    dev->probe_src_mr = ibv_reg_mr(dev->pd, dev->probe_buf, PROBE_BYTES, IBV_ACCESS_REMOTE_READ);
    dev->probe_sink_mr = ibv_reg_mr(dev->pd, dev->probe_buf + SINK_AT, PROBE_BYTES,
                                    IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
    if (!dev->probe_src_mr || !dev->probe_sink_mr) {
        gfr_rdma_log("%s: cannot register the liveness probe's byte: %s; its connections "
                     "send none", name, strerror(errno));
        probe_free(dev);
    }
}

static void
dev_free(struct gfr_rdma_dev *dev)
{
    for (unsigned i = 0; dev->pollers && i < dev->npollers; i++)
        gfr_rdma_poller_stop(&dev->pollers[i]);
    free(dev->pollers);
    gfr_rdma_srq_destroy(dev);
    gfr_mmap_guard_destroy(dev->mmap_guard);
    gfr_rdma_conn_table_destroy(dev);
    probe_free(dev);
    if (dev->pd)
        ibv_dealloc_pd(dev->pd);
    pthread_mutex_destroy(&dev->post_lock);
    free(dev);
}

/*
 * What some providers need beyond the verbs contract.
 *
 * rxe (Linux 6.1) replays an RDMA READ or WRITE after the reader has
 * answered DONE (or after the reply): in the VM, 1 run in 3 of the 4 MiB
 * message test found its QP moved to the error state, with no completion,
 * by an rkey that had just been deregistered, and never once with
 * deregistration left out (8 runs).  There revoked MRs stay registered for
 * a grace of two ACK timeouts.
 *
 * rxe (Linux 6.1) also does a user QP's sending in the thread that posts,
 * and when the netdev refuses a packet (a veth whose peer just went down)
 * that loop can go on inside the system call until the netdev takes
 * packets again, without ever giving up the CPU (docs/softroce.md, "rxe's
 * requester loop").  What ends it, the kernel worker that notices the
 * lost carrier, needs a CPU: with a thread of ours looping on every CPU,
 * nothing runs again.  So posts to an rxe device go one at a time: at most
 * one of our threads can be in that loop, and the other CPUs stay free.
 *
 * rxe (Linux 6.1) raises no IBV_EVENT_QP_LAST_WQE_REACHED for a QP on the
 * SRQ that went to the error state, which every other provider raises (the
 * IB spec asks it): a reaped connection there waits for it only briefly
 * (gfr_rdma_conn_quiesce), and rxe keeps a destroyed QP's completions.
 *
 * siw refuses the object whose queue would be mapped at the one mmap
 * offset its user library takes for "none" (rdma-mmap-guard.c): a guard
 * CQ spans it, made before anything else of the device's is mapped.
 */
struct gfr_provider_quirks {
    uint32_t vendor_id;
    const char *what;
    int keep_revoked_mrs; /* for 2 x the QP's ACK timeout */
    int serialize_posts;  /* one ibv_post_send at a time per device */
    int guard_mmap_key;   /* a CQ over siw's reserved mmap offset */
    int no_last_wqe_event; /* IBV_EVENT_QP_LAST_WQE_REACHED never comes */
};

static const struct gfr_provider_quirks provider_quirks[] = {
    {0xffffff, "software RoCE (rxe)", 1, 1, 0, 1},
    {GFR_SIW_VENDOR_ID, "software iWARP (siw)", 0, 0, 1, 0},
};

/* Sets dev's quirks by its provider's vendor id.  On siw this also makes
 * the mmap guard, which works only if nothing of dev's is mapped yet: call
 * before its SRQ and its pollers' CQs.  Creator's thread. */
static void
apply_quirks(struct gfr_rdma_dev *dev, const struct ibv_device_attr *attr)
{
    for (size_t i = 0; i < sizeof(provider_quirks) / sizeof(provider_quirks[0]); i++) {
        const struct gfr_provider_quirks *q = &provider_quirks[i];

        if (attr->vendor_id != q->vendor_id)
            continue;
        if (q->keep_revoked_mrs)
            dev->keep_revoked_mrs = 1;
        dev->serialize_posts = q->serialize_posts;
        dev->no_last_wqe_event = q->no_last_wqe_event;
        if (q->guard_mmap_key)
            dev->mmap_guard = gfr_mmap_guard_create(dev->verbs);
    }
}

/*
 * ibv_post_send on a QP of dev, one at a time where the provider needs it
 * (serialize_posts above; dev->post_lock is a leaf lock, taken under
 * conn->lock).  While serialized, the post being made is published
 * (posting_qp, then posting_since_ns, uatomic) for
 * gfr_rdma_dev_check_posts.  The data path's convention: 0 or a positive
 * errno.
 */
int
gfr_rdma_dev_post_send(struct gfr_rdma_dev *dev, struct ibv_qp *qp, struct ibv_send_wr *wr)
{
    struct ibv_send_wr *bad;
    int err;

    if (!dev->serialize_posts)
        return gfr_rdma_post_errno(ibv_post_send(qp, wr, &bad));
    pthread_mutex_lock(&dev->post_lock);
    uatomic_set(&dev->posting_qp, qp);
    uatomic_set(&dev->posting_since_ns, gfr_now_ns());
    err = ibv_post_send(qp, wr, &bad);
    uatomic_set(&dev->posting_since_ns, 0);
    pthread_mutex_unlock(&dev->post_lock);
    return gfr_rdma_post_errno(err);
}

/*
 * A serialized post that has not returned for GFR_RDMA_STUCK_POST_NS is
 * rxe's requester loop (above): its QP is moved to the error state, which
 * ends the loop (a QP in error sends nothing); its work requests then
 * flush and its connection fails as on any send error.  The QP is alive:
 * its poster holds a reference on its connection, and only the CM thread,
 * which calls this on each tick (at most a second apart), destroys QPs.  posting_since_ns is read
 * on both sides of posting_qp, so that a QP is only blamed for a post
 * that was its own.  Takes engine->lock to walk the devices.
 */
void
gfr_rdma_dev_check_posts(struct gfr_rdma *engine, uint64_t now_ns)
{
    struct gfr_rdma_dev *dev;

    pthread_mutex_lock(&engine->lock);
    cds_list_for_each_entry(dev, &engine->devices, link) {
        uint64_t since = uatomic_read(&dev->posting_since_ns);
        struct ibv_qp *qp = uatomic_read(&dev->posting_qp);
        struct ibv_qp_attr attr = {.qp_state = IBV_QPS_ERR};

        cmm_smp_rmb();
        /* since may be later than now_ns: a post that began after the
         * caller read the clock. */
        if (!since || now_ns < since || now_ns - since < GFR_RDMA_STUCK_POST_NS ||
            uatomic_read(&dev->posting_since_ns) != since || dev->stuck_post_ended == since)
            continue;
        dev->stuck_post_ended = since;
        if (qp->qp_context) /* its connection (rdma-conn.c's create_qp) */
            gfr_rdma_conn_fault(qp->qp_context, -ETIMEDOUT);
        gfr_rdma_log("%s: ibv_post_send on QP %u has not returned for %llu ms (the provider "
                     "loops in its send path: see docs/softroce.md): moving the QP to the "
                     "error state", ibv_get_device_name(dev->verbs->device), qp->qp_num,
                     (unsigned long long)((now_ns - since) / 1000000));
        ibv_modify_qp(qp, &attr, IBV_QP_STATE);
    }
    pthread_mutex_unlock(&engine->lock);
}

/* Makes dev's async event fd non-blocking, so that the CM thread, which
 * reads it (rdma-async.c), never stalls on it.  At device creation. */
static int
watch_async_events(struct gfr_rdma_dev *dev)
{
    int fd = dev->verbs->async_fd;
    int flags = fcntl(fd, F_GETFL);

    if (flags < 0 || fcntl(fd, F_SETFL, flags | O_NONBLOCK) < 0) {
        int err = -errno;

        gfr_rdma_log("%s: cannot make its async event fd non-blocking: %s",
                     ibv_get_device_name(dev->verbs->device), strerror(-err));
        return err;
    }
    return 0;
}

static int
dev_create(struct gfr_rdma *engine, struct ibv_context *verbs,
           struct gfr_rdma_dev **devp)
{
    struct ibv_device_attr attr;
    struct gfr_rdma_dev *dev = calloc(1, sizeof(*dev));
    const char *name = ibv_get_device_name(verbs->device);
    int cq_size;
    int err;

    if (!dev)
        return -ENOMEM;
    dev->engine = engine;
    dev->verbs = verbs;
    pthread_mutex_init(&dev->post_lock, NULL);
    if (ibv_query_device(verbs, &attr) != 0) {
        err = -errno;
        gfr_rdma_log("%s: ibv_query_device failed: %s", name, strerror(-err));
        goto fail;
    }
    cq_size = attr.max_cqe < CQ_ENTRIES_WANTED ? attr.max_cqe : CQ_ENTRIES_WANTED;
    dev->max_inline = 256;
    dev->iwarp = verbs->device->transport_type == IBV_TRANSPORT_IWARP;
    dev->max_rd_atom = attr.max_qp_rd_atom > 255 ? 255 : (uint32_t)attr.max_qp_rd_atom;
    dev->max_init_rd_atom = attr.max_qp_init_rd_atom > 255
                                ? 255 : (uint32_t)attr.max_qp_init_rd_atom;
    apply_quirks(dev, &attr);
    err = watch_async_events(dev);
    if (err)
        goto fail;
    dev->pd = ibv_alloc_pd(verbs);
    if (!dev->pd) {
        err = -(errno ? errno : ENOMEM);
        gfr_rdma_log("%s: cannot allocate a protection domain: %s", name, strerror(-err));
        goto fail;
    }
    err = gfr_rdma_conn_table_create(dev);
    if (err)
        goto fail;
    if (dev->iwarp)
        probe_create(dev, name);
    if (gfr_rdma_srq_wanted(dev)) {
        err = gfr_rdma_srq_create(dev, &attr);
        if (err)
            goto fail;
    }
    dev->npollers = engine->opts.pollers;
    dev->pollers = calloc(dev->npollers, sizeof(*dev->pollers));
    if (!dev->pollers) {
        err = -ENOMEM;
        goto fail;
    }
    for (unsigned i = 0; i < dev->npollers; i++) {
        dev->pollers[i].index = i;
        err = gfr_rdma_poller_start(dev, &dev->pollers[i], cq_size, name);
        if (err)
            goto fail;
    }
    *devp = dev;
    return 0;
fail:
    dev_free(dev);
    return err;
}

/*
 * The device for verbs (created on first use) and, for a new connection
 * needing cq_entries, the poller whose CQ has the most room: connections
 * spread evenly over a device's pollers.  Takes engine->lock.
 */
int
gfr_rdma_dev_get(struct gfr_rdma *engine, struct ibv_context *verbs,
                 int cq_entries, struct gfr_rdma_dev **devp,
                 struct gfr_rdma_poller **pollerp)
{
    struct gfr_rdma_dev *dev = NULL;
    struct gfr_rdma_dev *pos;
    struct gfr_rdma_poller *best = NULL;
    int err = 0;

    pthread_mutex_lock(&engine->lock);
    cds_list_for_each_entry(pos, &engine->removed, link)
        if (pos->verbs == verbs)
            err = -ENODEV; /* a request that raced the removal */
    cds_list_for_each_entry(pos, &engine->devices, link)
        if (pos->verbs == verbs)
            dev = pos;
    if (!dev && !err) {
        err = dev_create(engine, verbs, &dev);
        if (!err)
            cds_list_add_tail(&dev->link, &engine->devices);
    }
    for (unsigned i = 0; !err && i < dev->npollers; i++) {
        struct gfr_rdma_poller *p = &dev->pollers[i];

        if (uatomic_read(&p->broken))
            continue;
        if (p->cq_reserved + cq_entries <= p->cq_size &&
            (!best || p->cq_reserved < best->cq_reserved))
            best = p;
    }
    if (!err && !best) {
        gfr_rdma_log("%s: every completion queue is full (%u pollers of %d entries): "
                     "no room for another connection",
                     ibv_get_device_name(verbs->device), dev->npollers,
                     dev->pollers[0].cq_size);
        err = -ENOSPC;
    }
    if (!err) {
        best->cq_reserved += cq_entries;
        *devp = dev;
        *pollerp = best;
    }
    pthread_mutex_unlock(&engine->lock);
    return err;
}

void
gfr_rdma_dev_put(struct gfr_rdma_poller *poller, int cq_entries)
{
    pthread_mutex_lock(&poller->dev->engine->lock);
    poller->cq_reserved -= cq_entries;
    pthread_mutex_unlock(&poller->dev->engine->lock);
}

/*
 * The kernel is removing the device under verbs (a DEVICE_REMOVAL event):
 * no new connection gets it.  CM thread; takes engine->lock.
 */
void
gfr_rdma_dev_removed(struct gfr_rdma *engine, struct ibv_context *verbs)
{
    struct gfr_rdma_dev *dev;

    pthread_mutex_lock(&engine->lock);
    cds_list_for_each_entry(dev, &engine->devices, link) {
        if (dev->verbs == verbs) {
            cds_list_del(&dev->link);
            cds_list_add_tail(&dev->link, &engine->removed);
            dev->gone = 1;
            gfr_rdma_log("%s: the device is being removed; its connections end and "
                         "its resources are freed once they have",
                         ibv_get_device_name(verbs->device));
            break;
        }
    }
    pthread_mutex_unlock(&engine->lock);
}

static int
dev_in_use(const struct gfr_rdma_dev *dev)
{
    for (unsigned i = 0; i < dev->npollers; i++)
        if (dev->pollers[i].cq_reserved)
            return 1;
    return 0;
}

/*
 * Frees the removed devices no connection uses any more (connections
 * release their share of a CQ when they are finalized), then has
 * librdmacm close its handle on them: it does so only when it next looks
 * at the device list, and the kernel waits for that close.  librdmacm
 * cannot look when no device is left at all; the handle then stays open
 * until the process exits.  CM thread, after reaping.
 */
void
gfr_rdma_dev_free_removed(struct gfr_rdma *engine)
{
    struct gfr_rdma_dev *dev;
    struct gfr_rdma_dev *tmp;
    struct ibv_context **list;
    int freed = 0;

    pthread_mutex_lock(&engine->lock);
    cds_list_for_each_entry_safe(dev, tmp, &engine->removed, link) {
        if (dev_in_use(dev))
            continue;
        cds_list_del(&dev->link);
        pthread_mutex_unlock(&engine->lock);
        gfr_rdma_log("%s: removed device released",
                     ibv_get_device_name(dev->verbs->device));
        dev_free(dev);
        freed = 1;
        pthread_mutex_lock(&engine->lock);
        tmp = cds_list_entry(engine->removed.next, struct gfr_rdma_dev, link);
    }
    pthread_mutex_unlock(&engine->lock);
    if (freed && (list = rdma_get_devices(NULL)) != NULL)
        rdma_free_devices(list);
}

void
gfr_rdma_dev_destroy_all(struct gfr_rdma *engine)
{
    cds_list_splice(&engine->removed, &engine->devices);
    CDS_INIT_LIST_HEAD(&engine->removed);
    while (!cds_list_empty(&engine->devices)) {
        struct gfr_rdma_dev *dev = cds_list_first_entry(&engine->devices,
                                                        struct gfr_rdma_dev, link);
        cds_list_del(&dev->link);
        dev_free(dev);
    }
}
