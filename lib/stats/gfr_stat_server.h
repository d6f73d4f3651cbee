/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * A process's live statistics, served over a unix socket (docs/
 * statistics.md): DIR/NAME.PID.sock, mode 0600, answering one request per
 * connection.  A reader sends one line, "json", "table" or "openmetrics",
 * and reads the answer until the server closes; anything else gets a line
 * starting "error:" that says what is accepted.  gfr-stat is the reader.
 *
 * The server is one thread that serves readers one at a time, off the data
 * path: the render callback takes the snapshot (gfr_rdma_snapshot,
 * gfr_pool_stats_get).  A reader that sends nothing for 1 s, or does not
 * take the answer within 2 s, is cut off; a reader whose uid is neither
 * root nor the server's is refused.  Out of descriptors, the server backs
 * off instead of spinning (gfr_stat_server_accept_failures).
 */
#ifndef GFR_STAT_SERVER_H
#define GFR_STAT_SERVER_H

#include <stdio.h>

/* Where sockets go unless GFR_STAT_DIR is set in the environment. */
#define GFR_STAT_DIR_DEFAULT "/run/gluster/rdma"

enum gfr_stat_format {
    GFR_STAT_JSON,
    GFR_STAT_TABLE,
    GFR_STAT_OPENMETRICS,
};

/* Writes the statistics in format to out; 0 or a negative errno.  Runs on
 * the server's thread. */
typedef int (*gfr_stat_render_fn)(FILE *out, enum gfr_stat_format format, void *cb_arg);

struct gfr_stat_server;

/* The directory sockets go into: $GFR_STAT_DIR, else the default. */
const char *gfr_stat_dir(void);

/*
 * Creates dir (and its parent) if needed, removes the sockets in it whose
 * process is gone (and one of our own name, left by an earlier process
 * with our pid), and starts serving on dir/NAME.PID.sock; name is cut to
 * letters, digits, '-' and '_'.  Any thread.  0, or a negative errno with
 * *why (if not NULL) naming the step and the path that failed.
 */
int gfr_stat_server_start(const char *dir, const char *name, gfr_stat_render_fn render,
                          void *cb_arg, struct gfr_stat_server **server, char *why,
                          size_t why_len);

/* The socket's path. */
const char *gfr_stat_server_path(const struct gfr_stat_server *server);

/* Readers served, and readers cut off or refused, so far. */
unsigned long gfr_stat_server_served(const struct gfr_stat_server *server);
unsigned long gfr_stat_server_dropped(const struct gfr_stat_server *server);

/* Accepts that failed for want of a descriptor or memory.  The server then
 * waits 10 ms before it tries again, doubling up to 1 s, and serves the
 * waiting reader once the accept succeeds. */
unsigned long gfr_stat_server_accept_failures(const struct gfr_stat_server *server);

/* Stops the thread, removes the socket and frees the server.  Not from the
 * render callback. */
void gfr_stat_server_stop(struct gfr_stat_server *server);

/* Parses "NAME.PID.sock" (a file name, not a path): 0 and *pid, name (up
 * to name_len bytes) when it is one.  Pure. */
int gfr_stat_parse_name(const char *file, char *name, size_t name_len, long *pid);

#endif /* GFR_STAT_SERVER_H */
