/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * An attempt made again in the background until it works: a brick's rdma
 * listener that cannot listen yet (no RDMA device, no device with its
 * address) tries again every period instead of failing the brick
 * (plugin-conn.c; docs/plugin.md, "Listening before RDMA is there").
 */
#ifndef GFR_PLUGIN_RETRY_H
#define GFR_PLUGIN_RETRY_H

/* One attempt: 0 when it worked (no more attempts), -errno otherwise.
 * Runs on the retry's own thread, never two at once. */
typedef int (*gfr_plugin_retry_fn)(void *cb_arg);

/* Opaque; owned by the caller of gfr_plugin_retry_start, freed by
 * gfr_plugin_retry_stop. */
struct gfr_plugin_retry;

/*
 * Calls attempt(cb_arg) every period_ms on a thread of its own (named
 * name), the first time period_ms from now, until it returns 0 or the
 * retry is stopped.  0, or -errno when the thread cannot start.  Any
 * thread.
 */
int gfr_plugin_retry_start(gfr_plugin_retry_fn attempt, void *cb_arg, unsigned period_ms,
                           const char *name, struct gfr_plugin_retry **retryp);

/*
 * Stops the attempts, waits for one that is running, ends the thread and
 * frees retry: after it, attempt is never called again.  Not from attempt
 * itself.  NULL is a no-op.
 */
void gfr_plugin_retry_stop(struct gfr_plugin_retry *retry);

#endif
