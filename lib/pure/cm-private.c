/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * CM private data (docs/wire-protocol.md, "Connection parameters").
 */
#include "gfr_cm_private.h"

#include <errno.h>
#include <string.h>

#include "gfr_be.h"

static int
params_valid(const struct gfr_cm_params *p)
{
    return p->credits >= GFR_CM_MIN_CREDITS &&
           p->inline_max >= GFR_CM_MIN_INLINE &&
           p->inline_max <= GFR_CM_MAX_INLINE && p->max_msg >= p->inline_max &&
           p->max_segs > 0;
}

int
gfr_cm_encode(const struct gfr_cm_params *params, void *buf, size_t cap)
{
    uint8_t *p = buf;

    if (!params || !buf || !params_valid(params))
        return -EINVAL;
    if (cap < GFR_CM_PRIVATE_SIZE)
        return -EMSGSIZE;
    gfr_put_be32(p, GFR_CM_MAGIC);
    p[4] = GFR_CM_VERSION;
    p[5] = 0;
    gfr_put_be16(p + 6, params->credits);
    gfr_put_be32(p + 8, params->inline_max);
    gfr_put_be32(p + 12, params->max_msg);
    gfr_put_be16(p + 16, params->max_segs);
    memset(p + 18, 0, 2);
    gfr_put_be64(p + 20, params->probe_rkey ? params->probe_addr : 0);
    gfr_put_be32(p + 28, params->probe_rkey);
    return GFR_CM_PRIVATE_SIZE;
}

static int
refuse(enum gfr_cm_reject_reason *why, enum gfr_cm_reject_reason reason)
{
    if (why)
        *why = reason;
    return -EPROTO;
}

int
gfr_cm_decode(const void *buf, size_t len, struct gfr_cm_params *params,
              enum gfr_cm_reject_reason *why)
{
    const uint8_t *p = buf;

    if (!buf || !params || len < GFR_CM_PRIVATE_MIN)
        return refuse(why, GFR_CM_REJECT_SHORT);
    if (gfr_get_be32(p) != GFR_CM_MAGIC)
        return refuse(why, GFR_CM_REJECT_MAGIC);
    if (p[4] != GFR_CM_VERSION)
        return refuse(why, GFR_CM_REJECT_VERSION);
    params->credits = gfr_get_be16(p + 6);
    params->inline_max = gfr_get_be32(p + 8);
    params->max_msg = gfr_get_be32(p + 12);
    params->max_segs = gfr_get_be16(p + 16);
    params->probe_rkey = len >= GFR_CM_PRIVATE_SIZE ? gfr_get_be32(p + 28) : 0;
    params->probe_addr = params->probe_rkey ? gfr_get_be64(p + 20) : 0;
    if (!params_valid(params))
        return refuse(why, GFR_CM_REJECT_PARAMS);
    if (why)
        *why = GFR_CM_REJECT_NONE;
    return 0;
}

#define MIN(a, b) ((a) < (b) ? (a) : (b))

void
gfr_cm_negotiate(const struct gfr_cm_params *local,
                 const struct gfr_cm_params *peer, struct gfr_cm_params *agreed)
{
    agreed->credits = MIN(local->credits, peer->credits);
    agreed->inline_max = MIN(local->inline_max, peer->inline_max);
    agreed->max_msg = MIN(local->max_msg, peer->max_msg);
    agreed->max_segs = MIN(local->max_segs, peer->max_segs);
    agreed->probe_addr = 0;
    agreed->probe_rkey = 0;
}

const char *
gfr_cm_reject_str(enum gfr_cm_reject_reason why)
{
    switch (why) {
    case GFR_CM_REJECT_NONE:
        return "accepted";
    case GFR_CM_REJECT_SHORT:
        return "connection private data missing or shorter than 20 bytes";
    case GFR_CM_REJECT_MAGIC:
        return "peer is not a glusterfs-rdma peer (bad magic)";
    case GFR_CM_REJECT_VERSION:
        return "peer speaks another glusterfs-rdma protocol version";
    case GFR_CM_REJECT_PARAMS:
        return "peer's connection parameters out of range";
    }
    return "unknown reject reason";
}
