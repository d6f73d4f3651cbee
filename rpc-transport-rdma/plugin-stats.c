/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The process's live statistics (docs/statistics.md): every process that
 * loads rdma.so serves its engines' and its pool's statistics on
 * /run/gluster/rdma/NAME.PID.sock (lib/stats/stat-server.c), NAME being the
 * program's (glusterfsd, glusterfs, glusterd, a gfapi program).  The
 * server starts with the first transport and lives as long as the process
 * (rdma.so is never unloaded: -z nodelete).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gfr_plugin.h"
#include "gfr_stat_server.h"
#include "gfr_stats_render.h"

static pthread_once_t stats_once = PTHREAD_ONCE_INIT;
static struct gfr_stat_server *server; /* set once, by stats_once */

/* The ports of every device the engines poll, each device once, with
 * their hw_counters (GFR_PORT_LISTED at the most): their count; *portsp
 * is the caller's to free.  A port whose counters cannot be read is left
 * out; a provider that keeps none gives a port with none. */
#define GFR_PORT_LISTED 16

static unsigned
read_ports(struct gfr_rdma_snapshot *const *snaps, unsigned nsnaps,
           struct gfr_port_counters **portsp)
{
    struct gfr_port_counters *ports = calloc(GFR_PORT_LISTED, sizeof(*ports));
    const char *sysfs = gfr_sysfs_root();
    unsigned n = 0;

    *portsp = ports;
    if (!ports)
        return 0;
    for (unsigned e = 0; e < nsnaps; e++)
        for (unsigned p = 0; p < snaps[e]->npollers; p++) {
            const char *dev = snaps[e]->pollers[p].device;
            unsigned numbers[GFR_PORT_LISTED];
            int seen = 0, nports;

            for (unsigned i = 0; i < n && !seen; i++)
                seen = strcmp(ports[i].device, dev) == 0;
            nports = seen ? 0 : gfr_port_list(sysfs, dev, numbers, GFR_PORT_LISTED);
            for (int i = 0; i < nports && n < GFR_PORT_LISTED; i++)
                if (gfr_port_counters_read(sysfs, dev, numbers[i], &ports[n]) == 0)
                    n++;
        }
    return n;
}

/* The stat server's render callback: on its thread, never an engine's. */
static int
render(FILE *out, enum gfr_stat_format format, void *cb_arg)
{
    struct gfr_rdma_snapshot **snaps = NULL;
    struct gfr_port_counters *ports = NULL;
    struct gfr_pool_stats pool;
    struct gfr_stats_view view = {.process = program_invocation_short_name,
                                  .pid = getpid()};
    int have_pool = 0;
    int err;

    (void)cb_arg;
    err = gfr_plugin_engines_snapshot(&snaps, &view.nengines, &pool, &have_pool);
    if (err)
        return err;
    view.engines = snaps;
    view.pool = have_pool ? &pool : NULL;
    view.nports = read_ports(snaps, view.nengines, &ports);
    view.ports = ports;
    switch (format) {
    case GFR_STAT_JSON:
        err = gfr_stats_render_json(out, &view);
        break;
    case GFR_STAT_OPENMETRICS:
        err = gfr_stats_render_openmetrics(out, &view);
        break;
    default:
        err = gfr_stats_render_table(out, &view);
        break;
    }
    for (unsigned i = 0; i < view.nengines; i++)
        gfr_rdma_snapshot_free(snaps[i]);
    free(snaps);
    free(ports);
    return err;
}

/* A process that exits normally takes its socket along; one that dies
 * leaves it for the next process with its pid, or for gfr-stat to call
 * gone. */
static void
remove_socket(void)
{
    unlink(gfr_stat_server_path(server));
}

static void
start(void)
{
    char why[256];
    int err = gfr_stat_server_start(gfr_stat_dir(), program_invocation_short_name, render,
                                    NULL, &server, why, sizeof(why));

    if (err) {
        gf_msg(GFR_PLUGIN_DOMAIN, GF_LOG_WARNING, -err, GFR_MSG_STATS,
               "no live statistics for gfr-stat: %s", why);
        return;
    }
    atexit(remove_socket);
    gf_msg(GFR_PLUGIN_DOMAIN, GF_LOG_INFO, 0, GFR_MSG_STATS, "live statistics on %s (gfr-stat %ld)",
           gfr_stat_server_path(server), (long)getpid());
}

void
gfr_plugin_stats_start(void)
{
    pthread_once(&stats_once, start);
}
