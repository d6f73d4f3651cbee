/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * libFuzzer target: the plugin's framing of an RPC message in a received
 * body (rpc-transport-rdma/rpc-frame.c), gfr_frame_parse and
 * gfr_frame_copy, on a body split into an inline head and a pulled bulk.
 *
 * Input: byte 0 picks where the body splits (its share of the body, in
 * 256ths), byte 1 bit 0 says whether the engine's xid is the RPC's own
 * (else it is taken from bytes 2-5), then the body.  Head and bulk are
 * copied to separate buffers of exactly their sizes, so AddressSanitizer
 * reports a read past either.
 *
 * Oracle: the rules of docs/wire-protocol.md ("GlusterFS RPC messages")
 * read again here; an accepted frame's header and payload, copied out
 * across the split, must equal the same ranges of the contiguous body.
 */
#include "fuzz-common.h"
#include "rpc-frame.h"

#define CONTROL_SIZE 6

static void
disagree(const char *what)
{
    fuzz_disagree("fuzz-rpc-frame", what, NULL);
}

static int
spec_valid(const uint8_t *body, size_t len, uint32_t xid)
{
    uint64_t header_len;

    if (len < 4)
        return 0;
    header_len = gfr_get_be32(body);
    return header_len >= 8 && header_len <= len - 4 && gfr_get_be32(body + 4) == xid;
}

static void
check_range(const struct gfr_rdma_rx *rx, const uint8_t *body, size_t off, size_t len)
{
    uint8_t *out = fuzz_alloc(len);

    gfr_frame_copy(rx, off, len, out);
    if (memcmp(out, body + off, len) != 0)
        disagree("a range copied across the split differs from the body");
    free(out);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const uint8_t *body = data + CONTROL_SIZE;
    struct gfr_rdma_rx rx = {0};
    struct gfr_frame f;
    const char *why = NULL;
    size_t len, head_len;
    uint8_t *head, *bulk;
    int rc;

    if (size < CONTROL_SIZE)
        return 0;
    len = size - CONTROL_SIZE;
    head_len = len * data[0] / 255;
    rx.xid = (data[1] & 1) && len >= 8 ? gfr_get_be32(body + 4) : gfr_get_be32(data + 2);
    head = fuzz_copy(body, head_len);
    bulk = fuzz_copy(body + head_len, len - head_len);
    rx.head = head;
    rx.head_len = head_len;
    rx.bulk = bulk;
    rx.bulk_len = len - head_len;

    rc = gfr_frame_parse(&rx, &f, &why);
    if ((rc == 0) != spec_valid(body, len, rx.xid))
        disagree("the parser's verdict differs from docs/wire-protocol.md");
    if (rc != 0 && !why)
        disagree("a refusal without a reason");
    if (rc == 0) {
        if (f.header_off != 4 || f.payload_off != 4 + f.header_len ||
            f.payload_off + f.payload_len != len)
            disagree("the frame does not cover the body");
        check_range(&rx, body, f.header_off, f.header_len);
        check_range(&rx, body, f.payload_off, f.payload_len);
    }
    free(head);
    free(bulk);
    return 0;
}
