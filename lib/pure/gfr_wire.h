/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The message header of the wire protocol, version 1 (docs/wire-protocol.md
 * documents it byte by byte).  Pure functions: no state, no locking; safe
 * from any thread.  Decoding validates every field a peer controls.
 */
#ifndef GFR_WIRE_H
#define GFR_WIRE_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define GFR_WIRE_VERSION 1
#define GFR_WIRE_HDR_SIZE 24
#define GFR_WIRE_SEG_SIZE 16
/* Segments per list this implementation handles (the format allows 255). */
#define GFR_WIRE_MAX_SEGS 16

enum gfr_wire_type {
    GFR_WIRE_MSG = 1,
    GFR_WIRE_DONE = 2,
    GFR_WIRE_CREDIT = 3,
    GFR_WIRE_ERROR = 4,
    GFR_WIRE_REPLY = 5,
    /* Between rails of a bundle only (docs/multi-rail.md, "Fences"): the
     * client gave up a rail; xid is the receiver's QP number of it. */
    GFR_WIRE_FENCE = 6,
};

/*
 * Header flags (a bit a side does not know is ignored, so an older peer
 * that reads the field as reserved keeps working).
 *
 * REPLY_ENDS_READS, on a MSG with a read list that is a request its
 * receiver will answer: the receiver sends no DONE for the read list; its
 * REPLY to the xid ends the sender's access instead (the receiver pulls
 * the list before it delivers the request, so before any reply).  A
 * receiver that does not know the flag sends its DONE, which does the same.
 */
#define GFR_WIRE_F_REPLY_ENDS_READS 0x1u
/* AWAITS_REPLY, on a MSG, sent only between rails of a bundle (docs/multi-
 * rail.md): its sender awaits a REPLY to the xid, which its receiver sends
 * on the rail the MSG came on. */
#define GFR_WIRE_F_AWAITS_REPLY 0x2u
/* RESEND, on a MSG with AWAITS_REPLY: a copy of a request its sender sent
 * before on a rail it has given up (docs/multi-rail.md, "Failover without
 * loss").  With AWAITS_REPLY, written carries the sender's mark: the
 * oldest xid it awaits a reply to (never after the message's own, in
 * serial-number order). */
#define GFR_WIRE_F_RESEND 0x4u

struct gfr_wire_seg {
    uint64_t addr;
    uint32_t rkey;
    uint32_t length;
};

struct gfr_wire_hdr {
    uint8_t type;       /* enum gfr_wire_type */
    uint8_t n_read;
    uint8_t n_write;
    uint16_t credits;   /* grant */
    uint16_t flags;     /* GFR_WIRE_F_* */
    uint32_t xid;
    uint32_t inline_len;
    uint32_t read_len;  /* sum of the read segments' lengths */
    uint32_t written;   /* REPLY: bytes written into the write list the
                         * request offered; ERROR: the error code; MSG
                         * with AWAITS_REPLY: the sender's mark */
};

/* A decoded message.  payload points into the buffer that was decoded. */
struct gfr_wire_msg {
    struct gfr_wire_hdr hdr;
    struct gfr_wire_seg read[GFR_WIRE_MAX_SEGS];
    struct gfr_wire_seg write[GFR_WIRE_MAX_SEGS];
    const uint8_t *payload;
};

/* What the connection negotiated (see gfr_cm_private.h). */
struct gfr_wire_limits {
    uint32_t max_msg;  /* body: inline payload + read data */
    uint16_t max_segs; /* read and write lists together */
};

/* Bytes a header with these lists occupies before the inline payload. */
static inline size_t
gfr_wire_hdr_len(unsigned n_read, unsigned n_write)
{
    return GFR_WIRE_HDR_SIZE + (size_t)GFR_WIRE_SEG_SIZE * (n_read + n_write);
}

/*
 * Writes the header and the segment lists of hdr into buf (cap bytes); the
 * caller places hdr->inline_len payload bytes right after.  read_len is
 * computed from the read list (hdr->read_len is ignored).
 * Returns the bytes written, or -EINVAL (NULL lists with counts, a count
 * over GFR_WIRE_MAX_SEGS, a read segment of length 0, read lengths that
 * overflow 32 bits, an unknown type) or -EMSGSIZE (cap too small).
 */
ssize_t gfr_wire_encode(const struct gfr_wire_hdr *hdr,
                        const struct gfr_wire_seg *read,
                        const struct gfr_wire_seg *write, void *buf,
                        size_t cap);

/*
 * Decodes and validates len received bytes.  Returns 0, or -EPROTO with
 * *reason naming the first violation (a static string, for the log).
 */
int gfr_wire_decode(const void *buf, size_t len,
                    const struct gfr_wire_limits *limits,
                    struct gfr_wire_msg *msg, const char **reason);

#endif /* GFR_WIRE_H */
