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

int
gfr_cm_rails_encode(const struct gfr_cm_rails *rails, void *buf, size_t cap)
{
    uint8_t *p = buf;
    size_t size = GFR_CM_PRIVATE_SIZE;

    if (!rails || !buf || rails->naddrs > GFR_CM_MAX_RAILS ||
        ((rails->flags & GFR_CM_F_JOIN) && (!rails->bundle || !rails->rail_id)))
        return -EINVAL;
    if (rails->bundle)
        size = (rails->flags & GFR_CM_F_JOIN) ? GFR_CM_JOIN_SIZE
                                              : 48 + rails->naddrs * GFR_CM_RAILS_ADDR_SIZE;
    if (cap < size)
        return -EMSGSIZE;
    p[5] = rails->flags;
    if (!rails->bundle)
        return (int)size;
    gfr_put_be32(p + 32, rails->bundle);
    gfr_put_be64(p + 36, rails->token);
    if (rails->flags & GFR_CM_F_JOIN) {
        p[44] = rails->rail_id;
        return (int)size;
    }
    p[44] = (uint8_t)rails->naddrs;
    memset(p + 45, 0, 3);
    for (unsigned i = 0; i < rails->naddrs; i++) {
        uint8_t *a = p + 48 + i * GFR_CM_RAILS_ADDR_SIZE;

        a[0] = rails->addrs[i].family;
        a[1] = 0;
        gfr_put_be16(a + 2, rails->addrs[i].port);
        memcpy(a + 4, rails->addrs[i].addr, 16);
    }
    return (int)size;
}

int
gfr_cm_rails_decode(const void *buf, size_t len, struct gfr_cm_rails *rails,
                    enum gfr_cm_reject_reason *why)
{
    const uint8_t *p = buf;

    if (!buf || !rails || len < GFR_CM_PRIVATE_MIN)
        return refuse(why, GFR_CM_REJECT_SHORT);
    memset(rails, 0, sizeof(*rails));
    rails->flags = p[5];
    if (len >= GFR_CM_JOIN_SIZE - 1) {
        rails->bundle = gfr_get_be32(p + 32);
        rails->token = gfr_get_be64(p + 36);
    }
    if (rails->flags & GFR_CM_F_JOIN) {
        if (len < GFR_CM_JOIN_SIZE || !rails->bundle)
            return refuse(why, GFR_CM_REJECT_SHORT);
        rails->rail_id = p[44];
        if (!rails->rail_id)
            return refuse(why, GFR_CM_REJECT_PARAMS);
    }
    if (len >= 48 && !(rails->flags & GFR_CM_F_JOIN))
        rails->naddrs = p[44];
    if (rails->naddrs > GFR_CM_MAX_RAILS)
        return refuse(why, GFR_CM_REJECT_PARAMS);
    if (len < 48 + (size_t)rails->naddrs * GFR_CM_RAILS_ADDR_SIZE && rails->naddrs)
        return refuse(why, GFR_CM_REJECT_SHORT);
    for (unsigned i = 0; i < rails->naddrs; i++) {
        const uint8_t *a = p + 48 + i * GFR_CM_RAILS_ADDR_SIZE;

        rails->addrs[i].family = a[0];
        rails->addrs[i].port = gfr_get_be16(a + 2);
        memcpy(rails->addrs[i].addr, a + 4, 16);
        if (a[0] != 4 && a[0] != 6)
            return refuse(why, GFR_CM_REJECT_PARAMS);
    }
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
    case GFR_CM_REJECT_BUNDLE:
        return "a joining rail named no live bundle of the peer, or a wrong token";
    }
    return "unknown reject reason";
}
