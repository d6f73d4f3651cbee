/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * How the plugin lays one GlusterFS RPC message into an engine message body
 * (docs/wire-protocol.md, "GlusterFS RPC messages"):
 *
 *   be32 header_len | RPC header (header_len bytes, from the XID on) | payload
 *
 * The RPC header is the record's rpchdr and proghdr; the payload is its
 * progpayload (READ and WRITE data).  The receiver needs the boundary
 * because GlusterFS wants a READ reply's data as a separate vector, and an
 * inline message arrives as one piece.  The body may be split by the
 * engine into an inline head and a pulled bulk part at any byte.
 *
 * Pure functions on caller memory; any thread.  GlusterFS-independent, so
 * the unit tests run on the host.
 */
#ifndef GFR_RPC_FRAME_H
#define GFR_RPC_FRAME_H

#include <stddef.h>
#include <stdint.h>

#include "gfr_be.h"
#include "gfr_rdma.h"

#define GFR_FRAME_PREFIX 4
/* The XID and the message type: the least a GlusterFS RPC header holds. */
#define GFR_FRAME_MIN_HEADER 8

/* A received body, located in an rx's head and bulk. */
struct gfr_frame {
    size_t header_off;  /* GFR_FRAME_PREFIX */
    size_t header_len;
    size_t payload_off;
    size_t payload_len; /* bytes in the body; written bytes come on top */
};

static inline void
gfr_frame_prefix(uint8_t prefix[GFR_FRAME_PREFIX], uint32_t header_len)
{
    gfr_put_be32(prefix, header_len);
}

/*
 * Locates the header and payload of rx's body and checks them: the prefix
 * fits, the header fits and holds at least GFR_FRAME_MIN_HEADER bytes, and
 * it begins with rx->xid (the engine's xid and the RPC's must agree).
 * Returns 0, or -EPROTO with *why naming the fault.
 */
int gfr_frame_parse(const struct gfr_rdma_rx *rx, struct gfr_frame *frame,
                    const char **why);

/* Copies len bytes from offset off of rx's body (head then bulk) to dst;
 * the range must lie inside the body. */
void gfr_frame_copy(const struct gfr_rdma_rx *rx, size_t off, size_t len, void *dst);

#endif /* GFR_RPC_FRAME_H */
