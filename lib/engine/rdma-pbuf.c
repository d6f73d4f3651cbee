/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Pull buffers: where RDMA READ puts a message's bulk.  They need local
 * write access only (no peer ever gets an rkey for them; on iWARP, where a
 * READ's sink needs remote write, rdma-rx.c registers the sink for its one
 * transfer over the buffer), so they stay
 * registered and are reused: per poller thread, free lists by size class
 * (64 KiB, 256 KiB, 1 MiB, 4 MiB) that only that poller touches, so the
 * fast path takes no lock.  A buffer freed on another thread (a pool worker
 * after received) goes back to its poller through a wait-free queue
 * (liburcu wfcqueue, enqueued from any thread, dequeued only by the
 * poller), which the poller empties when its own list runs dry.  (The
 * wfstack of the same library was the first choice; its push computes a
 * member address of its end marker, which UBSan reports.)  Larger
 * messages get a buffer of their own, registered for that message.  Each
 * class keeps at most a few free buffers per poller; beyond that they are
 * freed.
 *
 * Ownership: a buffer belongs to whoever got it from gfr_rdma_pbuf_get
 * until gfr_rdma_pbuf_put; free lists belong to their poller thread.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "engine-res.h"

static const size_t class_size[GFR_BUF_CLASSES] = {64 << 10, 256 << 10, 1 << 20, 4 << 20};
static const unsigned class_keep[GFR_BUF_CLASSES] = {32, 16, 8, 4};

/* The bytes of a buffer of class cls.  No state. */
size_t
gfr_rdma_buf_class_size(int cls)
{
    return class_size[cls];
}

/* The smallest class that holds len bytes, or -1.  No state. */
int
gfr_rdma_buf_class_of(size_t len)
{
    for (int c = 0; c < GFR_BUF_CLASSES; c++)
        if (len <= class_size[c])
            return c;
    return -1;
}

static void
pbuf_free(struct gfr_rdma_pbuf *b)
{
    ibv_dereg_mr(b->mr);
    free(b->mem);
    free(b);
}

static struct gfr_rdma_pbuf *
pbuf_new(struct gfr_rdma_poller *home, int cls, size_t len)
{
    size_t size = cls >= 0 ? class_size[cls] : len;
    struct gfr_rdma_pbuf *b = calloc(1, sizeof(*b));

    if (!b)
        return NULL;
    b->mem = aligned_alloc(4096, (size + 4095) & ~(size_t)4095);
    if (b->mem)
        b->mr = ibv_reg_mr(home->dev->pd, b->mem, size, IBV_ACCESS_LOCAL_WRITE);
    if (!b->mr) {
        gfr_rdma_log("cannot allocate and register a %zu-byte pull buffer: %s", size,
                     strerror(errno ? errno : ENOMEM));
        free(b->mem);
        free(b);
        return NULL;
    }
    cds_wfcq_node_init(&b->node);
    b->home = cls >= 0 ? home : NULL;
    b->cls = cls;
    return b;
}

/*
 * Moves what other threads returned onto this poller's free lists.  The
 * poller is the queue's only dequeuer, so liburcu's __cds_wfcq calls need
 * no lock.  The poller does not wait (wait false): a returner preempted
 * between its enqueue's two steps would hold it for as long as that thread
 * is off its CPU (a scheduler tick and more), so its buffer is left for the
 * next call.  Draining a stopped poller waits (wait true), since nothing
 * may be left behind.
 */
static void
take_returns(struct gfr_rdma_poller *p, bool wait)
{
    struct cds_wfcq_node *node;
    struct gfr_rdma_pbuf *b;

    for (;;) {
        node = wait ? __cds_wfcq_dequeue_blocking(&p->pbuf_returns_head, &p->pbuf_returns_tail)
                    : __cds_wfcq_dequeue_nonblocking(&p->pbuf_returns_head,
                                                     &p->pbuf_returns_tail);
        if (!node || node == CDS_WFCQ_WOULDBLOCK)
            return;
        b = caa_container_of(node, struct gfr_rdma_pbuf, node);

        if (p->pbuf_nfree[b->cls] >= class_keep[b->cls]) {
            pbuf_free(b);
            continue;
        }
        b->next_free = p->pbuf_free[b->cls];
        p->pbuf_free[b->cls] = b;
        p->pbuf_nfree[b->cls]++;
    }
}

/*
 * A registered buffer of at least len bytes.  Only on p's poller thread.
 * NULL without memory.
 */
struct gfr_rdma_pbuf *
gfr_rdma_pbuf_get(struct gfr_rdma_poller *p, size_t len)
{
    int cls = gfr_rdma_buf_class_of(len);
    struct gfr_rdma_pbuf *b;

    if (cls < 0)
        return pbuf_new(p, -1, len);
    if (!p->pbuf_free[cls])
        take_returns(p, false);
    b = p->pbuf_free[cls];
    if (!b)
        return pbuf_new(p, cls, len);
    p->pbuf_free[cls] = b->next_free;
    p->pbuf_nfree[cls]--;
    return b;
}

/* Gives b back, from any thread: to its poller (wait-free), or freed when
 * it was a one-off. */
void
gfr_rdma_pbuf_put(struct gfr_rdma_pbuf *b)
{
    if (!b->home) {
        pbuf_free(b);
        return;
    }
    cds_wfcq_node_init(&b->node); /* it was on the returns queue before */
    cds_wfcq_enqueue(&b->home->pbuf_returns_head, &b->home->pbuf_returns_tail, &b->node);
}

/* The poller has stopped: frees its buffers. */
void
gfr_rdma_pbuf_drain(struct gfr_rdma_poller *p)
{
    take_returns(p, true);
    for (int c = 0; c < GFR_BUF_CLASSES; c++) {
        while (p->pbuf_free[c]) {
            struct gfr_rdma_pbuf *b = p->pbuf_free[c];

            p->pbuf_free[c] = b->next_free;
            pbuf_free(b);
        }
        p->pbuf_nfree[c] = 0;
    }
}
