/* SPDX-License-Identifier: GPL-2.0-only */
/* The verbs model's fabric and the test's calls: verbs-model-internal.h. */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#include "verbs-model-internal.h"

static const struct profile profiles[MODEL_NPROFILES] = {
    [MODEL_RXE] = {.name = "rxe", .transport = IBV_TRANSPORT_IB, .vendor_id = 0xffffff,
                   .max_inline = 256, .max_cqe = 32767, .num_comp_vectors = 1,
                   .max_qp_rd_atom = 128, .flush_unsignaled = 1},
    [MODEL_MLX5] = {.name = "mlx5", .transport = IBV_TRANSPORT_IB, .vendor_id = 0x02c9,
                    .max_inline = 256, .max_cqe = 4194303, .num_comp_vectors = 4,
                    .max_qp_rd_atom = 16, .drop_cqes_on_destroy = 1, .last_wqe_event = 1,
                    .flush_unsignaled = 1},
    [MODEL_IWARP] = {.name = "iwarp", .transport = IBV_TRANSPORT_IWARP, .vendor_id = 0x1425,
                     .max_inline = 64, .max_cqe = 32768, .num_comp_vectors = 2,
                     .max_qp_rd_atom = 8, .drop_cqes_on_destroy = 1, .last_wqe_event = 1,
                     .post_in_error_fails = 1, .read_sink_remote_write = 1,
                     .rnr_terminates = 1, .reads_complete_late = 1,
                     .zero_len_checks_rkey = 1, .close_strands_reads = 1,
                     .flushes_read_twice = 1},
};

struct vm_state vm = {.lock = PTHREAD_MUTEX_INITIALIZER, .cond = PTHREAD_COND_INITIALIZER};

/* ---- helpers; callers hold vm.lock unless said ---- */

static uint64_t
rnd(void)
{
    uint64_t z = (vm.rng += 0x9e3779b97f4a7c15ULL);

    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

void
vm_finding(const char *fmt, ...)
{
    va_list ap;

    if (vm.nfindings < MAX_FINDINGS) {
        va_start(ap, fmt);
        vsnprintf(vm.findings[vm.nfindings], sizeof(vm.findings[0]), fmt, ap);
        va_end(ap);
    }
    vm.nfindings++;
}

void
vm_set_ready(struct ready_fd *r, int ready)
{
    uint64_t v = 1;

    if (ready && !r->ready) {
        if (write(r->fd, &v, sizeof(v)) != sizeof(v))
            vm_finding("model: eventfd write failed: %s", strerror(errno));
    } else if (!ready && r->ready) {
        if (read(r->fd, &v, sizeof(v)) != sizeof(v))
            vm_finding("model: eventfd read failed: %s", strerror(errno));
    }
    r->ready = ready;
}

int
vm_ready_fd_open(struct ready_fd *r)
{
    r->fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    r->ready = 0;
    return r->fd < 0 ? -1 : 0;
}

struct mhost *
vm_host_of_ctx(const struct ibv_context *ctx)
{
    for (unsigned h = 0; h < NHOSTS; h++)
        if (&vm.hosts[h].ctx == ctx)
            return &vm.hosts[h];
    return NULL;
}

struct mhost *
vm_host_of_ip(uint32_t ip)
{
    for (unsigned h = 0; h < NHOSTS; h++)
        if (vm.hosts[h].ip == ip)
            return &vm.hosts[h];
    return NULL;
}

void
vm_fifo_push(struct fifo *f, struct mcqe *e)
{
    e->next = NULL;
    if (f->tail)
        f->tail->next = e;
    else
        f->head = e;
    f->tail = e;
}

struct mcqe *
vm_fifo_pop(struct fifo *f)
{
    struct mcqe *e = f->head;

    if (e) {
        f->head = e->next;
        if (!f->head)
            f->tail = NULL;
    }
    return e;
}

void
vm_rq_push(struct mrq *rq, struct mrecv *r)
{
    cds_list_add_tail(&r->link, &rq->list);
    rq->count++;
}

/* The oldest posted receive, taken off the queue; NULL when none. */
struct mrecv *
vm_rq_pop(struct mrq *rq)
{
    struct mrecv *r;

    if (cds_list_empty(&rq->list))
        return NULL;
    r = cds_list_first_entry(&rq->list, struct mrecv, link);
    cds_list_del(&r->link);
    rq->count--;
    return r;
}

void
vm_rq_free(struct mrq *rq)
{
    struct mrecv *r;

    while ((r = vm_rq_pop(rq)) != NULL)
        free(r);
}

static void
async_event(struct mhost *h, enum ibv_event_type type, struct ibv_qp *qp, struct ibv_cq *cq,
            int port)
{
    struct masync *a = calloc(1, sizeof(*a));

    if (!a) {
        vm_finding("model: out of memory for an async event");
        return;
    }
    a->ev.event_type = type;
    if (qp)
        a->ev.element.qp = qp;
    else if (cq)
        a->ev.element.cq = cq;
    else
        a->ev.element.port_num = port;
    cds_list_add_tail(&a->link, &h->async_events);
    vm_set_ready(&h->async, 1);
}

/* Drops the queued async events of type about element (a QP or a CQ that
 * is being destroyed: libibverbs would wait for them to be acked). */
void
vm_drop_async_events(enum ibv_event_type type, const void *element)
{
    for (struct mhost *h = vm.hosts; h < vm.hosts + NHOSTS; h++) {
        struct masync *a, *tmp;

        cds_list_for_each_entry_safe(a, tmp, &h->async_events, link) {
            const void *of = type == IBV_EVENT_CQ_ERR ? (const void *)a->ev.element.cq
                                                       : (const void *)a->ev.element.qp;

            if (a->ev.event_type == type && of == element) {
                cds_list_del(&a->link);
                free(a);
            }
        }
        vm_set_ready(&h->async, !cds_list_empty(&h->async_events));
    }
}

void
vm_cm_event(struct mid *id, enum rdma_cm_event_type type, int status, const void *pdata,
         uint8_t pdata_len, struct mid *listen)
{
    struct mchan *ch = listen ? listen->chan : id->chan;
    struct mevent *e = calloc(1, sizeof(*e));

    if (!e) {
        vm_finding("model: out of memory for a CM event");
        return;
    }
    e->id = id;
    e->ev.id = &id->id;
    e->ev.listen_id = listen ? &listen->id : NULL;
    e->ev.event = type;
    e->ev.status = status;
    if (pdata_len) {
        memcpy(e->pdata, pdata, pdata_len);
        e->ev.param.conn.private_data = e->pdata;
        e->ev.param.conn.private_data_len = pdata_len;
    }
    cds_list_add_tail(&e->link, &ch->events);
    vm_set_ready(&ch->rfd, 1);
}

/* ---- memory regions and access checks ---- */

struct mkey *
vm_key_of(uint32_t key)
{
    return key && key <= vm.nkeys ? &vm.keys[key - 1] : NULL;
}

/* Is [addr, addr+len) inside a live region of key, in pd, with access? */
static const char *
access_denied(uint32_t key, uint64_t addr, uint64_t len, struct ibv_pd *pd, int access)
{
    struct mkey *k = vm_key_of(key);

    if (!k || !k->live)
        return "an unknown or deregistered key";
    if (k->pd != pd)
        return "a key of another protection domain";
    if (addr < (uintptr_t)k->addr || addr + len > (uintptr_t)k->addr + k->len)
        return "a range outside the region";
    if ((k->access & access) != access)
        return "a region without the access it needs";
    return NULL;
}

/* ---- QPs: completions and errors ---- */

struct mcqe *
vm_new_cqe(struct mqp *qp, uint64_t wr_id, enum ibv_wc_status status, enum ibv_wc_opcode opcode,
        uint32_t len, int send_queue)
{
    struct mcqe *e = calloc(1, sizeof(*e));

    if (!e) {
        vm_finding("model: out of memory for a completion");
        return NULL;
    }
    e->wc.wr_id = wr_id;
    e->wc.status = status;
    e->wc.opcode = opcode;
    e->wc.byte_len = len;
    e->wc.qp_num = qp->qp.qp_num;
    e->qp = qp;
    e->send_queue = send_queue;
    return e;
}

static enum ibv_wc_opcode
wc_opcode(enum ibv_wr_opcode op)
{
    switch (op) {
    case IBV_WR_RDMA_WRITE:
    case IBV_WR_RDMA_WRITE_WITH_IMM:
        return IBV_WC_RDMA_WRITE;
    case IBV_WR_RDMA_READ:
        return IBV_WC_RDMA_READ;
    default:
        return IBV_WC_SEND;
    }
}

/* The completion of a send-queue work request, signaled or in error. */
void
vm_send_cqe(struct mqp *qp, struct mwr *w, enum ibv_wc_status status)
{
    struct mcqe *e;

    if (status == IBV_WC_SUCCESS && !(w->flags & IBV_SEND_SIGNALED) && !qp->sq_sig_all) {
        qp->unsig_done++;
        return;
    }
    if (status == IBV_WC_WR_FLUSH_ERR && !(w->flags & IBV_SEND_SIGNALED) && !qp->sq_sig_all &&
        !vm.prof->flush_unsignaled) {
        qp->sq_used--;
        return;
    }
    e = vm_new_cqe(qp, w->wr_id, status, wc_opcode(w->opcode), w->len, 1);
    if (!e)
        return;
    if (w->opcode == IBV_WR_RDMA_READ && vm.prof->reads_complete_late)
        vm_fifo_push(&qp->rd_cqes, e);
    else
        vm_fifo_push(&qp->sq_cqes, e);
}

/* Moves qp to the error state: what has not run is flushed. */
void
vm_qp_error(struct mqp *qp)
{
    struct mrecv *r;

    if (qp->qp.state == IBV_QPS_ERR)
        return;
    qp->qp.state = IBV_QPS_ERR;
    while (qp->sends) {
        struct mwr *w = qp->sends;

        qp->sends = w->next;
        vm_send_cqe(qp, w, IBV_WC_WR_FLUSH_ERR);
        free(w->inline_data);
        free(w);
    }
    qp->sends_tail = NULL;
    if (vm.prof->flushes_read_twice && qp->rd_cqes.tail) {
        struct mcqe *again = vm_new_cqe(qp, qp->rd_cqes.tail->wc.wr_id, IBV_WC_WR_FLUSH_ERR,
                                        IBV_WC_RDMA_READ, 0, 1);

        if (again) {
            vm_fifo_push(&qp->rd_cqes, again);
            vm.duplicates++;
        }
    }
    while ((r = vm_rq_pop(&qp->rq)) != NULL) {
        struct mcqe *e = vm_new_cqe(qp, r->wr_id, IBV_WC_WR_FLUSH_ERR, IBV_WC_RECV, 0, 0);

        if (e)
            vm_fifo_push(&qp->rq_cqes, e);
        free(r);
    }
    if (qp->srq && vm.prof->last_wqe_event)
        qp->last_wqe_due = 1;
}

/* A graceful close of an RTS QP with nothing left to transmit (the
 * close_strands_reads profile): the READs whose completions are still on
 * their way, their responses not yet in, never complete; a later move to
 * the error state flushes the receive queue only. */
void
vm_qp_close(struct mqp *qp)
{
    struct mcqe *e;

    while ((e = vm_fifo_pop(&qp->rd_cqes)) != NULL)
        free(e);
    qp->qp.state = IBV_QPS_SQD;
}

static int
qp_dead_end(const struct mqp *qp)
{
    return !qp || qp->qp.state != IBV_QPS_RTS || qp->host->port_down || qp->host->removed;
}

/* ---- executing a work request (the fabric thread) ---- */

static uint32_t
gather(struct mqp *qp, struct mwr *w, uint8_t *out, size_t cap, const char **why)
{
    size_t off = 0;

    if (w->inline_data) {
        memcpy(out, w->inline_data, w->len < cap ? w->len : cap);
        return w->len;
    }
    for (int i = 0; i < w->nsge; i++) {
        const char *no = w->sge[i].length
                             ? access_denied(w->sge[i].lkey, w->sge[i].addr, w->sge[i].length,
                                             qp->qp.pd, 0)
                             : NULL;
        if (no) {
            *why = no;
            return 0;
        }
        if (w->sge[i].length && off + w->sge[i].length <= cap)
            memcpy(out + off, (void *)(uintptr_t)w->sge[i].addr, w->sge[i].length);
        off += w->sge[i].length;
    }
    return (uint32_t)off;
}

/* Both ends of a connection fail: the requester's WR with status. */
static void
fail_both(struct mqp *qp, struct mwr *w, enum ibv_wc_status status)
{
    vm_send_cqe(qp, w, status);
    vm_qp_error(qp);
    if (qp->peer)
        vm_qp_error(qp->peer);
}

/* "model0 QP 257"; two may appear in one finding, so it rotates buffers. */
const char *
vm_qp_name(const struct mqp *qp)
{
    static __thread char buf[2][sizeof(qp->host->device.name) + 16];
    static __thread unsigned next;
    char *out = buf[next++ % 2];

    snprintf(out, sizeof(buf[0]), "%s QP %u", qp->host->device.name, qp->qp.qp_num);
    return out;
}

/* Runs w, the head of qp's send queue.  0 when done, 1 to retry later
 * (RNR, or a dead peer not yet given up on). */
static int
execute(struct mqp *qp, struct mwr *w)
{
    struct mqp *peer = qp->peer;
    static uint8_t data[1 << 22];
    const char *why = NULL;
    uint32_t len;

    if (w->fail) {
        fail_both(qp, w, IBV_WC_RETRY_EXC_ERR);
        return 0;
    }
    if (qp_dead_end(peer) || qp->host->port_down) {
        if (++w->tries < RETRIES_TO_DEAD_PEER)
            return 1;
        vm_send_cqe(qp, w, IBV_WC_RETRY_EXC_ERR);
        vm_qp_error(qp);
        return 0;
    }
    switch (w->opcode) {
    case IBV_WR_SEND: {
        struct mrecv *r;
        struct mcqe *e;
        int from_srq = peer->srq != NULL;

        len = gather(qp, w, data, sizeof(data), &why);
        if (why) {
            vm_finding("%s: a SEND's gather list uses %s", vm_qp_name(qp), why);
            fail_both(qp, w, IBV_WC_LOC_PROT_ERR);
            return 0;
        }
        r = vm_rq_pop(from_srq ? &peer->srq->rq : &peer->rq);
        if (!r) {
            if (!vm.prof->rnr_terminates)
                return 1; /* RNR NAK; rnr-retry 7 retries for ever */
            vm_finding("%s: a SEND found no receive buffer at %s, which terminates an "
                    "iWARP connection", vm_qp_name(qp), vm_qp_name(peer));
            fail_both(qp, w, IBV_WC_REM_OP_ERR);
            return 0;
        }
        why = r->nsge ? access_denied(r->sge.lkey, r->sge.addr, r->sge.length, peer->qp.pd,
                                      IBV_ACCESS_LOCAL_WRITE)
                      : "no buffer";
        if (!why && len > r->sge.length)
            why = "a buffer shorter than the message";
        if (why) {
            vm_finding("%s: a %u-byte SEND landed in a receive with %s at %s", vm_qp_name(qp), len, why,
                    vm_qp_name(peer));
            e = vm_new_cqe(peer, r->wr_id, IBV_WC_LOC_LEN_ERR, IBV_WC_RECV, 0, 0);
            if (e) {
                e->srq = from_srq;
                vm_fifo_push(&peer->rq_cqes, e);
            }
            free(r);
            fail_both(qp, w, IBV_WC_REM_INV_REQ_ERR);
            return 0;
        }
        if (len)
            memcpy((void *)(uintptr_t)r->sge.addr, data, len);
        e = vm_new_cqe(peer, r->wr_id, IBV_WC_SUCCESS, IBV_WC_RECV, len, 0);
        if (e) {
            e->srq = from_srq;
            e->wc.src_qp = qp->qp.qp_num;
            vm_fifo_push(&peer->rq_cqes, e);
        }
        free(r);
        vm_send_cqe(qp, w, IBV_WC_SUCCESS);
        return 0;
    }
    case IBV_WR_RDMA_WRITE:
        len = gather(qp, w, data, sizeof(data), &why);
        if (why) {
            vm_finding("%s: an RDMA WRITE's gather list uses %s", vm_qp_name(qp), why);
            fail_both(qp, w, IBV_WC_LOC_PROT_ERR);
            return 0;
        }
        if (len || vm.prof->zero_len_checks_rkey)
            why = access_denied(w->rkey, w->raddr, len, peer->qp.pd, IBV_ACCESS_REMOTE_WRITE);
        if (why) {
            vm_finding("%s: an RDMA WRITE of %u bytes to rkey %#x hit %s at %s", vm_qp_name(qp), len,
                    w->rkey, why, vm_qp_name(peer));
            fail_both(qp, w, IBV_WC_REM_ACCESS_ERR);
            return 0;
        }
        if (len)
            memcpy((void *)(uintptr_t)w->raddr, data, len);
        vm_send_cqe(qp, w, IBV_WC_SUCCESS);
        return 0;
    case IBV_WR_RDMA_READ: {
        int sink_access = IBV_ACCESS_LOCAL_WRITE |
                          (vm.prof->read_sink_remote_write ? IBV_ACCESS_REMOTE_WRITE : 0);
        uint64_t off = 0;

        len = 0;
        for (int i = 0; i < w->nsge; i++)
            len += w->sge[i].length;
        if (len || vm.prof->zero_len_checks_rkey)
            why = access_denied(w->rkey, w->raddr, len, peer->qp.pd, IBV_ACCESS_REMOTE_READ);
        if (why) {
            vm_finding("%s: an RDMA READ of %u bytes from rkey %#x hit %s at %s", vm_qp_name(qp), len,
                    w->rkey, why, vm_qp_name(peer));
            fail_both(qp, w, IBV_WC_REM_ACCESS_ERR);
            return 0;
        }
        for (int i = 0; i < w->nsge && !why; i++)
            if (w->sge[i].length)
                why = access_denied(w->sge[i].lkey, w->sge[i].addr, w->sge[i].length, qp->qp.pd,
                                    sink_access);
        if (why) {
            vm_finding("%s: an RDMA READ's sink uses %s%s", vm_qp_name(qp), why,
                    vm.prof->read_sink_remote_write ? " (iWARP: the sink needs remote write)"
                                                   : "");
            fail_both(qp, w, IBV_WC_LOC_PROT_ERR);
            return 0;
        }
        for (int i = 0; i < w->nsge; i++) {
            if (w->sge[i].length)
                memcpy((void *)(uintptr_t)w->sge[i].addr, (void *)(uintptr_t)(w->raddr + off),
                       w->sge[i].length);
            off += w->sge[i].length;
        }
        vm_send_cqe(qp, w, IBV_WC_SUCCESS);
        return 0;
    }
    default:
        vm_finding("%s: posted opcode %d, which this protocol never uses", vm_qp_name(qp), w->opcode);
        fail_both(qp, w, IBV_WC_REM_INV_REQ_ERR);
        return 0;
    }
}

/* ---- the CQ ---- */

void
vm_cq_deliver(struct mcq *cq, struct mcqe *e)
{
    if (cq->broken) {
        free(e);
        return;
    }
    if (cq->count >= cq->capacity) {
        vm_finding("%s CQ of %d entries overflowed", cq->host->device.name, cq->capacity);
        cq->broken = 1;
        async_event(cq->host, IBV_EVENT_CQ_ERR, NULL, &cq->cq, 0);
        free(e);
        return;
    }
    e->next = NULL;
    if (cq->tail)
        cq->tail->next = e;
    else
        cq->head = e;
    cq->tail = e;
    cq->count++;
    if (cq->armed && cq->comp) {
        struct mcomp *c = cq->comp;

        cq->armed = 0;
        if (c->queued < sizeof(c->queue) / sizeof(c->queue[0])) {
            c->queue[c->queued++] = cq;
            vm_set_ready(&c->rfd, 1);
        } else {
            vm_finding("model: completion channel event queue full");
        }
    }
}

/* ---- the fabric thread ---- */

enum action_kind { RUN_SEND, DELIVER_SQ, DELIVER_RQ, DELIVER_RD, LAST_WQE };

struct action {
    enum action_kind kind;
    struct mqp *qp;
};

/* One step of the fabric: 1 when something happened. */
static int
fabric_step(void)
{
    struct action acts[256];
    unsigned n = 0;
    struct mqp *qp;

    cds_list_for_each_entry(qp, &vm.qps, link) {
        if (n + 5 > sizeof(acts) / sizeof(acts[0]))
            break;
        if (qp->sends && qp->qp.state == IBV_QPS_RTS && !qp->stalled)
            acts[n++] = (struct action){RUN_SEND, qp};
        if (qp->sq_cqes.head)
            acts[n++] = (struct action){DELIVER_SQ, qp};
        if (qp->rq_cqes.head)
            acts[n++] = (struct action){DELIVER_RQ, qp};
        if (qp->rd_cqes.head)
            acts[n++] = (struct action){DELIVER_RD, qp};
        if (qp->last_wqe_due && !qp->rq_cqes.head)
            acts[n++] = (struct action){LAST_WQE, qp};
    }
    if (!n)
        return 0;
    struct action a = acts[rnd() % n];

    qp = a.qp;
    switch (a.kind) {
    case RUN_SEND: {
        /* Off the queue while it runs, so that an error's flush does not
         * complete it a second time. */
        struct mwr *w = qp->sends;

        qp->sends = w->next;
        if (!qp->sends)
            qp->sends_tail = NULL;
        if (execute(qp, w) == 0) {
            free(w->inline_data);
            free(w);
        } else if (qp->qp.state == IBV_QPS_ERR) {
            vm_send_cqe(qp, w, IBV_WC_WR_FLUSH_ERR);
            free(w->inline_data);
            free(w);
        } else {
            w->next = qp->sends;
            qp->sends = w;
            if (!w->next)
                qp->sends_tail = w;
        }
        break;
    }
    case DELIVER_SQ:
        vm_cq_deliver(qp->send_cq, vm_fifo_pop(&qp->sq_cqes));
        break;
    case DELIVER_RQ:
        vm_cq_deliver(qp->recv_cq, vm_fifo_pop(&qp->rq_cqes));
        break;
    case DELIVER_RD:
        vm_cq_deliver(qp->send_cq, vm_fifo_pop(&qp->rd_cqes));
        break;
    case LAST_WQE:
        qp->last_wqe_due = 0;
        async_event(qp->host, IBV_EVENT_QP_LAST_WQE_REACHED, &qp->qp, NULL, 0);
        break;
    }
    return 1;
}

/* Under close_strands_reads a due disconnect waits (at most
 * DISCONNECT_WAIT_STEPS steps) for a moment when some QP has a READ whose
 * response is not in and nothing else to transmit: the moment a graceful
 * close strands it. */
#define DISCONNECT_WAIT_STEPS 256

static int
disconnect_now(void)
{
    struct mqp *qp;

    if (!vm.prof->close_strands_reads || ++vm.disconnect_waited > DISCONNECT_WAIT_STEPS)
        return 1;
    cds_list_for_each_entry(qp, &vm.qps, link)
        if (qp->qp.state == IBV_QPS_RTS && qp->rd_cqes.head && !qp->sends)
            return 1;
    return 0;
}

static void *
fabric_main(void *arg)
{
    unsigned idle = 0;

    (void)arg;
    pthread_mutex_lock(&vm.lock);
    while (vm.running) {
        int did = fabric_step();

        if (vm.disconnects_due && vm.disconnect && disconnect_now()) {
            uint64_t pick = vm.disconnect_pick;

            vm.disconnects_due--;
            pthread_mutex_unlock(&vm.lock);
            vm.disconnect(vm.cb_arg, pick);
            pthread_mutex_lock(&vm.lock);
        }
        if (did) {
            idle = 0;
            /* Let the engines' threads run between steps, sometimes long
             * enough for a poller to arm its CQ and sleep. */
            uint64_t r = rnd() % 16;

            pthread_mutex_unlock(&vm.lock);
            if (r == 0)
                usleep(200);
            else
                sched_yield();
            pthread_mutex_lock(&vm.lock);
        } else {
            struct timespec ts;

            clock_gettime(CLOCK_REALTIME, &ts);
            ts.tv_nsec += idle++ < 100 ? 100000 : 2000000;
            if (ts.tv_nsec >= 1000000000) {
                ts.tv_sec++;
                ts.tv_nsec -= 1000000000;
            }
            pthread_cond_timedwait(&vm.cond, &vm.lock, &ts);
        }
    }
    pthread_mutex_unlock(&vm.lock);
    return NULL;
}

/* ---- faults ---- */

/* A device hot-unplugged: what it received and had not yet completed
 * into a CQ is gone with it, though each sender's SEND completed well (RC
 * acknowledged it; iWARP completes on handing it to TCP): a peer that
 * counts on its completion to know a message arrived loses it.  Then its
 * QPs go to the error state and its owners hear of the removal. */
static void
remove_device(struct mhost *h)
{
    struct mqp *qp;
    struct mid *id;
    struct mcqe *e;

    h->removed = 1;
    cds_list_for_each_entry(qp, &vm.qps, link) {
        if (qp->host != h)
            continue;
        while ((e = vm_fifo_pop(&qp->rq_cqes)) != NULL)
            free(e);
        vm_qp_error(qp);
    }
    async_event(h, IBV_EVENT_DEVICE_FATAL, NULL, NULL, 0);
    cds_list_for_each_entry(id, &vm.ids, link)
        if (id->host == h && id->id.verbs)
            vm_cm_event(id, RDMA_CM_EVENT_DEVICE_REMOVAL, 0, NULL, 0, NULL);
}

/* Called at every posted send work request w. */
void
vm_maybe_inject(struct mqp *qp, struct mwr *w)
{
    vm.posts++;
    if (vm.injected || vm.plan.fault == MODEL_FAULT_NONE || vm.posts < vm.plan.at_post)
        return;
    vm.injected = 1;
    switch (vm.plan.fault) {
    case MODEL_FAULT_QP_ERROR:
        w->fail = 1;
        (void)qp;
        break;
    case MODEL_FAULT_PORT_DOWN:
        vm.hosts[vm.plan.host].port_down = 1;
        async_event(&vm.hosts[vm.plan.host], IBV_EVENT_PORT_ERR, NULL, NULL, 1);
        break;
    case MODEL_FAULT_DEVICE_REMOVAL:
        remove_device(&vm.hosts[vm.plan.host]);
        break;
    case MODEL_FAULT_PEER_DISCONNECT:
        vm.disconnects_due++;
        vm.disconnect_pick = rnd();
        break;
    default:
        break;
    }
}

/* ---- the test's side ---- */

const char *
model_profile_name(enum model_profile profile)
{
    return profile < MODEL_NPROFILES ? profiles[profile].name : "unknown";
}

const char *
model_fault_name(enum model_fault fault)
{
    static const char *const names[] = {"none", "qp-error", "port-down", "device-removal",
                                        "peer-disconnect"};

    return fault < MODEL_NFAULTS ? names[fault] : "unknown";
}

void
model_addr(unsigned host, uint16_t port, struct sockaddr_in *sin)
{
    *sin = (struct sockaddr_in){.sin_family = AF_INET,
                                .sin_addr.s_addr = htonl(0x0a000001 + (host / 2) * 0x100 +
                                                         host % 2),
                                .sin_port = htons(port)};
}

int
model_start(enum model_profile profile, uint64_t seed, const struct model_plan *plan,
            model_disconnect_fn disconnect, void *cb_arg)
{
    int err;

    if (profile >= MODEL_NPROFILES)
        return -EINVAL;
    pthread_mutex_lock(&vm.lock);
    vm.profile = profile;
    vm.prof = &profiles[profile];
    vm.rng = seed;
    vm.plan = plan ? *plan : (struct model_plan){0};
    vm.posts = vm.injected = vm.disconnects_due = vm.disconnect_waited = vm.duplicates = 0;
    vm.disconnect = disconnect;
    vm.cb_arg = cb_arg;
    vm.nfindings = 0;
    vm.nkeys = 0;
    vm.next_qpn = 0x100;
    vm.next_port = 40000;
    /* What a failed run left behind was reported by its model_stop. */
    CDS_INIT_LIST_HEAD(&vm.pds);
    CDS_INIT_LIST_HEAD(&vm.cqs);
    CDS_INIT_LIST_HEAD(&vm.comps);
    CDS_INIT_LIST_HEAD(&vm.srqs);
    CDS_INIT_LIST_HEAD(&vm.qps);
    CDS_INIT_LIST_HEAD(&vm.chans);
    CDS_INIT_LIST_HEAD(&vm.ids);
    for (unsigned h = 0; h < NHOSTS; h++) {
        struct mhost *host = &vm.hosts[h];

        *host = (struct mhost){0};
        CDS_INIT_LIST_HEAD(&host->async_events);
        snprintf(host->device.name, sizeof(host->device.name), "model%u", h);
        host->device.transport_type = vm.prof->transport;
        host->device.node_type =
            vm.prof->transport == IBV_TRANSPORT_IWARP ? IBV_NODE_RNIC : IBV_NODE_CA;
        host->ctx.device = &host->device;
        host->ctx.num_comp_vectors = vm.prof->num_comp_vectors;
        host->ctx.ops.post_send = model_post_send;
        host->ctx.ops.post_recv = model_post_recv;
        host->ctx.ops.post_srq_recv = model_post_srq_recv;
        host->ctx.ops.poll_cq = model_poll_cq;
        host->ctx.ops.req_notify_cq = model_req_notify_cq;
        host->ip = htonl(0x0a000001 + (h / 2) * 0x100 + h % 2);
        if (vm_ready_fd_open(&host->async) != 0) {
            pthread_mutex_unlock(&vm.lock);
            return -errno;
        }
        host->ctx.async_fd = host->async.fd;
        host->ctx.cmd_fd = -1;
    }
    vm.running = 1;
    pthread_mutex_unlock(&vm.lock);
    err = pthread_create(&vm.thread, NULL, fabric_main, NULL);
    if (err) {
        vm.running = 0;
        return -err;
    }
    return 0;
}

static unsigned
list_len(const struct cds_list_head *head)
{
    const struct cds_list_head *pos;
    unsigned n = 0;

    cds_list_for_each(pos, head)
        n++;
    return n;
}

unsigned
model_live_qps(void)
{
    unsigned n;

    pthread_mutex_lock(&vm.lock);
    n = list_len(&vm.qps);
    pthread_mutex_unlock(&vm.lock);
    return n;
}

/* A counter of vm's, read under vm.lock (the fabric thread writes it). */
static unsigned
counter(const unsigned *which)
{
    unsigned n;

    pthread_mutex_lock(&vm.lock);
    n = *which;
    pthread_mutex_unlock(&vm.lock);
    return n;
}

void
model_stall(unsigned host)
{
    struct mqp *qp;

    pthread_mutex_lock(&vm.lock);
    cds_list_for_each_entry(qp, &vm.qps, link)
        if (qp->host == &vm.hosts[host])
            qp->stalled = 1;
    pthread_mutex_unlock(&vm.lock);
}

unsigned
model_duplicates(void)
{
    return counter(&vm.duplicates);
}

unsigned
model_faults_injected(void)
{
    return counter(&vm.injected);
}

unsigned
model_stop(char *report, size_t len)
{
    unsigned n, nqp, ncq, nsrq, npd, nid, nch, ncomp, nmr = 0;
    size_t off = 0;

    pthread_mutex_lock(&vm.lock);
    vm.running = 0;
    pthread_cond_signal(&vm.cond);
    pthread_mutex_unlock(&vm.lock);
    pthread_join(vm.thread, NULL);

    pthread_mutex_lock(&vm.lock);
    nqp = list_len(&vm.qps);
    ncq = list_len(&vm.cqs);
    nsrq = list_len(&vm.srqs);
    npd = list_len(&vm.pds);
    nid = list_len(&vm.ids);
    nch = list_len(&vm.chans);
    ncomp = list_len(&vm.comps);
    for (uint32_t k = 0; k < vm.nkeys; k++)
        nmr += vm.keys[k].live;
    if (nqp || ncq || nsrq || npd || nid || nch || ncomp || nmr)
        vm_finding("left behind: %u QP, %u CQ, %u SRQ, %u PD, %u MR, %u CM id, %u event channel, "
                "%u completion channel", nqp, ncq, nsrq, npd, nmr, nid, nch, ncomp);
    n = vm.nfindings;
    if (len)
        report[0] = '\0';
    for (unsigned i = 0; i < n && i < MAX_FINDINGS && off < len; i++)
        off += (size_t)snprintf(report + off, len - off, "%s\n", vm.findings[i]);
    for (unsigned h = 0; h < NHOSTS; h++) {
        struct masync *a, *tmp;

        cds_list_for_each_entry_safe(a, tmp, &vm.hosts[h].async_events, link)
            free(a);
        close(vm.hosts[h].async.fd);
    }
    free(vm.keys);
    vm.keys = NULL;
    vm.nkeys = vm.keys_cap = 0;
    pthread_mutex_unlock(&vm.lock);
    return n;
}
