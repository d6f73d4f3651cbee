/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The engine's log messages: to the function the embedding program set
 * (the GlusterFS plugin: its log), else to stderr.  Every file of the
 * engine logs through here, so this file depends on nothing of it.
 */
#define _GNU_SOURCE
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include <netinet/in.h>
#include <urcu/uatomic.h>

#include "gfr_addr.h"
#include "engine-res.h"

/* Set once, before the first engine exists; read by every engine thread. */
static gfr_rdma_log_fn log_fn;
static void *log_arg;

void
gfr_rdma_set_log(gfr_rdma_log_fn fn, void *arg)
{
    log_arg = arg;
    uatomic_set(&log_fn, fn);
}

void
gfr_rdma_log(const char *fmt, ...)
{
    gfr_rdma_log_fn fn = uatomic_read(&log_fn);
    char msg[512];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    if (fn)
        fn(msg, log_arg);
    else
        fprintf(stderr, "gfr-rdma: %s\n", msg);
}

/* A message about one connection, naming its peer: a server has many.
 * It is also the connection's last error in statistics, and counts in
 * its errors.  Any thread, with or without conn->lock (peer_name is
 * read-only once the connection is shared; last_error is under
 * engine->note_lock, taken by nothing else while it is held). */
void
gfr_rdma_conn_log(struct gfr_rdma_conn *conn, const char *fmt, ...)
{
    char msg[448];
    size_t len;
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    pthread_mutex_lock(&conn->engine->note_lock);
    len = strnlen(msg, sizeof(conn->last_error) - 1); /* statistics keep its start */
    memcpy(conn->last_error, msg, len);
    conn->last_error[len] = '\0';
    conn->nerrors++;
    pthread_mutex_unlock(&conn->engine->note_lock);
    gfr_rdma_log("connection with %s: %s", conn->peer_name, msg);
}

/* "HOST port N" of an address (a peer's, or a listener's own), or "an
 * unknown address" when sa is NULL (the CM lost it) or of another family.
 * No state; any thread. */
void
gfr_rdma_peer_name(const struct sockaddr *sa, char name[GFR_RDMA_PEER_NAME_MAX])
{
    char host[INET6_ADDRSTRLEN];
    unsigned port;

    if (!sa || (sa->sa_family != AF_INET && sa->sa_family != AF_INET6)) {
        snprintf(name, GFR_RDMA_PEER_NAME_MAX, "an unknown address");
        return;
    }
    gfr_addr_host_port(sa, host, &port);
    snprintf(name, GFR_RDMA_PEER_NAME_MAX, "%s port %u", host, port);
}
