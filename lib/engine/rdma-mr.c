/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Memory registration of a connection's transfers: registering the
 * caller's buffers, deregistering them (timed, in the connection's
 * statistics), and revoking a peer's remote access.  One provider quirk
 * (rdma-device.c: rxe replays a READ or WRITE late) makes revoking keep
 * the MRs registered for a grace on the connection's retired list.
 * Locking: the statistics and the retired list under conn->lock, taken
 * here; every function is called without it.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "gfr_clock.h"
#include "engine-res.h"

static void
count_registration(struct gfr_rdma_conn *conn, uint64_t start)
{
    uint64_t spent = gfr_now_ns() - start;

    pthread_mutex_lock(&conn->lock);
    conn->stats.registrations++;
    conn->stats.registration_ns += spent;
    pthread_mutex_unlock(&conn->lock);
}

/* Deregisters n MRs, counting the time.  Any thread, no lock held. */
void
gfr_rdma_mr_deregister(struct gfr_rdma_conn *conn, struct ibv_mr **mr, unsigned n)
{
    uint64_t start;

    if (!n)
        return;
    start = gfr_now_ns();
    for (unsigned i = 0; i < n; i++)
        ibv_dereg_mr(mr[i]);
    count_registration(conn, start);
}

/*
 * Registers [addr, addr + len) on the connection's device with access,
 * counting the time in the connection's statistics; a failure is logged
 * with what was asked.  No lock held (registration is slow).  0 or -errno.
 */
int
gfr_rdma_mr_register(struct gfr_rdma_conn *conn, void *addr, size_t len, int access,
                     struct ibv_mr **mrp)
{
    uint64_t start = gfr_now_ns();
    struct ibv_mr *mr = ibv_reg_mr(conn->dev->pd, addr, len, access);

    count_registration(conn, start);
    if (!mr) {
        int err = errno ? errno : ENOMEM;

        gfr_rdma_conn_log(conn, "registering %zu bytes at %p for a transfer failed: %s", len, addr,
                          strerror(err));
        return -err;
    }
    *mrp = mr;
    return 0;
}

/* Deregisters the retired MRs whose grace has passed (all with all set).
 * Takes conn->lock: not with it held. */
void
gfr_rdma_mr_reap_retired(struct gfr_rdma_conn *conn, int all)
{
    uint64_t now = gfr_now_ns();

    for (;;) {
        struct gfr_rdma_retired *r = NULL;

        pthread_mutex_lock(&conn->lock);
        if (!cds_list_empty(&conn->retired)) {
            r = cds_list_first_entry(&conn->retired, struct gfr_rdma_retired, link);
            if (all || r->expire_ns <= now)
                cds_list_del(&r->link);
            else
                r = NULL;
        }
        pthread_mutex_unlock(&conn->lock);
        if (!r)
            return;
        gfr_rdma_mr_deregister(conn, r->mr, r->n);
        free(r->mem);
        free(r);
    }
}

/* Retires n MRs (and mem, freed after them) for the provider's grace;
 * false when it has none, or no memory to note them. */
static int
retire(struct gfr_rdma_conn *conn, struct ibv_mr **mr, unsigned n, void *mem)
{
    struct gfr_rdma_retired *r;

    r = conn->dev->keep_revoked_mrs ? malloc(sizeof(*r) + n * sizeof(r->mr[0])) : NULL;
    if (!r)
        return 0;
    /* a request the peer sent before the revoke may be replayed until its
     * retries run out: twice the ACK timeout covers one */
    r->expire_ns = gfr_now_ns() + (2 * 4096ull << conn->opts.qp_timeout);
    r->mem = mem;
    r->n = n;
    memcpy(r->mr, mr, n * sizeof(r->mr[0]));
    pthread_mutex_lock(&conn->lock);
    cds_list_add_tail(&r->link, &conn->retired);
    pthread_mutex_unlock(&conn->lock);
    gfr_rdma_mr_reap_retired(conn, 0);
    return 1;
}

/*
 * Ends the peer's remote access to n MRs: deregisters them, or on a
 * provider that replays requests late (dev->keep_revoked_mrs) keeps them on
 * the retired list for that long.  No lock held.
 */
void
gfr_rdma_mr_revoke(struct gfr_rdma_conn *conn, struct ibv_mr **mr, unsigned n)
{
    if (n && !retire(conn, mr, n, NULL))
        gfr_rdma_mr_deregister(conn, mr, n);
}

/*
 * The same for a buffer of ours the peer could reach (a staging buffer):
 * mr is deregistered and mem freed now, or both after the grace, so that
 * a late replay finds the pages still registered and still ours.  Takes
 * ownership of mem.  No lock held.
 */
void
gfr_rdma_mr_revoke_buffer(struct gfr_rdma_conn *conn, struct ibv_mr *mr, void *mem)
{
    if (!retire(conn, &mr, 1, mem)) {
        gfr_rdma_mr_deregister(conn, &mr, 1);
        free(mem);
    }
}
