/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Per device (ibv_context): one PD, one completion channel, one CQ shared by
 * every connection on the device, and its poller thread.  Devices are
 * created on first use and live until the engine is destroyed.
 *
 * Locking: the device list and cq_reserved under engine->lock; the poller
 * is the only thread that polls the CQ.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <urcu/arch.h>
#include <urcu/uatomic.h>

#include "rdma-internal.h"

#define POLL_BATCH 32
#define CQ_ENTRIES_WANTED 16384

static uint64_t
now_ns(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static int
poll_once(struct gfr_rdma_dev *dev)
{
    struct ibv_wc wcs[POLL_BATCH];
    int n = ibv_poll_cq(dev->cq, POLL_BATCH, wcs);

    for (int i = 0; i < n; i++)
        gfr_rdma_conn_complete(&wcs[i]);
    return n;
}

/*
 * Sleeps on the completion channel.  The CQ is armed and polled once more
 * before sleeping, so a completion that arrived between the last empty poll
 * and the arming is not left waiting for the next one (perftest#137).
 * Wakes every 100 ms to notice `stopping`.
 */
static void
wait_for_event(struct gfr_rdma_dev *dev)
{
    struct pollfd pfd = {.fd = dev->channel->fd, .events = POLLIN};
    struct ibv_cq *cq;
    void *ctx;

    if (ibv_req_notify_cq(dev->cq, 0) != 0) {
        gfr_rdma_log("poller: ibv_req_notify_cq failed: %s", strerror(errno));
        return;
    }
    if (poll_once(dev) > 0)
        return;
    if (poll(&pfd, 1, 100) != 1)
        return;
    if (ibv_get_cq_event(dev->channel, &cq, &ctx) == 0)
        ibv_ack_cq_events(cq, 1);
}

static void *
poller_main(void *arg)
{
    struct gfr_rdma_dev *dev = arg;
    enum gfr_poll_mode mode = dev->engine->opts.poll_mode;
    uint64_t spin_ns = (uint64_t)dev->engine->opts.spin_us * 1000;

    while (!uatomic_read(&dev->stopping)) {
        uint64_t idle_since;

        if (poll_once(dev) > 0)
            continue;
        if (mode == GFR_POLL_BUSY) {
            caa_cpu_relax();
            continue;
        }
        if (mode == GFR_POLL_ADAPTIVE) {
            int found = 0;

            idle_since = now_ns();
            while (now_ns() - idle_since < spin_ns) {
                if (poll_once(dev) > 0) {
                    found = 1;
                    break;
                }
                caa_cpu_relax();
            }
            if (found)
                continue;
        }
        wait_for_event(dev);
    }
    return NULL;
}

static void
dev_free(struct gfr_rdma_dev *dev)
{
    if (dev->cq)
        ibv_destroy_cq(dev->cq);
    if (dev->channel)
        ibv_destroy_comp_channel(dev->channel);
    if (dev->pd)
        ibv_dealloc_pd(dev->pd);
    free(dev);
}

static int
dev_create(struct gfr_rdma *engine, struct ibv_context *verbs,
           struct gfr_rdma_dev **devp)
{
    struct ibv_device_attr attr;
    struct gfr_rdma_dev *dev = calloc(1, sizeof(*dev));
    const char *name = ibv_get_device_name(verbs->device);
    int err;

    if (!dev)
        return -ENOMEM;
    dev->engine = engine;
    dev->verbs = verbs;
    if (ibv_query_device(verbs, &attr) != 0) {
        err = -errno;
        gfr_rdma_log("%s: ibv_query_device failed: %s", name, strerror(-err));
        goto fail;
    }
    dev->cq_size = attr.max_cqe < CQ_ENTRIES_WANTED ? attr.max_cqe : CQ_ENTRIES_WANTED;
    dev->max_inline = 256;
    dev->max_rd_atom = attr.max_qp_rd_atom > 255 ? 255 : (uint32_t)attr.max_qp_rd_atom;
    dev->max_init_rd_atom = attr.max_qp_init_rd_atom > 255
                                ? 255 : (uint32_t)attr.max_qp_init_rd_atom;
    dev->pd = ibv_alloc_pd(verbs);
    dev->channel = dev->pd ? ibv_create_comp_channel(verbs) : NULL;
    dev->cq = dev->channel ? ibv_create_cq(verbs, dev->cq_size, dev, dev->channel, 0) : NULL;
    if (!dev->cq) {
        err = -(errno ? errno : ENOMEM);
        gfr_rdma_log("%s: cannot create PD, completion channel or a CQ of %d entries: %s",
                     name, dev->cq_size, strerror(-err));
        goto fail;
    }
    err = -pthread_create(&dev->poller, NULL, poller_main, dev);
    if (err) {
        gfr_rdma_log("%s: cannot start the poller thread: %s", name, strerror(-err));
        goto fail;
    }
    {
        char thread_name[16];
        snprintf(thread_name, sizeof(thread_name), "gfr-poll/%.6s", name);
        pthread_setname_np(dev->poller, thread_name);
    }
    *devp = dev;
    return 0;
fail:
    dev_free(dev);
    return err;
}

int
gfr_rdma_dev_get(struct gfr_rdma *engine, struct ibv_context *verbs,
                 int cq_entries, struct gfr_rdma_dev **devp)
{
    struct gfr_rdma_dev *dev = NULL;
    struct gfr_rdma_dev *pos;
    int err = 0;

    pthread_mutex_lock(&engine->lock);
    cds_list_for_each_entry(pos, &engine->devices, link)
        if (pos->verbs == verbs)
            dev = pos;
    if (!dev) {
        err = dev_create(engine, verbs, &dev);
        if (!err)
            cds_list_add_tail(&dev->link, &engine->devices);
    }
    if (!err && dev->cq_reserved + cq_entries > dev->cq_size) {
        gfr_rdma_log("%s: completion queue full (%d of %d entries promised): "
                     "no room for another connection",
                     ibv_get_device_name(verbs->device), dev->cq_reserved,
                     dev->cq_size);
        err = -ENOSPC;
    }
    if (!err) {
        dev->cq_reserved += cq_entries;
        *devp = dev;
    }
    pthread_mutex_unlock(&engine->lock);
    return err;
}

void
gfr_rdma_dev_put(struct gfr_rdma_dev *dev, int cq_entries)
{
    pthread_mutex_lock(&dev->engine->lock);
    dev->cq_reserved -= cq_entries;
    pthread_mutex_unlock(&dev->engine->lock);
}

void
gfr_rdma_dev_destroy_all(struct gfr_rdma *engine)
{
    while (!cds_list_empty(&engine->devices)) {
        struct gfr_rdma_dev *dev = cds_list_first_entry(&engine->devices,
                                                        struct gfr_rdma_dev, link);
        cds_list_del(&dev->link);
        uatomic_set(&dev->stopping, 1);
        pthread_join(dev->poller, NULL);
        dev_free(dev);
    }
}
