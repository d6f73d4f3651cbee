/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The RDMA messaging engine: connections over verbs RC queue pairs set up
 * with librdmacm, carrying messages of the wire protocol (docs/wire-
 * protocol.md) with credit-based flow control; bodies above the inline
 * threshold move by RDMA READ or WRITE.  docs/engine.md describes it.
 *
 * Threads: one CM thread per engine runs connected/disconnected callbacks
 * and accept decisions; received runs on the device's poller thread
 * (dispatch=direct, the default, and inline) or in the worker pool
 * (dispatch=pool; with direct, while a relay polls in the poller's place
 * and for a connection whose handlers ran long).  disconnected comes after
 * every received and done callback of the connection has returned.
 *
 * On a connection opened with gfr_rdma_connect, every message that is not
 * a reply is taken as a request whose reply will come: with adaptive
 * polling the poller polls for it a while instead of sleeping
 * (reply-spin-max-us; docs/engine.md, "Polling where a reply is
 * expected").
 *
 * Multi-rail (rails=auto in the options of both ends; docs/multi-rail.md):
 * a connection is the lead of a bundle of rails, one queue pair per
 * device, and the owner sees only the lead.  Every rail's callbacks come
 * to the owner as the lead's; gfr_rdma_submit, gfr_rdma_send,
 * gfr_rdma_throttle and gfr_rdma_disconnect on the lead choose or cover
 * the rails; disconnected comes once, when every rail has ended.
 *
 * Functions return 0 or a negative errno.  Ownership: the engine owns
 * connections and listeners.  A connection handle stays valid, whatever
 * happens to the connection, until its owner calls gfr_rdma_conn_release
 * (inside disconnected or after it); calls on a dead connection return
 * -ENOTCONN.  disconnected is called exactly once per connection, also
 * when a connect attempt fails.
 */
#ifndef GFR_RDMA_H
#define GFR_RDMA_H

#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>
#include <sys/uio.h>

#include "gfr_hist.h"
#include "gfr_pool.h"
#include "gfr_rdma_opts.h"

struct gfr_rdma;
struct gfr_rdma_conn;
struct gfr_rdma_listener;

/*
 * Where the engines' diagnostics go (one sentence each, without a trailing
 * newline, naming what failed): by default stderr, prefixed "gfr-rdma: ".
 * Process-wide; call before creating the first engine (the pointer is read
 * by engine threads without a lock).  fn runs on any engine thread.
 */
typedef void (*gfr_rdma_log_fn)(const char *msg, void *arg);
void gfr_rdma_set_log(gfr_rdma_log_fn fn, void *arg);

/*
 * A received message, valid during the received callback.  Its body is
 * head (what travelled inline in the SEND) followed by bulk (what the
 * engine pulled by RDMA READ because the body was larger than the inline
 * threshold; bulk_len 0 otherwise).
 */
struct gfr_rdma_rx {
    uint32_t xid;
    int is_reply;      /* answers the request xid this side sent */
    /* Inside a bundle (transport.rdma.rails): the sender awaits a reply
     * to this request (it submitted it with expects_reply or reply
     * buffers), which must be submitted on this connection's handle:
     * it goes back on the rail the request came on. */
    int awaits_reply;
    /* Inside a bundle, on an awaited request: it is a resend (a copy its
     * sender sent before on a rail it gave up), and it offered a write
     * list for its reply. */
    int resend;
    int offered_write;
    const void *head;
    size_t head_len;
    const void *bulk;
    size_t bulk_len;
    /* Reply: bytes the peer RDMA-wrote into the buffers offered with the
     * request (filled in iovec order), before this message arrived.
     * Inside a bundle, an awaited request: its sender's mark, the oldest
     * xid it awaits (docs/multi-rail.md). */
    size_t written;
};

struct gfr_rdma_conn_ops {
    /* The connection is established; messages may be sent. */
    void (*connected)(struct gfr_rdma_conn *conn, void *cb_arg);
    /* A message arrived.  On the accepting side the first messages may
     * arrive before connected has been called (the CM event and the
     * completion race).  Messages without bulk arrive in the order they
     * were sent; one with bulk arrives once its data has been pulled, so a
     * later small message may overtake it.  In a bundle, messages on
     * different rails keep no order between them. */
    void (*received)(struct gfr_rdma_conn *conn, const struct gfr_rdma_rx *rx,
                     void *cb_arg);
    /* Exactly once per connection: reason is 0 after an orderly
     * disconnect, else a negative errno (-ECONNREFUSED, -ETIMEDOUT,
     * -EPROTO for a peer that broke the protocol, -ECONNRESET on iWARP
     * when the TCP connection under the QP broke while work was under
     * way, as a peer's close can do to a SEND in transmission, -EIO for
     * another failed work request or QP, ...).  Every submitted message's
     * done callback has run before. */
    void (*disconnected)(struct gfr_rdma_conn *conn, int reason, void *cb_arg);
};

/* Decides on an incoming connection (on the CM thread): return 0 and set
 * *ops and *cb_arg to accept it, or a negative errno to reject it. */
typedef int (*gfr_rdma_accept_fn)(struct gfr_rdma_listener *listener,
                                  struct gfr_rdma_conn *conn, void *cb_arg,
                                  const struct gfr_rdma_conn_ops **ops,
                                  void **conn_cb_arg);

/*
 * Creates an engine.  With dispatch=direct or pool, received messages are
 * copied out of their receive buffer (which is reposted at once); pool must
 * then not be NULL and must outlive the engine.  direct: handled on the
 * poller thread once its batch of completions is, a job of pool polling in
 * its place while a handler blocks (gfr_pool_block_begin) or runs long;
 * pool: by a job in pool, one pool client per connection.  With
 * dispatch=inline, pool is ignored and received runs on the poller thread
 * as the completion is handled.
 */
int gfr_rdma_create(const struct gfr_rdma_opts *opts, struct gfr_pool *pool,
                    struct gfr_rdma **engine);

/* Disconnects every connection (their callbacks run), closes listeners,
 * joins the threads and frees everything.  Not from an engine thread. */
void gfr_rdma_destroy(struct gfr_rdma *engine);

/*
 * Listens on addr.  The connections it accepts run by opts (copied; NULL:
 * the engine's), which must equal the engine's on every engine-wide option
 * (gfr_rdma_opts_engine_conflict): -EINVAL otherwise, after a log line
 * naming the option.  Any thread but the engine's.
 */
int gfr_rdma_listen(struct gfr_rdma *engine, const struct sockaddr *addr,
                    int backlog, const struct gfr_rdma_opts *opts,
                    gfr_rdma_accept_fn accept, void *cb_arg,
                    struct gfr_rdma_listener **listener);

/* Stops accepting on listener and frees it: when this returns, its accept
 * callback is not running and will not be called again.  Connections it
 * accepted live on.  Any thread (it waits for the CM thread), before
 * gfr_rdma_destroy, which closes the listeners still open. */
void gfr_rdma_listener_close(struct gfr_rdma_listener *listener);

/* Starts connecting to dst (from src if not NULL); the outcome arrives as
 * connected or disconnected.  The connection runs by opts as
 * gfr_rdma_listen's do. */
int gfr_rdma_connect(struct gfr_rdma *engine, const struct sockaddr *dst,
                     const struct sockaddr *src, const struct gfr_rdma_opts *opts,
                     const struct gfr_rdma_conn_ops *ops, void *cb_arg,
                     struct gfr_rdma_conn **conn);

/* The most body a message can carry inline (without RDMA READ). */
size_t gfr_rdma_max_inline(const struct gfr_rdma_conn *conn);

/* The most body a message can carry at all (the negotiated max-msg minus
 * the header and one segment). */
size_t gfr_rdma_max_msg(const struct gfr_rdma_conn *conn);

/*
 * Sends a copy of data (up to gfr_rdma_max_msg bytes; above the inline
 * threshold the copy is offered to the peer as a read list).  Without
 * credits, or before the connection is established, the message is queued
 * and sent in order as soon as it can be; nothing is dropped while the
 * connection lives.  Any thread.  Returns -EMSGSIZE, -ENOTCONN
 * (disconnecting or disconnected), -ENOMEM.
 */
int gfr_rdma_send(struct gfr_rdma_conn *conn, const void *data, size_t len);

/* Called once per submitted message when the engine has stopped using its
 * buffers; status 0, or a negative errno (-ENOTCONN: the connection ended
 * first; -EREMOTEIO: the peer could not take the message). */
typedef void (*gfr_rdma_done_fn)(void *cb_arg, int status);

/*
 * A zero-copy message.  The engine reads this description during
 * gfr_rdma_submit only; the memory the iovecs point to belongs to the
 * caller and must stay valid and unchanged until done.
 */
struct gfr_rdma_msg {
    uint32_t xid;       /* request: the caller's id; reply: the request's */
    int is_reply;
    const struct iovec *head; /* goes inline when it fits */
    unsigned head_cnt;
    /* Bulk: inline when head and bulk fit together, else RDMA-written
     * into the request's offered buffers (a reply whose bulk fits them) or
     * pulled by the peer with RDMA READ from these very buffers. */
    const struct iovec *bulk;
    unsigned bulk_cnt;
    /* Request: buffers the peer may RDMA-write the reply's bulk into;
     * remote access to them ends when the reply arrives. */
    const struct iovec *reply;
    unsigned reply_cnt;
    /* Request: the peer answers it with a reply (a GlusterFS client's
     * call).  The peer then sends no DONE for a read list this message
     * offers: the reply ends the peer's access to it, so the buffers stay
     * until the reply comes or the connection ends, and done runs then. */
    int expects_reply;
    gfr_rdma_done_fn done; /* may be NULL */
    void *cb_arg;
};

/*
 * Submits msg.  The reply to a request that offered buffers is delivered
 * (received) before the request's done runs, so the reply's data can be
 * read from them there.  done runs on a poller thread or a pool worker,
 * exactly once when this returns 0, never when it fails.  Any thread.
 * Returns -EMSGSIZE (body over gfr_rdma_max_msg), -E2BIG (more reply
 * buffers than a header can list), -EEXIST (another request with this xid
 * still has buffers offered), -ENOTCONN, -ENOMEM, -EINVAL, or what the
 * device said when it refused to register the buffers (-EIO from a device
 * that failed or is being removed: its connections end).
 */
int gfr_rdma_submit(struct gfr_rdma_conn *conn, const struct gfr_rdma_msg *msg);

/*
 * Back-pressure (GlusterFS's rpcsvc calls it above its outstanding-rpc
 * limit).  While on, the connection returns no credits to its peer, so the
 * peer stops sending once it has spent the credits it holds (at most the
 * window); what it still wants to send waits in its own queue.  Nothing is
 * refused or dropped, messages already here are delivered, and this side
 * keeps sending.  Off returns every withheld credit at once.  Any thread,
 * no engine lock held (takes the connection's).  0, -ENOTCONN
 * (disconnecting or disconnected: nothing to hold back), -EINVAL.
 */
int gfr_rdma_throttle(struct gfr_rdma_conn *conn, int on);

/* Starts an orderly disconnect; disconnected follows.  Any thread. */
int gfr_rdma_disconnect(struct gfr_rdma_conn *conn);

/*
 * The owner is done with the handle (from disconnected, or after it).  The
 * engine frees the connection once it has been disconnected and released;
 * gfr_rdma_destroy frees connections nobody released.
 */
void gfr_rdma_conn_release(struct gfr_rdma_conn *conn);

/*
 * The addresses rdma_cm reports for a connection (the peer's, this side's)
 * and for a listener (with the port it bound, also when it was given 0).
 * Copies up to *len bytes into addr and sets *len to the address's size.
 * -ENOTCONN before they are known (a client before its route resolved)
 * or after the connection was freed of its CM id; -EINVAL.
 */
int gfr_rdma_conn_peer_addr(struct gfr_rdma_conn *conn, struct sockaddr *addr,
                            socklen_t *len);
int gfr_rdma_conn_local_addr(struct gfr_rdma_conn *conn, struct sockaddr *addr,
                             socklen_t *len);
int gfr_rdma_listener_addr(struct gfr_rdma_listener *listener, struct sockaddr *addr,
                           socklen_t *len);

/* Counters of one connection, for tests and statistics.  Written under the
 * connection's lock by the thread doing the work. */
struct gfr_rdma_conn_stats {
    unsigned long sent;
    unsigned long received;
    unsigned long bytes_sent;         /* SEND payloads, headers included */
    unsigned long bytes_received;
    unsigned long queued_for_credits; /* sends that had to wait */
    unsigned long credit_updates;     /* CREDIT messages sent */
    unsigned long bulk_pulled;        /* bytes read from the peer */
    unsigned long bulk_pushed;        /* bytes written to the peer */
    unsigned long bulk_offered;       /* messages offered as a read list */
    unsigned long rdma_reads;         /* RDMA READ operations posted */
    unsigned long rdma_writes;        /* RDMA WRITE operations posted (bulk) */
    unsigned long staged_bytes;       /* bulk copied through staging buffers instead */
    unsigned long copied_bytes;       /* payload bytes copied in memory, staging and the
                                       * owner's copies (gfr_rdma_conn_count_copied) included */
    unsigned long registrations;      /* memory registrations (per transfer, and staging buffers) */
    unsigned long registration_ns;    /* time spent registering and deregistering */
    unsigned long errors;             /* problems logged about the connection */
    unsigned long throttles;          /* times back-pressure was put on */
    unsigned long keepalives;         /* liveness probes the peer answered */
    /* Multi-rail (docs/multi-rail.md), counted on the rail concerned: */
    unsigned long failovers;          /* rails of its bundle that ended while it went on */
    unsigned long resends;            /* messages it carried again, lost with another rail */
    unsigned long duplicates;         /* copies it received and dropped: duplicates,
                                       * late copies, stale resends */
};
void gfr_rdma_conn_stats(struct gfr_rdma_conn *conn,
                         struct gfr_rdma_conn_stats *stats);

/* The owner copied n payload bytes of a message of conn in memory (out of
 * a received message into its own buffers): counted in copied_bytes with
 * the engine's own copies, so that it counts every copy a message takes
 * between the owner's buffers and the wire.  Any thread, no lock: an
 * atomic add. */
void gfr_rdma_conn_count_copied(struct gfr_rdma_conn *conn, size_t n);

/*
 * The stages of an RPC that transport.rdma.latency-stats times (docs/
 * engine.md, "Per-stage latency").  A call is a request (GFR_WIRE_MSG) and
 * the reply with its xid.  The client's stages come first, then the
 * server's; "owner" is the embedding program (GlusterFS).
 */
enum gfr_rdma_stage {
    GFR_STAGE_REQ_QUEUE,      /* client: request submitted -> SEND posted */
    GFR_STAGE_REQ_WIRE,       /* client: request posted -> its SEND completed (signaled ones) */
    GFR_STAGE_RTT_POLLING,    /* client: request posted -> reply reaped, poller awake */
    GFR_STAGE_RTT_SLEEPING,   /* client: the same, the poller was asleep */
    GFR_STAGE_REPLY_PULL,     /* client: the reply's bulk pulled by RDMA READ */
    GFR_STAGE_REPLY_DISPATCH, /* client: reply ready -> owner's callback entered */
    GFR_STAGE_REPLY_OWNER,    /* client: in the owner's received callback */
    GFR_STAGE_CALL,           /* client: request submitted -> reply handed to the owner */
    GFR_STAGE_REQ_PULL,       /* server: the request's bulk pulled by RDMA READ */
    GFR_STAGE_REQ_DISPATCH,   /* server: request ready -> owner's callback entered */
    GFR_STAGE_REQ_OWNER,      /* server: in the owner's received callback */
    GFR_STAGE_SERVE,          /* server: request handed -> reply submitted */
    GFR_STAGE_REPLY_QUEUE,    /* server: reply submitted -> SEND posted (RDMA WRITE of its bulk included) */
    GFR_STAGE_REPLY_WIRE,     /* server: reply posted -> its SEND completed (signaled ones) */
    GFR_STAGE_COUNT
};

/* "req_queue", ...: the stage's name in statistics; NULL past the last. */
const char *gfr_rdma_stage_name(enum gfr_rdma_stage stage);
/* One line on what the stage measures. */
const char *gfr_rdma_stage_about(enum gfr_rdma_stage stage);

/* INET6_ADDRSTRLEN, ':' and five digits, in brackets for IPv6. */
#define GFR_RDMA_ADDR_STR 56
#define GFR_RDMA_ERROR_STR 160

/* One connection, as a snapshot saw it. */
struct gfr_rdma_conn_info {
    char peer[GFR_RDMA_ADDR_STR];  /* "HOST:PORT", "" when unknown */
    char local[GFR_RDMA_ADDR_STR];
    const char *state;             /* "ESTABLISHED", ... (static) */
    int is_server;                 /* accepted by a listener */
    /* Multi-rail: the bundle it is a rail of (the server's id for it), 0:
     * none; its rail, 0 for the lead (the owner's handle). */
    uint32_t bundle;
    unsigned rail;
    char device[64];               /* its device's name */
    unsigned poller;               /* the poller its completions go to */
    uint32_t credits_window;       /* negotiated */
    uint32_t credits_ours;         /* messages we may still send */
    uint32_t credits_theirs;       /* messages the peer may still send */
    uint32_t queued;               /* messages waiting for a credit or a slot */
    uint32_t offers;               /* our messages whose buffers the engine holds */
    uint32_t rdma_inflight;        /* READs/WRITEs under way */
    uint32_t send_queue;           /* work requests posted and not yet seen complete */
    int throttled;                 /* back-pressure on: credits withheld */
    uint32_t withheld;             /* credits owed to the peer, not yet returned */
    int reason;                    /* why it failed (negative errno), 0 */
    uint64_t rtt_mean_ns;          /* a client's round trips (gfr_rtt.h): mean */
    uint64_t rtt_dev_ns;           /* and mean deviation; 0: no sample */
    struct gfr_rdma_conn_stats stats;
    char last_error[GFR_RDMA_ERROR_STR]; /* the last problem logged, "" */
};

/* One CQ poller thread.  Its counters are its own, read without a lock. */
struct gfr_rdma_poller_info {
    char device[64];
    unsigned index;
    uint64_t polls;          /* ibv_poll_cq calls */
    uint64_t completions;
    uint64_t reaped_after_sleep; /* completions found by the first poll after a wake-up */
    uint64_t sleeps;         /* times it armed the CQ and waited */
    uint64_t wakeups;        /* of those, ended by a completion event */
    uint64_t asleep_ns;      /* time spent waiting for an event */
    uint64_t spin_ns;        /* time spent polling an empty CQ before sleeping */
    uint64_t alive_ns;       /* since the thread started */
    uint64_t window_ns;      /* adaptive: the current poll window */
    uint64_t kicks;          /* submitters woke it to poll for a reply */
    uint64_t direct;         /* messages whose handlers it ran (dispatch=direct) */
    uint64_t relays;         /* times a pool worker polled in its place */
    uint64_t slow_handlers;  /* handler runs of 20 ms or more: their connection's
                              * next 1,024 messages went to the pool */
    uint64_t timed_sleeps;   /* sleeps until shortly before a reply is due */
    uint64_t timer_wakeups;  /* of those, ended by their timer */
    uint64_t lead_ns;        /* how long before a reply's earliest arrival they end */
};

/* A device port transport.rdma.rails = DEV[:PORT],... names, as the
 * snapshot found it (gfr_rail_ports.h). */
struct gfr_rdma_rail_port_info {
    char device[64];
    unsigned port;
    int up;                         /* active, on an interface with an address */
    char netdev[16];                /* its interface, "" when none was found */
    char address[GFR_RDMA_ADDR_STR]; /* up: its interface's first address, "ADDR/PREFIX" */
    char why[160];                  /* not up: what it lacks */
};

/* What gfr_rdma_snapshot saw.  Owned by the caller: gfr_rdma_snapshot_free. */
struct gfr_rdma_snapshot {
    const char *poll_mode;
    const char *dispatch;
    int latency_stats;       /* the stages below are being recorded */
    unsigned nconns;
    struct gfr_rdma_conn_info *conns;
    unsigned npollers;
    struct gfr_rdma_poller_info *pollers;
    uint64_t untraced;       /* calls whose stamps another call's took */
    struct gfr_hist stage[GFR_STAGE_COUNT];
    /* rails = DEV[:PORT],...: each named port, read at the snapshot; 0
     * with rails off or auto. */
    unsigned nrail_ports;
    struct gfr_rdma_rail_port_info rail_ports[GFR_RDMA_MAX_RAIL_DEVICES];
};

/*
 * Takes a snapshot of an engine: its live connections, its pollers, the
 * stage histograms, and the device ports rails names (read from sysfs and
 * the interfaces' addresses, outside every lock).  It holds the engine's
 * lock while it walks the connections (the CM thread waits meanwhile) and
 * each connection's lock for the copy of its counters (a few hundred
 * bytes); pollers, pool workers and submitters never wait for it
 * otherwise.  Any thread but an engine's own.  0, -ENOMEM or -EINVAL.
 */
int gfr_rdma_snapshot(struct gfr_rdma *engine, struct gfr_rdma_snapshot **snap);
void gfr_rdma_snapshot_free(struct gfr_rdma_snapshot *snap);

#endif /* GFR_RDMA_H */
