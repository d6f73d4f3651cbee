/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * libFuzzer target: the CM private data a connecting or accepting peer
 * sends, gfr_cm_decode, and the negotiation that follows it.
 *
 * Input: the private data as received (the CM may pad it, so any length),
 * copied to a buffer of exactly that size for AddressSanitizer.
 *
 * Oracle: the rules of docs/wire-protocol.md ("Connection parameters"),
 * read again here, must give the same verdict and the same reject reason;
 * accepted parameters must encode back to the same 20 bytes (flags and
 * reserved aside) and negotiate, against this side's defaults, to values
 * no larger than either side's; the liveness probe (bytes 20-31) counts
 * only when all 12 bytes came and its rkey is not 0.  The multi-rail part
 * (gfr_cm_rails_decode; "Multi-rail" there) likewise: its verdict, and
 * what it accepted encodes back to the same bytes, reserved ones aside.
 */
#include "fuzz-common.h"
#include "gfr_be.h"
#include "gfr_cm_private.h"

static void
disagree(const char *what)
{
    fuzz_disagree("fuzz-cm-private", what, NULL);
}

/* The document's verdict on these bytes. */
static enum gfr_cm_reject_reason
spec_verdict(const uint8_t *p, size_t len)
{
    uint32_t inline_max, max_msg;

    if (len < 20)
        return GFR_CM_REJECT_SHORT;
    if (gfr_get_be32(p) != 0x47465231u)
        return GFR_CM_REJECT_MAGIC;
    if (p[4] != 1)
        return GFR_CM_REJECT_VERSION;
    inline_max = gfr_get_be32(p + 8);
    max_msg = gfr_get_be32(p + 12);
    if (gfr_get_be16(p + 6) < 2 || inline_max < 256 || inline_max > (16u << 20) ||
        max_msg < inline_max || gfr_get_be16(p + 16) == 0)
        return GFR_CM_REJECT_PARAMS;
    return GFR_CM_REJECT_NONE;
}

static void
check_accepted(const uint8_t *p, const struct gfr_cm_params *peer)
{
    /* the engine's defaults (docs/options.md) as the local side */
    const struct gfr_cm_params local = {.credits = 64, .inline_max = 8192,
                                        .max_msg = 4u << 20, .max_segs = 16};
    struct gfr_cm_params agreed;
    uint8_t again[GFR_CM_PRIVATE_SIZE];

    if (gfr_cm_encode(peer, again, sizeof(again)) != GFR_CM_PRIVATE_SIZE)
        disagree("accepted parameters do not encode again");
    /* byte 5 (flags) and bytes 18-19 (reserved) are not parameters */
    if (memcmp(again, p, 5) != 0 || memcmp(again + 6, p + 6, 12) != 0)
        disagree("accepted parameters encode to other bytes");
    gfr_cm_negotiate(&local, peer, &agreed);
    if (agreed.credits > local.credits || agreed.credits > peer->credits ||
        agreed.inline_max > local.inline_max || agreed.inline_max > peer->inline_max ||
        agreed.max_msg > local.max_msg || agreed.max_msg > peer->max_msg ||
        agreed.max_segs > local.max_segs || agreed.max_segs > peer->max_segs)
        disagree("negotiation gave more than one side offered");
    if (gfr_cm_encode(&agreed, again, sizeof(again)) != GFR_CM_PRIVATE_SIZE)
        disagree("negotiated parameters are not valid themselves");
}

static void
check_probe(const uint8_t *p, size_t len, const struct gfr_cm_params *peer)
{
    uint32_t rkey = len >= 32 ? gfr_get_be32(p + 28) : 0;
    uint64_t addr = rkey ? gfr_get_be64(p + 20) : 0;

    if (peer->probe_rkey != rkey || peer->probe_addr != addr)
        disagree("the probe decodes otherwise than docs/wire-protocol.md says");
}

/* The document's verdict on the multi-rail part of these bytes. */
static enum gfr_cm_reject_reason
spec_rails_verdict(const uint8_t *p, size_t len)
{
    unsigned naddrs;

    if (len < 20)
        return GFR_CM_REJECT_SHORT;
    if (p[5] & 2) { /* JOIN: bundle (never 0), token, rail id (never 0) */
        if (len < 45 || gfr_get_be32(p + 32) == 0)
            return GFR_CM_REJECT_SHORT;
        return p[44] ? GFR_CM_REJECT_NONE : GFR_CM_REJECT_PARAMS;
    }
    naddrs = len >= 48 ? p[44] : 0;
    if (naddrs > 4)
        return GFR_CM_REJECT_PARAMS;
    if (naddrs && len < 48 + 20 * naddrs)
        return GFR_CM_REJECT_SHORT;
    for (unsigned i = 0; i < naddrs; i++)
        if (p[48 + 20 * i] != 4 && p[48 + 20 * i] != 6)
            return GFR_CM_REJECT_PARAMS;
    return GFR_CM_REJECT_NONE;
}

static void
check_rails(const uint8_t *p, size_t len)
{
    enum gfr_cm_reject_reason why = GFR_CM_REJECT_NONE;
    struct gfr_cm_rails rails;
    uint8_t again[GFR_CM_PRIVATE_MAX];
    int rc = gfr_cm_rails_decode(p, len, &rails, &why), n;

    if (why != spec_rails_verdict(p, len))
        disagree("the rails' verdict differs from docs/wire-protocol.md");
    if ((rc == 0) != (why == GFR_CM_REJECT_NONE))
        disagree("return code and reject reason of the rails disagree");
    if (rc != 0 || !rails.bundle)
        return;
    memset(again, 0, sizeof(again));
    n = gfr_cm_rails_encode(&rails, again, sizeof(again));
    if (n < GFR_CM_JOIN_SIZE - 1 || again[5] != p[5] || memcmp(again + 32, p + 32, 12) != 0 ||
        ((p[5] & 2) && again[44] != p[44]))
        disagree("accepted rails do not encode back to their bytes");
    for (int off = 48; off < n; off += 20)
        if (again[off] != p[off] || memcmp(again + off + 2, p + off + 2, 18) != 0)
            disagree("an accepted rail address encodes back to other bytes");
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    enum gfr_cm_reject_reason why = GFR_CM_REJECT_NONE;
    struct gfr_cm_params peer;
    uint8_t *pd = fuzz_copy(data, size);
    int rc;

    rc = gfr_cm_decode(pd, size, &peer, &why);
    if (why != spec_verdict(pd, size))
        disagree("the decoder's verdict differs from docs/wire-protocol.md");
    if ((rc == 0) != (why == GFR_CM_REJECT_NONE))
        disagree("return code and reject reason disagree");
    if (!strcmp(gfr_cm_reject_str(why), "unknown reject reason"))
        disagree("a reject reason without a sentence for the log");
    if (rc == 0) {
        check_accepted(pd, &peer);
        check_probe(pd, size, &peer);
    }
    check_rails(pd, size);
    free(pd);
    return 0;
}
