/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Planning bulk transfers: the RDMA READs (pulling a peer's read list) or
 * RDMA WRITEs (filling a peer's write list) that move a payload between
 * local registered buffers and remote segments, each at most segment_size
 * bytes and never crossing a local or a remote buffer's end.  Pure
 * iterator over caller-owned arrays; no locking, any thread.
 */
#ifndef GFR_XFER_H
#define GFR_XFER_H

#include <stdint.h>

#include "gfr_wire.h"

struct gfr_xfer_local {
    uint64_t addr;
    uint32_t length;
    uint32_t lkey;
};

/* One work request's worth. */
struct gfr_xfer_op {
    uint64_t local_addr;
    uint32_t lkey;
    uint32_t length;
    uint64_t remote_addr;
    uint32_t rkey;
};

struct gfr_xfer {
    const struct gfr_xfer_local *local;
    const struct gfr_wire_seg *remote;
    unsigned n_local;
    unsigned n_remote;
    unsigned li, ri;      /* current local buffer and remote segment */
    uint32_t loff, roff;  /* offsets inside them */
    uint64_t left;        /* bytes still to plan */
    uint32_t segment_size;
};

/*
 * Prepares to move total bytes.  The remote segments must hold at least
 * total bytes (a peer's write list may be larger than the reply; a read
 * list must be exactly read_len, which the wire decoder checked), the local
 * buffers too, and no remote segment may wrap the address space.
 * Returns 0, -EINVAL (bad arguments, segment_size 0) or -EMSGSIZE (the
 * remote or the local side holds fewer than total bytes) or -EPROTO (a
 * remote segment wraps).
 */
int gfr_xfer_init(struct gfr_xfer *xfer, const struct gfr_xfer_local *local,
                  unsigned n_local, const struct gfr_wire_seg *remote,
                  unsigned n_remote, uint64_t total, uint32_t segment_size);

/* The next operation: 1 with *op filled, 0 when everything is planned. */
int gfr_xfer_next(struct gfr_xfer *xfer, struct gfr_xfer_op *op);

#endif /* GFR_XFER_H */
