/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * hostile-peer: a client on raw verbs and librdmacm that breaks the wire
 * protocol (docs/wire-protocol.md) on purpose, to check that the engine
 * tears down exactly that connection and keeps serving everyone else.
 *
 *   hostile-peer ADDR PORT BINDADDR CASE
 *
 * Every case but "flood" and the private-data ones first sends one valid
 * message and waits for the echo of an engine-test server: the connection
 * demonstrably works before it is abused.  Then it commits its violation
 * and waits, at most TEARDOWN_MS, for the server to disconnect.
 *
 * Exit status: 0 the server reacted as expected (disconnected, rejected,
 * or, for "early", stayed silent until the handshake completed), 1 it did
 * not (the message says what happened), 2 the test itself could not run.
 * The server's log must name the reason; t-engine-hostile.sh checks it.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <netdb.h>
#include <poll.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>

#include "gfr_be.h"
#include "gfr_cm_private.h"
#include "gfr_mmap_guard.h"
#include "gfr_wire.h"

#define WAIT_MS 20000
#define TEARDOWN_MS 30000
#define NRECV 32
#define RECV_SIZE 4096
#define SEND_SIZE 65536
#define BULK_SIZE 65536
#define FLOOD 200
#define GUARDED_DEVS 8 /* siw contexts the flood guards, at most */
#define OVERRUN_MAX 4096

struct hp {
    struct rdma_event_channel *ch;
    struct rdma_cm_id *id;
    struct ibv_pd *pd;
    struct ibv_cq *cq;
    struct ibv_qp *qp;
    struct ibv_mr *mr;
    uint8_t *mem; /* receives, then the send buffer, then bulk to offer */
    struct gfr_cm_params server;
    uint32_t next_xid;
    /* iWARP (transport_type): the QP must be the CM id's own (iw_cm
     * drives it), and the connection is established by the MPA exchange,
     * with no CONNECT_RESPONSE and no RTU of ours. */
    int iwarp;
};

/* What skip_case returns: the case does not apply to this fabric. */
#define SKIPPED 77

static const char *case_name;

static int
fail(const char *what)
{
    fprintf(stderr, "hostile-peer: %s: %s\n", case_name, what);
    return 1;
}

static int
broken(const char *what)
{
    fprintf(stderr, "hostile-peer: %s: cannot run: %s (%s)\n", case_name, what,
            strerror(errno));
    return 2;
}

static uint8_t *
send_buf(struct hp *hp)
{
    return hp->mem + NRECV * RECV_SIZE;
}

static uint8_t *
bulk_buf(struct hp *hp)
{
    return send_buf(hp) + SEND_SIZE;
}

/* The next CM event within ms, acked; its type in *type and, for
 * ESTABLISHED / CONNECT_RESPONSE / REJECTED, its private data copied. */
static int
next_event(struct hp *hp, int ms, enum rdma_cm_event_type *type, uint8_t *pdata,
           size_t *pdata_len)
{
    struct pollfd pfd = {.fd = hp->ch->fd, .events = POLLIN};
    struct rdma_cm_event *ev;

    if (poll(&pfd, 1, ms) <= 0)
        return -ETIMEDOUT;
    if (rdma_get_cm_event(hp->ch, &ev) != 0)
        return -errno;
    *type = ev->event;
    if (pdata_len) {
        size_t n = ev->param.conn.private_data_len;

        if (n > *pdata_len)
            n = *pdata_len;
        if (n)
            memcpy(pdata, ev->param.conn.private_data, n);
        *pdata_len = ev->param.conn.private_data ? n : 0;
    }
    rdma_ack_cm_event(ev);
    return 0;
}

static int
expect_event(struct hp *hp, enum rdma_cm_event_type want)
{
    enum rdma_cm_event_type got;
    int err = next_event(hp, WAIT_MS, &got, NULL, NULL);

    if (err)
        return err;
    if (got != want) {
        fprintf(stderr, "hostile-peer: %s: expected %s, got %s\n", case_name,
                rdma_event_str(want), rdma_event_str(got));
        return -EPROTO;
    }
    return 0;
}

/* Undoes prepare() or one of flood()'s connection attempts, whatever part
 * of it was done, so that the sanitized build's LeakSanitizer checks this
 * peer too.  Destroying the id of a connected or half-open connection ends
 * it on the server (DREQ or REJ), as exiting would. */
static void
release(struct hp *hp)
{
    if (hp->qp)
        ibv_destroy_qp(hp->qp);
    else if (hp->id && hp->id->qp)
        rdma_destroy_qp(hp->id);
    if (hp->mr)
        ibv_dereg_mr(hp->mr);
    free(hp->mem);
    if (hp->cq)
        ibv_destroy_cq(hp->cq);
    if (hp->pd)
        ibv_dealloc_pd(hp->pd);
    if (hp->id)
        rdma_destroy_id(hp->id);
    if (hp->ch)
        rdma_destroy_event_channel(hp->ch);
    *hp = (struct hp){0};
}

static int
modify_qp(struct hp *hp, enum ibv_qp_state state)
{
    struct ibv_qp_attr attr = {.qp_state = state};
    int mask;

    if (rdma_init_qp_attr(hp->id, &attr, &mask) != 0)
        return -errno;
    return -ibv_modify_qp(hp->qp, &attr, mask);
}

static int
post_recv(struct hp *hp, unsigned i)
{
    struct ibv_sge sge = {.addr = (uintptr_t)(hp->mem + (size_t)i * RECV_SIZE),
                          .length = RECV_SIZE, .lkey = hp->mr->lkey};
    struct ibv_recv_wr wr = {.wr_id = i, .sg_list = &sge, .num_sge = 1};
    struct ibv_recv_wr *bad;

    return -ibv_post_recv(hp->qp, &wr, &bad);
}

/* Resolves, builds the QP by hand (so that "early" can leave out the RTU)
 * and moves it to INIT with its receives posted. */
static int
prepare(struct hp *hp, const char *addr, const char *port, const char *bind_addr)
{
    struct addrinfo hints = {.ai_family = AF_INET, .ai_flags = AI_NUMERICHOST};
    struct addrinfo *dst, *src;
    struct ibv_qp_init_attr qa = {0};
    size_t size = NRECV * RECV_SIZE + SEND_SIZE + BULK_SIZE;
    int err;

    hp->ch = rdma_create_event_channel();
    if (!hp->ch || rdma_create_id(hp->ch, &hp->id, hp, RDMA_PS_TCP) != 0)
        return broken("rdma_create_id");
    if (getaddrinfo(addr, port, &hints, &dst) != 0)
        return broken("bad address");
    if (getaddrinfo(bind_addr, NULL, &hints, &src) != 0) {
        freeaddrinfo(dst);
        return broken("bad bind address");
    }
    err = rdma_resolve_addr(hp->id, src->ai_addr, dst->ai_addr, WAIT_MS) != 0 ||
          expect_event(hp, RDMA_CM_EVENT_ADDR_RESOLVED) != 0 ||
          rdma_resolve_route(hp->id, WAIT_MS) != 0 ||
          expect_event(hp, RDMA_CM_EVENT_ROUTE_RESOLVED) != 0;
    freeaddrinfo(dst);
    freeaddrinfo(src);
    if (err)
        return broken("resolving the server");
    hp->iwarp = hp->id->verbs->device->transport_type == IBV_TRANSPORT_IWARP;
    hp->pd = ibv_alloc_pd(hp->id->verbs);
    hp->cq = hp->pd ? ibv_create_cq(hp->id->verbs, 4 * NRECV, NULL, NULL, 0) : NULL;
    hp->mem = aligned_alloc(4096, size);
    if (!hp->cq || !hp->mem)
        return broken("PD, CQ or memory");
    memset(hp->mem, 0, size);
    hp->mr = ibv_reg_mr(hp->pd, hp->mem, size,
                        IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ |
                            IBV_ACCESS_REMOTE_WRITE);
    qa.send_cq = qa.recv_cq = hp->cq;
    qa.qp_type = IBV_QPT_RC;
    qa.cap.max_send_wr = 2 * NRECV;
    qa.cap.max_recv_wr = NRECV;
    qa.cap.max_send_sge = qa.cap.max_recv_sge = 1;
    if (hp->iwarp) /* the CM id's QP, in INIT, moved on by iw_cm */
        hp->qp = hp->mr && rdma_create_qp(hp->id, hp->pd, &qa) == 0 ? hp->id->qp : NULL;
    else
        hp->qp = hp->mr ? ibv_create_qp(hp->pd, &qa) : NULL;
    if (!hp->qp)
        return broken("MR or QP");
    if (!hp->iwarp && modify_qp(hp, IBV_QPS_INIT) != 0)
        return broken("QP to INIT");
    for (unsigned i = 0; i < NRECV; i++)
        if (post_recv(hp, i) != 0)
            return broken("posting receives");
    hp->next_xid = 1;
    return 0;
}

/* Sends pdata (NULL: our valid parameters) and waits for the answer: 0
 * connected (QP in RTS; the RTU sent unless skip_rtu), 1 rejected with the
 * reason byte in *why, -errno otherwise. */
static int
connect_with(struct hp *hp, const void *pdata, size_t pdata_len, int skip_rtu, int *why)
{
    struct gfr_cm_params mine = {.credits = NRECV, .inline_max = RECV_SIZE,
                                 .max_msg = 1u << 20, .max_segs = 16};
    uint8_t ours[GFR_CM_PRIVATE_SIZE];
    uint8_t theirs[64];
    size_t theirs_len = sizeof(theirs);
    struct rdma_conn_param cp = {.responder_resources = 4, .initiator_depth = 4,
                                 .retry_count = 3, .rnr_retry_count = 7,
                                 .qp_num = hp->qp->qp_num};
    enum rdma_cm_event_type type;
    enum gfr_cm_reject_reason reason;
    int err;

    if (!pdata) {
        gfr_cm_encode(&mine, ours, sizeof(ours));
        pdata = ours;
        pdata_len = sizeof(ours);
    }
    cp.private_data = pdata;
    cp.private_data_len = (uint8_t)pdata_len;
    if (hp->iwarp)
        cp.qp_num = 0; /* the id's own QP */
    if (rdma_connect(hp->id, &cp) != 0)
        return -errno;
    err = next_event(hp, WAIT_MS, &type, theirs, &theirs_len);
    if (err)
        return err;
    if (type == RDMA_CM_EVENT_REJECTED) {
        *why = theirs_len ? theirs[0] : -1;
        return 1;
    }
    if (hp->iwarp && type == RDMA_CM_EVENT_ESTABLISHED) {
        if (gfr_cm_decode(theirs, theirs_len, &hp->server, &reason) != 0) {
            fprintf(stderr, "hostile-peer: %s: the server's private data: %s\n", case_name,
                    gfr_cm_reject_str(reason));
            return -EPROTO;
        }
        return 0;
    }
    if (type != RDMA_CM_EVENT_CONNECT_RESPONSE) {
        fprintf(stderr, "hostile-peer: %s: connect: got %s\n", case_name,
                rdma_event_str(type));
        return -EPROTO;
    }
    if (gfr_cm_decode(theirs, theirs_len, &hp->server, &reason) != 0) {
        fprintf(stderr, "hostile-peer: %s: the server's private data: %s\n", case_name,
                gfr_cm_reject_str(reason));
        return -EPROTO;
    }
    if ((err = modify_qp(hp, IBV_QPS_RTR)) != 0 || (err = modify_qp(hp, IBV_QPS_RTS)) != 0)
        return err;
    if (!skip_rtu && rdma_establish(hp->id) != 0)
        return -errno;
    return 0;
}

/* Posts len bytes of the send buffer as one SEND and waits for its
 * completion (receives completing meanwhile are reposted). */
static int
post_send(struct hp *hp, size_t len)
{
    struct ibv_sge sge = {.addr = (uintptr_t)send_buf(hp), .length = (uint32_t)len,
                          .lkey = hp->mr->lkey};
    struct ibv_send_wr wr = {.wr_id = ~0ull, .sg_list = &sge, .num_sge = 1,
                             .opcode = IBV_WR_SEND, .send_flags = IBV_SEND_SIGNALED};
    struct ibv_send_wr *bad;

    return -ibv_post_send(hp->qp, &wr, &bad);
}

/*
 * Polls for up to ms for a MSG from the server; 0 with its inline payload
 * copied to out (up to *len bytes, *len updated), -ETIMEDOUT, or -EIO when
 * a work request failed (the connection is gone).  Receives are reposted;
 * headers the server sends meanwhile (CREDIT) are skipped.
 */
static int
wait_msg(struct hp *hp, int ms, uint8_t *out, size_t *len)
{
    struct timespec t0, t;
    struct ibv_wc wc;
    int n;

    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (;;) {
        n = ibv_poll_cq(hp->cq, 1, &wc);
        if (n < 0)
            return -EIO;
        if (n == 1) {
            const uint8_t *p;

            if (wc.status != IBV_WC_SUCCESS)
                return -EIO;
            if (wc.wr_id == ~0ull)
                continue; /* our SEND's completion */
            p = hp->mem + wc.wr_id * RECV_SIZE;
            if (wc.byte_len >= GFR_WIRE_HDR_SIZE && p[1] == GFR_WIRE_MSG) {
                size_t head = gfr_wire_hdr_len(p[2], p[3]);
                size_t got = wc.byte_len > head ? wc.byte_len - head : 0;

                if (got > *len)
                    got = *len;
                memcpy(out, p + head, got);
                *len = got;
                post_recv(hp, (unsigned)wc.wr_id);
                return 0;
            }
            post_recv(hp, (unsigned)wc.wr_id);
            continue;
        }
        clock_gettime(CLOCK_MONOTONIC, &t);
        if ((t.tv_sec - t0.tv_sec) * 1000 + (t.tv_nsec - t0.tv_nsec) / 1000000 > ms)
            return -ETIMEDOUT;
        usleep(1000);
    }
}

/* A header for our send buffer; returns its length before the lists. */
static void
put_hdr(uint8_t *p, uint8_t type, uint8_t n_read, uint8_t n_write, uint16_t credits,
        uint32_t xid, uint32_t inline_len, uint32_t read_len, uint32_t written)
{
    p[0] = GFR_WIRE_VERSION;
    p[1] = type;
    p[2] = n_read;
    p[3] = n_write;
    gfr_put_be16(p + 4, credits);
    gfr_put_be16(p + 6, 0);
    gfr_put_be32(p + 8, xid);
    gfr_put_be32(p + 12, inline_len);
    gfr_put_be32(p + 16, read_len);
    gfr_put_be32(p + 20, written);
}

static void
put_seg(uint8_t *p, uint64_t addr, uint32_t rkey, uint32_t length)
{
    gfr_put_be64(p, addr);
    gfr_put_be32(p + 8, rkey);
    gfr_put_be32(p + 12, length);
}

/* One valid MSG of len inline bytes; waits for the engine-test echo (every
 * byte inverted).  Granting our reposted receive back each time keeps the
 * server's credits whole. */
static int
probe(struct hp *hp, unsigned len, int wait)
{
    uint8_t *p = send_buf(hp);
    uint8_t echo[256];
    size_t echo_len = sizeof(echo);
    int err;

    put_hdr(p, GFR_WIRE_MSG, 0, 0, hp->next_xid == 1 ? 0 : 1, hp->next_xid, len, 0, 0);
    hp->next_xid++;
    for (unsigned i = 0; i < len; i++)
        p[GFR_WIRE_HDR_SIZE + i] = (uint8_t)(i * 7 + 3);
    if ((err = post_send(hp, GFR_WIRE_HDR_SIZE + len)) != 0)
        return err;
    if (!wait)
        return 0;
    err = wait_msg(hp, WAIT_MS, echo, &echo_len);
    if (err)
        return err;
    if (echo_len != len)
        return -EBADMSG;
    for (unsigned i = 0; i < len; i++)
        if (echo[i] != (uint8_t)((i * 7 + 3) ^ 0xff))
            return -EBADMSG;
    return 0;
}

/* After the violation: the server must end the connection (a DISCONNECTED
 * event, or our QP failing first) within TEARDOWN_MS. */
static int
await_teardown(struct hp *hp)
{
    enum rdma_cm_event_type type;
    struct timespec t0, t;
    int err;

    clock_gettime(CLOCK_MONOTONIC, &t0);
    err = next_event(hp, TEARDOWN_MS, &type, NULL, NULL);
    clock_gettime(CLOCK_MONOTONIC, &t);
    if (err == -ETIMEDOUT)
        return fail("the server did not disconnect within the time limit");
    if (err)
        return fail("reading the CM events failed");
    if (type != RDMA_CM_EVENT_DISCONNECTED) {
        fprintf(stderr, "hostile-peer: %s: expected DISCONNECTED, got %s\n", case_name,
                rdma_event_str(type));
        return 1;
    }
    printf("hostile-peer: %s: the server disconnected after %ld ms\n", case_name,
           (t.tv_sec - t0.tv_sec) * 1000 + (t.tv_nsec - t0.tv_nsec) / 1000000);
    return 0;
}

/* The violations committed on an established connection.  Each builds its
 * message in the send buffer and returns its length. */
static size_t
build_violation(struct hp *hp, const char *name)
{
    uint8_t *p = send_buf(hp);
    uint32_t rkey = hp->mr->rkey;
    uint64_t bulk = (uintptr_t)bulk_buf(hp);
    uint32_t xid = hp->next_xid++;
    unsigned n;

    if (strcmp(name, "oversize") == 0) { /* longer than the receive buffer */
        size_t len = hp->server.inline_max + 512;

        put_hdr(p, GFR_WIRE_MSG, 0, 0, 1, xid, (uint32_t)(len - GFR_WIRE_HDR_SIZE), 0, 0);
        return len > SEND_SIZE ? SEND_SIZE : len;
    }
    if (strcmp(name, "bad-rkey") == 0) { /* a read segment nobody registered */
        put_hdr(p, GFR_WIRE_MSG, 1, 0, 1, xid, 0, 4096, 0);
        put_seg(p + GFR_WIRE_HDR_SIZE, bulk, rkey ^ 0x5a5a00u, 4096);
        return gfr_wire_hdr_len(1, 0);
    }
    if (strcmp(name, "bad-offset") == 0) { /* our rkey, far past our region */
        put_hdr(p, GFR_WIRE_MSG, 1, 0, 1, xid, 0, 4096, 0);
        put_seg(p + GFR_WIRE_HDR_SIZE, bulk + (64ull << 20), rkey, 4096);
        return gfr_wire_hdr_len(1, 0);
    }
    if (strcmp(name, "bad-length") == 0) { /* starts inside, ends 256 KiB outside */
        put_hdr(p, GFR_WIRE_MSG, 1, 0, 1, xid, 0, BULK_SIZE + (256u << 10), 0);
        put_seg(p + GFR_WIRE_HDR_SIZE, bulk, rkey, BULK_SIZE + (256u << 10));
        return gfr_wire_hdr_len(1, 0);
    }
    if (strcmp(name, "bad-write-rkey") == 0) { /* a reply buffer nobody registered:
                                                * the server's RDMA WRITE fails */
        /* engine-test -r: seq, reply length (too long to travel inline) */
        uint32_t ask[2] = {xid, 32768};

        /* No probe came before: nothing to grant. */
        put_hdr(p, GFR_WIRE_MSG, 0, 1, 0, xid, sizeof(ask), 0, 0);
        put_seg(p + GFR_WIRE_HDR_SIZE, bulk, rkey ^ 0x5a5a00u, BULK_SIZE);
        memcpy(p + gfr_wire_hdr_len(0, 1), ask, sizeof(ask));
        return gfr_wire_hdr_len(0, 1) + sizeof(ask);
    }
    if (strcmp(name, "too-many-segments") == 0) {
        n = hp->server.max_segs + 1u;
        if (n > GFR_WIRE_MAX_SEGS)
            n = GFR_WIRE_MAX_SEGS; /* ... then over the per-list limit */
        n = n > 255 ? 255 : n;
        put_hdr(p, GFR_WIRE_MSG, (uint8_t)n, 1, 1, xid, 0, 64 * n, 0);
        for (unsigned i = 0; i <= n; i++)
            put_seg(p + GFR_WIRE_HDR_SIZE + 16 * i, bulk + 64 * i, rkey, 64);
        return gfr_wire_hdr_len(n, 1);
    }
    if (strcmp(name, "read-len-mismatch") == 0) {
        put_hdr(p, GFR_WIRE_MSG, 1, 0, 1, xid, 0, 8192, 0);
        put_seg(p + GFR_WIRE_HDR_SIZE, bulk, rkey, 4096);
        return gfr_wire_hdr_len(1, 0);
    }
    if (strcmp(name, "too-large") == 0) { /* a body beyond max_msg */
        uint64_t want = (uint64_t)hp->server.max_msg + 1;
        uint32_t seg = want > 0xffffffffu ? 0xffffffffu : (uint32_t)want;

        put_hdr(p, GFR_WIRE_MSG, 1, 0, 1, xid, 0, seg, 0);
        put_seg(p + GFR_WIRE_HDR_SIZE, bulk, rkey, seg);
        return gfr_wire_hdr_len(1, 0);
    }
    if (strcmp(name, "credit-overflow") == 0) { /* a grant past the window */
        put_hdr(p, GFR_WIRE_CREDIT, 0, 0, 0xffff, 0, 0, 0, 0);
        return GFR_WIRE_HDR_SIZE;
    }
    if (strcmp(name, "unknown-type") == 0) {
        put_hdr(p, 77, 0, 0, 1, xid, 0, 0, 0);
        return GFR_WIRE_HDR_SIZE;
    }
    if (strcmp(name, "bad-version") == 0) {
        put_hdr(p, GFR_WIRE_MSG, 0, 0, 1, xid, 0, 0, 0);
        p[0] = 9;
        return GFR_WIRE_HDR_SIZE;
    }
    if (strcmp(name, "truncated") == 0) { /* 10 bytes of a header */
        put_hdr(p, GFR_WIRE_MSG, 0, 0, 1, xid, 100, 0, 0);
        return 10;
    }
    if (strcmp(name, "short-payload") == 0) { /* inline_len says more than came */
        put_hdr(p, GFR_WIRE_MSG, 0, 0, 1, xid, 100, 0, 0);
        return GFR_WIRE_HDR_SIZE + 40;
    }
    if (strcmp(name, "stray-done") == 0) { /* DONE for nothing the server offered */
        put_hdr(p, GFR_WIRE_DONE, 0, 0, 1, 4242, 0, 0, 0);
        return GFR_WIRE_HDR_SIZE;
    }
    if (strcmp(name, "stray-reply") == 0) { /* written into a list never offered */
        put_hdr(p, GFR_WIRE_REPLY, 0, 0, 1, 4242, 0, 0, 4096);
        return GFR_WIRE_HDR_SIZE;
    }
    return 0;
}

/* Whether a CM event (the server's DREQ, above all) waits to be read.
 * It is left queued for await_teardown. */
static bool
cm_event_pending(struct hp *hp)
{
    struct pollfd pfd = {.fd = hp->ch->fd, .events = POLLIN};

    return poll(&pfd, 1, 0) > 0;
}

/* Sends MSGs, never granting anything and ignoring the server's grants.
 * The server can grant only in what it sends, and it can send only while
 * we grant: once its credits are spent it falls silent, and at most a
 * window later a message arrives without a credit (it still arrives: the
 * server's receive queue is shared and deep, and RNR retries wait for
 * it).  Stops when the connection fails, when the server's disconnect
 * arrives, or after OVERRUN_MAX messages.  The disconnect must stop it at
 * once: a SEND the server no longer acknowledges fails only after the
 * transport's retries (seconds in the VM), and only then would the DREQ
 * be read and answered, perhaps after the server stopped waiting for it. */
static void
overrun_credits(struct hp *hp)
{
    unsigned window = hp->server.credits < NRECV ? hp->server.credits : NRECV;
    unsigned sent = 0;
    struct ibv_wc wc = {.status = IBV_WC_SUCCESS};

    for (unsigned i = 0; i < OVERRUN_MAX; i++) {
        uint8_t *p = send_buf(hp);
        int n;

        put_hdr(p, GFR_WIRE_MSG, 0, 0, 0, hp->next_xid++, 8, 0, 0);
        if (post_send(hp, GFR_WIRE_HDR_SIZE + 8) != 0)
            break;
        /* One SEND at a time from the one send buffer; the server's
         * messages (at most the receives we posted) are left alone. */
        do {
            n = ibv_poll_cq(hp->cq, 1, &wc);
            if (n == 0 && cm_event_pending(hp))
                break;
        } while (n == 0 || (n == 1 && wc.wr_id != ~0ull && wc.status == IBV_WC_SUCCESS));
        if (n <= 0 || wc.status != IBV_WC_SUCCESS)
            break;
        sent++;
    }
    printf("hostile-peer: credit-overrun: %u messages sent with a window of %u, "
           "never granting (stopped by %s)\n", sent, window,
           cm_event_pending(hp) ? "the server's disconnect"
                                : ibv_wc_status_str(wc.status));
}

/* Connection requests as fast as the CM takes them: every fourth dropped
 * at once, the rest once the server had 2 s to answer.  Each id has its
 * own event channel, so that one id's answer never stands in the way of
 * the next one's resolution. */
static int
flood_connect(const char *addr, const char *port, const char *bind_addr)
{
    struct addrinfo hints = {.ai_family = AF_INET, .ai_flags = AI_NUMERICHOST};
    struct addrinfo *dst, *src;
    struct gfr_cm_params mine = {.credits = NRECV, .inline_max = RECV_SIZE,
                                 .max_msg = 1u << 20, .max_segs = 16};
    uint8_t pdata[GFR_CM_PRIVATE_SIZE];
    struct hp ids[FLOOD] = {0};
    unsigned established = 0, rejected = 0;
    int err = 0;

    if (getaddrinfo(addr, port, &hints, &dst) != 0)
        return broken("flood: bad address");
    if (getaddrinfo(bind_addr, NULL, &hints, &src) != 0) {
        freeaddrinfo(dst);
        return broken("flood: bad bind address");
    }
    gfr_cm_encode(&mine, pdata, sizeof(pdata));
    for (unsigned i = 0; i < FLOOD; i++) {
        struct hp *hp = &ids[i];
        struct ibv_qp_init_attr qa = {.qp_type = IBV_QPT_RC,
                                      .cap = {.max_send_wr = 4, .max_recv_wr = 4,
                                              .max_send_sge = 1, .max_recv_sge = 1}};
        struct rdma_conn_param cp = {.private_data = pdata,
                                     .private_data_len = sizeof(pdata),
                                     .responder_resources = 1, .initiator_depth = 1,
                                     .retry_count = 3, .rnr_retry_count = 7};

        hp->ch = rdma_create_event_channel();
        if (!hp->ch || rdma_create_id(hp->ch, &hp->id, NULL, RDMA_PS_TCP) != 0 ||
            rdma_resolve_addr(hp->id, src->ai_addr, dst->ai_addr, WAIT_MS) != 0 ||
            expect_event(hp, RDMA_CM_EVENT_ADDR_RESOLVED) != 0 ||
            rdma_resolve_route(hp->id, WAIT_MS) != 0 ||
            expect_event(hp, RDMA_CM_EVENT_ROUTE_RESOLVED) != 0) {
            err = broken("flood: resolving the server");
            break;
        }
        hp->pd = ibv_alloc_pd(hp->id->verbs);
        hp->cq = hp->pd ? ibv_create_cq(hp->id->verbs, 8, NULL, NULL, 0) : NULL;
        qa.send_cq = qa.recv_cq = hp->cq;
        if (!hp->cq || rdma_create_qp(hp->id, hp->pd, &qa) != 0 ||
            rdma_connect(hp->id, &cp) != 0) {
            err = broken("flood: connect");
            break;
        }
        if (i % 4 == 0)
            release(hp);
    }
    freeaddrinfo(dst);
    freeaddrinfo(src);
    if (!err)
        sleep(2);
    for (unsigned i = 0; i < FLOOD; i++) {
        enum rdma_cm_event_type type;

        if (!err && ids[i].id && next_event(&ids[i], 0, &type, NULL, NULL) == 0) {
            established += type == RDMA_CM_EVENT_ESTABLISHED;
            rejected += type == RDMA_CM_EVENT_REJECTED;
        }
        if (ids[i].id)
            rdma_disconnect(ids[i].id);
        release(&ids[i]);
    }
    if (err)
        return err;
    printf("hostile-peer: flood: %u connection requests, %u dropped at once; of the "
           "rest %u established and %u rejected within 2 s; all dropped\n",
           FLOOD, (FLOOD + 3) / 4, established, rejected);
    return 0;
}

/* The flood's 200 connections take hundreds of siw's mmap pages, and on
 * siw the 65th one's CQ landed on the page libsiw refuses (and so did
 * every later object): each siw context that rdma_cm holds open for the
 * process gets the engine's guard first (lib/engine/rdma-mmap-guard.c).  Returns
 * the contexts, for unguard. */
static struct ibv_context **
guard_siw(struct ibv_cq **guards, unsigned max)
{
    struct ibv_context **devs = rdma_get_devices(NULL);

    for (unsigned i = 0; devs && devs[i] && i < max; i++) {
        struct ibv_device_attr attr;

        if (ibv_query_device(devs[i], &attr) == 0 && attr.vendor_id == GFR_SIW_VENDOR_ID)
            guards[i] = gfr_mmap_guard_create(devs[i]);
    }
    return devs;
}

static void
unguard(struct ibv_context **devs, struct ibv_cq **guards, unsigned max)
{
    for (unsigned i = 0; i < max; i++)
        gfr_mmap_guard_destroy(guards[i]);
    if (devs)
        rdma_free_devices(devs);
}

static int
flood(const char *addr, const char *port, const char *bind_addr)
{
    struct ibv_cq *guards[GUARDED_DEVS] = {0};
    struct ibv_context **devs = guard_siw(guards, GUARDED_DEVS);
    int err = flood_connect(addr, port, bind_addr);

    unguard(devs, guards, GUARDED_DEVS);
    return err;
}

static int
run_case(struct hp *hp, const char *name, const char *addr, const char *port,
         const char *bind_addr)
{
    int why = 0;
    int err;

    if (strcmp(name, "flood") == 0)
        return flood(addr, port, bind_addr);
    if ((err = prepare(hp, addr, port, bind_addr)) != 0)
        return err;
    if (strncmp(name, "pdata-", 6) == 0) {
        uint8_t bad[GFR_CM_PRIVATE_SIZE];
        struct gfr_cm_params mine = {.credits = NRECV, .inline_max = RECV_SIZE,
                                     .max_msg = 1u << 20, .max_segs = 16};
        size_t len = sizeof(bad);
        int want;

        gfr_cm_encode(&mine, bad, sizeof(bad));
        if (strcmp(name, "pdata-none") == 0) {
            /* The IB CM pads private data with zeros, so "none" arrives
             * as 56 zero bytes: a wrong magic; iWARP's MPA carries none. */
            len = 0;
            want = hp->iwarp ? GFR_CM_REJECT_SHORT : GFR_CM_REJECT_MAGIC;
        } else if (strcmp(name, "pdata-version") == 0) {
            bad[4] = GFR_CM_VERSION + 1;
            want = GFR_CM_REJECT_VERSION;
        } else if (strcmp(name, "pdata-magic") == 0) {
            bad[0] ^= 0xff;
            want = GFR_CM_REJECT_MAGIC;
        } else if (strcmp(name, "pdata-credits") == 0) {
            gfr_put_be16(bad + 6, 1);
            want = GFR_CM_REJECT_PARAMS;
        } else {
            return fail("unknown case");
        }
        err = connect_with(hp, bad, len, 0, &why);
        if (err != 1)
            return fail(err == 0 ? "the server accepted bad private data"
                                 : "no answer to the connect request");
        if (why != want) {
            fprintf(stderr, "hostile-peer: %s: rejected with reason %d, expected %d\n",
                    name, why, want);
            return 1;
        }
        printf("hostile-peer: %s: rejected: %s\n", name, gfr_cm_reject_str(why));
        return 0;
    }
    if (hp->iwarp && strncmp(name, "early", 5) == 0) {
        printf("hostile-peer: %s: skipped on iWARP: its connection is established by the "
               "MPA exchange on the wire, with no RTU a peer could withhold\n", name);
        return SKIPPED;
    }
    if (strcmp(name, "early") == 0) {
        uint8_t any[64];
        size_t any_len = sizeof(any);

        /* Connected at the QP level, but the handshake's last step (the
         * RTU) is never sent: the server must not send anything and must
         * give up on the connection when we go away. */
        if ((err = connect_with(hp, NULL, 0, 1, &why)) != 0)
            return fail("connect failed");
        if ((err = probe(hp, 32, 0)) != 0)
            return fail("posting the early message failed");
        err = wait_msg(hp, 3000, any, &any_len);
        if (err == 0)
            return fail("the server sent before the handshake completed");
        printf("hostile-peer: early: sent a message before the handshake completed; "
               "the server sent nothing in 3 s\n");
        return 0; /* leaving tears the half-open connection down (REJ) */
    }
    if (strcmp(name, "early-violation") == 0) {
        /* A violation the server sees before the CM tells it the
         * connection is established (it receives as soon as it has
         * accepted), then the RTU: having failed the connection early,
         * the server must still tell us, once we are connected. */
        if ((err = connect_with(hp, NULL, 0, 1, &why)) != 0)
            return fail("connect failed");
        if ((err = post_send(hp, build_violation(hp, "unknown-type"))) != 0)
            return fail("posting the violation failed");
        usleep(500 * 1000);
        if (rdma_establish(hp->id) != 0)
            return fail("sending the RTU failed");
        return await_teardown(hp);
    }
    if ((err = connect_with(hp, NULL, 0, 0, &why)) != 0)
        return fail(err == 1 ? "the server rejected a valid connection" : "connect failed");
    /* The request/reply server answers requests, it does not echo: its
     * case goes straight to the violation. */
    if (strcmp(name, "bad-write-rkey") != 0 && (err = probe(hp, 100, 1)) != 0) {
        fprintf(stderr, "hostile-peer: %s: the valid message before the violation "
                        "was not echoed: %s\n", name, strerror(-err));
        return 1;
    }
    if (strcmp(name, "credit-overrun") == 0) {
        overrun_credits(hp);
        err = 0;
    } else {
        size_t len = build_violation(hp, name);

        if (len == 0)
            return fail("unknown case");
        err = post_send(hp, len);
    }
    if (err)
        return fail("posting the violation failed");
    return await_teardown(hp);
}

int
main(int argc, char **argv)
{
    struct hp hp = {0};
    int err;

    if (argc != 5) {
        fprintf(stderr, "usage: hostile-peer ADDR PORT BINDADDR CASE\n");
        return 2;
    }
    case_name = argv[4];
    err = run_case(&hp, argv[4], argv[1], argv[2], argv[3]);
    release(&hp);
    return err;
}
