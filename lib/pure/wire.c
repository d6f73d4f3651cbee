/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Message header encoding and validation (docs/wire-protocol.md).
 */
#include "gfr_wire.h"

#include <errno.h>

#include "gfr_be.h"

static int
type_known(unsigned type)
{
    return type >= GFR_WIRE_MSG && type <= GFR_WIRE_FENCE;
}

/* An awaited request: written carries its sender's mark. */
static int
awaited(const struct gfr_wire_hdr *hdr)
{
    return hdr->type == GFR_WIRE_MSG && (hdr->flags & GFR_WIRE_F_AWAITS_REPLY);
}

static uint8_t *
put_segs(uint8_t *p, const struct gfr_wire_seg *segs, unsigned n)
{
    for (unsigned i = 0; i < n; i++, p += GFR_WIRE_SEG_SIZE) {
        gfr_put_be64(p, segs[i].addr);
        gfr_put_be32(p + 8, segs[i].rkey);
        gfr_put_be32(p + 12, segs[i].length);
    }
    return p;
}

ssize_t
gfr_wire_encode(const struct gfr_wire_hdr *hdr, const struct gfr_wire_seg *read,
                const struct gfr_wire_seg *write, void *buf, size_t cap)
{
    size_t len;
    uint64_t read_len = 0;
    uint8_t *p = buf;

    if (!hdr || !buf || !type_known(hdr->type) ||
        hdr->n_read > GFR_WIRE_MAX_SEGS || hdr->n_write > GFR_WIRE_MAX_SEGS ||
        (hdr->n_read && !read) || (hdr->n_write && !write))
        return -EINVAL;
    for (unsigned i = 0; i < hdr->n_read; i++) {
        if (read[i].length == 0)
            return -EINVAL;
        read_len += read[i].length;
    }
    if (read_len > UINT32_MAX)
        return -EINVAL;
    len = gfr_wire_hdr_len(hdr->n_read, hdr->n_write);
    if (cap < len)
        return -EMSGSIZE;

    p[0] = GFR_WIRE_VERSION;
    p[1] = hdr->type;
    p[2] = hdr->n_read;
    p[3] = hdr->n_write;
    gfr_put_be16(p + 4, hdr->credits);
    gfr_put_be16(p + 6, hdr->flags);
    gfr_put_be32(p + 8, hdr->xid);
    gfr_put_be32(p + 12, hdr->inline_len);
    gfr_put_be32(p + 16, (uint32_t)read_len);
    gfr_put_be32(p + 20, hdr->written);
    p = put_segs(p + GFR_WIRE_HDR_SIZE, read, hdr->n_read);
    put_segs(p, write, hdr->n_write);
    return (ssize_t)len;
}

static const uint8_t *
get_segs(const uint8_t *p, struct gfr_wire_seg *segs, unsigned n)
{
    for (unsigned i = 0; i < n; i++, p += GFR_WIRE_SEG_SIZE) {
        segs[i].addr = gfr_get_be64(p);
        segs[i].rkey = gfr_get_be32(p + 8);
        segs[i].length = gfr_get_be32(p + 12);
    }
    return p;
}

static int
violation(const char **reason, const char *why)
{
    if (reason)
        *reason = why;
    return -EPROTO;
}

int
gfr_wire_decode(const void *buf, size_t len,
                const struct gfr_wire_limits *limits, struct gfr_wire_msg *msg,
                const char **reason)
{
    const uint8_t *p = buf;
    struct gfr_wire_hdr *hdr;
    uint64_t read_sum = 0;
    uint64_t write_sum = 0;
    size_t head;

    if (!buf || !limits || !msg)
        return violation(reason, "bad arguments");
    if (len < GFR_WIRE_HDR_SIZE)
        return violation(reason, "message shorter than the header");
    if (p[0] != GFR_WIRE_VERSION)
        return violation(reason, "unknown protocol version");
    hdr = &msg->hdr;
    hdr->type = p[1];
    hdr->n_read = p[2];
    hdr->n_write = p[3];
    hdr->credits = gfr_get_be16(p + 4);
    hdr->flags = gfr_get_be16(p + 6);
    hdr->xid = gfr_get_be32(p + 8);
    hdr->inline_len = gfr_get_be32(p + 12);
    hdr->read_len = gfr_get_be32(p + 16);
    hdr->written = gfr_get_be32(p + 20);

    if (!type_known(hdr->type))
        return violation(reason, "unknown message type");
    if (hdr->n_read > GFR_WIRE_MAX_SEGS || hdr->n_write > GFR_WIRE_MAX_SEGS ||
        (unsigned)hdr->n_read + hdr->n_write > limits->max_segs)
        return violation(reason, "more segments than negotiated");
    head = gfr_wire_hdr_len(hdr->n_read, hdr->n_write);
    if (len < head || len - head != hdr->inline_len)
        return violation(reason, "length does not match the header");
    if (hdr->type != GFR_WIRE_MSG && hdr->type != GFR_WIRE_REPLY &&
        (hdr->n_read || hdr->n_write || hdr->inline_len || hdr->read_len))
        return violation(reason, "lists or payload on a control message");
    if (hdr->type == GFR_WIRE_REPLY && hdr->n_write)
        return violation(reason, "write list on a reply");
    if ((hdr->flags & GFR_WIRE_F_REPLY_ENDS_READS) &&
        (hdr->type != GFR_WIRE_MSG || !hdr->n_read))
        return violation(reason, "a reply asked to end a read list on a message without one");
    if ((hdr->flags & GFR_WIRE_F_AWAITS_REPLY) && hdr->type != GFR_WIRE_MSG)
        return violation(reason, "a reply awaited for a message that is not a request");
    if ((hdr->flags & GFR_WIRE_F_RESEND) && !(hdr->flags & GFR_WIRE_F_AWAITS_REPLY))
        return violation(reason, "a resend of a message that is not an awaited request");
    /* ERROR carries its errno in the same field, an awaited request its
     * sender's mark */
    if (awaited(hdr)) {
        if ((int32_t)(hdr->xid - hdr->written) < 0)
            return violation(reason, "a request whose mark is after its own xid");
    } else if (hdr->written && hdr->type != GFR_WIRE_REPLY && hdr->type != GFR_WIRE_ERROR) {
        return violation(reason, "bytes written claimed by a message that is not a reply");
    }

    p = get_segs(p + GFR_WIRE_HDR_SIZE, msg->read, hdr->n_read);
    p = get_segs(p, msg->write, hdr->n_write);
    for (unsigned i = 0; i < hdr->n_read; i++) {
        if (msg->read[i].length == 0)
            return violation(reason, "read segment of length 0");
        read_sum += msg->read[i].length;
    }
    for (unsigned i = 0; i < hdr->n_write; i++) {
        if (msg->write[i].length == 0)
            return violation(reason, "write segment of length 0");
        write_sum += msg->write[i].length;
    }
    if (write_sum > limits->max_msg)
        return violation(reason, "write list larger than negotiated");
    if (read_sum != hdr->read_len)
        return violation(reason, "read segments do not add up to read_len");
    if ((uint64_t)hdr->inline_len + read_sum > limits->max_msg)
        return violation(reason, "message larger than negotiated");
    msg->payload = p;
    return 0;
}
