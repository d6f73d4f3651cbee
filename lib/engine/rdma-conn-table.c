/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * A device's connections by QP number (liburcu's rculfhash, memb flavour).
 *
 * A work completion is traced to its connection by wc->qp_num, never by
 * following its wr_id first: a provider may complete a work request twice
 * (siw flushes a READ it has queued but not started both from its ORQ and
 * as the pending WQE), or after the connection that posted it is gone, and
 * then wr_id points at memory that may have been freed.  A connection is
 * added once its QP exists, before anything is posted to it, and removed
 * (with a grace period waited for) before its QP is destroyed, so a late
 * completion finds nothing.
 *
 * Locking: add and remove on the CM thread; lookups inside urcu_memb
 * read-side sections, on threads registered with urcu_memb (the pollers,
 * their relays and the CM thread).
 */
#define _GNU_SOURCE
#include <errno.h>

#include <urcu/urcu-memb.h>
#include <urcu/rculfhash.h>

#include "engine-res.h"

#ifdef __SANITIZE_THREAD__
#include <sanitizer/tsan_interface.h>
/* ThreadSanitizer does not see liburcu's grace periods (liburcu is not
 * built with it): each lookup publishes its end on the table, and a
 * removal takes that after its grace period, so that a connection freed
 * after a lookup compared it is ordered after that lookup, as RCU orders
 * it.  Without it, a lookup that passed over a connection in its bucket
 * and the connection's free later are reported as a race. */
#define LOOKUP_ENDED(dev) __tsan_release((dev)->conns)
#define GRACE_PERIOD_ENDED(dev) __tsan_acquire((dev)->conns)
#else
#define LOOKUP_ENDED(dev) ((void)0)
#define GRACE_PERIOD_ENDED(dev) ((void)0)
#endif

/* The device's empty table.  At device creation.  0 or -ENOMEM. */
int
gfr_rdma_conn_table_create(struct gfr_rdma_dev *dev)
{
    dev->conns = cds_lfht_new_flavor(64, 64, 0, CDS_LFHT_AUTO_RESIZE, &urcu_memb_flavor, NULL);
    return dev->conns ? 0 : -ENOMEM;
}

/* At device destruction, once every connection has left the table. */
void
gfr_rdma_conn_table_destroy(struct gfr_rdma_dev *dev)
{
    if (dev->conns)
        cds_lfht_destroy(dev->conns, NULL);
    dev->conns = NULL;
}

static int
match_qp(struct cds_lfht_node *node, const void *key)
{
    const struct gfr_rdma_conn *conn = caa_container_of(node, struct gfr_rdma_conn, table_node);

    return conn->qp_num == *(const uint32_t *)key;
}

/* conn's QP was created: its completions find it from now on.  CM thread,
 * before the first post to the QP. */
void
gfr_rdma_conn_table_add(struct gfr_rdma_dev *dev, struct gfr_rdma_conn *conn)
{
    conn->qp_num = conn->qp->qp_num;
    cds_lfht_node_init(&conn->table_node);
    urcu_memb_read_lock();
    cds_lfht_add(dev->conns, conn->qp_num, &conn->table_node);
    urcu_memb_read_unlock();
    conn->in_table = 1;
}

/* Before conn's QP is destroyed (CM thread): after this returns no thread
 * holds or can find the connection through the table. */
void
gfr_rdma_conn_table_remove(struct gfr_rdma_dev *dev, struct gfr_rdma_conn *conn)
{
    if (!conn->in_table)
        return;
    urcu_memb_read_lock();
    cds_lfht_del(dev->conns, &conn->table_node);
    urcu_memb_read_unlock();
    urcu_memb_synchronize_rcu();
    GRACE_PERIOD_ENDED(dev);
    conn->in_table = 0;
}

/*
 * The connection of QP qp_num with a reference taken (the caller drops it
 * with gfr_rdma_conn_put), or NULL when there is none, or it is going (its
 * last reference dropped).  A registered thread.
 */
struct gfr_rdma_conn *
gfr_rdma_conn_table_get(struct gfr_rdma_dev *dev, uint32_t qp_num)
{
    struct gfr_rdma_conn *conn = NULL;
    struct cds_lfht_iter iter;
    struct cds_lfht_node *node;

    urcu_memb_read_lock();
    cds_lfht_lookup(dev->conns, qp_num, match_qp, &qp_num, &iter);
    node = cds_lfht_iter_get_node(&iter);
    if (node) {
        struct gfr_rdma_conn *c = caa_container_of(node, struct gfr_rdma_conn, table_node);

        if (gfr_rdma_conn_tryget(c))
            conn = c;
    }
    urcu_memb_read_unlock();
    LOOKUP_ENDED(dev);
    return conn;
}
