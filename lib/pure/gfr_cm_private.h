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
    GFR_CM_REJECT_BUNDLE = 5,  /* a joining rail named no live bundle, or a wrong token */
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

/*
 * Multi-rail (docs/multi-rail.md): the flags byte of the private data and,
 * after the 32 bytes above, a bundle's id and token (a server's accept and
 * a joining rail's request), then a joining rail's id (its request: 45
 * bytes), or the server's rail addresses (its accept only: 48 + 20 per
 * address, at most 128, within the 196 bytes of an IB/RoCE REP; a joining
 * REQ's 45 fit the REQ's 56).  A peer without
 * rails sends flags 0 and nothing after the 32; the IB CM's zero padding
 * reads as no bundle and no address.
 */
#define GFR_CM_F_RAILS 0x1u /* REQ: the client would use rails; REP: the bundle follows */
#define GFR_CM_F_JOIN 0x2u  /* REQ: a rail joining the bundle named */
#define GFR_CM_MAX_RAILS 4
#define GFR_CM_JOIN_SIZE 45
#define GFR_CM_RAILS_ADDR_SIZE 20
#define GFR_CM_PRIVATE_MAX (48 + GFR_CM_MAX_RAILS * GFR_CM_RAILS_ADDR_SIZE)

/* One rail address a server advertises: family 4 or 6, port, the address
 * (an IPv4 address in the first 4 bytes). */
struct gfr_cm_rail_addr {
    uint8_t family;
    uint16_t port;
    uint8_t addr[16];
};

struct gfr_cm_rails {
    uint8_t flags;   /* GFR_CM_F_* */
    uint32_t bundle; /* 0: none */
    uint64_t token;
    /* JOIN: the client's id of the rail, never 0 (the lead's): the id a
     * FENCE names it by (docs/multi-rail.md, "Fences") */
    uint8_t rail_id;
    unsigned naddrs;
    struct gfr_cm_rail_addr addrs[GFR_CM_MAX_RAILS];
};

/*
 * Adds rails to private data gfr_cm_encode wrote into buf: sets the flags
 * byte and appends what the flags call for (nothing for a bare RAILS
 * request; bundle, token and rail id for JOIN; bundle, token and the
 * addresses for a RAILS accept, marked by a nonzero bundle).  Returns the
 * private data's whole size, or -EINVAL (more than GFR_CM_MAX_RAILS
 * addresses, JOIN without a bundle or a rail id) or -EMSGSIZE.
 */
int gfr_cm_rails_encode(const struct gfr_cm_rails *rails, void *buf, size_t cap);

/*
 * Reads the rails part of a peer's private data (len as the CM gave it,
 * padding included); fields the peer did not send read as 0.  Returns 0,
 * or -EPROTO with *why set: more addresses than GFR_CM_MAX_RAILS
 * (PARAMS), fewer bytes than the addresses announced or a JOIN without
 * its bundle (SHORT).
 */
int gfr_cm_rails_decode(const void *buf, size_t len, struct gfr_cm_rails *rails,
                        enum gfr_cm_reject_reason *why);

/* A sentence for the log. */
const char *gfr_cm_reject_str(enum gfr_cm_reject_reason why);

#endif /* GFR_CM_PRIVATE_H */
