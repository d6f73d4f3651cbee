/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The monotonic clock in nanoseconds, for deadlines and durations.  No
 * state; any thread.
 */
#ifndef GFR_CLOCK_H
#define GFR_CLOCK_H

#include <stdint.h>
#include <time.h>

static inline uint64_t
gfr_now_ns(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* The gfr_now_ns time ms milliseconds from now. */
static inline uint64_t
gfr_deadline_ns(uint64_t ms)
{
    return gfr_now_ns() + ms * 1000000u;
}

#endif /* GFR_CLOCK_H */
