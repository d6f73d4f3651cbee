/* SPDX-License-Identifier: GPL-2.0-only */
/* Verbs stubbed for the engine's host unit tests: fake-verbs.h. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <rdma/rdma_cma.h>

#include "fake-verbs.h"

struct fake_verbs fake_verbs;
struct ibv_device fake_device = {.name = "fake0"};
struct ibv_context fake_ctx;
struct ibv_qp fake_qp;

static int
fake_post_send(struct ibv_qp *qp, struct ibv_send_wr *wr, struct ibv_send_wr **bad)
{
    unsigned i = fake_verbs.posts++;

    (void)qp;
    if (i < FAKE_MAX_SENT) {
        fake_verbs.sent[i] = *wr;
        if (wr->num_sge) {
            fake_verbs.sent_sge[i] = wr->sg_list[0];
            fake_verbs.sent[i].sg_list = &fake_verbs.sent_sge[i];
        }
    }
    if (fake_verbs.on_post_send)
        fake_verbs.on_post_send(fake_verbs.on_post_send_arg);
    if (fake_verbs.posts_fail_in_error && fake_verbs.qp_in_error) {
        *bad = wr;
        return EINVAL;
    }
    if (fake_verbs.post_send_result)
        *bad = wr;
    return fake_verbs.post_send_result;
}

static int
fake_post_srq_recv(struct ibv_srq *srq, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad)
{
    (void)srq;
    (void)bad;
    fake_verbs.srq_posts++;
    fake_verbs.last_srq_wr_id = wr->wr_id;
    return fake_verbs.srq_post_result;
}

static int
fake_post_recv(struct ibv_qp *qp, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad)
{
    (void)qp;
    (void)wr;
    (void)bad;
    fake_verbs.recv_posts++;
    return 0;
}

void
fake_verbs_reset(void)
{
    memset(&fake_verbs, 0, sizeof(fake_verbs));
    fake_device.transport_type = IBV_TRANSPORT_IB;
    fake_ctx.device = &fake_device;
    fake_ctx.ops.post_send = fake_post_send;
    fake_ctx.ops.post_recv = fake_post_recv;
    fake_ctx.ops.post_srq_recv = fake_post_srq_recv;
    fake_qp.context = &fake_ctx;
}

int
rdma_create_qp(struct rdma_cm_id *id, struct ibv_pd *pd, struct ibv_qp_init_attr *attr)
{
    unsigned i = fake_verbs.create_qp_calls++;

    (void)pd;
    if (i < sizeof(fake_verbs.create_qp_inline) / sizeof(fake_verbs.create_qp_inline[0]))
        fake_verbs.create_qp_inline[i] = attr->cap.max_inline_data;
    if (fake_verbs.create_qp_errno) {
        errno = fake_verbs.create_qp_errno;
        return -1;
    }
    if (fake_verbs.qp_inline_limit && attr->cap.max_inline_data > fake_verbs.qp_inline_limit) {
        errno = EINVAL;
        return -1;
    }
    fake_qp.qp_context = attr->qp_context;
    id->qp = &fake_qp;
    return 0;
}

int
rdma_set_option(struct rdma_cm_id *id, int level, int optname, void *optval, size_t optlen)
{
    (void)id;
    (void)optval;
    (void)optlen;
    if (level == RDMA_OPTION_ID && optname == RDMA_OPTION_ID_ACK_TIMEOUT)
        fake_verbs.ack_timeouts_set++;
    return 0;
}

int
rdma_disconnect(struct rdma_cm_id *id)
{
    (void)id;
    fake_verbs.disconnects++;
    fake_verbs.qp_in_error_at_disconnect = fake_verbs.qp_in_error;
    return 0;
}

int
ibv_modify_qp(struct ibv_qp *qp, struct ibv_qp_attr *attr, int attr_mask)
{
    (void)qp;
    (void)attr_mask;
    if (attr->qp_state == IBV_QPS_ERR) {
        fake_verbs.qp_errors++;
        fake_verbs.qp_in_error = 1;
    }
    return 0;
}

int
ibv_query_qp(struct ibv_qp *qp, struct ibv_qp_attr *attr, int attr_mask,
             struct ibv_qp_init_attr *init_attr)
{
    (void)qp;
    (void)attr_mask;
    (void)init_attr;
    memset(attr, 0, sizeof(*attr));
    attr->qp_state = fake_verbs.qp_in_error ? IBV_QPS_ERR : IBV_QPS_RTS;
    return 0;
}

struct ibv_mr *(ibv_reg_mr)(struct ibv_pd *pd, void *addr, size_t length, int access)
{
    struct ibv_mr *mr;

    if (fake_verbs.on_reg_mr)
        fake_verbs.on_reg_mr(fake_verbs.on_reg_mr_arg);
    if (fake_verbs.reg_mr_errno) {
        errno = fake_verbs.reg_mr_errno;
        return NULL;
    }
    mr = calloc(1, sizeof(*mr));
    if (!mr)
        return NULL;
    *mr = (struct ibv_mr){.pd = pd, .addr = addr, .length = length};
    mr->lkey = mr->rkey = ++fake_verbs.next_key;
    if (mr->lkey < FAKE_MAX_KEYS) {
        fake_verbs.access_of[mr->lkey] = access;
        fake_verbs.live_key[mr->lkey] = 1;
    }
    fake_verbs.registered++;
    fake_verbs.last_access = access;
    return mr;
}

/* What ibv_reg_mr becomes when its access flags are not a constant. */
struct ibv_mr *
ibv_reg_mr_iova2(struct ibv_pd *pd, void *addr, size_t length, uint64_t iova,
                 unsigned int access)
{
    (void)iova;
    return (ibv_reg_mr)(pd, addr, length, (int)access);
}

int
ibv_dereg_mr(struct ibv_mr *mr)
{
    fake_verbs.deregistered++;
    if (mr->lkey < FAKE_MAX_KEYS)
        fake_verbs.live_key[mr->lkey] = 0;
    free(mr);
    return 0;
}

struct ibv_srq *
ibv_create_srq(struct ibv_pd *pd, struct ibv_srq_init_attr *attr)
{
    struct ibv_srq *srq = calloc(1, sizeof(*srq));

    (void)pd;
    (void)attr;
    if (srq)
        srq->context = &fake_ctx;
    return srq;
}

int
ibv_destroy_srq(struct ibv_srq *srq)
{
    free(srq);
    return 0;
}
