/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * A process's statistics as text: one JSON object (gfr-stat --json),
 * tables (gfr-stat) or OpenMetrics text (gfr-stat --openmetrics,
 * stats-openmetrics.c), from snapshots already taken.  docs/statistics.md
 * describes both.  Pure: writes to out, any thread.
 */
#ifndef GFR_STATS_RENDER_H
#define GFR_STATS_RENDER_H

#include <stdio.h>
#include <sys/types.h>

#include "gfr_pool.h"
#include "gfr_port_counters.h"
#include "gfr_rdma.h"

struct gfr_stats_view {
    const char *process;   /* its name */
    pid_t pid;
    unsigned nengines;
    struct gfr_rdma_snapshot *const *engines;
    const struct gfr_pool_stats *pool; /* NULL: no pool */
    /* The hw_counters of the ports of the engines' devices. */
    unsigned nports;
    const struct gfr_port_counters *ports;
};

/* 0, or -EIO when out failed. */
int gfr_stats_render_json(FILE *out, const struct gfr_stats_view *view);
int gfr_stats_render_table(FILE *out, const struct gfr_stats_view *view);
/* A connection without addresses yet (still resolving) is left out: its
 * labels would not tell it from another such. */
int gfr_stats_render_openmetrics(FILE *out, const struct gfr_stats_view *view);

#endif /* GFR_STATS_RENDER_H */
