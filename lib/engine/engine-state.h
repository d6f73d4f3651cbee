/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The engine's shared state: what a connection, a device, a poller and the
 * engine hold, which every layer of the engine reaches through them; each
 * layer's own types and functions are in its header (engine-res.h up to
 * engine-conn.h, each including the one below).  Who touches what:
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
#ifndef GFR_ENGINE_STATE_H
#define GFR_ENGINE_STATE_H

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
struct gfr_rdma_bundle;

/* The context of one work request (its wr_id). */
struct gfr_rdma_wr {
    struct gfr_rdma_conn *conn;
    uint32_t slot;
    uint8_t kind;                 /* enum gfr_wr_kind */
    /* A receive: posted and not yet completed.  uatomic: a connection's
     * own is written under conn->lock or by its CQ's poll_lock holder, and
     * read by the CM thread's stranded flush under conn->lock alone. */
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

struct gfr_rdma_poll_thread;

/* One CQ with its completion channel, polled by its thread (thread). */
struct gfr_rdma_poller {
    struct gfr_rdma_dev *dev;
    struct ibv_comp_channel *channel;
    struct ibv_cq *cq;
    int cq_size;
    int cq_reserved; /* entries promised to QPs, under engine->lock */
    unsigned index;
    /* The thread that polls it, set once it has joined one (started);
     * stopping (uatomic) is set as it leaves, for its relay. */
    struct gfr_rdma_poll_thread *thread;
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
    /* Polls that drained the CQ (found fewer completions than they asked
     * for, none included): written by the poll_lock holder alone
     * (CMM_STORE_SHARED), read by the CM thread, whose CQ pass
     * (gfr_rdma_poller_pass_begin) waits for two more.  A poller busy
     * with a CQ that is never found empty still drains it. */
    unsigned long drained_polls;
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
    /* Its thread runs handlers, poll_lock released (uatomic): since
     * when, and how many runs began. */
    int handling;
    uint64_t handling_since_ns;
    unsigned long handling_seq;
    unsigned long watch_seq; /* CM thread: handling_seq at its last look */
};

/* How many pollers one thread polls at most (one per device). */
#define GFR_POLL_THREAD_MAX 8

/*
 * What one thread polls: the pollers whose poll_lock it holds (rdma-poller.c).
 * The poller thread's own (thread set), or a relay's set of its one poller.
 */
struct gfr_rdma_reap_set {
    struct gfr_rdma_poll_thread *thread; /* NULL: a relay's */
    unsigned long gen;                   /* the thread's members_gen it follows */
    unsigned n;
    struct gfr_rdma_poller *m[GFR_POLL_THREAD_MAX];
};

/*
 * A poller thread (rdma-poller.c): it polls the CQs of its members, and
 * spins for them or sleeps on all their channels at once.  With rails off
 * each poller has a thread of its own; with rails=auto the pollers with
 * the same index on every device of the engine share one
 * (engine->shared_threads), so that the rails of a bundle are reaped by
 * one thread that stays hot, as one rail's are, instead of two that each
 * see half the completions and sleep between them (docs/engine.md,
 * "Poller threads and rails").
 *
 * Members join and leave (a device made or removed) under members_lock,
 * each change raising members_gen; the thread takes the list up at the
 * top of its loop (cur, its own) and publishes the members_gen it polls
 * by in seen_gen (uatomic), so that a poller that left knows when the
 * thread holds its poll_lock no more.  nmembers and the slot in
 * engine->shared_threads change under engine->threads_lock too.
 */
struct gfr_rdma_poll_thread {
    struct gfr_rdma *engine;
    unsigned index;
    int shared; /* engine->shared_threads[index] (rails=auto) */
    pthread_t thread;
    int stopping; /* uatomic */
    int kick_fd;  /* eventfd: its members changed, or it is to stop */
    pthread_mutex_t members_lock;
    struct gfr_rdma_poller *members[GFR_POLL_THREAD_MAX];
    unsigned nmembers;
    unsigned long members_gen;
    unsigned long seen_gen;
    /* What the thread polls now: its own, written under members_lock
     * (which a relay takes to copy it). */
    struct gfr_rdma_reap_set cur;
    /* The thread runs handlers, every member's poll_lock released
     * (uatomic); its relay's job, and whether the relay is asked for or
     * running (0 / 1): one relay polls every member meanwhile. */
    int handling;
    int relay_asked;
    struct gfr_pool_job relay_job;
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
    /* Provider quirk (rdma-device.c): a revoked MR stays registered for
     * two of its connection's ACK timeouts (rdma-mr.c); 0 = deregistered
     * at once. */
    int keep_revoked_mrs;
    int async_closed; /* its async event fd reported an error (CM thread) */
    /* Removed or fatal (CM thread): its QPs raise no more events, and what
     * their CQs held is out of reach. */
    int gone;
    int serialize_posts; /* provider quirk: one post at a time (rdma-device.c) */
    int no_last_wqe_event; /* provider quirk: raises no QP_LAST_WQE_REACHED (rdma-device.c) */
    /* A QP on its SRQ waited the long wait for QP_LAST_WQE_REACHED in vain,
     * and no event came since: the others wait briefly
     * (gfr_rdma_conn_quiesce); an event that comes clears it.  CM thread. */
    int last_wqe_missed;
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
 * (dev->keep_revoked_mrs) on a connection's retired list. */
struct gfr_rdma_retired {
    struct cds_list_head link;
    uint64_t expire_ns;
    void *mem; /* freed once mr[] is deregistered: a staging buffer's; or NULL */
    unsigned n;
    struct ibv_mr *mr[];
};

#define GFR_RDMA_XID_BUCKETS 64

/* A send-queue ring entry's state (conn->sq_state). */
#define GFR_SQ_SIGNALED 1u /* posted with IBV_SEND_SIGNALED */
#define GFR_SQ_DONE 2u     /* completed (or retired by a later completion) */

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
    /* What it runs by: its engine's, or those given to gfr_rdma_connect or
     * its listener, equal to the engine's on every engine-wide option.
     * Set before the conn is shared, then read-only. */
    struct gfr_rdma_opts opts;
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
    /* A rail's failovers, resends and duplicates (rdma-bundle.c): uatomic,
     * kept apart from stats, which is copied without atomics */
    unsigned long rail_failovers, rail_resends, rail_duplicates;
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
    /* CM thread, under engine->lock: the timers (rdma-engine.c,
     * run_timers) fired on it in its pass timers_pass, one bit each, so
     * that a timer still due after it fired waits for the next pass. */
    uint64_t timers_pass;
    unsigned timers_fired;

    unsigned long outstanding;
    int cm_done;      /* no CM event will come any more */
    int stranded_flushed; /* CM thread: gfr_rdma_cq_flush_stranded ran */
    int reason;       /* for disconnected */
    /* A fault recorded before the QP was moved to the error state behind
     * conn->lock's back (rdma-async.c, rdma-device.c): the reason a flush
     * that follows carries, in place of an orderly 0.  uatomic; the first
     * fault sticks. */
    int fault;
    /* The CM has written the id's addresses for good: a server's before
     * the connection exists, a client's once its route resolved, both
     * before CONNECTING (set with it).  Until then rdma_cm may be writing
     * them, so they are read only after, under lock. */
    int addrs_known;
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
     * the stage, since when, and the poller's drained polls when its CQ
     * pass began.  CM thread. */
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
    /* Multi-rail (rdma-bundle.c): the bundle it is a rail of, NULL: none
     * (set before the connection is shared; a member's is cleared when it
     * ends, the lead's stays until it is freed, with the bundle); whether
     * it is the lead, the owner's handle; its rail and the bundle's id
     * (for snapshots, which may outlive the bundle; written under lock);
     * and what its CM
     * private data says of rails (set before connect or accept). */
    struct gfr_rdma_bundle *bundle;
    int bundle_lead;
    unsigned rail;
    uint8_t rail_id; /* the client's id of the rail (0: the lead); CM thread */
    /* A server's rail: the bundle's handler of a FENCE that arrived on it
     * (rdma-bundle.c), called on the poller thread in the rail's order;
     * set before the connection is shared.  fenced: its peer gave it up
     * (under the bundle's lock). */
    void (*on_fence)(struct gfr_rdma_conn *rail, uint8_t rail_id);
    int fenced;
    /* A rail holds a reference of its own from joining until, once it is
     * failing, every completion its QP made is handed on (the quiesce
     * below, run before its end rather than after): so what its receive
     * queue took reaches the bundle before the bundle hears of its end
     * (docs/multi-rail.md).  uatomic: set where the rail joins (a client's
     * lead on the connecting thread, while the CM thread may look at it),
     * cleared by the CM thread. */
    int pass_held;
    /* A rail's progress, for rail-timeout-ms: send-side work requests
     * that completed well (its poller's alone: CMM_STORE_SHARED; the CM
     * thread reads it); and, the CM thread's alone, the count it last saw,
     * when it last saw the count move, when it last knew the rail well
     * (moving, idle, or first seen), whether a pass of its poller over the
     * CQ was asked for since it stalled (when, and from which count: a
     * stall is judged once the poller has looked, or has had time to), and
     * whether it ended the rail for a stall. */
    uint64_t sends_done;
    uint64_t stall_seen;
    uint64_t moved_ns;
    uint64_t calm_ns;
    int stall_passing;
    uint64_t stall_pass_ns;
    unsigned long stall_pass_from;
    int stall_ended;
    uint32_t bundle_id;
    struct gfr_cm_rails cm_rails;
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
    uint64_t timers_pass; /* CM thread: run_timers' passes */
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
    /* A server's bundles that rails may join (rdma-bundle.c), and the id
     * the next one gets; under lock. */
    struct cds_list_head bundles;
    uint32_t next_bundle;
    /* rails=auto: the poller thread of each poller index that every
     * device's poller with that index joins (rdma-poller.c); under
     * threads_lock, a leaf lock (taken under engine->lock at device
     * creation).  pollers is at most 64 (rdma-opts.c). */
    pthread_mutex_t threads_lock;
    struct gfr_rdma_poll_thread *shared_threads[64];
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

#endif /* GFR_ENGINE_STATE_H */
