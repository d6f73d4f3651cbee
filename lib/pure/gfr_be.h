/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Big-endian (network order) fields at any alignment, for the wire header
 * and the CM private data.  Pure inline helpers.
 */
#ifndef GFR_BE_H
#define GFR_BE_H

#include <endian.h>
#include <stdint.h>
#include <string.h>

static inline void
gfr_put_be16(uint8_t *p, uint16_t v)
{
    v = htobe16(v);
    memcpy(p, &v, sizeof(v));
}

static inline void
gfr_put_be32(uint8_t *p, uint32_t v)
{
    v = htobe32(v);
    memcpy(p, &v, sizeof(v));
}

static inline void
gfr_put_be64(uint8_t *p, uint64_t v)
{
    v = htobe64(v);
    memcpy(p, &v, sizeof(v));
}

static inline uint16_t
gfr_get_be16(const uint8_t *p)
{
    uint16_t v;

    memcpy(&v, p, sizeof(v));
    return be16toh(v);
}

static inline uint32_t
gfr_get_be32(const uint8_t *p)
{
    uint32_t v;

    memcpy(&v, p, sizeof(v));
    return be32toh(v);
}

static inline uint64_t
gfr_get_be64(const uint8_t *p)
{
    uint64_t v;

    memcpy(&v, p, sizeof(v));
    return be64toh(v);
}

#endif /* GFR_BE_H */
