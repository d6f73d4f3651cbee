/* SPDX-License-Identifier: GPL-2.0-only */
/* The plugin's framing of RPC messages in engine bodies (rpc-frame.h). */
#include <errno.h>
#include <string.h>

#include "rpc-frame.h"

void
gfr_frame_copy(const struct gfr_rdma_rx *rx, size_t off, size_t len, void *dst)
{
    uint8_t *out = dst;

    if (off < rx->head_len) {
        size_t n = rx->head_len - off < len ? rx->head_len - off : len;

        memcpy(out, (const uint8_t *)rx->head + off, n);
        out += n;
        len -= n;
        off = rx->head_len;
    }
    if (len)
        memcpy(out, (const uint8_t *)rx->bulk + (off - rx->head_len), len);
}

int
gfr_frame_parse(const struct gfr_rdma_rx *rx, struct gfr_frame *frame, const char **why)
{
    size_t body = rx->head_len + rx->bulk_len;
    uint8_t prefix[GFR_FRAME_PREFIX];
    uint8_t xid[4];
    uint32_t header_len;

    if (body < GFR_FRAME_PREFIX) {
        *why = "a body shorter than the frame prefix";
        return -EPROTO;
    }
    gfr_frame_copy(rx, 0, sizeof(prefix), prefix);
    header_len = gfr_get_be32(prefix);
    if (header_len < GFR_FRAME_MIN_HEADER) {
        *why = "an RPC header too short to hold an XID and a message type";
        return -EPROTO;
    }
    if (header_len > body - GFR_FRAME_PREFIX) {
        *why = "an RPC header longer than the message";
        return -EPROTO;
    }
    gfr_frame_copy(rx, GFR_FRAME_PREFIX, sizeof(xid), xid);
    if (gfr_get_be32(xid) != rx->xid) {
        *why = "an RPC XID that differs from the message's";
        return -EPROTO;
    }
    frame->header_off = GFR_FRAME_PREFIX;
    frame->header_len = header_len;
    frame->payload_off = GFR_FRAME_PREFIX + header_len;
    frame->payload_len = body - frame->payload_off;
    return 0;
}
