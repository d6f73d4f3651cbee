/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * A shell command for the unit tests that build made-up file trees (a
 * sysfs, say) with mkdir and echo.
 */
#ifndef GFR_TEST_SH_H
#define GFR_TEST_SH_H

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

/* Runs a shell command made from fmt (at most 1023 characters): its exit
 * status. */
static inline int __attribute__((format(printf, 1, 2)))
test_sh(const char *fmt, ...)
{
    char cmd[1024];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(cmd, sizeof(cmd), fmt, ap);
    va_end(ap);
    return system(cmd);
}

#endif /* GFR_TEST_SH_H */
