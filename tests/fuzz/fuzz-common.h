/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * What the fuzz targets share: buffers of exactly the size a peer sent, so
 * that AddressSanitizer reports any read past them, and the abort libFuzzer
 * reports as a crash (with the input saved) when an oracle disagrees.
 */
#ifndef GFR_FUZZ_COMMON_H
#define GFR_FUZZ_COMMON_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* len bytes of heap (one when len is 0, so that it is still a buffer). */
static inline uint8_t *
fuzz_alloc(size_t len)
{
    uint8_t *p = malloc(len ? len : 1);

    if (!p)
        abort();
    return p;
}

/* A copy of p[0, len) in a buffer of its own; the caller frees it. */
static inline uint8_t *
fuzz_copy(const uint8_t *p, size_t len)
{
    uint8_t *d = fuzz_alloc(len);

    memcpy(d, p, len);
    return d;
}

/* An oracle disagrees: says which (detail may be NULL) and aborts. */
static inline void
fuzz_disagree(const char *target, const char *what, const char *detail)
{
    fprintf(stderr, "%s: %s%s%s%s\n", target, what, detail ? " (" : "", detail ? detail : "",
            detail ? ")" : "");
    abort();
}

#endif /* GFR_FUZZ_COMMON_H */
