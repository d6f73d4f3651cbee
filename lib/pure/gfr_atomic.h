/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Raising or lowering a shared 64-bit value to a bound, lock-free: a
 * compare-and-swap loop over liburcu's uatomic_cmpxchg, which is a full
 * barrier when it swaps.  Any thread; the value only ever moves the one
 * way, so a racing store of a better bound is never undone.
 */
#ifndef GFR_ATOMIC_H
#define GFR_ATOMIC_H

#include <stdint.h>

#include <urcu/uatomic.h>

/* *addr becomes v if v is greater. */
static inline void
gfr_uatomic_max_u64(uint64_t *addr, uint64_t v)
{
    uint64_t cur = uatomic_read(addr);

    while (v > cur) {
        uint64_t seen = uatomic_cmpxchg(addr, cur, v);

        if (seen == cur)
            break;
        cur = seen;
    }
}

/* *addr becomes v if v is smaller. */
static inline void
gfr_uatomic_min_u64(uint64_t *addr, uint64_t v)
{
    uint64_t cur = uatomic_read(addr);

    while (v < cur) {
        uint64_t seen = uatomic_cmpxchg(addr, cur, v);

        if (seen == cur)
            break;
        cur = seen;
    }
}

#endif /* GFR_ATOMIC_H */
