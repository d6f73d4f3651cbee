/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The verbs model's insides (verbs-model.h is its face to tests): the
 * objects it plays, its one state and lock, and the helpers its three
 * files share.  verbs-model.c has the fabric (completions, errors, work
 * requests executed, faults) and the test's calls; verbs-model-verbs.c the
 * libibverbs calls; verbs-model-cm.c the librdmacm calls.  Every function
 * here is called with vm.lock held.
 */
#ifndef GFR_VERBS_MODEL_INTERNAL_H
#define GFR_VERBS_MODEL_INTERNAL_H

#include <pthread.h>
#include <stdint.h>

#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>
#include <urcu/list.h>

#include "verbs-model.h"

/* Devices: model0 and model1 are the two hosts' first rail, model2 and
 * model3 their second (model_addr). */
#define NHOSTS 4
#define MAX_SGE 4
#define MAX_FINDINGS 32
/* Visits a work request to a dead peer gets before it fails with retry
 * exceeded: the transport's retries, during which the CM's news of the
 * peer usually arrives first, as on hardware. */
#define RETRIES_TO_DEAD_PEER 64
#define IB_CM_REJ_CONSUMER_DEFINED 28

/* What a profile's device reports and how it behaves. */
struct profile {
    const char *name;
    enum ibv_transport_type transport;
    uint32_t vendor_id;
    uint32_t max_inline;
    int max_cqe;
    int num_comp_vectors;
    int max_qp_rd_atom;
    int drop_cqes_on_destroy; /* mlx5: a destroyed QP's unpolled CQEs go */
    int last_wqe_event;       /* IBV_EVENT_QP_LAST_WQE_REACHED is raised */
    int post_in_error_fails;  /* cxgb4: EINVAL instead of a flush */
    int flush_unsignaled;     /* a flushed unsignaled WR has a completion */
    int read_sink_remote_write;
    int rnr_terminates;       /* a SEND without a receive ends the connection */
    int reads_complete_late;  /* siw: a READ completes after later SENDs */
    /* siw: rdma_disconnect moves the QP to CLOSING, which flushes nothing
     * while its transmitter is idle (a READ awaiting its response never
     * completes), and reaches the peer as TCP's FIN, on which the peer's
     * QP flushes everything (siw_qp_llp_close). */
    int close_strands_reads;
    /* siw: moving a QP to error flushes a READ it has issued but not seen
     * answered twice, from its ORQ and again as the pending work request
     * (siw_sq_flush); the model does so for the newest one. */
    int flushes_read_twice;
    int zero_len_checks_rkey;
};

/* A readiness flag on an eventfd: readable exactly while its queue has
 * something (the engines poll() these as the real fds). */
struct ready_fd {
    int fd;
    int ready;
};

struct mhost;

struct mpd {
    struct ibv_pd pd; /* first: the engine holds &pd */
    struct mhost *host;
    struct cds_list_head link; /* vm.pds */
};

struct mkey {
    uint8_t *addr;
    size_t len;
    int access;
    struct ibv_pd *pd;
    int live;
};

struct mcomp {
    struct ibv_comp_channel ch;
    struct ready_fd rfd;
    unsigned queued; /* events not yet taken */
    struct mcq *queue[64];
    struct cds_list_head link; /* vm.comps */
};

/* A completion on its way to, or in, a CQ. */
struct mcqe {
    struct ibv_wc wc;
    struct mqp *qp;  /* NULL once the QP is destroyed (rxe keeps the CQE) */
    int send_queue;
    int srq;         /* it took a WQE of the QP's SRQ */
    struct mcqe *next;
};

struct mcq {
    struct ibv_cq cq;
    struct mhost *host;
    struct mcomp *comp;
    int capacity;
    int count;
    struct mcqe *head, *tail;
    int armed;
    int broken;
    unsigned events_got, events_acked;
    struct cds_list_head link; /* vm.cqs */
};

struct mrecv {
    uint64_t wr_id;
    struct ibv_sge sge;
    int nsge;
    struct cds_list_head link; /* its mrq */
};

/* Posted receives, a QP's own or an SRQ's, taken in order. */
struct mrq {
    struct cds_list_head list;
    unsigned count, max;
};

struct msrq {
    struct ibv_srq srq;
    struct mhost *host;
    struct mrq rq;
    struct cds_list_head link; /* vm.srqs */
};

struct mwr {
    uint64_t wr_id;
    enum ibv_wr_opcode opcode;
    unsigned flags;
    int nsge;
    struct ibv_sge sge[MAX_SGE];
    uint8_t *inline_data;
    uint32_t len;
    uint64_t raddr;
    uint32_t rkey;
    int fail;     /* the planned QP error */
    unsigned tries;
    struct mwr *next;
};

struct fifo {
    struct mcqe *head, *tail;
};

struct mqp {
    struct ibv_qp qp; /* first */
    struct mhost *host;
    struct mid *id;
    struct mqp *peer;
    struct mcq *send_cq, *recv_cq;
    struct msrq *srq;
    int sq_sig_all;
    uint32_t max_send_wr, max_inline;
    unsigned sq_used;      /* posted, slot not yet given back by a poll */
    unsigned unsig_done;   /* unsignaled, executed: freed by the next polled CQE */
    struct mwr *sends, *sends_tail;
    struct mrq rq; /* without an SRQ */
    struct fifo sq_cqes, rq_cqes, rd_cqes; /* generated, not yet in the CQ */
    int last_wqe_due;
    int stalled; /* model_stall: its sends wait, without an error, until it fails */
    struct cds_list_head link; /* vm.qps */
};

struct mevent {
    struct rdma_cm_event ev;
    struct mid *id;
    uint8_t pdata[256];
    struct cds_list_head link; /* its mchan's events */
};

struct mchan {
    struct rdma_event_channel ch;
    struct ready_fd rfd;
    struct cds_list_head events;
    struct cds_list_head link; /* vm.chans */
};

struct mid {
    struct rdma_cm_id id; /* first */
    struct mchan *chan;
    struct mhost *host;    /* NULL until bound or resolved */
    struct mid *peer;      /* the other end, once connecting */
    struct mid *listener;  /* a server's id: who heard it */
    int listening;
    int connected;
    int disconnected;      /* DISCONNECTED queued to it */
    uint16_t port;
    struct cds_list_head link; /* vm.ids */
};

struct masync {
    struct ibv_async_event ev;
    struct cds_list_head link; /* its host's events */
};

struct mhost {
    struct ibv_device device;
    struct ibv_context ctx;
    struct ready_fd async;
    struct cds_list_head async_events;
    uint32_t ip;
    int port_down;
    int removed;
};

struct vm_state {
    pthread_mutex_t lock;
    pthread_cond_t cond;
    pthread_t thread;
    int running;
    const struct profile *prof;
    enum model_profile profile;
    uint64_t rng;
    struct model_plan plan;
    unsigned posts;
    unsigned injected;
    unsigned disconnects_due;
    uint64_t disconnect_pick;
    unsigned disconnect_waited; /* steps a due disconnect waited for a READ */
    unsigned duplicates;        /* completions given twice (flushes_read_twice) */
    model_disconnect_fn disconnect;
    void *cb_arg;
    struct mhost hosts[NHOSTS];
    /* Every live object, for the checks and the fabric. */
    struct cds_list_head pds, cqs, comps, srqs, qps, chans, ids;
    struct mkey *keys;
    uint32_t nkeys, keys_cap;
    uint32_t next_qpn;
    uint16_t next_port;
    unsigned nfindings;
    char findings[MAX_FINDINGS][200];
};

/* The one model; vm.lock guards all of it. */
extern struct vm_state vm;

/* The data path, reached through ibv_context's ops (verbs-model-verbs.c).
 * Each takes vm.lock itself. */
int model_post_send(struct ibv_qp *ibqp, struct ibv_send_wr *wr, struct ibv_send_wr **bad);
int model_post_recv(struct ibv_qp *ibqp, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad);
int model_post_srq_recv(struct ibv_srq *ibsrq, struct ibv_recv_wr *wr,
                        struct ibv_recv_wr **bad);
int model_poll_cq(struct ibv_cq *ibcq, int n, struct ibv_wc *wc);
int model_req_notify_cq(struct ibv_cq *ibcq, int solicited_only);

/* verbs-model.c; callers hold vm.lock. */
void vm_finding(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
int vm_ready_fd_open(struct ready_fd *r);
void vm_set_ready(struct ready_fd *r, int ready);
struct mhost *vm_host_of_ctx(const struct ibv_context *ctx);
struct mhost *vm_host_of_ip(uint32_t ip);
void vm_fifo_push(struct fifo *f, struct mcqe *e);
void vm_rq_push(struct mrq *rq, struct mrecv *r);
struct mrecv *vm_rq_pop(struct mrq *rq);
void vm_rq_free(struct mrq *rq);
struct mcqe *vm_fifo_pop(struct fifo *f);
void vm_drop_async_events(enum ibv_event_type type, const void *element);
void vm_cm_event(struct mid *id, enum rdma_cm_event_type type, int status, const void *pdata,
                 uint8_t pdata_len, struct mid *listen);
struct mkey *vm_key_of(uint32_t key);
struct mcqe *vm_new_cqe(struct mqp *qp, uint64_t wr_id, enum ibv_wc_status status,
                        enum ibv_wc_opcode opcode, uint32_t len, int send_queue);
void vm_send_cqe(struct mqp *qp, struct mwr *w, enum ibv_wc_status status);
void vm_qp_error(struct mqp *qp);
void vm_qp_close(struct mqp *qp);
const char *vm_qp_name(const struct mqp *qp);
void vm_cq_deliver(struct mcq *cq, struct mcqe *e);
void vm_maybe_inject(struct mqp *qp, struct mwr *w);

#endif /* GFR_VERBS_MODEL_INTERNAL_H */
