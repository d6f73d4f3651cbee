/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * A device's asynchronous events (ibv_get_async_event), read by the CM
 * thread.  A port that goes down (IBV_EVENT_PORT_ERR) ends every
 * established connection on it at once, and a QP or device the adapter
 * reports broken ends the connections on it: nothing is posted to them
 * any more.
 *
 * Why at once, and not only when the RC retries run out: a port that is
 * down carries none of them, and on Linux 6.1's rxe posting to it can
 * loop in the posting thread's system call (docs/softroce.md, "rxe's
 * requester loop"); a QP in the error state sends nothing.  GlusterFS
 * reconnects by itself once the port is back.
 *
 * Threads: the CM thread only.  Devices are created and freed on it, and
 * connections are finalized on it, so the device list it polls and the
 * QPs it moves to error stay valid without engine->lock held.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <poll.h>
#include <string.h>

#include <urcu/uatomic.h>

#include "engine-conn.h"

/* Fills pfds and devs with the async fds of up to max devices still
 * delivering events; returns how many.  Takes engine->lock. */
unsigned
gfr_rdma_async_fds(struct gfr_rdma *engine, struct pollfd *pfds,
                   struct gfr_rdma_dev **devs, unsigned max)
{
    struct gfr_rdma_dev *dev;
    unsigned n = 0;

    pthread_mutex_lock(&engine->lock);
    cds_list_for_each_entry(dev, &engine->devices, link) {
        if (n == max)
            break;
        if (dev->async_closed)
            continue;
        pfds[n] = (struct pollfd){.fd = dev->verbs->async_fd, .events = POLLIN};
        devs[n++] = dev;
    }
    pthread_mutex_unlock(&engine->lock);
    return n;
}

/*
 * Moves the QP to error without conn->lock first: a thread looping in
 * rxe's post (see above) holds that lock until the QP stops transmitting.
 * The CM thread may: finalisation, which destroys the QP, runs on it too,
 * and verbs calls are thread-safe.  The fault is recorded first, so that a
 * poller that sees the QP's flushed completions before this takes the
 * lock ends the connection with this reason, not as an orderly
 * disconnect.  Then the connection fails as usual, under its lock.  On
 * iWARP the QP moves under the lock instead: there a work request posted
 * after the move never completes (siw) and nothing loops in a post, so no
 * other thread may post in between.  1 when this ended it, 0 when it was
 * ending already.
 */
static int
end_conn(struct gfr_rdma_conn *conn, int reason)
{
    struct ibv_qp_attr attr = {.qp_state = IBV_QPS_ERR};
    int ended;

    gfr_rdma_conn_fault(conn, reason);
    if (conn->qp && !conn->dev->iwarp)
        ibv_modify_qp(conn->qp, &attr, IBV_QP_STATE);
    pthread_mutex_lock(&conn->lock);
    ended = conn->state != GFR_CONN_DISCONNECTING;
    gfr_rdma_conn_fail_locked(conn, reason);
    pthread_mutex_unlock(&conn->lock);
    return ended;
}

/* Ends the connections match() picks; returns how many it ended.
 * Collects them under engine->lock and ends them without it (conn->lock
 * is never taken under engine->lock); only the CM thread frees
 * connections, so the batch stays valid. */
static unsigned
end_conns(struct gfr_rdma *engine, gfr_rdma_conn_match_fn match, const void *arg, int reason)
{
    struct gfr_rdma_conn *batch[64];
    const unsigned max = sizeof(batch) / sizeof(batch[0]);
    unsigned ended = 0;
    unsigned seen = 0;
    unsigned n;

    do {
        n = gfr_rdma_conns_collect(engine, match, arg, seen, batch, max);
        for (unsigned i = 0; i < n; i++)
            ended += (unsigned)end_conn(batch[i], reason);
        seen += n;
    } while (n == max);
    return ended;
}

struct port_ref {
    const struct gfr_rdma_dev *dev;
    uint8_t port;
};

static int
on_port(const struct gfr_rdma_conn *conn, const void *arg)
{
    const struct port_ref *ref = arg;

    /* was_connected: read on the CM thread, which writes it. */
    return conn->was_connected && conn->dev == ref->dev && conn->id &&
           conn->id->port_num == ref->port;
}

static int
on_dev(const struct gfr_rdma_conn *conn, const void *arg)
{
    return conn->was_connected && conn->dev == arg;
}

static int
has_qp(const struct gfr_rdma_conn *conn, const void *arg)
{
    return conn->qp == arg;
}

/* A QP on the SRQ in the error state takes no more receive buffers, and
 * the completions of those it took are in the CQ: its connection may go
 * on to the CQ pass before its QP is destroyed (gfr_rdma_conn_quiesce),
 * and its device is known to raise the event.
 * Takes engine->lock; the QP is alive, as only this thread destroys QPs. */
static void
last_wqe_reached(struct gfr_rdma *engine, const struct ibv_qp *qp)
{
    struct gfr_rdma_conn *conn;

    pthread_mutex_lock(&engine->lock);
    cds_list_for_each_entry(conn, &engine->conns, link)
        if (conn->qp == qp) {
            uatomic_set(&conn->last_wqe_reached, 1);
            if (conn->dev)
                conn->dev->last_wqe_missed = 0; /* it raises them */
        }
    pthread_mutex_unlock(&engine->lock);
}

/* Ends the connection of a QP the adapter reports broken, and says so
 * against that connection, naming its peer: a server has many, and the
 * device alone does not tell which one sent what broke the QP.  Called on
 * the CM thread, which alone frees connections, so the collected one stays
 * valid; takes engine->lock, then conn->lock, never together. */
static void
qp_failed(struct gfr_rdma *engine, struct gfr_rdma_dev *dev, const struct ibv_async_event *ev)
{
    /* On iWARP a fatal QP means its stream broke: siw raises it with the
     * completion of a work request that the peer's close or reset cut off
     * (rdma-cq.c failure_reason), and the two reach us in either order,
     * so both end the connection as reset.  siw also raises it for a
     * message that the receive buffer cannot hold, which its receive
     * completion reports too, whichever comes first. */
    int reset = ev->event_type == IBV_EVENT_QP_FATAL && dev->iwarp;
    struct gfr_rdma_conn *conn;

    if (gfr_rdma_conns_collect(engine, has_qp, ev->element.qp, 0, &conn, 1) == 0 ||
        !end_conn(conn, reset ? -ECONNRESET : -EIO))
        return;
    gfr_rdma_conn_log(conn, "%s: %s on QP %u: disconnecting%s",
                      ibv_get_device_name(dev->verbs->device),
                      ibv_event_type_str(ev->event_type), ev->element.qp->qp_num,
                      reset ? " (on iWARP: the TCP stream under the QP failed, or a "
                              "message did not fit its receive buffer)"
                            : "");
}

static void
handle_event(struct gfr_rdma *engine, struct gfr_rdma_dev *dev, const struct ibv_async_event *ev)
{
    const char *name = ibv_get_device_name(dev->verbs->device);
    unsigned n;

    switch (ev->event_type) {
    case IBV_EVENT_PORT_ERR: {
        struct port_ref ref = {dev, (uint8_t)ev->element.port_num};

        n = end_conns(engine, on_port, &ref, -ENETDOWN);
        gfr_rdma_log("%s port %d went down (%s): %u connection(s) on it disconnected",
                     name, ev->element.port_num, ibv_event_type_str(ev->event_type), n);
        break;
    }
    case IBV_EVENT_PORT_ACTIVE:
        gfr_rdma_log("%s port %d is active again", name, ev->element.port_num);
        break;
    case IBV_EVENT_DEVICE_FATAL:
        n = end_conns(engine, on_dev, dev, -EIO);
        gfr_rdma_log("%s: %s: %u connection(s) on it disconnected", name,
                     ibv_event_type_str(ev->event_type), n);
        /* Dead for good: no new connection gets it, and its resources
         * are freed once its connections are, as on removal. */
        gfr_rdma_dev_removed(engine, dev->verbs);
        break;
    case IBV_EVENT_QP_FATAL:
    case IBV_EVENT_QP_REQ_ERR:
    case IBV_EVENT_QP_ACCESS_ERR:
        qp_failed(engine, dev, ev);
        break;
    case IBV_EVENT_CQ_ERR:
        for (unsigned i = 0; i < dev->npollers; i++)
            if (dev->pollers[i].cq == ev->element.cq)
                gfr_rdma_poller_broken(&dev->pollers[i], ibv_event_type_str(ev->event_type));
        break;
    case IBV_EVENT_QP_LAST_WQE_REACHED:
        last_wqe_reached(engine, ev->element.qp);
        break;
    case IBV_EVENT_SRQ_ERR:
        gfr_rdma_log("%s: %s: the shared receive queue is broken; its connections end "
                     "as their receives fail", name, ibv_event_type_str(ev->event_type));
        break;
    default:
        break; /* COMM_EST, SRQ_LIMIT_REACHED, GID_CHANGE, ... */
    }
}

/* Reads and handles every event waiting on dev (revents from poll).
 * Takes engine->lock and conn->lock in turn, never together. */
void
gfr_rdma_async_handle(struct gfr_rdma *engine, struct gfr_rdma_dev *dev, short revents)
{
    struct ibv_async_event ev;

    while ((revents & POLLIN) && ibv_get_async_event(dev->verbs, &ev) == 0) {
        /* Acked first: destroying a QP waits for its events' acks. */
        struct ibv_async_event copy = ev;

        ibv_ack_async_event(&ev);
        handle_event(engine, dev, &copy);
    }
    /* A device the kernel has taken away (rdma link delete) keeps its fd
     * readable for ever with an error: polling it would spin. */
    if (revents & (POLLERR | POLLHUP | POLLNVAL)) {
        dev->async_closed = 1;
        gfr_rdma_log("%s: its async events ended (the device is going away)",
                     ibv_get_device_name(dev->verbs->device));
    }
}
