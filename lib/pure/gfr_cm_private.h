/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Connection parameters exchanged in the CM private data of rdma_connect and
 * rdma_accept (docs/wire-protocol.md).  Pure functions, any thread.
 */
#ifndef GFR_CM_PRIVATE_H
#define GFR_CM_PRIVATE_H

#include <stddef.h>
#include <stdint.h>

#define GFR_CM_MAGIC 0x47465231u /* "GFR1" */
#define GFR_CM_VERSION 1
/* What a peer sends: the first 20 bytes are every version-1 peer's; the
 * liveness probe's 12 follow (a peer without them offers none). */
#define GFR_CM_PRIVATE_MIN 20
#define GFR_CM_PRIVATE_SIZE 32
#define GFR_CM_MIN_CREDITS 2
#define GFR_CM_MIN_INLINE 256
#define GFR_CM_MAX_INLINE (16u << 20)

struct gfr_cm_params {
    uint16_t credits;    /* receive buffers posted for the peer */
    uint32_t inline_max; /* receive buffer size, header included */
    uint32_t max_msg;    /* largest message in total */
    uint16_t max_segs;   /* segments per header, both lists */
    /* A byte this side offers its peer to RDMA READ as a liveness probe
     * (iWARP, where a WRITE's completion proves nothing of the peer): its
     * address and rkey; rkey 0 offers none.  Not negotiated. */
    uint64_t probe_addr;
    uint32_t probe_rkey;
};

/* Why a peer's parameters were refused; sent as the one byte of a REJECT's
 * private data. */
enum gfr_cm_reject_reason {
    GFR_CM_REJECT_NONE = 0,
    GFR_CM_REJECT_SHORT = 1,   /* private data missing or too short */
    GFR_CM_REJECT_MAGIC = 2,   /* not a glusterfs-rdma peer */
    GFR_CM_REJECT_VERSION = 3, /* another protocol version */
    GFR_CM_REJECT_PARAMS = 4,  /* parameters out of range */
};

/* Writes GFR_CM_PRIVATE_SIZE bytes.  Returns that size, or -EINVAL (NULL,
 * parameters this side itself would reject) or -EMSGSIZE (cap too small). */
int gfr_cm_encode(const struct gfr_cm_params *params, void *buf, size_t cap);

/*
 * Parses a peer's private data.  len may exceed GFR_CM_PRIVATE_SIZE (the CM
 * pads private data); the rest is ignored.  From GFR_CM_PRIVATE_MIN bytes on
 * it is a peer's (without the probe, which then reads as none).  Returns 0,
 * or -EPROTO with *why set.
 */
int gfr_cm_decode(const void *buf, size_t len, struct gfr_cm_params *params,
                  enum gfr_cm_reject_reason *why);

/* The values both sides use: the minimum of each (no probe: each side
 * reads the other's). */
void gfr_cm_negotiate(const struct gfr_cm_params *local,
                      const struct gfr_cm_params *peer,
                      struct gfr_cm_params *agreed);

/* A sentence for the log. */
const char *gfr_cm_reject_str(enum gfr_cm_reject_reason why);

#endif /* GFR_CM_PRIVATE_H */
