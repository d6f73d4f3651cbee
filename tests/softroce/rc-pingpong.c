/*
 * SPDX-License-Identifier: GPL-2.0-only
 *
 * rc-pingpong: proves the soft-RoCE harness end to end with the project's own
 * code.  Connects an RC queue pair through librdmacm and exchanges messages of
 * varying size in both directions, checking every byte.  It is deliberately
 * independent of lib/: it tests the fabric, not the engine.
 *
 *   server: rc-pingpong -s ADDR [-p PORT] [-n COUNT] [-S MAXSIZE]
 *   client: rc-pingpong -c ADDR [-b BINDADDR] [-p PORT] [-n COUNT] [-S MAXSIZE]
 *
 * Every step has a timeout; a failure prints the step and the reason and
 * exits 1.  On success it prints the device it used and what it verified.
 */
#include <errno.h>
#include <getopt.h>
#include <netdb.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>

#define STEP_TIMEOUT_MS 10000

struct pingpong {
    struct rdma_event_channel *channel;
    struct rdma_cm_id *listen_id;
    struct rdma_cm_id *id;
    struct ibv_pd *pd;
    struct ibv_comp_channel *comp;
    struct ibv_cq *cq;
    struct ibv_mr *send_mr;
    struct ibv_mr *recv_mr;
    uint8_t *send_buf;
    uint8_t *recv_buf;
    size_t max_size;
    int cq_events;
    int send_busy;
    int recv_ready;
    uint32_t recv_len;
};

static const char *prog = "rc-pingpong";

static int
fail(const char *step, const char *why)
{
    fprintf(stderr, "%s: %s failed: %s\n", prog, step, why);
    return -1;
}

/* Waits for one CM event of the expected type; anything else is an error. */
static int
wait_cm_event(struct pingpong *pp, enum rdma_cm_event_type expected,
              struct rdma_cm_id **event_id)
{
    struct pollfd pfd = {.fd = pp->channel->fd, .events = POLLIN};
    struct rdma_cm_event *event;
    enum rdma_cm_event_type type;
    int status;
    int n;

    n = poll(&pfd, 1, STEP_TIMEOUT_MS);
    if (n == 0)
        return fail(rdma_event_str(expected), "timed out waiting for the CM event");
    if (n < 0 || rdma_get_cm_event(pp->channel, &event) != 0)
        return fail(rdma_event_str(expected), strerror(errno));
    type = event->event;
    status = event->status;
    if (event_id)
        *event_id = event->id;
    rdma_ack_cm_event(event);
    if (type != expected) {
        char why[160];
        snprintf(why, sizeof(why), "got %s (status %d) instead",
                 rdma_event_str(type), status);
        return fail(rdma_event_str(expected), why);
    }
    return 0;
}

static int
setup_resources(struct pingpong *pp, struct rdma_cm_id *id)
{
    struct ibv_qp_init_attr attr = {
        .cap = {.max_send_wr = 4, .max_recv_wr = 4, .max_send_sge = 1,
                .max_recv_sge = 1},
        .qp_type = IBV_QPT_RC,
        .sq_sig_all = 1,
    };

    pp->pd = ibv_alloc_pd(id->verbs);
    if (!pp->pd)
        return fail("ibv_alloc_pd", strerror(errno));
    pp->comp = ibv_create_comp_channel(id->verbs);
    if (!pp->comp)
        return fail("ibv_create_comp_channel", strerror(errno));
    pp->cq = ibv_create_cq(id->verbs, 16, NULL, pp->comp, 0);
    if (!pp->cq)
        return fail("ibv_create_cq", strerror(errno));
    if (ibv_req_notify_cq(pp->cq, 0) != 0)
        return fail("ibv_req_notify_cq", strerror(errno));
    attr.send_cq = pp->cq;
    attr.recv_cq = pp->cq;
    if (rdma_create_qp(id, pp->pd, &attr) != 0)
        return fail("rdma_create_qp", strerror(errno));

    pp->send_buf = calloc(1, pp->max_size);
    pp->recv_buf = calloc(1, pp->max_size);
    if (!pp->send_buf || !pp->recv_buf)
        return fail("allocating buffers", strerror(ENOMEM));
    pp->send_mr = ibv_reg_mr(pp->pd, pp->send_buf, pp->max_size, 0);
    pp->recv_mr = ibv_reg_mr(pp->pd, pp->recv_buf, pp->max_size,
                             IBV_ACCESS_LOCAL_WRITE);
    if (!pp->send_mr || !pp->recv_mr)
        return fail("ibv_reg_mr", strerror(errno));
    pp->id = id;
    return 0;
}

static int
post_recv(struct pingpong *pp)
{
    struct ibv_sge sge = {.addr = (uintptr_t)pp->recv_buf,
                          .length = (uint32_t)pp->max_size,
                          .lkey = pp->recv_mr->lkey};
    struct ibv_recv_wr wr = {.wr_id = 1, .sg_list = &sge, .num_sge = 1};
    struct ibv_recv_wr *bad;
    int err = ibv_post_recv(pp->id->qp, &wr, &bad);

    return err ? fail("ibv_post_recv", strerror(err)) : 0;
}

static size_t
message_size(unsigned iter, size_t max_size)
{
    return 1 + ((size_t)iter * 977u) % max_size;
}

static uint8_t
pattern_byte(unsigned iter, int from_client, size_t i)
{
    return (uint8_t)(iter * 31u + (unsigned)from_client * 101u + i * 7u);
}

static void
fill_message(uint8_t *buf, size_t len, unsigned iter, int from_client)
{
    for (size_t i = 0; i < len; i++)
        buf[i] = pattern_byte(iter, from_client, i);
}

static int
check_message(const uint8_t *buf, size_t len, unsigned iter, int from_client)
{
    for (size_t i = 0; i < len; i++) {
        if (buf[i] != pattern_byte(iter, from_client, i)) {
            char why[120];
            snprintf(why, sizeof(why),
                     "message %u byte %zu is 0x%02x, expected 0x%02x", iter, i,
                     buf[i], pattern_byte(iter, from_client, i));
            return fail("checking received data", why);
        }
    }
    return 0;
}

/* Waits for one completion through the completion channel, re-arming before
 * polling again so that no completion can slip between poll and sleep. */
static int
wait_completion(struct pingpong *pp, struct ibv_wc *wc)
{
    for (;;) {
        struct pollfd pfd = {.fd = pp->comp->fd, .events = POLLIN};
        struct ibv_cq *cq;
        void *ctx;
        int n = ibv_poll_cq(pp->cq, 1, wc);

        if (n < 0)
            return fail("ibv_poll_cq", "error");
        if (n == 1) {
            if (wc->status != IBV_WC_SUCCESS)
                return fail("work completion", ibv_wc_status_str(wc->status));
            return 0;
        }
        n = poll(&pfd, 1, STEP_TIMEOUT_MS);
        if (n == 0)
            return fail("waiting for a completion", "timed out");
        if (n < 0)
            return fail("poll on the completion channel", strerror(errno));
        if (ibv_get_cq_event(pp->comp, &cq, &ctx) != 0)
            return fail("ibv_get_cq_event", strerror(errno));
        pp->cq_events++;
        if (ibv_req_notify_cq(pp->cq, 0) != 0)
            return fail("ibv_req_notify_cq", strerror(errno));
    }
}

static int
send_message(struct pingpong *pp, size_t len)
{
    struct ibv_sge sge = {.addr = (uintptr_t)pp->send_buf,
                          .length = (uint32_t)len,
                          .lkey = pp->send_mr->lkey};
    struct ibv_send_wr wr = {.wr_id = 2, .sg_list = &sge, .num_sge = 1,
                             .opcode = IBV_WR_SEND};
    struct ibv_send_wr *bad;
    int err = ibv_post_send(pp->id->qp, &wr, &bad);

    return err ? fail("ibv_post_send", strerror(err)) : 0;
}

/* Takes one completion and records what it means: a send buffer that is
 * free again, or a received message waiting to be checked.  Completions of
 * the two directions may arrive in any order (a send completes when the
 * peer's ACK comes back, which can be after the peer's next message). */
static int
process_completion(struct pingpong *pp)
{
    struct ibv_wc wc;

    if (wait_completion(pp, &wc) != 0)
        return -1;
    if (wc.opcode == IBV_WC_SEND) {
        pp->send_busy = 0;
    } else {
        pp->recv_ready = 1;
        pp->recv_len = wc.byte_len;
    }
    return 0;
}

static int
send_when_free(struct pingpong *pp, unsigned iter, int from_client)
{
    size_t len = message_size(iter, pp->max_size);

    while (pp->send_busy)
        if (process_completion(pp) != 0)
            return -1;
    fill_message(pp->send_buf, len, iter, from_client);
    pp->send_busy = 1;
    return send_message(pp, len);
}

static int
receive_and_check(struct pingpong *pp, unsigned iter, int from_client)
{
    size_t len = message_size(iter, pp->max_size);

    while (!pp->recv_ready)
        if (process_completion(pp) != 0)
            return -1;
    pp->recv_ready = 0;
    if (pp->recv_len != len) {
        char why[80];
        snprintf(why, sizeof(why), "message %u has %u bytes, expected %zu",
                 iter, pp->recv_len, len);
        return fail("checking received length", why);
    }
    if (check_message(pp->recv_buf, len, iter, from_client) != 0)
        return -1;
    return post_recv(pp);
}

/* One round trip; a receive is always posted before the peer can send. */
static int
exchange(struct pingpong *pp, unsigned iter, int is_client)
{
    if (is_client) {
        if (send_when_free(pp, iter, 1) != 0)
            return -1;
        return receive_and_check(pp, iter, 0);
    }
    if (receive_and_check(pp, iter, 1) != 0)
        return -1;
    return send_when_free(pp, iter, 0);
}

/* The last send must complete before the connection goes away. */
static int
drain_sends(struct pingpong *pp)
{
    while (pp->send_busy)
        if (process_completion(pp) != 0)
            return -1;
    return 0;
}

static int
resolve(const char *host, const char *port, struct sockaddr_storage *ss)
{
    struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_flags = AI_NUMERICHOST};
    struct addrinfo *res;
    int err = getaddrinfo(host, port, &hints, &res);

    if (err != 0)
        return fail("parsing the address", gai_strerror(err));
    memcpy(ss, res->ai_addr, res->ai_addrlen);
    freeaddrinfo(res);
    return 0;
}

static int
run_server(struct pingpong *pp, const char *addr, const char *port)
{
    struct sockaddr_storage ss;
    struct rdma_cm_id *child;

    if (resolve(addr, port, &ss) != 0)
        return -1;
    if (rdma_create_id(pp->channel, &pp->listen_id, NULL, RDMA_PS_TCP) != 0)
        return fail("rdma_create_id", strerror(errno));
    if (rdma_bind_addr(pp->listen_id, (struct sockaddr *)&ss) != 0)
        return fail("rdma_bind_addr", strerror(errno));
    if (rdma_listen(pp->listen_id, 1) != 0)
        return fail("rdma_listen", strerror(errno));
    printf("%s: listening on %s port %s\n", prog, addr, port);
    fflush(stdout);
    if (wait_cm_event(pp, RDMA_CM_EVENT_CONNECT_REQUEST, &child) != 0)
        return -1;
    if (setup_resources(pp, child) != 0 || post_recv(pp) != 0)
        return -1;
    if (rdma_accept(child, NULL) != 0)
        return fail("rdma_accept", strerror(errno));
    return wait_cm_event(pp, RDMA_CM_EVENT_ESTABLISHED, NULL);
}

static int
run_client(struct pingpong *pp, const char *addr, const char *bind_addr,
           const char *port)
{
    struct sockaddr_storage dst;
    struct sockaddr_storage src;
    struct rdma_cm_id *id;

    if (resolve(addr, port, &dst) != 0)
        return -1;
    if (bind_addr && resolve(bind_addr, "0", &src) != 0)
        return -1;
    if (rdma_create_id(pp->channel, &id, NULL, RDMA_PS_TCP) != 0)
        return fail("rdma_create_id", strerror(errno));
    pp->id = id;
    if (rdma_resolve_addr(id, bind_addr ? (struct sockaddr *)&src : NULL,
                          (struct sockaddr *)&dst, STEP_TIMEOUT_MS) != 0)
        return fail("rdma_resolve_addr", strerror(errno));
    if (wait_cm_event(pp, RDMA_CM_EVENT_ADDR_RESOLVED, NULL) != 0)
        return -1;
    if (rdma_resolve_route(id, STEP_TIMEOUT_MS) != 0)
        return fail("rdma_resolve_route", strerror(errno));
    if (wait_cm_event(pp, RDMA_CM_EVENT_ROUTE_RESOLVED, NULL) != 0)
        return -1;
    if (setup_resources(pp, id) != 0 || post_recv(pp) != 0)
        return -1;
    struct rdma_conn_param param = {.retry_count = 7, .rnr_retry_count = 7};
    if (rdma_connect(id, &param) != 0)
        return fail("rdma_connect", strerror(errno));
    return wait_cm_event(pp, RDMA_CM_EVENT_ESTABLISHED, NULL);
}

static void
teardown(struct pingpong *pp)
{
    if (pp->id && pp->id->qp)
        rdma_destroy_qp(pp->id);
    if (pp->send_mr)
        ibv_dereg_mr(pp->send_mr);
    if (pp->recv_mr)
        ibv_dereg_mr(pp->recv_mr);
    if (pp->cq) {
        ibv_ack_cq_events(pp->cq, (unsigned)pp->cq_events);
        ibv_destroy_cq(pp->cq);
    }
    if (pp->comp)
        ibv_destroy_comp_channel(pp->comp);
    if (pp->pd)
        ibv_dealloc_pd(pp->pd);
    if (pp->id)
        rdma_destroy_id(pp->id);
    if (pp->listen_id)
        rdma_destroy_id(pp->listen_id);
    if (pp->channel)
        rdma_destroy_event_channel(pp->channel);
    free(pp->send_buf);
    free(pp->recv_buf);
}

static void
usage(void)
{
    fprintf(stderr,
            "usage: %s -s ADDR | -c ADDR [-b BINDADDR] [-p PORT] [-n COUNT] "
            "[-S MAXSIZE]\n",
            prog);
    exit(2);
}

int
main(int argc, char **argv)
{
    struct pingpong pp = {.max_size = 65536};
    const char *server_addr = NULL;
    const char *client_addr = NULL;
    const char *bind_addr = NULL;
    const char *port = "20079";
    unsigned count = 100;
    int ret;
    int opt;

    while ((opt = getopt(argc, argv, "s:c:b:p:n:S:")) != -1) {
        switch (opt) {
        case 's': server_addr = optarg; break;
        case 'c': client_addr = optarg; break;
        case 'b': bind_addr = optarg; break;
        case 'p': port = optarg; break;
        case 'n': count = (unsigned)strtoul(optarg, NULL, 10); break;
        case 'S': pp.max_size = strtoul(optarg, NULL, 10); break;
        default: usage();
        }
    }
    if (!server_addr == !client_addr || count == 0 || pp.max_size == 0 ||
        pp.max_size > (1u << 30))
        usage();

    pp.channel = rdma_create_event_channel();
    if (!pp.channel) {
        fail("rdma_create_event_channel",
             errno == ENODEV ? "no RDMA device (is rdma_ucm loaded?)"
                             : strerror(errno));
        return 1;
    }
    ret = server_addr ? run_server(&pp, server_addr, port)
                      : run_client(&pp, client_addr, bind_addr, port);
    for (unsigned i = 0; ret == 0 && i < count; i++)
        ret = exchange(&pp, i, client_addr != NULL);
    if (ret == 0)
        ret = drain_sends(&pp);
    if (ret == 0) {
        printf("%s: %s on %s: %u messages of 1..%zu bytes verified in each "
               "direction\n",
               prog, server_addr ? "server" : "client",
               ibv_get_device_name(pp.id->verbs->device), count, pp.max_size);
        if (client_addr)
            rdma_disconnect(pp.id);
        ret = wait_cm_event(&pp, RDMA_CM_EVENT_DISCONNECTED, NULL);
        if (server_addr && ret == 0)
            rdma_disconnect(pp.id);
    }
    teardown(&pp);
    return ret == 0 ? 0 : 1;
}
