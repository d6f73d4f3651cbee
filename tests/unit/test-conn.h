/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Connections for the engine's host unit tests, built the way the engine
 * builds them wherever no device is needed: gfr_rdma_conn_new on a test
 * engine, the send side from gfr_rdma_conn_setup_send_side, the state
 * moved by gfr_rdma_conn_set_state_locked, and released through the
 * engine's own release functions.  Over the verbs of fake-verbs.c.
 */
#ifndef GFR_TEST_CONN_H
#define GFR_TEST_CONN_H

#include "engine-conn.h"

/* The engine and device every test connection belongs to; the options
 * may be changed before test_conn_new. */
extern struct gfr_rdma test_engine;
extern struct gfr_rdma_dev test_dev;

/* Resets fake-verbs.c, test_engine's options to the defaults (latency
 * statistics on, histograms empty) and test_dev; the calling thread is
 * registered with urcu_memb, for test_dev's table of connections by QP
 * number. */
void test_conn_reset(void);

/* A connection to peer (NULL: unknown) with credits credits each way and
 * as many send slots, negotiated at 8 KiB inline, 1 MiB messages and 16
 * segments, moved from NEW to state `at` by a client's legal steps. */
struct gfr_rdma_conn *test_conn_new(const struct sockaddr *peer, uint32_t credits,
                                    enum gfr_conn_state at);

/* Makes conn the one completions of QP qp_num are traced to (fake_qp
 * takes that number), as creating its QP does, in a table test_dev gets
 * for it and loses with it (test_conn_free).  One at a time. */
void test_conn_find_by_qp(struct gfr_rdma_conn *conn, uint32_t qp_num);

/* A pull of n (up to 16) READs of 4 KiB from rkey 22, started: posted up
 * to rdma-depth.  Its end counts in test_pulls_finished, its status in
 * test_pull_status (both reset by test_conn_reset), and frees it. */
struct gfr_rdma_xfer *test_conn_start_pull(struct gfr_rdma_conn *conn, unsigned n);
extern unsigned test_pulls_finished;
extern int test_pull_status;

/* Ends what the connection still holds (waiting messages, offers, whose
 * done callbacks are called, staging buffers) and frees it. */
void test_conn_free(struct gfr_rdma_conn *conn);

#endif /* GFR_TEST_CONN_H */
