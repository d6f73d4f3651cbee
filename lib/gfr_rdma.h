/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The RDMA messaging engine: connections over verbs RC queue pairs set up
 * with librdmacm, carrying messages of the wire protocol (docs/wire-
 * protocol.md) with credit-based flow control.  docs/engine.md says what is
 * built and what is planned (bulk transfers, SRQ, pool dispatch).
 *
 * Threads: one CM thread per engine runs connected/disconnected callbacks
 * and accept decisions; received runs in the worker pool or, with
 * dispatch=inline, on the device's poller thread.  disconnected comes after
 * every received callback of the connection has returned.
 *
 * A connection handle stays valid, whatever happens to the connection,
 * until its owner calls gfr_rdma_conn_release (after disconnected, or
 * inside it); calls on a dead connection return -ENOTCONN.  Functions return 0 or a negative errno.  Ownership: the
 * engine owns connections and listeners; a connection stays valid until its
 * disconnected callback has returned (called exactly once, also when a
 * connect attempt fails).
 */
#ifndef GFR_RDMA_H
#define GFR_RDMA_H

#include <stddef.h>
#include <sys/socket.h>

#include "gfr_pool.h"
#include "gfr_rdma_opts.h"

struct gfr_rdma;
struct gfr_rdma_conn;
struct gfr_rdma_listener;

struct gfr_rdma_conn_ops {
    /* The connection is established; messages may be sent. */
    void (*connected)(struct gfr_rdma_conn *conn, void *cb_arg);
    /* A message arrived; data is valid only during the call.  On the
     * accepting side the first messages may arrive before connected has
     * been called (the CM event and the completion race). */
    void (*received)(struct gfr_rdma_conn *conn, const void *data, size_t len,
                     void *cb_arg);
    /* Exactly once per connection: reason is 0 after an orderly
     * disconnect, else a negative errno (-ECONNREFUSED, -ETIMEDOUT,
     * -EPROTO for a peer that broke the protocol, ...).  The connection is
     * freed when this returns. */
    void (*disconnected)(struct gfr_rdma_conn *conn, int reason, void *cb_arg);
};

/* Decides on an incoming connection (on the CM thread): return 0 and set
 * *ops and *cb_arg to accept it, or a negative errno to reject it. */
typedef int (*gfr_rdma_accept_fn)(struct gfr_rdma_listener *listener,
                                  struct gfr_rdma_conn *conn, void *cb_arg,
                                  const struct gfr_rdma_conn_ops **ops,
                                  void **conn_cb_arg);

/*
 * Creates an engine.  With dispatch=pool, received messages are copied out
 * of their receive buffer (which is reposted at once) and handled by a job
 * in pool, one pool client per connection; pool must then not be NULL and
 * must outlive the engine.  With dispatch=inline, pool is ignored and
 * received runs on the poller thread.
 */
int gfr_rdma_create(const struct gfr_rdma_opts *opts, struct gfr_pool *pool,
                    struct gfr_rdma **engine);

/* Disconnects every connection (their callbacks run), closes listeners,
 * joins the threads and frees everything.  Not from an engine thread. */
void gfr_rdma_destroy(struct gfr_rdma *engine);

int gfr_rdma_listen(struct gfr_rdma *engine, const struct sockaddr *addr,
                    int backlog, gfr_rdma_accept_fn accept, void *cb_arg,
                    struct gfr_rdma_listener **listener);

/* Starts connecting to dst (from src if not NULL); the outcome arrives as
 * connected or disconnected. */
int gfr_rdma_connect(struct gfr_rdma *engine, const struct sockaddr *dst,
                     const struct sockaddr *src,
                     const struct gfr_rdma_conn_ops *ops, void *cb_arg,
                     struct gfr_rdma_conn **conn);

/* The most payload one message can carry (inline; bulk comes later). */
size_t gfr_rdma_max_payload(const struct gfr_rdma_conn *conn);

/*
 * Sends a copy of data.  Without credits, or before the connection is
 * established, the message is queued and sent in order as soon as it can
 * be; nothing is dropped while the connection lives.  Any thread.
 * Returns -EMSGSIZE (over gfr_rdma_max_payload), -ENOTCONN (disconnecting
 * or disconnected), -ENOMEM.
 */
int gfr_rdma_send(struct gfr_rdma_conn *conn, const void *data, size_t len);

/* Starts an orderly disconnect; disconnected follows.  Any thread. */
int gfr_rdma_disconnect(struct gfr_rdma_conn *conn);

/*
 * The owner is done with the handle (from disconnected, or after it).  The
 * engine frees the connection once it has been disconnected and released;
 * gfr_rdma_destroy frees connections nobody released.
 */
void gfr_rdma_conn_release(struct gfr_rdma_conn *conn);

/* Counters of one connection, for tests and statistics. */
struct gfr_rdma_conn_stats {
    unsigned long sent;
    unsigned long received;
    unsigned long queued_for_credits; /* sends that had to wait */
    unsigned long credit_updates;     /* CREDIT messages sent */
};
void gfr_rdma_conn_stats(struct gfr_rdma_conn *conn,
                         struct gfr_rdma_conn_stats *stats);

#endif /* GFR_RDMA_H */
