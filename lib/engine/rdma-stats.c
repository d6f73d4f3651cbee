/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Snapshots of an engine for statistics (gfr_rdma_snapshot): its
 * connections, its pollers and the stage histograms of rdma-trace.c.
 * Locking: gfr_rdma.h; the connections and devices are found on the
 * engine's lists under engine->lock, which keeps them from being
 * finalized while they are read.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <urcu/system.h>
#include <urcu/uatomic.h>

#include "gfr_addr.h"
#include "gfr_clock.h"
#include "gfr_port_counters.h"
#include "gfr_rail_ports.h"
#include "engine-conn.h"

/* "HOST:PORT" ("[HOST]:PORT" for IPv6), "" for no address. */
static void
addr_str(const struct sockaddr *sa, char out[GFR_RDMA_ADDR_STR])
{
    char host[INET6_ADDRSTRLEN];
    unsigned port;

    out[0] = '\0';
    if (!sa || (sa->sa_family != AF_INET && sa->sa_family != AF_INET6))
        return;
    gfr_addr_host_port(sa, host, &port);
    snprintf(out, GFR_RDMA_ADDR_STR, sa->sa_family == AF_INET6 ? "[%s]:%u" : "%s:%u", host,
             port);
}

static const char *
device_name(const struct gfr_rdma_dev *dev)
{
    return dev && dev->verbs ? ibv_get_device_name(dev->verbs->device) : "";
}

static uint32_t
count_offers_locked(const struct gfr_rdma_conn *conn)
{
    const struct gfr_rdma_offer *offer;
    uint32_t n = 0;

    for (int b = 0; b < GFR_RDMA_XID_BUCKETS; b++)
        cds_list_for_each_entry(offer, &conn->offers[b], link)
            n++;
    return n;
}

/* Caller holds engine->lock (conn is not finalized meanwhile). */
static void
conn_info(struct gfr_rdma_conn *conn, struct gfr_rdma_conn_info *info)
{
    const struct gfr_rdma_pending *p;

    pthread_mutex_lock(&conn->lock);
    if (conn->id && conn->addrs_known) { /* rdma_cm's until then */
        addr_str(rdma_get_peer_addr(conn->id), info->peer);
        addr_str(rdma_get_local_addr(conn->id), info->local);
    }
    info->state = gfr_rdma_conn_state_str(conn->state);
    info->is_server = conn->is_server;
    info->bundle = conn->bundle_id;
    info->rail = conn->rail;
    snprintf(info->device, sizeof(info->device), "%s", device_name(conn->dev));
    info->poller = conn->poller ? conn->poller->index : 0;
    info->credits_window = conn->credits.window;
    info->credits_ours = conn->credits.send_avail;
    info->credits_theirs = conn->credits.peer_avail;
    cds_list_for_each_entry(p, &conn->pending, link)
        info->queued++;
    info->offers = count_offers_locked(conn);
    info->rdma_inflight = conn->rdma_inflight;
    info->send_queue = gfr_rdma_sq_outstanding_locked(conn);
    info->throttled = conn->credits.withheld;
    info->withheld = conn->credits.pending_grant;
    info->reason = conn->reason;
    info->rtt_mean_ns = conn->rtt.srtt_ns;
    info->rtt_dev_ns = conn->rtt.rttvar_ns;
    pthread_mutex_unlock(&conn->lock);
    gfr_rdma_conn_read_stats(conn, &info->stats, info->last_error);
}

/* The poller's counters are its own thread's: read without a lock. */
static void
poller_info(const struct gfr_rdma_poller *p, struct gfr_rdma_poller_info *info,
            uint64_t now)
{
    snprintf(info->device, sizeof(info->device), "%s", device_name(p->dev));
    info->index = p->index;
    info->polls = CMM_LOAD_SHARED(p->st_polls);
    info->completions = CMM_LOAD_SHARED(p->st_completions);
    info->reaped_after_sleep = CMM_LOAD_SHARED(p->st_reaped_after_sleep);
    info->sleeps = CMM_LOAD_SHARED(p->st_sleeps);
    info->wakeups = CMM_LOAD_SHARED(p->st_wakeups);
    info->asleep_ns = CMM_LOAD_SHARED(p->st_asleep_ns);
    info->spin_ns = CMM_LOAD_SHARED(p->st_spin_ns);
    info->window_ns = CMM_LOAD_SHARED(p->st_window_ns);
    info->kicks = uatomic_read(&p->st_kicks);
    info->direct = uatomic_read(&p->st_direct);
    info->relays = uatomic_read(&p->st_relays);
    info->slow_handlers = uatomic_read(&p->st_slow_handlers);
    info->timed_sleeps = CMM_LOAD_SHARED(p->st_timed_sleeps);
    info->timer_wakeups = CMM_LOAD_SHARED(p->st_timer_wakeups);
    info->lead_ns = uatomic_read(&p->lead_ns);
    info->alive_ns = p->started_ns && now > p->started_ns ? now - p->started_ns : 0;
}

/* The device ports rails names, as they are now. */
static void
rail_ports_info(const struct gfr_rdma_opts *opts, struct gfr_rdma_snapshot *snap)
{
    struct gfr_rail_port ports[GFR_RDMA_MAX_RAIL_DEVICES];
    int n = gfr_rail_ports_read(gfr_sysfs_root(), opts, ports, GFR_RDMA_MAX_RAIL_DEVICES);

    for (int i = 0; i < n; i++) {
        struct gfr_rdma_rail_port_info *info = &snap->rail_ports[i];

        _Static_assert(sizeof(info->device) == sizeof(ports[i].dev.name) &&
                           sizeof(info->netdev) == sizeof(ports[i].netdev) &&
                           sizeof(info->why) == sizeof(ports[i].why),
                       "a rail port's names are copied whole");
        memcpy(info->device, ports[i].dev.name, sizeof(info->device));
        memcpy(info->netdev, ports[i].netdev, sizeof(info->netdev));
        info->port = ports[i].dev.port;
        info->up = ports[i].usable;
        if (ports[i].usable)
            gfr_rail_port_address(&ports[i], info->address, sizeof(info->address));
        else
            memcpy(info->why, ports[i].why, sizeof(info->why));
    }
    snap->nrail_ports = n > 0 ? (unsigned)n : 0;
}

int
gfr_rdma_snapshot(struct gfr_rdma *engine, struct gfr_rdma_snapshot **snapp)
{
    struct gfr_rdma_snapshot *snap;
    struct gfr_rdma_conn *conn;
    struct gfr_rdma_dev *dev;
    unsigned nconns = 0, npollers = 0;
    uint64_t now;

    if (!engine || !snapp)
        return -EINVAL;
    snap = calloc(1, sizeof(*snap));
    if (!snap)
        return -ENOMEM;
    snap->poll_mode = gfr_poll_mode_str(engine->opts.poll_mode);
    snap->dispatch = gfr_dispatch_str(engine->opts.dispatch);
    snap->latency_stats = engine->trace;

    pthread_mutex_lock(&engine->lock);
    cds_list_for_each_entry(conn, &engine->conns, link)
        nconns++;
    cds_list_for_each_entry(dev, &engine->devices, link)
        npollers += dev->npollers;
    snap->conns = calloc(nconns ? nconns : 1, sizeof(*snap->conns));
    snap->pollers = calloc(npollers ? npollers : 1, sizeof(*snap->pollers));
    if (!snap->conns || !snap->pollers) {
        pthread_mutex_unlock(&engine->lock);
        gfr_rdma_snapshot_free(snap);
        return -ENOMEM;
    }
    cds_list_for_each_entry(conn, &engine->conns, link)
        conn_info(conn, &snap->conns[snap->nconns++]);
    now = gfr_now_ns();
    cds_list_for_each_entry(dev, &engine->devices, link)
        for (unsigned i = 0; i < dev->npollers; i++)
            if (dev->pollers[i].started)
                poller_info(&dev->pollers[i], &snap->pollers[snap->npollers++], now);
    pthread_mutex_unlock(&engine->lock);

    rail_ports_info(&engine->opts, snap);
    snap->untraced = uatomic_read(&engine->untraced);
    for (int s = 0; s < GFR_STAGE_COUNT; s++)
        gfr_hist_snapshot(&engine->stage[s], &snap->stage[s]);
    *snapp = snap;
    return 0;
}

void
gfr_rdma_snapshot_free(struct gfr_rdma_snapshot *snap)
{
    if (!snap)
        return;
    free(snap->conns);
    free(snap->pollers);
    free(snap);
}
