/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Bulk transfer planning; see gfr_xfer.h.
 */
#include "gfr_xfer.h"

#include <errno.h>

int
gfr_xfer_init(struct gfr_xfer *xfer, const struct gfr_xfer_local *local,
              unsigned n_local, const struct gfr_wire_seg *remote,
              unsigned n_remote, uint64_t total, uint32_t segment_size)
{
    uint64_t remote_sum = 0;
    uint64_t local_sum = 0;

    if (!xfer || segment_size == 0 || (n_local && !local) ||
        (n_remote && !remote))
        return -EINVAL;
    for (unsigned i = 0; i < n_remote; i++) {
        if (remote[i].addr + remote[i].length < remote[i].addr)
            return -EPROTO;
        remote_sum += remote[i].length;
    }
    for (unsigned i = 0; i < n_local; i++)
        local_sum += local[i].length;
    if (remote_sum < total || local_sum < total)
        return -EMSGSIZE;
    xfer->local = local;
    xfer->remote = remote;
    xfer->n_local = n_local;
    xfer->n_remote = n_remote;
    xfer->li = xfer->ri = 0;
    xfer->loff = xfer->roff = 0;
    xfer->left = total;
    xfer->segment_size = segment_size;
    return 0;
}

int
gfr_xfer_next(struct gfr_xfer *xfer, struct gfr_xfer_op *op)
{
    const struct gfr_xfer_local *l;
    const struct gfr_wire_seg *r;
    uint64_t len;

    if (xfer->left == 0)
        return 0;
    /* Skip exhausted buffers (zero-length local buffers included). */
    while (xfer->local[xfer->li].length == xfer->loff) {
        xfer->li++;
        xfer->loff = 0;
    }
    while (xfer->remote[xfer->ri].length == xfer->roff) {
        xfer->ri++;
        xfer->roff = 0;
    }
    l = &xfer->local[xfer->li];
    r = &xfer->remote[xfer->ri];
    len = xfer->left;
    if (len > l->length - xfer->loff)
        len = l->length - xfer->loff;
    if (len > r->length - xfer->roff)
        len = r->length - xfer->roff;
    if (len > xfer->segment_size)
        len = xfer->segment_size;

    op->local_addr = l->addr + xfer->loff;
    op->lkey = l->lkey;
    op->remote_addr = r->addr + xfer->roff;
    op->rkey = r->rkey;
    op->length = (uint32_t)len;
    xfer->loff += (uint32_t)len;
    xfer->roff += (uint32_t)len;
    xfer->left -= len;
    return 1;
}
