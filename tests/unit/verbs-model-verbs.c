/* SPDX-License-Identifier: GPL-2.0-only */
/* The verbs model's libibverbs calls: verbs-model-internal.h. */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "verbs-model-internal.h"

/* ---- verbs: the data path (ctx->ops) ---- */

int
model_post_send(struct ibv_qp *ibqp, struct ibv_send_wr *wr, struct ibv_send_wr **bad)
{
    struct mqp *qp = (struct mqp *)ibqp;
    int err = 0;

    pthread_mutex_lock(&vm.lock);
    for (; wr; wr = wr->next) {
        struct mwr *w;

        if ((qp->qp.state == IBV_QPS_ERR || qp->qp.state == IBV_QPS_SQD) &&
            vm.prof->post_in_error_fails) {
            err = EINVAL;
            break;
        }
        if (qp->qp.state != IBV_QPS_RTS && qp->qp.state != IBV_QPS_ERR) {
            vm_finding("%s: a send posted in QP state %d", vm_qp_name(qp), qp->qp.state);
            err = EINVAL;
            break;
        }
        if (qp->sq_used >= qp->max_send_wr) {
            vm_finding("%s: a send posted to a full send queue (%u work requests)", vm_qp_name(qp),
                    qp->max_send_wr);
            err = ENOMEM;
            break;
        }
        if (wr->num_sge > MAX_SGE || wr->num_sge < 0) {
            err = EINVAL;
            break;
        }
        w = calloc(1, sizeof(*w));
        if (!w) {
            err = ENOMEM;
            break;
        }
        w->wr_id = wr->wr_id;
        w->opcode = wr->opcode;
        w->flags = wr->send_flags;
        w->nsge = wr->num_sge;
        for (int i = 0; i < wr->num_sge; i++) {
            w->sge[i] = wr->sg_list[i];
            w->len += wr->sg_list[i].length;
        }
        if (wr->opcode == IBV_WR_RDMA_WRITE || wr->opcode == IBV_WR_RDMA_READ) {
            w->raddr = wr->wr.rdma.remote_addr;
            w->rkey = wr->wr.rdma.rkey;
        }
        if (wr->send_flags & IBV_SEND_INLINE) {
            size_t off = 0;

            if (w->len > qp->max_inline || wr->opcode == IBV_WR_RDMA_READ) {
                vm_finding("%s: %u bytes posted inline, over the QP's %u", vm_qp_name(qp), w->len,
                        qp->max_inline);
                free(w);
                err = EINVAL;
                break;
            }
            w->inline_data = malloc(w->len ? w->len : 1);
            if (!w->inline_data) {
                free(w);
                err = ENOMEM;
                break;
            }
            for (int i = 0; i < wr->num_sge; i++) {
                if (!wr->sg_list[i].length)
                    continue;
                memcpy(w->inline_data + off, (void *)(uintptr_t)wr->sg_list[i].addr,
                       wr->sg_list[i].length);
                off += wr->sg_list[i].length;
            }
        }
        qp->sq_used++;
        vm_maybe_inject(qp, w);
        if (qp->qp.state == IBV_QPS_ERR) {
            vm_send_cqe(qp, w, IBV_WC_WR_FLUSH_ERR);
            free(w->inline_data);
            free(w);
            continue;
        }
        if (qp->sends_tail)
            qp->sends_tail->next = w;
        else
            qp->sends = w;
        qp->sends_tail = w;
    }
    if (err)
        *bad = wr;
    pthread_cond_signal(&vm.cond);
    pthread_mutex_unlock(&vm.lock);
    return err;
}

static struct mrecv *
new_recv(const struct ibv_recv_wr *wr, int *err)
{
    struct mrecv *r;

    if (wr->num_sge > 1) {
        *err = EINVAL;
        return NULL;
    }
    r = calloc(1, sizeof(*r));
    if (!r) {
        *err = ENOMEM;
        return NULL;
    }
    r->wr_id = wr->wr_id;
    r->nsge = wr->num_sge;
    if (wr->num_sge)
        r->sge = wr->sg_list[0];
    return r;
}

int
model_post_recv(struct ibv_qp *ibqp, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad)
{
    struct mqp *qp = (struct mqp *)ibqp;
    int err = 0;

    pthread_mutex_lock(&vm.lock);
    for (; wr; wr = wr->next) {
        struct mrecv *r;

        if (qp->srq) {
            vm_finding("%s: ibv_post_recv on a QP of an SRQ", vm_qp_name(qp));
            err = EINVAL;
            break;
        }
        if ((qp->qp.state == IBV_QPS_ERR || qp->qp.state == IBV_QPS_SQD) &&
            vm.prof->post_in_error_fails) {
            err = EINVAL;
            break;
        }
        if (qp->rq.count >= qp->rq.max) {
            vm_finding("%s: a receive posted to a full receive queue (%u)", vm_qp_name(qp),
                    qp->rq.max);
            err = ENOMEM;
            break;
        }
        r = new_recv(wr, &err);
        if (!r)
            break;
        if (qp->qp.state == IBV_QPS_ERR) {
            struct mcqe *e = vm_new_cqe(qp, r->wr_id, IBV_WC_WR_FLUSH_ERR, IBV_WC_RECV, 0, 0);

            if (e)
                vm_fifo_push(&qp->rq_cqes, e);
            free(r);
            continue;
        }
        vm_rq_push(&qp->rq, r);
    }
    if (err)
        *bad = wr;
    pthread_cond_signal(&vm.cond);
    pthread_mutex_unlock(&vm.lock);
    return err;
}

int
model_post_srq_recv(struct ibv_srq *ibsrq, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad)
{
    struct msrq *srq = (struct msrq *)ibsrq;
    int err = 0;

    pthread_mutex_lock(&vm.lock);
    for (; wr; wr = wr->next) {
        struct mrecv *r;

        if (srq->rq.count >= srq->rq.max) {
            vm_finding("%s: a receive posted to a full SRQ (%u)", srq->host->device.name,
                       srq->rq.max);
            err = ENOMEM;
            break;
        }
        r = new_recv(wr, &err);
        if (!r)
            break;
        vm_rq_push(&srq->rq, r);
    }
    if (err)
        *bad = wr;
    pthread_cond_signal(&vm.cond);
    pthread_mutex_unlock(&vm.lock);
    return err;
}

int
model_poll_cq(struct ibv_cq *ibcq, int n, struct ibv_wc *wc)
{
    struct mcq *cq = (struct mcq *)ibcq;
    int got = 0;

    pthread_mutex_lock(&vm.lock);
    if (cq->broken) {
        pthread_mutex_unlock(&vm.lock);
        return -EIO;
    }
    while (got < n && cq->head) {
        struct mcqe *e = cq->head;

        cq->head = e->next;
        if (!cq->head)
            cq->tail = NULL;
        cq->count--;
        if (e->qp && e->send_queue) {
            e->qp->sq_used -= 1 + e->qp->unsig_done;
            e->qp->unsig_done = 0;
        }
        wc[got++] = e->wc;
        free(e);
    }
    pthread_mutex_unlock(&vm.lock);
    return got;
}

int
model_req_notify_cq(struct ibv_cq *ibcq, int solicited_only)
{
    struct mcq *cq = (struct mcq *)ibcq;

    (void)solicited_only;
    pthread_mutex_lock(&vm.lock);
    cq->armed = 1;
    pthread_mutex_unlock(&vm.lock);
    return 0;
}

/* ---- verbs: objects ---- */

int
ibv_query_device(struct ibv_context *ctx, struct ibv_device_attr *attr)
{
    memset(attr, 0, sizeof(*attr));
    pthread_mutex_lock(&vm.lock);
    struct mhost *h = vm_host_of_ctx(ctx);

    if (!h || h->removed) {
        pthread_mutex_unlock(&vm.lock);
        errno = EIO;
        return EIO;
    }
    attr->vendor_id = vm.prof->vendor_id;
    attr->max_qp = 1024;
    attr->max_qp_wr = 16384;
    attr->max_sge = MAX_SGE;
    attr->max_cq = 1024;
    attr->max_cqe = vm.prof->max_cqe;
    attr->max_mr = 1 << 20;
    attr->max_pd = 1024;
    attr->max_qp_rd_atom = vm.prof->max_qp_rd_atom;
    attr->max_qp_init_rd_atom = vm.prof->max_qp_rd_atom;
    attr->max_srq = 64;
    attr->max_srq_wr = 16384;
    attr->max_srq_sge = 1;
    attr->phys_port_cnt = 1;
    pthread_mutex_unlock(&vm.lock);
    return 0;
}

int
ibv_query_gid(struct ibv_context *ctx, uint8_t port, int index, union ibv_gid *gid)
{
    (void)ctx;
    (void)port;
    if (index != 0) {
        errno = EINVAL;
        return -1;
    }
    memset(gid, 0, sizeof(*gid));
    return 0;
}

int
ibv_query_qp(struct ibv_qp *ibqp, struct ibv_qp_attr *attr, int mask, struct ibv_qp_init_attr *init)
{
    (void)mask;
    memset(attr, 0, sizeof(*attr));
    memset(init, 0, sizeof(*init));
    pthread_mutex_lock(&vm.lock);
    attr->qp_state = ibqp->state;
    pthread_mutex_unlock(&vm.lock);
    return 0;
}

struct ibv_pd *
ibv_alloc_pd(struct ibv_context *ctx)
{
    struct mpd *pd;

    pthread_mutex_lock(&vm.lock);
    struct mhost *h = vm_host_of_ctx(ctx);

    if (!h || h->removed) {
        pthread_mutex_unlock(&vm.lock);
        errno = ENODEV;
        return NULL;
    }
    pd = calloc(1, sizeof(*pd));
    if (pd) {
        pd->pd.context = ctx;
        pd->host = h;
        cds_list_add(&pd->link, &vm.pds);
    }
    pthread_mutex_unlock(&vm.lock);
    return pd ? &pd->pd : NULL;
}

int
ibv_dealloc_pd(struct ibv_pd *ibpd)
{
    struct mpd *pd = (struct mpd *)ibpd;

    pthread_mutex_lock(&vm.lock);
    for (uint32_t k = 0; k < vm.nkeys; k++)
        if (vm.keys[k].live && vm.keys[k].pd == ibpd) {
            vm_finding("a PD freed with memory region %#x still registered", k + 1);
            pthread_mutex_unlock(&vm.lock);
            return EBUSY;
        }
    cds_list_del(&pd->link);
    pthread_mutex_unlock(&vm.lock);
    free(pd);
    return 0;
}

struct ibv_mr *(ibv_reg_mr)(struct ibv_pd *pd, void *addr, size_t length, int access)
{
    struct ibv_mr *mr;
    struct mkey *k;

    if ((access & (IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_ATOMIC)) &&
        !(access & IBV_ACCESS_LOCAL_WRITE)) {
        errno = EINVAL; /* the kernel's rule, for every provider */
        return NULL;
    }
    pthread_mutex_lock(&vm.lock);
    struct mhost *h = vm_host_of_ctx(pd->context);

    if (!h || h->removed) {
        pthread_mutex_unlock(&vm.lock);
        errno = EIO;
        return NULL;
    }
    if (vm.nkeys == vm.keys_cap) {
        uint32_t cap = vm.keys_cap ? vm.keys_cap * 2 : 1024;
        struct mkey *keys = realloc(vm.keys, cap * sizeof(*keys));

        if (!keys) {
            pthread_mutex_unlock(&vm.lock);
            errno = ENOMEM;
            return NULL;
        }
        vm.keys = keys;
        vm.keys_cap = cap;
    }
    mr = calloc(1, sizeof(*mr));
    if (!mr) {
        pthread_mutex_unlock(&vm.lock);
        errno = ENOMEM;
        return NULL;
    }
    k = &vm.keys[vm.nkeys++];
    *k = (struct mkey){.addr = addr, .len = length, .access = access, .pd = pd, .live = 1};
    *mr = (struct ibv_mr){.context = pd->context, .pd = pd, .addr = addr, .length = length};
    mr->lkey = mr->rkey = vm.nkeys; /* keys are never reused: a stale one stays stale */
    pthread_mutex_unlock(&vm.lock);
    return mr;
}

/* What ibv_reg_mr becomes when its access flags are not a constant. */
struct ibv_mr *
ibv_reg_mr_iova2(struct ibv_pd *pd, void *addr, size_t length, uint64_t iova, unsigned int access)
{
    (void)iova;
    return (ibv_reg_mr)(pd, addr, length, (int)access);
}

int
ibv_dereg_mr(struct ibv_mr *mr)
{
    pthread_mutex_lock(&vm.lock);
    struct mkey *k = vm_key_of(mr->lkey);

    if (!k || !k->live)
        vm_finding("ibv_dereg_mr of a region not registered (key %#x)", mr->lkey);
    else
        k->live = 0;
    pthread_mutex_unlock(&vm.lock);
    free(mr);
    return 0;
}

struct ibv_comp_channel *
ibv_create_comp_channel(struct ibv_context *ctx)
{
    struct mcomp *c = calloc(1, sizeof(*c));

    if (!c || vm_ready_fd_open(&c->rfd) != 0) {
        free(c);
        errno = ENOMEM;
        return NULL;
    }
    c->ch.context = ctx;
    c->ch.fd = c->rfd.fd;
    pthread_mutex_lock(&vm.lock);
    cds_list_add(&c->link, &vm.comps);
    pthread_mutex_unlock(&vm.lock);
    return &c->ch;
}

int
ibv_destroy_comp_channel(struct ibv_comp_channel *ch)
{
    struct mcomp *c = (struct mcomp *)ch;
    struct mcq *cq;

    pthread_mutex_lock(&vm.lock);
    cds_list_for_each_entry(cq, &vm.cqs, link)
        if (cq->comp == c) {
            vm_finding("a completion channel destroyed while a CQ uses it");
            pthread_mutex_unlock(&vm.lock);
            return EBUSY;
        }
    cds_list_del(&c->link);
    pthread_mutex_unlock(&vm.lock);
    close(c->rfd.fd);
    free(c);
    return 0;
}

int
ibv_get_cq_event(struct ibv_comp_channel *ch, struct ibv_cq **cq, void **cq_context)
{
    struct mcomp *c = (struct mcomp *)ch;
    struct mcq *got;

    pthread_mutex_lock(&vm.lock);
    if (!c->queued) {
        pthread_mutex_unlock(&vm.lock);
        errno = EAGAIN;
        return -1;
    }
    got = c->queue[0];
    memmove(c->queue, c->queue + 1, --c->queued * sizeof(c->queue[0]));
    vm_set_ready(&c->rfd, c->queued > 0);
    got->events_got++;
    *cq = &got->cq;
    *cq_context = got->cq.cq_context;
    pthread_mutex_unlock(&vm.lock);
    return 0;
}

void
ibv_ack_cq_events(struct ibv_cq *ibcq, unsigned int n)
{
    struct mcq *cq = (struct mcq *)ibcq;

    pthread_mutex_lock(&vm.lock);
    cq->events_acked += n;
    if (cq->events_acked > cq->events_got)
        vm_finding("%s: more CQ events acked than taken", cq->host->device.name);
    pthread_mutex_unlock(&vm.lock);
}

struct ibv_cq *
ibv_create_cq(struct ibv_context *ctx, int cqe, void *cq_context, struct ibv_comp_channel *ch,
              int vector)
{
    struct mcq *cq;

    pthread_mutex_lock(&vm.lock);
    struct mhost *h = vm_host_of_ctx(ctx);

    if (!h || h->removed || cqe < 1 || cqe > vm.prof->max_cqe || vector < 0 ||
        vector >= ctx->num_comp_vectors) {
        if (h && vector >= ctx->num_comp_vectors)
            vm_finding("%s: a CQ asked for completion vector %d of %d", h->device.name, vector,
                    ctx->num_comp_vectors);
        pthread_mutex_unlock(&vm.lock);
        errno = EINVAL;
        return NULL;
    }
    cq = calloc(1, sizeof(*cq));
    if (cq) {
        cq->cq.context = ctx;
        cq->cq.cq_context = cq_context;
        cq->cq.channel = ch;
        cq->cq.cqe = cqe;
        cq->host = h;
        cq->comp = (struct mcomp *)ch;
        cq->capacity = cqe;
        cds_list_add(&cq->link, &vm.cqs);
    }
    pthread_mutex_unlock(&vm.lock);
    if (!cq)
        errno = ENOMEM;
    return cq ? &cq->cq : NULL;
}

int
ibv_destroy_cq(struct ibv_cq *ibcq)
{
    struct mcq *cq = (struct mcq *)ibcq;
    struct mqp *qp;

    pthread_mutex_lock(&vm.lock);
    cds_list_for_each_entry(qp, &vm.qps, link)
        if (qp->send_cq == cq || qp->recv_cq == cq) {
            vm_finding("a CQ destroyed while %s uses it", vm_qp_name(qp));
            pthread_mutex_unlock(&vm.lock);
            return EBUSY;
        }
    if (cq->events_acked != cq->events_got)
        vm_finding("%s: a CQ destroyed with %u events not acked (ibv_destroy_cq would wait "
                "for ever)", cq->host->device.name, cq->events_got - cq->events_acked);
    if (cq->comp) {
        struct mcomp *c = cq->comp;

        for (unsigned i = 0; i < c->queued;)
            if (c->queue[i] == cq)
                memmove(c->queue + i, c->queue + i + 1, (--c->queued - i) * sizeof(c->queue[0]));
            else
                i++;
        vm_set_ready(&c->rfd, c->queued > 0);
    }
    vm_drop_async_events(IBV_EVENT_CQ_ERR, ibcq);
    while (cq->head) {
        struct mcqe *e = cq->head;

        cq->head = e->next;
        free(e);
    }
    cds_list_del(&cq->link);
    pthread_mutex_unlock(&vm.lock);
    free(cq);
    return 0;
}

struct ibv_srq *
ibv_create_srq(struct ibv_pd *pd, struct ibv_srq_init_attr *attr)
{
    struct msrq *srq;

    pthread_mutex_lock(&vm.lock);
    struct mhost *h = vm_host_of_ctx(pd->context);

    if (!h || h->removed || attr->attr.max_wr > 16384 || attr->attr.max_sge > 1) {
        pthread_mutex_unlock(&vm.lock);
        errno = EINVAL;
        return NULL;
    }
    srq = calloc(1, sizeof(*srq));
    if (srq) {
        srq->srq.context = pd->context;
        srq->srq.pd = pd;
        srq->srq.srq_context = attr->srq_context;
        srq->host = h;
        srq->rq.max = attr->attr.max_wr;
        CDS_INIT_LIST_HEAD(&srq->rq.list);
        cds_list_add(&srq->link, &vm.srqs);
    }
    pthread_mutex_unlock(&vm.lock);
    if (!srq)
        errno = ENOMEM;
    return srq ? &srq->srq : NULL;
}

int
ibv_destroy_srq(struct ibv_srq *ibsrq)
{
    struct msrq *srq = (struct msrq *)ibsrq;
    struct mqp *qp;

    pthread_mutex_lock(&vm.lock);
    cds_list_for_each_entry(qp, &vm.qps, link)
        if (qp->srq == srq) {
            vm_finding("an SRQ destroyed while %s uses it", vm_qp_name(qp));
            pthread_mutex_unlock(&vm.lock);
            return EBUSY;
        }
    vm_rq_free(&srq->rq);
    cds_list_del(&srq->link);
    pthread_mutex_unlock(&vm.lock);
    free(srq);
    return 0;
}

int
ibv_modify_qp(struct ibv_qp *ibqp, struct ibv_qp_attr *attr, int mask)
{
    struct mqp *qp = (struct mqp *)ibqp;

    pthread_mutex_lock(&vm.lock);
    if ((mask & IBV_QP_STATE) && attr->qp_state == IBV_QPS_ERR)
        vm_qp_error(qp);
    else if (mask & IBV_QP_STATE)
        vm_finding("%s: moved to state %d by the engine", vm_qp_name(qp), attr->qp_state);
    pthread_cond_signal(&vm.cond);
    pthread_mutex_unlock(&vm.lock);
    return 0;
}

int
ibv_get_async_event(struct ibv_context *ctx, struct ibv_async_event *ev)
{
    struct masync *a;

    pthread_mutex_lock(&vm.lock);
    struct mhost *h = vm_host_of_ctx(ctx);

    if (!h || cds_list_empty(&h->async_events)) {
        pthread_mutex_unlock(&vm.lock);
        errno = EAGAIN;
        return -1;
    }
    a = cds_list_first_entry(&h->async_events, struct masync, link);
    cds_list_del(&a->link);
    vm_set_ready(&h->async, !cds_list_empty(&h->async_events));
    *ev = a->ev;
    pthread_mutex_unlock(&vm.lock);
    free(a);
    return 0;
}

void
ibv_ack_async_event(struct ibv_async_event *ev)
{
    (void)ev;
}
