/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Verbs stubbed for the engine's host unit tests: the calls a test links
 * against here replace libibverbs' for the whole test program, and the
 * inline ones (ibv_post_send, ibv_post_srq_recv) reach fake_ctx's ops.
 * Each call is counted, and the work requests posted are kept, so a test
 * can see what the engine did without a device.  One thread at a time
 * (rdma-device-test, which posts from several threads, has its own).
 */
#ifndef GFR_FAKE_VERBS_H
#define GFR_FAKE_VERBS_H

#include <infiniband/verbs.h>

#define FAKE_MAX_SENT 64

struct fake_verbs {
    int post_send_result; /* what ibv_post_send returns: 0, a positive errno, or as siw a negative one */
    unsigned posts;       /* ibv_post_send calls */
    /* on_post_send (when set) is called by ibv_post_send, as a provider
     * would be doing its work, with on_post_send_arg. */
    void (*on_post_send)(void *arg);
    void *on_post_send_arg;
    /* The first FAKE_MAX_SENT work requests posted; sg_list points into
     * sent_sge (the caller's was on its stack). */
    struct ibv_send_wr sent[FAKE_MAX_SENT];
    struct ibv_sge sent_sge[FAKE_MAX_SENT];
    unsigned qp_errors;    /* ibv_modify_qp to IBV_QPS_ERR */
    int qp_in_error;       /* fake_qp was moved to IBV_QPS_ERR (ibv_query_qp says so) */
    /* cxgb4's rule: a post on a QP in the error state fails with EINVAL. */
    int posts_fail_in_error;
    unsigned registered;   /* ibv_reg_mr */
    int last_access;       /* the access flags of the last ibv_reg_mr */
    /* Each MR gets lkey = rkey = a number of its own (from 1); the access
     * it was registered with, by key (keys up to FAKE_MAX_KEYS), and
     * whether it is still registered. */
#define FAKE_MAX_KEYS 256
    uint32_t next_key;
    int access_of[FAKE_MAX_KEYS];
    int live_key[FAKE_MAX_KEYS];
    unsigned deregistered; /* ibv_dereg_mr */
    unsigned srq_posts;    /* ibv_post_srq_recv */
    uint64_t last_srq_wr_id; /* of the last ibv_post_srq_recv */
    int srq_post_result;     /* what ibv_post_srq_recv returns: 0 or a positive errno */
    unsigned recv_posts;   /* ibv_post_recv */
    /* ibv_reg_mr fails with reg_mr_errno when set; on_reg_mr (when set)
     * is called first, with on_reg_mr_arg, by the registering thread. */
    int reg_mr_errno;
    void (*on_reg_mr)(void *arg);
    void *on_reg_mr_arg;
    /* rdma_create_qp: fails with create_qp_errno when set; else refuses
     * (EINVAL) more inline data than qp_inline_limit when that is set,
     * and hands out fake_qp.  What each call asked for: */
    int create_qp_errno;
    uint32_t qp_inline_limit;
    unsigned create_qp_calls;
    uint32_t create_qp_inline[32]; /* max_inline_data of the first 32 calls */
    unsigned ack_timeouts_set;     /* rdma_set_option(RDMA_OPTION_ID_ACK_TIMEOUT) */
    unsigned disconnects;          /* rdma_disconnect */
    int qp_in_error_at_disconnect; /* qp_in_error when rdma_disconnect was last called */
};

extern struct fake_verbs fake_verbs;
extern struct ibv_device fake_device; /* named "fake0" */
extern struct ibv_context fake_ctx;   /* of fake_device */
extern struct ibv_qp fake_qp;         /* on fake_ctx */

/* Clears the counters and makes posts succeed again. */
void fake_verbs_reset(void);

#endif /* GFR_FAKE_VERBS_H */
