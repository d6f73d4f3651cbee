/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The engine's shared state.  Who touches what:
 *  - engine lists (devices, conns, listeners) and the reap list: under
 *    engine->lock;
 *  - a connection's send side (slots, pending queue, credits), its state,
 *    its offers, the peer's write lists and its transfers: under
 *    conn->lock;
 *  - conn->outstanding: references, uatomic: one for the CM side until no
 *    CM event can come (cm_done), one per posted work request, one per
 *    message in the worker pool; the thread that drops the last queues the
 *    connection for the CM thread to free, so a poller handling a
 *    completion always sees a live connection;
 *  - CM events are handled only on the CM thread, which also runs every
 *    finalisation, so no event can arrive for a freed connection.
 */
#ifndef GFR_RDMA_INTERNAL_H
#define GFR_RDMA_INTERNAL_H

#include <errno.h>
#include <pthread.h>
#include <stdint.h>

#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>
#include <urcu/list.h>
#include <urcu/rculfhash.h>
#include <urcu/uatomic.h>
#include <urcu/wfcqueue.h>

#include "gfr_cm_private.h"
#include "gfr_credits.h"
#include "gfr_pool.h"
#include "gfr_rtt.h"
#include "gfr_rdma.h"
#include "gfr_spin_policy.h"
#include "gfr_wire.h"
#include "gfr_xfer.h"

/*
 * Where a connection is.  It changes only through
 * gfr_rdma_conn_set_state_locked (rdma-qp.c), which refuses every step but
 * these: NEW → RESOLVING_ADDR → RESOLVING_ROUTE → CONNECTING (a client),
 * NEW → CONNECTING (a server), CONNECTING → ESTABLISHED, and any state →
 * DISCONNECTING, which is final.  conn->state is written under conn->lock
 * and read under it, except by the CM thread's timers, which read it under
 * engine->lock alone (gfr_rdma_conn_state).
 */
enum gfr_conn_state {
    GFR_CONN_NEW,             /* created, not yet on its way */
    GFR_CONN_RESOLVING_ADDR,  /* client: rdma_resolve_addr issued */
    GFR_CONN_RESOLVING_ROUTE, /* client: rdma_resolve_route issued */
    GFR_CONN_CONNECTING,      /* connect sent / accept sent */
    GFR_CONN_ESTABLISHED,     /* messages flow */
    GFR_CONN_DISCONNECTING,   /* QP in error, work requests flushing */
};

enum gfr_wr_kind {
    GFR_WR_RECV,
    GFR_WR_SEND,
    GFR_WR_RDMA,  /* a READ or WRITE of a transfer */
    GFR_WR_DRAIN, /* posted after the QP went to error: retires the rest */
    GFR_WR_KEEPALIVE, /* the liveness probe (rdma-conn.c gfr_rdma_conn_keepalive) */
};

struct gfr_rdma_offer;
struct gfr_rdma_xfer;

/* The context of one work request (its wr_id). */
struct gfr_rdma_wr {
    struct gfr_rdma_conn *conn;
    uint32_t slot;
    uint8_t kind;                 /* enum gfr_wr_kind */
    /* A connection's own receive: posted and not yet completed (written
     * under conn->lock, or by its CQ's poll_lock holder). */
    uint8_t posted;
    struct gfr_rdma_offer *offer; /* SEND: released when it completes */
    struct gfr_rdma_xfer *xfer;   /* RDMA */
    /* SEND of a traced data message: when it was posted and the stage its
     * completion ends (rdma-trace.c), 0 / GFR_STAGE_COUNT: none.  Under
     * conn->lock. */
    uint64_t trace_posted_ns;
    uint8_t trace_stage;
};

/* The size classes of the engine's registered buffers, pull and staging
 * (64 KiB, 256 KiB, 1 MiB, 4 MiB; rdma-pbuf.c). */
#define GFR_BUF_CLASSES 4

/* Work completions reaped per ibv_poll_cq. */
#define GFR_POLL_BATCH 32

/* A registered buffer RDMA READs pull into (rdma-pbuf.c). */
struct gfr_rdma_pbuf {
    struct cds_wfcq_node node;       /* on its poller's returns */
    struct gfr_rdma_pbuf *next_free; /* on its poller's free list */
    struct gfr_rdma_poller *home;    /* NULL: a one-off, freed on put */
    int cls;
    struct ibv_mr *mr;
    uint8_t *mem;
};

/* What a staging buffer's memory region allows (rdma-sbuf.c). */
enum gfr_sbuf_kind {
    GFR_SBUF_LOCAL,  /* the source of a push: no remote access */
    GFR_SBUF_REMOTE, /* a read list or a reply's landing: remote read and write */
    GFR_SBUF_KINDS,
};

/* A connection's registered buffer for the bulk of its own messages
 * (rdma-sbuf.c). */
struct gfr_rdma_sbuf {
    struct gfr_rdma_sbuf *next_free; /* on its connection's free list */
    enum gfr_sbuf_kind kind;
    int cls;
    struct ibv_mr *mr;
    void *mem;
};

/* One CQ with its completion channel and the thread that polls it. */
struct gfr_rdma_poller {
    struct gfr_rdma_dev *dev;
    struct ibv_comp_channel *channel;
    struct ibv_cq *cq;
    int cq_size;
    int cq_reserved; /* entries promised to QPs, under engine->lock */
    unsigned index;
    pthread_t thread;
    int started;
    int stopping;
    /* Pull buffers: free lists only this poller touches, and what other
     * threads gave back (wait-free pushes, emptied by this poller). */
    struct gfr_rdma_pbuf *pbuf_free[GFR_BUF_CLASSES];
    unsigned pbuf_nfree[GFR_BUF_CLASSES];
    struct __cds_wfcq_head pbuf_returns_head;
    struct cds_wfcq_tail pbuf_returns_tail;
    /* Completions the CM thread made for work requests the provider will
     * never complete (gfr_rdma_poller_inject): wait-free pushes, handed on
     * by whoever polls, as if the CQ had given them. */
    struct __cds_wfcq_head injected_head;
    struct cds_wfcq_tail injected_tail;
    /* Statistics: written by the poller thread alone (CMM_STORE_SHARED),
     * read by snapshots (CMM_LOAD_SHARED); see gfr_rdma_poller_info. */
    uint64_t st_polls, st_completions, st_reaped_after_sleep;
    uint64_t st_sleeps, st_wakeups, st_asleep_ns, st_spin_ns, st_window_ns;
    uint64_t st_timed_sleeps, st_timer_wakeups;
    uint64_t started_ns;
    int woke; /* the polling thread's own (read by its completion handlers):
               * its last wait ended by an event and no poll has found a
               * completion since */
    /* Written by any thread (uatomic): submitters kicking it awake,
     * relays started, handlers run on the poller thread and those of them
     * that ran slow. */
    uint64_t st_kicks, st_relays, st_direct, st_slow_handlers;
    /* Polls that found the CQ empty: written by the poll_lock holder
     * alone (CMM_STORE_SHARED), read by the CM thread, whose CQ pass
     * (gfr_rdma_poller_pass_begin) waits for two more. */
    unsigned long empty_polls;
    /* Its CQ is broken (a negative ibv_poll_cq, IBV_EVENT_CQ_ERR): set
     * once (uatomic) by whoever saw it; the poller then stops polling and
     * lets go of poll_lock, and the CM thread ends the connections on it
     * and completes their work requests as flushed (rdma-cq.c), then sets
     * abandoned (CM thread's own). */
    int broken;
    int abandoned;

    /* Polling where a reply is expected (rdma-poller.c), uatomic, any
     * thread: requests of its client connections waiting for replies, the
     * time until which polling for them pays, whether the poller is going
     * to sleep or asleep (then a submitter kicks kick_fd). */
    unsigned long awaiting;
    uint64_t expect_from_ns, expect_until_ns;
    int asleep;
    int kick_fd;
    /* Spin or sleep (gfr_spin_policy.h): the poll_lock holder's own rule.
     * uatomic, for submitters too: how long before a reply's earliest
     * arrival a timed sleep ends, and timer_fd, the timer that ends one
     * (set by the poller, or by a submitter for a sleeping poller), with
     * when it fires (0: not set). */
    struct gfr_spin_policy spin_policy;
    uint64_t lead_ns;
    int timer_fd;
    uint64_t timer_at_ns;

    /* Only the thread holding poll_lock polls the CQ, waits on its channel
     * and touches what the lines above say is the poller's own: the
     * poller thread, or while that runs handlers (dispatch=direct) the
     * relay, a pool job that polls in its place. */
    pthread_mutex_t poll_lock;
    int relaying; /* the holder is the relay: deliveries go to the pool */
    /* dispatch=direct: the deliveries of the current batch of completions,
     * run once the batch is handled (the holder's own). */
    struct gfr_pool_job *direct[GFR_POLL_BATCH];
    unsigned ndirect;
    /* The poller thread runs handlers, poll_lock released (uatomic):
     * since when, and how many runs began; the relay's job, and whether
     * it is asked for or running (0 / 1). */
    int handling;
    uint64_t handling_since_ns;
    unsigned long handling_seq;
    int relay_asked;
    struct gfr_pool_job relay_job;
    unsigned long watch_seq; /* CM thread: handling_seq at its last look */
};

/* One receive buffer of a device's SRQ; wr.conn is NULL (the completion's
 * QP number names the connection), wr.posted says it is posted (written by
 * the thread that posts it, read by the poller that completes it: one at a
 * time).  Its wr_id is &wr | GFR_WR_ID_SRQ. */
struct gfr_rdma_rbuf {
    struct gfr_rdma_wr wr;
    uint8_t *addr;
    uint32_t lkey;
};

/* Set in the wr_id of an SRQ buffer (struct gfr_rdma_wr is aligned to 8):
 * its completion is known for one before any memory is read through it. */
#define GFR_WR_ID_SRQ 1u

struct gfr_rdma_rchunk;

/* A device's shared receive queue (rdma-srq.c). */
struct gfr_rdma_srq {
    struct ibv_srq *srq;
    uint32_t buf_size;
    uint32_t max;   /* buffers it may hold */
    uint32_t total; /* buffers it owns, under engine->lock */
    uint32_t promised; /* credits of live connections, under engine->lock */
    unsigned long posted; /* uatomic */
    int low_reported;     /* uatomic */
    int full_reported;
    struct gfr_rdma_rchunk *chunks;
};

struct gfr_rdma_dev {
    struct cds_list_head link;
    struct gfr_rdma *engine;
    struct ibv_context *verbs;
    struct ibv_pd *pd;
    uint32_t max_inline;       /* inline bytes a new QP asks for first */
    /* iWARP (transport_type): no RNR, READ sinks need remote write, posts
     * on a QP in error fail or never complete, IB attributes ignored
     * (docs/providers.md). */
    int iwarp;
    /* The iWARP liveness probe (rdma-conn.c gfr_rdma_conn_keepalive): a
     * byte peers may RDMA READ (probe_src_mr, offered in the CM private
     * data) and where this side's probes land (probe_sink_mr: an iWARP
     * READ sink needs remote write).  NULL elsewhere, or when they could
     * not be registered.  Set at creation, freed with the device. */
    uint8_t *probe_buf;
    struct ibv_mr *probe_src_mr;
    struct ibv_mr *probe_sink_mr;
    uint32_t max_rd_atom;      /* RDMA READs a QP answers at once */
    uint32_t max_init_rd_atom; /* RDMA READs a QP issues at once */
    unsigned npollers;
    struct gfr_rdma_poller *pollers;
    struct gfr_rdma_srq *srq; /* NULL where gfr_rdma_srq_wanted said no */
    struct ibv_cq *mmap_guard; /* siw only (gfr_mmap_guard.h); NULL elsewhere */
    struct cds_lfht *conns; /* QP number -> connection (rdma-conn-table.c) */
    /* Provider quirk (rdma-device.c): how long a revoked MR stays
     * registered, 0 = deregistered at once. */
    uint64_t revoke_grace_ns;
    int async_closed; /* its async event fd reported an error (CM thread) */
    int serialize_posts; /* provider quirk: one post at a time (rdma-device.c) */
    pthread_mutex_t post_lock;
    struct ibv_qp *posting_qp;  /* the serialized post under way (uatomic) */
    uint64_t posting_since_ns;  /* when it began, 0: none (uatomic) */
    uint64_t stuck_post_ended;  /* posting_since_ns of the last one ended (CM thread) */
};

/* How long a serialized post may take before gfr_rdma_dev_check_posts
 * ends it: rxe sends up to 1024 packets (4 MiB) in the posting thread,
 * about 50 ms in the VM; hardware returns in microseconds. */
#define GFR_RDMA_STUCK_POST_NS 1000000000ull

/* MRs whose remote access was revoked, kept registered until expire_ns
 * (dev->revoke_grace_ns) on a connection's retired list. */
struct gfr_rdma_retired {
    struct cds_list_head link;
    uint64_t expire_ns;
    void *mem; /* freed once mr[] is deregistered: a staging buffer's; or NULL */
    unsigned n;
    struct ibv_mr *mr[];
};



/* An encoded message waiting for credits or a send slot; its credits
 * field is filled in when it is posted.  Owns one part of offer. */
struct gfr_rdma_pending {
    struct cds_list_head link;
    struct gfr_rdma_offer *offer;
    size_t len;
    uint8_t data[];
};

#define GFR_RDMA_XID_BUCKETS 64

/* A send-queue ring entry's state (conn->sq_state). */
#define GFR_SQ_SIGNALED 1u /* posted with IBV_SEND_SIGNALED */
#define GFR_SQ_DONE 2u     /* completed (or retired by a later completion) */

/*
 * What an offer still waits for, one bit each (offer->waits).  A bit is
 * set when the message is submitted and cleared once, when its event has
 * been dealt with; the offer ends when none is left.  The peer's DONE and
 * reply each move on to a second bit when they arrive (under conn->lock),
 * so that a second one for the same xid finds nothing while the first is
 * still being handled:
 *
 *   SEND      its SEND completed (or was flushed, or never went out);
 *   DONE      a read list was offered: the peer's DONE or ERROR  -> REVOKE
 *   REVOKE    DONE came: our read list's registrations are revoked;
 *   REPLY     a write list was offered: the reply                -> DELIVERY
 *   DELIVERY  the reply came: it has been handed to the owner.
 */
enum gfr_offer_wait {
    GFR_OFFER_SEND = 1u << 0,
    GFR_OFFER_DONE = 1u << 1,
    GFR_OFFER_REVOKE = 1u << 2,
    GFR_OFFER_REPLY = 1u << 3,
    GFR_OFFER_DELIVERY = 1u << 4,
};

/* "SEND|DELIVERY", for log messages. */
#define GFR_OFFER_WAITS_STR_MAX 40

/*
 * Our memory a message uses until the engine is done with it: the caller's
 * buffers (registered per transfer) or a copy, until every event in waits
 * has been dealt with.  Lives in conn->offers from submission to its done
 * callback, so the end of a connection finds every one of them.  Owner:
 * the connection; waits and status under conn->lock.
 */
struct gfr_rdma_offer {
    struct cds_list_head link; /* conn->offers[xid % GFR_RDMA_XID_BUCKETS] */
    uint32_t xid;
    unsigned waits; /* enum gfr_offer_wait bits */
    int status;
    unsigned n_mr;
    struct ibv_mr *mr[2 * GFR_WIRE_MAX_SEGS];
    struct ibv_mr *write_mr[GFR_WIRE_MAX_SEGS]; /* revoked when the reply comes */
    unsigned n_write_mr;
    uint64_t write_total;
    void *copy; /* owned copy of the body (gfr_rdma_send, too many iovecs) */
    /* The request asked its peer to let the reply end its read list
     * (GFR_WIRE_F_REPLY_ENDS_READS): the REPLY to xid settles DONE. */
    int reply_ends_reads;
    /* Staging buffers (rdma-sbuf.c) the offer holds until it ends: its
     * bulk's copy (a read list or a push source), and the write list its
     * request offered, copied out into the caller's reply buffers when the
     * reply comes. */
    struct gfr_rdma_sbuf *staged;
    struct gfr_rdma_sbuf *landing;
    struct iovec reply[GFR_WIRE_MAX_SEGS]; /* the caller's reply buffers */
    unsigned reply_cnt;
    gfr_rdma_done_fn done;
    void *cb_arg;
};

/* A write list the peer offered with request xid, kept for our reply. */
struct gfr_rdma_peer_wl {
    struct cds_list_head link; /* conn->peer_wl[xid % GFR_RDMA_XID_BUCKETS] */
    uint32_t xid;
    unsigned n;
    uint64_t total;
    struct gfr_wire_seg seg[GFR_WIRE_MAX_SEGS];
};

/* A transfer's stage (conn->lock). */
enum gfr_xfer_state {
    GFR_XFER_POSTING,  /* on conn->xfers: operations left to post */
    GFR_XFER_DRAINING, /* all posted; waiting for their completions */
};

struct gfr_rdma_xfer;

/*
 * How a transfer ends, called once: status 0 (all moved), -EIO (an
 * operation failed or was flushed) or -ECANCELED (the connection ended
 * before it was all posted: its offers end with the others).  It owns x
 * and frees it.  No lock held.
 */
typedef void (*gfr_rdma_xfer_finished_fn)(struct gfr_rdma_xfer *x, int status);

/*
 * Called once, when the last operation of a transfer has been posted (it
 * may still be in flight): what must follow it on the queue pair can be
 * posted now, RC keeps the order.  Caller holds conn->lock.
 */
typedef void (*gfr_rdma_xfer_posted_fn)(struct gfr_rdma_xfer *x);

/*
 * A bulk transfer (rdma-transfer.c): PULL reads a received message's read
 * list into buf, then (rdma-rx.c) sends DONE and delivers the message;
 * PUSH writes our reply's bulk into the peer's write list, then
 * (rdma-submit.c) sends the reply.  At most rdma-depth READs and WRITEs
 * are in flight per connection.  Owner: its starter until
 * gfr_rdma_xfer_start_locked, the connection until it ends, then its
 * finished callback.
 */
struct gfr_rdma_xfer {
    struct cds_list_head link; /* conn->xfers while POSTING */
    struct gfr_rdma_wr ctx;
    enum gfr_xfer_state state;
    int is_pull;
    int failed;
    uint32_t inflight;
    gfr_rdma_xfer_finished_fn finished;
    gfr_rdma_xfer_posted_fn posted; /* may be NULL */
    struct gfr_xfer plan;
    struct gfr_xfer_local local[GFR_WIRE_MAX_SEGS];
    struct gfr_wire_seg remote[GFR_WIRE_MAX_SEGS];
    /* PULL: the delivery the pulled message goes into (rdma-rx.c) */
    void *owner;
    /* PUSH: the reply to send behind the WRITEs (NULL once handed to the
     * send queue), and its offer */
    struct gfr_rdma_pending *reply;
    struct gfr_rdma_offer *offer;
};

/* What an rdma_cm_id's context points to: the first member of both. */
enum gfr_cm_ctx_kind {
    GFR_CM_CTX_CONN = 1,
    GFR_CM_CTX_LISTENER = 2,
};

/* INET6_ADDRSTRLEN, " port " and five digits. */
#define GFR_RDMA_PEER_NAME_MAX (46 + 6 + 5 + 1)

/* The stamps of one call, kept by xid while it is under way (rdma-trace.c):
 * out: our request, from submission to its reply; in: the peer's request,
 * from its hand-over to our reply.  Under conn->lock. */
#define GFR_RDMA_TRACE_CALLS 64
struct gfr_rdma_trace_call {
    uint32_t xid;
    uint32_t live;
    uint64_t start_ns;  /* out: submitted; in: handed to the owner */
    uint64_t posted_ns; /* out: its SEND posted, 0: not yet */
};

struct gfr_rdma_conn {
    enum gfr_cm_ctx_kind kind;
    struct gfr_rdma *engine;
    struct gfr_rdma_dev *dev;
    struct gfr_rdma_poller *poller;
    struct rdma_cm_id *id;
    struct ibv_qp *qp;
    const struct gfr_rdma_conn_ops *ops;
    void *cb_arg;
    struct cds_list_head link; /* engine->conns */
    struct cds_list_head reap_link;

    pthread_mutex_t lock;
    enum gfr_conn_state state;
    struct gfr_cm_params agreed;
    struct gfr_wire_limits limits;
    struct gfr_credits credits;
    struct cds_list_head pending;
    struct gfr_rdma_conn_stats stats; /* copied_bytes: gfr_rdma_count_copied */
    uint32_t xid;
    struct cds_lfht_node table_node; /* dev->conns, by qp_num */
    uint32_t qp_num;
    int in_table;
    int srq_reserved; /* promised receives to give back */
    struct cds_list_head offers[GFR_RDMA_XID_BUCKETS];
    struct cds_list_head peer_wl[GFR_RDMA_XID_BUCKETS];
    struct cds_list_head xfers;
    uint32_t rdma_inflight;
    uint32_t reads_inflight; /* of those, READs (pulls), under lock */
    struct cds_list_head retired; /* struct gfr_rdma_retired, oldest first */
    struct gfr_rdma_sbuf *sbuf_free[GFR_SBUF_KINDS][GFR_BUF_CLASSES]; /* staging buffers kept */
    unsigned sbuf_nfree[GFR_SBUF_KINDS][GFR_BUF_CLASSES];
    int sbuf_drained; /* the end: buffers given back now are freed */

    uint32_t max_inline; /* inline bytes its QP takes (the provider's grant) */
    uint32_t nrecv;      /* receive buffers (local credits) */
    uint32_t nsend;      /* send slots */
    uint8_t *recv_buf;
    uint8_t *send_buf;
    struct ibv_mr *recv_mr;
    struct ibv_mr *send_mr;
    struct gfr_rdma_wr *recv_wr;
    struct gfr_rdma_wr *send_wr;
    uint32_t *free_slots;
    uint32_t nfree;
    /* Send-queue work requests in post order, and each one's state
     * (GFR_SQ_SIGNALED, GFR_SQ_DONE).  Most SENDs go unsignaled; a
     * completion retires its own entry and the unsignaled ones before it
     * (RC completes SENDs in order), and entries leave the ring from its
     * head once done, so a completion that comes before an earlier one's
     * (siw completes a READ after a later SEND) retires nothing twice.  A
     * drain WR retires the rest at the end. */
    struct gfr_rdma_wr **sq_ring;
    uint8_t *sq_state;
    uint32_t sq_size, sq_head, sq_count;
    uint32_t unsignaled; /* SENDs since the last signaled one */
    struct gfr_rdma_wr drain_wr;
    struct gfr_rdma_wr keepalive_wr;
    /* The byte the peer offered for the iWARP probe (rkey 0: none); set
     * once, under lock, when the parameters are agreed. */
    uint64_t peer_probe_addr;
    uint32_t peer_probe_rkey;
    int keepalive_posted;         /* under lock */
    uint64_t keepalive_posted_ns; /* under lock */
    uint64_t disconnect_deadline_ns; /* set (atomically) when it fails:
                                      * the CM's part ends by then */
    uint64_t keepalive_next_ns;   /* CM thread; 0 until established */

    unsigned long outstanding;
    int cm_done;      /* no CM event will come any more */
    int stranded_flushed; /* CM thread: gfr_rdma_cq_flush_stranded ran */
    int reason;       /* for disconnected */
    /* A fault recorded before the QP was moved to the error state behind
     * conn->lock's back (rdma-async.c, rdma-device.c): the reason a flush
     * that follows carries, in place of an orderly 0.  uatomic; the first
     * fault sticks. */
    int fault;
    int was_connected; /* ESTABLISHED seen: written by the CM thread under
                        * lock, read under lock or on the CM thread */
    uint64_t connect_deadline_ns; /* CONNECTING longer than this: given up (CM thread) */
    int is_server;
    /* "HOST port N" of the peer, for log messages: written before the
     * connection is visible to another thread, read-only after. */
    char peer_name[GFR_RDMA_PEER_NAME_MAX];
    struct gfr_pool_client *pool_client; /* dispatch=pool or direct */
    /* dispatch=direct: messages still to go through the pool after a
     * handler of this connection ran long (rdma-rx.c; poller thread). */
    unsigned pool_for;
    /* A client's requests awaiting replies, when each was sent (by xid),
     * and their round trips (rdma-poller.c's reply-expected polling).
     * Under conn->lock. */
    unsigned long awaiting;
    struct gfr_rdma_sent_at {
        uint32_t xid;
        uint64_t ns;
    } sent_at[GFR_RDMA_XID_BUCKETS];
    struct gfr_rtt rtt;
    struct gfr_rdma_trace_call trace_out[GFR_RDMA_TRACE_CALLS];
    struct gfr_rdma_trace_call trace_in[GFR_RDMA_TRACE_CALLS];
    /* The problems logged about it and the last one (rdma-log.c), under
     * engine->note_lock. */
    unsigned long nerrors;
    char last_error[GFR_RDMA_ERROR_STR];
    /* Before a QP on the device's SRQ is destroyed (gfr_rdma_conn_quiesce):
     * IBV_EVENT_QP_LAST_WQE_REACHED seen (uatomic, set by the CM thread),
     * the stage, since when, and the poller's empty polls when its CQ pass
     * began.  CM thread. */
    int last_wqe_reached;
    enum gfr_quiesce {
        GFR_QUIESCE_START,
        GFR_QUIESCE_LAST_WQE, /* waiting for the event */
        GFR_QUIESCE_CQ_PASS,  /* waiting for the poller to empty the CQ */
    } quiesce;
    uint64_t quiesce_since_ns;
    unsigned long cq_pass_from;
    int finalized; /* verbs resources gone; under engine->lock */
    int released;  /* the owner let go; under engine->lock */
};

/*
 * A received data message's stages (rdma-rx.c).  Only gfr_rdma_rx_advance
 * changes them, and it refuses every step but these:
 *
 *   RECEIVED -> CHECKED     decoded and checked against this side's state
 *   RECEIVED -> RELEASED    dropped: the connection is closing, or the
 *                           message broke the protocol
 *   CHECKED -> PULLING      its read list is being read (a transfer has it)
 *   CHECKED -> DELIVERING   inline: handed to the owner
 *   CHECKED -> RELEASED     a CREDIT, DONE or ERROR, handled; or refused
 *   PULLING -> PULLED       all pulled: DONE queued for the peer, unless
 *                           the request waived it (its reply ends the list)
 *   PULLING -> RELEASED     the pull failed or the connection ended
 *   PULLED -> DELIVERING    on its way to the owner
 *   DELIVERING -> OWNED     the owner's received callback is running (a
 *                           pool job started, or the poller called it)
 *   DELIVERING -> RELEASED  a destroyed pool cancelled its job
 *   OWNED -> RELEASED       the owner's received callback has returned
 *
 * Who holds it: the poller until DELIVERING, then the pool worker running
 * its job (dispatch=pool) or still the poller; a cancelled pull ends on
 * the CM thread.  Every step is a trace point (rdma-trace.c).
 */
enum gfr_rx_state {
    GFR_RX_RECEIVED,
    GFR_RX_CHECKED,
    GFR_RX_PULLING,
    GFR_RX_PULLED,
    GFR_RX_DELIVERING,
    GFR_RX_OWNED,
    GFR_RX_RELEASED,
};

/* A received message: what the owner gets (rx), and what is given back
 * when it is RELEASED: the pull buffer it owns, and the request it
 * answers, whose DELIVERY is settled. */
struct gfr_rdma_rxmsg {
    enum gfr_rx_state state;
    struct gfr_rdma_conn *conn;
    /* Trace (rdma-trace.c): when it took its last step, 0: not traced;
     * a reply's request's submission; whether its poller had slept. */
    uint64_t stamp_ns;
    uint64_t call_ns;
    int after_sleep;
    int data; /* a MSG or REPLY (not CREDIT, DONE, ERROR) */
    int done_waived; /* a request whose reply ends its read list: no DONE */
    struct gfr_rdma_rx rx;
    struct gfr_rdma_pbuf *owned;
    /* iWARP: the pull's sink, registered over owned for this transfer with
     * remote write (rdma-rx.c's pull_sink_get), deregistered when the pull
     * ends; NULL elsewhere. */
    struct ibv_mr *sink_mr;
    struct gfr_rdma_offer *reply_to;
};

/* A received message off the poller's stack: while it is pulled, and as a
 * pool job (one unit of conn->outstanding until it has been handled).
 * m.rx.head points into data (a copy of the inline part) or into the
 * message's pull buffer. */
struct gfr_rdma_delivery {
    struct gfr_pool_job job;
    struct gfr_rdma_rxmsg m;
    uint8_t data[];
};

struct gfr_rdma_listener {
    enum gfr_cm_ctx_kind kind;
    struct gfr_rdma *engine;
    /* NULL while its device is gone: the CM thread, the only one that
     * changes it, listens again on addr every second until a device
     * takes the address. */
    struct rdma_cm_id *id;
    struct sockaddr_storage addr; /* as bound, with its port */
    int backlog;
    uint64_t relisten_ns;         /* next attempt */
    gfr_rdma_accept_fn accept;
    void *cb_arg;
    struct cds_list_head link; /* engine->listeners, then engine->closing */
    int closed;                /* the CM thread destroyed id (engine->lock) */
};

/* What a poller does with each work completion (rdma-cq.c's
 * gfr_rdma_cq_complete): the device layer calls up through it. */
typedef void (*gfr_rdma_wc_fn)(struct gfr_rdma_poller *poller, struct ibv_wc *wc);

struct gfr_rdma {
    struct gfr_rdma_opts opts;
    gfr_rdma_wc_fn on_wc;
    struct gfr_pool *pool; /* dispatch=pool, else NULL */
    struct rdma_event_channel *channel;
    int wake_fd; /* eventfd: the reap list has work */
    pthread_t cm_thread;
    int stopping;
    int destroying; /* the CM thread disconnects every connection */
    pthread_mutex_t lock;
    struct cds_list_head devices;
    struct cds_list_head removed; /* devices the kernel is removing (rdma-device.c) */
    struct cds_list_head conns;
    struct cds_list_head listeners;
    struct cds_list_head closing; /* listeners the CM thread is to destroy */
    pthread_cond_t closed;        /* signalled when it has destroyed them */
    struct cds_list_head reap;
    /* Reaped connections whose QP is not yet destroyed: waiting for their
     * last SRQ completions (gfr_rdma_conn_quiesce).  CM thread only,
     * linked by reap_link. */
    struct cds_list_head quiescing;
    struct cds_list_head dead; /* finalized, not yet released */
    /* transport.rdma.latency-stats (rdma-trace.c): the stage histograms
     * (atomic adds from any thread) and the calls they could not time. */
    int trace;
    /* dispatch=direct: the CM thread ticks every GFR_RELAY_AFTER_MS to
     * watch handler runs (rdma-poller.c) while this is set (uatomic; set
     * by a poller beginning a run, cleared by the CM thread when a tick
     * saw none). */
    int watching;
    struct gfr_hist stage[GFR_STAGE_COUNT];
    unsigned long untraced; /* uatomic */
    pthread_mutex_t note_lock; /* each connection's last_error */
};

/*
 * What a post verb returned, as the data path's positive errno.  Verbs
 * are to return one, but siw's user library returns -EINVAL or -ENOMEM,
 * and -1 was seen from it after a peer's close ("Unknown error -1" in a
 * log): a negative errno is turned round, and -1 taken as errno when that
 * says something, else as EIO.  Reads errno; any thread.
 */
static inline int
gfr_rdma_post_errno(int ret)
{
    if (ret >= 0)
        return ret;
    if (ret == -1)
        return errno > 0 ? errno : EIO;
    return -ret;
}

/*
 * Two atomic steps on a connection's own fields, inline here so that any
 * layer may take them (they call nothing):
 *
 * gfr_rdma_conn_tryget takes a reference (conn->outstanding) unless the
 * last one is gone already (the connection is queued for reaping, or
 * reaped): 1 when taken.  For a thread that reaches the connection
 * without a reference of its own (an SRQ completion, a submitter).  A
 * cmpxchg loop, lock-free, any thread.
 *
 * gfr_rdma_conn_fault records reason as the connection's fault before its
 * QP is moved to the error state without conn->lock, so that a flush seen
 * first ends it with that reason (gfr_rdma_conn_fail_locked).  The first
 * fault sticks; the cmpxchg's full barrier orders it before the caller's
 * ibv_modify_qp.  Any thread.
 */
static inline int
gfr_rdma_conn_tryget(struct gfr_rdma_conn *conn)
{
    unsigned long refs = uatomic_read(&conn->outstanding);

    while (refs) {
        unsigned long seen = uatomic_cmpxchg(&conn->outstanding, refs, refs + 1);

        if (seen == refs)
            return 1;
        refs = seen;
    }
    return 0;
}

static inline void
gfr_rdma_conn_fault(struct gfr_rdma_conn *conn, int reason)
{
    if (reason)
        uatomic_cmpxchg(&conn->fault, 0, reason);
}

/*
 * The engine's files, lowest first (tests/layering/layers): a file calls
 * only the files above it in this list, and upward only through the
 * callbacks above (on_wc, a transfer's finished, the pool's jobs, the
 * owner's gfr_rdma_conn_ops).
 */

/* rdma-log.c: log messages (stderr until the embedding program sets its own) */
void gfr_rdma_log(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void gfr_rdma_conn_log(struct gfr_rdma_conn *conn, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
void gfr_rdma_peer_name(const struct sockaddr *sa, char name[GFR_RDMA_PEER_NAME_MAX]);

/* rdma-trace.c: per-stage latency (transport.rdma.latency-stats) */
void gfr_rdma_trace_submit_locked(struct gfr_rdma_conn *conn, uint32_t xid, int is_reply);
uint64_t gfr_rdma_trace_stamp(const struct gfr_rdma *engine, const uint8_t *msg);
void gfr_rdma_trace_posted_locked(struct gfr_rdma_conn *conn, struct gfr_rdma_wr *ctx,
                                  const uint8_t *msg, uint64_t posted_ns);
void gfr_rdma_trace_send_done_locked(struct gfr_rdma_conn *conn, struct gfr_rdma_wr *ctx);
void gfr_rdma_trace_rx(struct gfr_rdma_rxmsg *m, enum gfr_rx_state to);

/* rdma-mr.c: registering, deregistering and revoking a connection's MRs */
int gfr_rdma_mr_register(struct gfr_rdma_conn *conn, void *addr, size_t len, int access,
                         struct ibv_mr **mr);
void gfr_rdma_mr_deregister(struct gfr_rdma_conn *conn, struct ibv_mr **mr, unsigned n);
void gfr_rdma_mr_revoke(struct gfr_rdma_conn *conn, struct ibv_mr **mr, unsigned n);
void gfr_rdma_mr_revoke_buffer(struct gfr_rdma_conn *conn, struct ibv_mr *mr, void *mem);
void gfr_rdma_mr_reap_retired(struct gfr_rdma_conn *conn, int all);

/* rdma-sbuf.c: a connection's registered buffers for its own bulk */
size_t gfr_rdma_sbuf_max(void);
int gfr_rdma_sbuf_get(struct gfr_rdma_conn *conn, enum gfr_sbuf_kind kind, size_t len,
                      struct gfr_rdma_sbuf **b);
void gfr_rdma_sbuf_put(struct gfr_rdma_conn *conn, struct gfr_rdma_sbuf *b);
void gfr_rdma_sbuf_drain(struct gfr_rdma_conn *conn);
size_t gfr_rdma_sbuf_copy_in(struct gfr_rdma_sbuf *b, size_t off, const struct iovec *iov,
                             unsigned n);
void gfr_rdma_sbuf_copy_out(const struct gfr_rdma_sbuf *b, size_t len, const struct iovec *iov,
                            unsigned n);

/* rdma-pbuf.c: registered buffers to pull into, and the buffer classes */
size_t gfr_rdma_buf_class_size(int cls);
int gfr_rdma_buf_class_of(size_t len);
struct gfr_rdma_pbuf *gfr_rdma_pbuf_get(struct gfr_rdma_poller *p, size_t len);
void gfr_rdma_pbuf_put(struct gfr_rdma_pbuf *b);
void gfr_rdma_pbuf_drain(struct gfr_rdma_poller *p);

/* rdma-srq.c: the device's shared receive queue */
int gfr_rdma_srq_wanted(const struct gfr_rdma_dev *dev);
int gfr_rdma_srq_create(struct gfr_rdma_dev *dev, const struct ibv_device_attr *attr);
int gfr_rdma_srq_reserve(struct gfr_rdma_dev *dev, uint32_t n);
void gfr_rdma_srq_unreserve(struct gfr_rdma_dev *dev, uint32_t n);
void gfr_rdma_srq_post(struct gfr_rdma_dev *dev, struct gfr_rdma_rbuf *rb);
void gfr_rdma_srq_taken(struct gfr_rdma_dev *dev);
void gfr_rdma_srq_destroy(struct gfr_rdma_dev *dev);

/* rdma-conn-table.c: a device's connections by QP number */
int gfr_rdma_conn_table_create(struct gfr_rdma_dev *dev);
void gfr_rdma_conn_table_destroy(struct gfr_rdma_dev *dev);
void gfr_rdma_conn_table_add(struct gfr_rdma_dev *dev, struct gfr_rdma_conn *conn);
void gfr_rdma_conn_table_remove(struct gfr_rdma_dev *dev, struct gfr_rdma_conn *conn);
struct gfr_rdma_conn *gfr_rdma_conn_table_get(struct gfr_rdma_dev *dev, uint32_t qp_num);

/* rdma-device.c: devices, their pollers, and posting to their QPs */
int gfr_rdma_dev_get(struct gfr_rdma *engine, struct ibv_context *verbs,
                     int cq_entries, struct gfr_rdma_dev **dev,
                     struct gfr_rdma_poller **poller);
void gfr_rdma_dev_put(struct gfr_rdma_poller *poller, int cq_entries);
int gfr_rdma_dev_post_send(struct gfr_rdma_dev *dev, struct ibv_qp *qp, struct ibv_send_wr *wr);
void gfr_rdma_dev_check_posts(struct gfr_rdma *engine, uint64_t now_ns);
void gfr_rdma_dev_removed(struct gfr_rdma *engine, struct ibv_context *verbs);
void gfr_rdma_dev_free_removed(struct gfr_rdma *engine);
void gfr_rdma_dev_destroy_all(struct gfr_rdma *engine);

/* rdma-poller.c: the pollers, reply-expected polling, direct dispatch */
#define GFR_RELAY_AFTER_MS 20 /* a handler run this long gets a relay */
int gfr_rdma_poller_start(struct gfr_rdma_dev *dev, struct gfr_rdma_poller *p, int cq_size,
                          const char *name);
void gfr_rdma_poller_stop(struct gfr_rdma_poller *p);
void gfr_rdma_poller_expect(struct gfr_rdma_poller *p, uint64_t early_ns, uint64_t bound_ns);
void gfr_rdma_poller_replied(struct gfr_rdma_poller *p, unsigned long n);
void gfr_rdma_poller_defer(struct gfr_rdma_poller *p, struct gfr_pool_job *job);
int gfr_rdma_pollers_watch(struct gfr_rdma *engine, uint64_t now_ns);
void gfr_rdma_poller_broken(struct gfr_rdma_poller *p, const char *why);
int gfr_rdma_poller_inject(struct gfr_rdma_poller *p, const struct ibv_wc *wcs, unsigned n);
int gfr_rdma_poller_run_injected(struct gfr_rdma_poller *p);
unsigned long gfr_rdma_poller_pass_begin(struct gfr_rdma_poller *p);
int gfr_rdma_poller_passed(struct gfr_rdma_poller *p, unsigned long from);

/* rdma-qp.c: references, failing and draining, the send-queue ring */
typedef int (*gfr_rdma_conn_match_fn)(const struct gfr_rdma_conn *conn, const void *arg);
unsigned gfr_rdma_conns_collect(struct gfr_rdma *engine, gfr_rdma_conn_match_fn match,
                                const void *arg, unsigned skip, struct gfr_rdma_conn **batch,
                                unsigned max);
void gfr_rdma_conn_get(struct gfr_rdma_conn *conn);
void gfr_rdma_conn_put(struct gfr_rdma_conn *conn);
void gfr_rdma_conn_cm_done(struct gfr_rdma_conn *conn);
int gfr_rdma_post_recv(struct gfr_rdma_conn *conn, uint32_t slot);
int gfr_rdma_conn_set_state_locked(struct gfr_rdma_conn *conn, enum gfr_conn_state to);
enum gfr_conn_state gfr_rdma_conn_state(const struct gfr_rdma_conn *conn);
const char *gfr_rdma_conn_state_str(enum gfr_conn_state state);
void gfr_rdma_conn_fail(struct gfr_rdma_conn *conn, int reason);
void gfr_rdma_conn_fail_locked(struct gfr_rdma_conn *conn, int reason);
void gfr_rdma_sq_push_locked(struct gfr_rdma_conn *conn, struct gfr_rdma_wr *ctx,
                             int signaled);
uint32_t gfr_rdma_sq_outstanding_locked(const struct gfr_rdma_conn *conn);
int gfr_rdma_conn_cut_off_locked(struct gfr_rdma_conn *conn);
int gfr_rdma_sq_holds_locked(const struct gfr_rdma_conn *conn, const struct gfr_rdma_wr *ctx);
unsigned gfr_rdma_sq_retire_locked(struct gfr_rdma_conn *conn, struct gfr_rdma_wr *ctx);
void gfr_rdma_sq_put(struct gfr_rdma_conn *conn, unsigned n);
int gfr_rdma_qp_post_locked(struct gfr_rdma_conn *conn, struct gfr_rdma_wr *ctx,
                            struct ibv_send_wr *wr);
void gfr_rdma_post_failed_locked(struct gfr_rdma_conn *conn, const char *what, int err);

/* rdma-offer.c: our offers and the peer's write lists */
struct gfr_rdma_offer *gfr_rdma_offer_new(void);
int gfr_rdma_offer_register(struct gfr_rdma_conn *conn, struct gfr_rdma_offer *offer,
                            void *addr, size_t len, int access, struct ibv_mr **mr);
const char *gfr_rdma_offer_waits_str(unsigned waits, char buf[GFR_OFFER_WAITS_STR_MAX]);
struct gfr_rdma_offer *gfr_rdma_offer_find_locked(struct gfr_rdma_conn *conn, uint32_t xid,
                                                  enum gfr_offer_wait event);
int gfr_rdma_offer_arrived_locked(struct gfr_rdma_conn *conn, struct gfr_rdma_offer *offer,
                                  enum gfr_offer_wait event);
void gfr_rdma_offer_settle(struct gfr_rdma_conn *conn, struct gfr_rdma_offer *offer,
                           enum gfr_offer_wait event, int status);
void gfr_rdma_offer_abandon(struct gfr_rdma_conn *conn, struct gfr_rdma_offer *offer, int status);
void gfr_rdma_offer_revoke_writes(struct gfr_rdma_conn *conn, struct gfr_rdma_offer *offer,
                                  uint32_t written);
void gfr_rdma_offer_pulled(struct gfr_rdma_conn *conn, struct gfr_rdma_offer *offer,
                           int status);
int gfr_rdma_peer_wl_add_locked(struct gfr_rdma_conn *conn, const struct gfr_wire_msg *msg);
struct gfr_rdma_peer_wl *gfr_rdma_peer_wl_take_locked(struct gfr_rdma_conn *conn,
                                                      uint32_t xid);
void gfr_rdma_offers_release_all(struct gfr_rdma_conn *conn);

/* rdma-tx.c: slots, credits and the pending queue */
size_t gfr_rdma_iov_total(const struct iovec *iov, unsigned n);
int gfr_rdma_send_locked(struct gfr_rdma_conn *conn, const struct gfr_wire_hdr *hdr,
                         const struct gfr_wire_seg *read, const struct gfr_wire_seg *write,
                         const struct iovec *iov, unsigned iovcnt,
                         struct gfr_rdma_offer *offer);
int gfr_rdma_encode(const struct gfr_wire_hdr *hdr, const struct gfr_wire_seg *read,
                    const struct gfr_wire_seg *write, const struct iovec *iov, unsigned iovcnt,
                    size_t cap, struct gfr_rdma_pending **pp);
size_t gfr_rdma_send_cap(const struct gfr_rdma_conn *conn);
void gfr_rdma_queue_locked(struct gfr_rdma_conn *conn, struct gfr_rdma_pending *p);
void gfr_rdma_flush_locked(struct gfr_rdma_conn *conn);
void gfr_rdma_send_flush(struct gfr_rdma_conn *conn);
void gfr_rdma_send_complete(struct gfr_rdma_wr *ctx, int ok);
void gfr_rdma_tx_release_all(struct gfr_rdma_conn *conn);

/* rdma-transfer.c: RDMA READs and WRITEs within rdma-depth */
struct gfr_rdma_xfer *gfr_rdma_xfer_new(struct gfr_rdma_conn *conn, int is_pull,
                                        gfr_rdma_xfer_finished_fn finished);
void gfr_rdma_xfer_start_locked(struct gfr_rdma_conn *conn, struct gfr_rdma_xfer *x);
void gfr_rdma_xfers_post_locked(struct gfr_rdma_conn *conn);
void gfr_rdma_xfer_complete(struct gfr_rdma_wr *ctx, int ok);
void gfr_rdma_xfers_release_all(struct gfr_rdma_conn *conn);

/* rdma-rx.c: checking, pulling and delivering received messages */
struct gfr_rdma_rx_plan {
    struct gfr_rdma_offer *done_for; /* DONE/ERROR: our read list is free */
    int done_status;
    struct gfr_rdma_offer *reply_to; /* REPLY: our request it answers */
    int pulling;                     /* a transfer took the message (rdma-rx.c) */
    int refuse;                      /* could not pull it: answer ERROR (rdma-rx.c) */
    int dropped;                     /* the connection ended before its pull began */
};
int gfr_rdma_rx_accept_locked(struct gfr_rdma_conn *conn, const struct gfr_wire_msg *msg,
                              struct gfr_rdma_rx_plan *plan, const char **reason);
void gfr_rdma_rx_handle(struct gfr_rdma_conn *conn, const uint8_t *buf, uint32_t slot,
                        struct gfr_rdma_rbuf *rb, struct ibv_wc *wc);
int gfr_rdma_rx_advance(struct gfr_rdma_rxmsg *m, enum gfr_rx_state to);
const char *gfr_rdma_rx_state_str(enum gfr_rx_state state);

/* rdma-submit.c: the public gfr_rdma_submit and gfr_rdma_send */

/* rdma-cq.c: work completions by kind */
void gfr_rdma_cq_complete(struct gfr_rdma_poller *poller, struct ibv_wc *wc);
void gfr_rdma_cq_flush_stranded(struct gfr_rdma_conn *conn);
void gfr_rdma_cq_abandon_broken(struct gfr_rdma *engine);

/* rdma-conn.c: a connection's setup, keepalives and end */
struct gfr_rdma_conn *gfr_rdma_conn_new(struct gfr_rdma *engine, const struct sockaddr *peer);
int gfr_rdma_conn_setup(struct gfr_rdma_conn *conn);
int gfr_rdma_conn_create_qp(struct gfr_rdma_conn *conn);
int gfr_rdma_conn_setup_send_side(struct gfr_rdma_conn *conn);
void gfr_rdma_conn_free_send_side(struct gfr_rdma_conn *conn);
void gfr_rdma_conn_local_params(const struct gfr_rdma *engine,
                                struct gfr_cm_params *params);
int gfr_rdma_conn_negotiate(struct gfr_rdma_conn *conn,
                            const struct gfr_cm_params *peer);
void gfr_rdma_conn_keepalive(struct gfr_rdma_conn *conn);
void gfr_rdma_conn_end(struct gfr_rdma_conn *conn);
int gfr_rdma_conn_quiesce(struct gfr_rdma_conn *conn, uint64_t now_ns);
void gfr_rdma_conn_finalize(struct gfr_rdma_conn *conn);
void gfr_rdma_conn_free_dead(struct gfr_rdma *engine);
/* The connection's statistics with its error count, and its last logged
 * problem into last_error when that is not NULL. */
void gfr_rdma_conn_read_stats(struct gfr_rdma_conn *conn, struct gfr_rdma_conn_stats *stats,
                              char last_error[GFR_RDMA_ERROR_STR]);
int gfr_rdma_copy_addr(const struct sockaddr *from, struct sockaddr *addr, socklen_t *len);

/* rdma-async.c: the devices' asynchronous events (CM thread) */
struct pollfd;
unsigned gfr_rdma_async_fds(struct gfr_rdma *engine, struct pollfd *pfds,
                            struct gfr_rdma_dev **devs, unsigned max);
void gfr_rdma_async_handle(struct gfr_rdma *engine, struct gfr_rdma_dev *dev, short revents);

/* Counts n payload bytes that conn's messages were copied through in
 * memory (into send slots and queued copies, out of receive buffers, in
 * and out of staging buffers): issue 32's count of copies per RPC.  Any
 * thread, with or without conn->lock, since copies are made on both sides
 * of it: an atomic add, read by gfr_rdma_conn_stats. */
static inline void
gfr_rdma_count_copied(struct gfr_rdma_conn *conn, size_t n)
{
    uatomic_add(&conn->stats.copied_bytes, n);
}

#endif /* GFR_RDMA_INTERNAL_H */
