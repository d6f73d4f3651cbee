/* SPDX-License-Identifier: GPL-2.0-only */
/* Verbs stubbed for the engine's host unit tests: fake-verbs.h. */
#include <stdlib.h>
#include <string.h>

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
    if (fake_verbs.post_send_result)
        *bad = wr;
    return fake_verbs.post_send_result;
}

static int
fake_post_srq_recv(struct ibv_srq *srq, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad)
{
    (void)srq;
    (void)wr;
    (void)bad;
    fake_verbs.srq_posts++;
    return 0;
}

void
fake_verbs_reset(void)
{
    memset(&fake_verbs, 0, sizeof(fake_verbs));
    fake_ctx.device = &fake_device;
    fake_ctx.ops.post_send = fake_post_send;
    fake_ctx.ops.post_srq_recv = fake_post_srq_recv;
    fake_qp.context = &fake_ctx;
}

int
ibv_modify_qp(struct ibv_qp *qp, struct ibv_qp_attr *attr, int attr_mask)
{
    (void)qp;
    (void)attr_mask;
    if (attr->qp_state == IBV_QPS_ERR)
        fake_verbs.qp_errors++;
    return 0;
}

struct ibv_mr *(ibv_reg_mr)(struct ibv_pd *pd, void *addr, size_t length, int access)
{
    struct ibv_mr *mr = calloc(1, sizeof(*mr));

    if (!mr)
        return NULL;
    *mr = (struct ibv_mr){.pd = pd, .addr = addr, .length = length};
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
