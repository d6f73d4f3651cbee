/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * libFuzzer target: the message header and its segment (chunk) lists,
 * gfr_wire_decode.
 *
 * Input: be32 max_msg | be16 max_segs | the received bytes.  The limits
 * come from the input so that the fuzzer explores every negotiated value;
 * the received bytes are copied to a buffer of exactly their size, so
 * AddressSanitizer reports any read past them.
 *
 * Oracle, beyond "no crash, no sanitizer report": a second reading of the
 * rules of docs/wire-protocol.md ("Validation"), written here from the
 * document and not from lib/pure/wire.c, must agree with the decoder on every
 * input; and what the decoder accepts must encode back to the same bytes
 * (flags included).  A disagreement aborts, which libFuzzer
 * reports as a crash with the input saved.
 */
#include "fuzz-common.h"
#include "gfr_be.h"
#include "gfr_wire.h"

#define LIMITS_SIZE 6

static void
disagree(const char *what, const char *reason)
{
    fuzz_disagree("fuzz-wire", what, reason);
}

/* Does the document accept these bytes under these limits? */
static int
spec_valid(const uint8_t *p, size_t len, const struct gfr_wire_limits *lim)
{
    unsigned type, n_read, n_write, flags;
    uint64_t inline_len, read_len, written, read_sum = 0, write_sum = 0;
    const uint8_t *seg;

    if (len < 24 || p[0] != 1)
        return 0;
    type = p[1];
    n_read = p[2];
    n_write = p[3];
    flags = gfr_get_be16(p + 6);
    inline_len = gfr_get_be32(p + 12);
    read_len = gfr_get_be32(p + 16);
    written = gfr_get_be32(p + 20);
    if (type < 1 || type > 6)
        return 0;
    /* This implementation handles GFR_WIRE_MAX_SEGS per list. */
    if (n_read > GFR_WIRE_MAX_SEGS || n_write > GFR_WIRE_MAX_SEGS ||
        n_read + n_write > lim->max_segs)
        return 0;
    if (24 + 16 * (uint64_t)(n_read + n_write) + inline_len != len)
        return 0;
    if ((type == 2 || type == 3 || type == 4 || type == 6) &&
        (n_read || n_write || inline_len || read_len))
        return 0;
    if (type == 5 && n_write)
        return 0;
    /* written: a REPLY's bytes, an ERROR's code, an awaited request's mark
     * (not after its xid, in serial-number order); 0 on anything else */
    if (type == 1 && (flags & 2)) {
        if ((int32_t)(gfr_get_be32(p + 8) - (uint32_t)written) < 0)
            return 0;
    } else if (written && type != 5 && type != 4) {
        return 0;
    }
    /* REPLY_ENDS_READS only on a MSG with a read list, AWAITS_REPLY only on
     * a MSG, RESEND only with AWAITS_REPLY; other bits ignored */
    if ((flags & 1) && (type != 1 || !n_read))
        return 0;
    if ((flags & 2) && type != 1)
        return 0;
    if ((flags & 4) && !(flags & 2))
        return 0;
    seg = p + 24;
    for (unsigned i = 0; i < n_read + n_write; i++, seg += 16) {
        uint32_t length = gfr_get_be32(seg + 12);

        if (length == 0)
            return 0;
        if (i < n_read)
            read_sum += length;
        else
            write_sum += length;
    }
    if (read_sum != read_len)
        return 0;
    if (inline_len + read_len > lim->max_msg || write_sum > lim->max_msg)
        return 0;
    return 1;
}

static void
check_accepted(const uint8_t *p, size_t len, const struct gfr_wire_msg *msg)
{
    size_t head = gfr_wire_hdr_len(msg->hdr.n_read, msg->hdr.n_write);
    uint8_t *again = fuzz_alloc(head);
    ssize_t n;

    if (msg->payload != p + head || head + msg->hdr.inline_len != len)
        disagree("payload is not where the header says", NULL);
    n = gfr_wire_encode(&msg->hdr, msg->read, msg->write, again, head);
    if (n != (ssize_t)head)
        disagree("an accepted header does not encode again", NULL);
    if (memcmp(again, p, head) != 0)
        disagree("an accepted header encodes to other bytes", NULL);
    free(again);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct gfr_wire_limits lim;
    struct gfr_wire_msg msg;
    const char *reason = NULL;
    uint8_t *rx;
    size_t len;
    int rc;

    if (size < LIMITS_SIZE)
        return 0;
    lim.max_msg = gfr_get_be32(data);
    lim.max_segs = gfr_get_be16(data + 4);
    len = size - LIMITS_SIZE;
    rx = fuzz_copy(data + LIMITS_SIZE, len);

    rc = gfr_wire_decode(rx, len, &lim, &msg, &reason);
    if (rc == 0 && !spec_valid(rx, len, &lim))
        disagree("the decoder accepts what docs/wire-protocol.md refuses", NULL);
    if (rc != 0 && spec_valid(rx, len, &lim))
        disagree("the decoder refuses what docs/wire-protocol.md accepts", reason);
    if (rc != 0 && !reason)
        disagree("a refusal without a reason", NULL);
    if (rc == 0)
        check_accepted(rx, len, &msg);
    free(rx);
    return 0;
}
