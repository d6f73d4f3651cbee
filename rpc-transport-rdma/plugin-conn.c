/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Connections: a brick's listen and the transports it creates for accepted
 * connections, a client's connect, disconnect, and the addresses GlusterFS
 * asks for (peerinfo and myinfo feed auth.addr, rpcsvc and the portmap).
 *
 * Locking: priv->lock guards priv->conn and priv->connected; the engine
 * handle stays valid until gfr_rdma_conn_release, which only the
 * disconnected callback calls, after taking it out of priv->conn under the
 * lock; so whoever finds priv->conn under the lock may use it there, and a
 * submission, which counts itself in priv->submitting under the lock, may
 * use it without the lock until it counts itself out (plugin-tx.c).
 * GlusterFS is never called with priv->lock held: rpc-clnt calls connect
 * and submit with its own conn->lock held, and its notify takes that lock.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gfr_addr.h"
#include "gfr_plugin.h"
#include "plugin-retry.h"

/* "host:port", the form auth.addr and rpcsvc parse (strrchr(':')). */
static void
format_identifier(const struct sockaddr *sa, char *out, size_t len)
{
    char host[INET6_ADDRSTRLEN];
    unsigned port;

    gfr_addr_host_port(sa, host, &port);
    snprintf(out, len, "%s:%u", host, port);
}

static void
set_info(peer_info_t *info, const struct sockaddr *sa, socklen_t len)
{
    memcpy(&info->sockaddr, sa, len);
    info->sockaddr_len = len;
    format_identifier(sa, info->identifier, sizeof(info->identifier));
}

/* Fills peerinfo and myinfo from the engine connection (accepted side, and
 * the client's myinfo once connected). */
static void
fill_conn_info(rpc_transport_t *trans, struct gfr_rdma_conn *conn, int peer_too)
{
    struct sockaddr_storage sa;
    socklen_t len = sizeof(sa);

    if (peer_too && gfr_rdma_conn_peer_addr(conn, (struct sockaddr *)&sa, &len) == 0)
        set_info(&trans->peerinfo, (struct sockaddr *)&sa, len);
    len = sizeof(sa);
    if (gfr_rdma_conn_local_addr(conn, (struct sockaddr *)&sa, &len) == 0)
        set_info(&trans->myinfo, (struct sockaddr *)&sa, len);
}

/* priv's engine, started on first use: 0 or -errno, logged unless quiet
 * (a listener trying again in the background). */
static int
ensure_engine(struct gfr_trans *priv, int quiet)
{
    int err;

    if (priv->engine)
        return 0;
    err = gfr_plugin_engine_get(&priv->cfg.engine, &priv->engine);
    if (err && !quiet)
        gf_msg(priv->trans->name, GF_LOG_ERROR, -err, GFR_MSG_ENGINE,
               "cannot start the RDMA engine: %s (is an RDMA device configured, "
               "and are rdma_cm and ib_uverbs loaded?)", strerror(-err));
    return err;
}

/* --- client ------------------------------------------------------------ */

static void
client_connected(struct gfr_rdma_conn *conn, void *cb_arg)
{
    struct gfr_trans *priv = cb_arg;
    rpc_transport_t *this = priv->trans;

    THIS = this->xl;
    fill_conn_info(this, conn, 0);
    pthread_mutex_lock(&priv->lock);
    priv->connected = 1;
    pthread_mutex_unlock(&priv->lock);
    gf_msg_debug(this->name, 0, "connected to %s from %s", this->peerinfo.identifier,
                 this->myinfo.identifier);
    rpc_transport_notify(this, RPC_TRANSPORT_CONNECT, this);
}

/* Both roles: the engine is done with the connection. */
static void
conn_disconnected(struct gfr_rdma_conn *conn, int reason, void *cb_arg)
{
    struct gfr_trans *priv = cb_arg;
    rpc_transport_t *this = priv->trans;
    int was_connected;

    THIS = this->xl;
    pthread_mutex_lock(&priv->lock);
    was_connected = priv->connected;
    priv->conn = NULL;
    priv->connected = 0;
    /* A submission under way still uses conn (it fails at once: the
     * connection has ended); it must be out before conn is released. */
    while (priv->submitting)
        pthread_cond_wait(&priv->no_submitter, &priv->lock);
    pthread_mutex_unlock(&priv->lock);
    if (reason && (was_connected || priv->role == GFR_TRANS_ACCEPTED))
        gf_msg(this->name, GF_LOG_INFO, -reason, GFR_MSG_DISCONNECTED,
               "connection with %s ended: %s", this->peerinfo.identifier,
               strerror(-reason));
    else if (reason)
        gf_msg(this->name, GF_LOG_INFO, -reason, GFR_MSG_CONNECT_FAILED,
               "connecting to %s failed: %s", this->peerinfo.identifier,
               strerror(-reason));
    else
        gf_msg_debug(this->name, 0, "disconnected from %s", this->peerinfo.identifier);
    rpc_transport_notify(this, RPC_TRANSPORT_DISCONNECT, this);
    gfr_rdma_conn_release(conn);
    rpc_transport_unref(this); /* the connection's reference */
}

static const struct gfr_rdma_conn_ops client_ops = {
    .connected = client_connected,
    .received = gfr_plugin_received,
    .disconnected = conn_disconnected,
};

/* A connect that failed before the engine took it still owes GlusterFS a
 * DISCONNECT (glfs_init waits for one), but not from inside connect:
 * rpc-clnt holds its conn->lock there and takes it again for the event. */
static void *
notify_failed_connect(void *arg)
{
    rpc_transport_t *this = arg;

    THIS = this->xl;
    rpc_transport_notify(this, RPC_TRANSPORT_DISCONNECT, this);
    rpc_transport_unref(this);
    return NULL;
}

static void
fail_connect_later(rpc_transport_t *this)
{
    pthread_t thread;

    rpc_transport_ref(this);
    if (gf_thread_create_detached(&thread, notify_failed_connect, this, "gfrconnfail") != 0) {
        gf_msg(this->name, GF_LOG_ERROR, errno, GFR_MSG_CONNECT_FAILED,
               "cannot start a thread to report the failed connect");
        rpc_transport_unref(this);
    }
}

/* The first address getaddrinfo gives for host (NULL: any, to listen on)
 * and port; 0 or getaddrinfo's error. */
static int
lookup_address(const char *host, unsigned port, sa_family_t family,
               struct sockaddr_storage *sa, socklen_t *len)
{
    struct addrinfo hints = {.ai_family = family,
                             .ai_socktype = SOCK_STREAM,
                             .ai_flags = AI_NUMERICSERV | (host ? 0 : AI_PASSIVE)};
    struct addrinfo *res;
    char service[8];
    int err;

    snprintf(service, sizeof(service), "%u", port);
    err = getaddrinfo(host, service, &hints, &res);
    if (err)
        return err;
    memcpy(sa, res->ai_addr, res->ai_addrlen);
    *len = res->ai_addrlen;
    freeaddrinfo(res);
    return 0;
}

int32_t
gfr_plugin_connect(rpc_transport_t *this, int port)
{
    struct gfr_trans *priv = this->private;
    struct sockaddr_storage dst;
    socklen_t len;
    char *host = NULL;
    int err;

    pthread_mutex_lock(&priv->lock);
    if (priv->conn) {
        pthread_mutex_unlock(&priv->lock);
        return 0; /* connecting or connected already */
    }
    priv->role = GFR_TRANS_CLIENT;
    if (dict_get_str(this->options, "remote-host", &host) != 0 || !host) {
        gf_msg(this->name, GF_LOG_ERROR, EINVAL, GFR_MSG_CONNECT_FAILED,
               "option remote-host is missing");
        err = -EINVAL;
    } else {
        err = lookup_address(host, port ? (unsigned)port : priv->cfg.remote_port,
                             priv->cfg.family, &dst, &len);
        if (err) {
            gf_msg(this->name, GF_LOG_ERROR, 0, GFR_MSG_CONNECT_FAILED,
                   "cannot resolve remote-host %s: %s", host, gai_strerror(err));
            err = -EHOSTUNREACH;
        }
    }
    if (!err) {
        set_info(&this->peerinfo, (struct sockaddr *)&dst, len);
        err = ensure_engine(priv, 0);
    }
    if (!err) {
        rpc_transport_ref(this); /* the connection's, until disconnected */
        err = gfr_rdma_connect(gfr_plugin_engine_rdma(priv->engine),
                               (struct sockaddr *)&dst, NULL, &priv->cfg.engine,
                               &client_ops, priv, &priv->conn);
        if (err) {
            priv->conn = NULL;
            rpc_transport_unref(this);
            gf_msg(this->name, GF_LOG_ERROR, -err, GFR_MSG_CONNECT_FAILED,
                   "cannot start connecting to %s: %s", this->peerinfo.identifier,
                   strerror(-err));
        }
    }
    pthread_mutex_unlock(&priv->lock);
    if (err)
        fail_connect_later(this);
    return 0;
}

/* --- server ------------------------------------------------------------ */

static const struct gfr_rdma_conn_ops accepted_ops = {
    .received = gfr_plugin_received,
    .disconnected = conn_disconnected,
};

/* Frees an accepted transport that GlusterFS never saw. */
static void
free_accepted(rpc_transport_t *new)
{
    struct gfr_trans *npriv = new->private;

    if (npriv) {
        gfr_call_limit_clear(&npriv->calls);
        gfr_plugin_engine_put(npriv->engine);
        pthread_mutex_destroy(&npriv->lock);
        pthread_cond_destroy(&npriv->no_submitter);
        free(npriv);
    }
    if (new->options)
        dict_unref(new->options);
    pthread_mutex_destroy(&new->lock);
    GF_FREE(new->name);
    GF_FREE(new);
}

/*
 * The engine asks whether to take a connection (CM thread, before its QP
 * exists, so no message can arrive before ACCEPT is notified).  Builds the
 * rpc_transport_t GlusterFS expects for it, as socket.so does.
 */
static int
accept_conn(struct gfr_rdma_listener *listener, struct gfr_rdma_conn *conn, void *cb_arg,
            const struct gfr_rdma_conn_ops **ops, void **conn_cb_arg)
{
    struct gfr_trans *lpriv = cb_arg;
    rpc_transport_t *this = lpriv->trans;
    rpc_transport_t *new;
    struct gfr_trans *npriv;

    (void)listener;
    THIS = this->xl;
    new = GF_CALLOC(1, sizeof(*new), gf_common_mt_rpc_trans_t);
    npriv = calloc(1, sizeof(*npriv));
    if (!new || !npriv) {
        gf_msg(this->name, GF_LOG_ERROR, ENOMEM, GFR_MSG_ACCEPT_FAILED,
               "no memory for an accepted connection; refusing it");
        GF_FREE(new);
        free(npriv);
        return -ENOMEM;
    }
    pthread_mutex_init(&new->lock, NULL);
    INIT_LIST_HEAD(&new->list);
    new->name = gf_strdup(this->name);
    new->options = this->options ? dict_ref(this->options) : NULL;
    new->ops = this->ops;
    new->init = this->init;
    new->fini = this->fini;
    new->ctx = this->ctx;
    new->xl = this->xl;
    new->mydata = this->mydata;
    new->notify = this->notify;
    new->listener = this;
    new->notify_poller_death = this->poller_death_accept;
    new->private = npriv;
    npriv->trans = new;
    npriv->role = GFR_TRANS_ACCEPTED;
    pthread_mutex_init(&npriv->lock, NULL);
    pthread_cond_init(&npriv->no_submitter, NULL);
    CDS_INIT_LIST_HEAD(&npriv->offered);
    gfr_plugin_calls_init(npriv, this->options);
    npriv->conn = conn;
    npriv->engine = lpriv->engine;
    gfr_plugin_engine_ref(npriv->engine);
    fill_conn_info(new, conn, 1);
    if (!new->name) {
        free_accepted(new);
        return -ENOMEM;
    }
    rpc_transport_ref(new); /* the connection's, until disconnected */
    if (rpc_transport_notify(this, RPC_TRANSPORT_ACCEPT, new) != 0) {
        gf_msg(this->name, GF_LOG_WARNING, 0, GFR_MSG_ACCEPT_FAILED,
               "GlusterFS refused the connection from %s", new->peerinfo.identifier);
        /* Our reference is the only one: fini runs and frees npriv. */
        rpc_transport_unref(new);
        return -ECONNREFUSED;
    }
    gf_msg_debug(this->name, 0, "accepted a connection from %s on %s",
                 new->peerinfo.identifier, new->myinfo.identifier);
    *ops = &accepted_ops;
    *conn_cb_arg = npriv;
    return 0;
}

/* Listens on priv->listen_addr, starting the engine if need be: 0, with
 * myinfo, brick_port2 and the process's listener list set and the
 * listening logged; or -errno, not logged (the caller knows whether it
 * will try again).  Caller holds no lock; the first listen, or the
 * listener's retry thread. */
static int
listen_now(struct gfr_trans *priv)
{
    rpc_transport_t *this = priv->trans;
    struct sockaddr_storage sa = priv->listen_addr;
    socklen_t len = sizeof(sa);
    char host[INET6_ADDRSTRLEN];
    unsigned port;
    int err;

    err = ensure_engine(priv, 1);
    if (!err)
        err = gfr_rdma_listen(gfr_plugin_engine_rdma(priv->engine), (struct sockaddr *)&sa,
                              priv->cfg.listen_backlog, &priv->cfg.engine, accept_conn, priv,
                              &priv->listener);
    if (err)
        return err;
    if (gfr_rdma_listener_addr(priv->listener, (struct sockaddr *)&sa, &len) == 0)
        set_info(&this->myinfo, (struct sockaddr *)&sa, len);
    /* glusterfsd registers "<brick>.rdma" with glusterd's portmap only when
     * brick_port2 is set; clients of rdma volumes ask for that name. */
    gfr_addr_host_port((struct sockaddr *)&sa, host, &port);
    if (this->ctx && !this->ctx->cmd_args.brick_port2)
        this->ctx->cmd_args.brick_port2 = (int)port;
    gfr_plugin_listeners_add(priv);
    gf_msg(this->name, GF_LOG_INFO, 0, GFR_MSG_LISTENING,
           "listening for RDMA connections on %s", this->myinfo.identifier);
    return 0;
}

/* An attempt of a listener waiting for RDMA (plugin-retry.c's thread). */
static int
listen_attempt(void *cb_arg)
{
    struct gfr_trans *priv = cb_arg;

    THIS = priv->trans->xl;
    return listen_now(priv);
}

/* Failures that RDMA coming up later can cure: no rdma_cm or verbs
 * device yet, no device with the address (yet). */
static int
may_come_later(int err)
{
    return err == -ENODEV || err == -EADDRNOTAVAIL || err == -ENOENT || err == -ENXIO ||
           err == -ENETDOWN || err == -ENETUNREACH;
}

#define LISTEN_RETRY_MS 2000

int32_t
gfr_plugin_listen(rpc_transport_t *this)
{
    struct gfr_trans *priv = this->private;
    const char *bind = priv->cfg.bind_address[0] ? priv->cfg.bind_address : NULL;
    socklen_t len;
    int err;

    if (priv->listener || priv->listen_retry) {
        gf_msg_debug(this->name, 0, "already listening");
        return 0;
    }
    priv->role = GFR_TRANS_LISTENER;
    err = lookup_address(bind, priv->cfg.listen_port, priv->cfg.family, &priv->listen_addr,
                         &len);
    if (err) {
        gf_msg(this->name, GF_LOG_ERROR, 0, GFR_MSG_LISTEN_FAILED,
               "cannot resolve transport.rdma.bind-address %s: %s", bind ? bind : "(any)",
               gai_strerror(err));
        return -1;
    }
    format_identifier((struct sockaddr *)&priv->listen_addr, this->myinfo.identifier,
                      sizeof(this->myinfo.identifier));
    err = listen_now(priv);
    if (!err)
        return 0;
    /*
     * No RDMA here yet?  Failing would stop the brick: with `tcp,rdma`,
     * GlusterFS's server_init even crashes when one listener of several
     * fails.  So the brick starts, serves its other transports, and this
     * listener tries again in the background.  The port it will listen on
     * is registered with glusterd now, when it is known (before the retry
     * thread, which sets it too once it listens).
     */
    if (may_come_later(err)) {
        if (this->ctx && !this->ctx->cmd_args.brick_port2 && priv->cfg.listen_port)
            this->ctx->cmd_args.brick_port2 = priv->cfg.listen_port;
        if (gfr_plugin_retry_start(listen_attempt, priv, LISTEN_RETRY_MS, "gfr-listen",
                                   &priv->listen_retry) == 0) {
            gf_msg(this->name, GF_LOG_WARNING, -err, GFR_MSG_LISTEN_FAILED,
                   "cannot listen for RDMA connections on %s yet: %s (no rdma_cm, no "
                   "RDMA device, or none with this address); trying again every %d s "
                   "in the background (the process serves its other transports "
                   "meanwhile)",
                   this->myinfo.identifier, strerror(-err), LISTEN_RETRY_MS / 1000);
            return 0;
        }
    }
    gf_msg(this->name, GF_LOG_ERROR, -err, GFR_MSG_LISTEN_FAILED,
           "cannot listen for RDMA connections on %s: %s", this->myinfo.identifier,
           strerror(-err));
    /* rpcsvc counts only -1 and -EADDRINUSE as failures. */
    return err == -EADDRINUSE ? -EADDRINUSE : -1;
}

void
gfr_plugin_close_listener(struct gfr_trans *priv)
{
    /* first the retry, which may be creating the listener */
    gfr_plugin_retry_stop(priv->listen_retry);
    priv->listen_retry = NULL;
    if (priv->listener) {
        gfr_plugin_listeners_remove(priv);
        gfr_rdma_listener_close(priv->listener);
        priv->listener = NULL;
    }
}

int32_t
gfr_plugin_disconnect(rpc_transport_t *this, gf_boolean_t wait)
{
    struct gfr_trans *priv = this->private;

    (void)wait; /* DISCONNECT is always notified from the engine's thread */
    if (priv->role == GFR_TRANS_LISTENER) {
        gfr_plugin_close_listener(priv);
        return 0;
    }
    pthread_mutex_lock(&priv->lock);
    if (priv->conn)
        gfr_rdma_disconnect(priv->conn);
    pthread_mutex_unlock(&priv->lock);
    return 0;
}

/* --- addresses --------------------------------------------------------- */

static int32_t
copy_name(const peer_info_t *info, char *out, int len)
{
    if (!out || len <= 0)
        return -1;
    snprintf(out, (size_t)len, "%s", info->identifier);
    return 0;
}

static int32_t
copy_addr(const peer_info_t *info, char *name, int namelen, struct sockaddr_storage *sa,
          socklen_t salen)
{
    if (name && namelen > 0)
        snprintf(name, (size_t)namelen, "%s", info->identifier);
    if (sa) {
        if (salen < info->sockaddr_len)
            return -1;
        memcpy(sa, &info->sockaddr, info->sockaddr_len);
    }
    return 0;
}

int32_t
gfr_plugin_get_peername(rpc_transport_t *this, char *hostname, int hostlen)
{
    return copy_name(&this->peerinfo, hostname, hostlen);
}

int32_t
gfr_plugin_get_peeraddr(rpc_transport_t *this, char *peeraddr, int addrlen,
                        struct sockaddr_storage *sa, socklen_t salen)
{
    return copy_addr(&this->peerinfo, peeraddr, addrlen, sa, salen);
}

int32_t
gfr_plugin_get_myname(rpc_transport_t *this, char *hostname, int hostlen)
{
    return copy_name(&this->myinfo, hostname, hostlen);
}

int32_t
gfr_plugin_get_myaddr(rpc_transport_t *this, char *myaddr, int addrlen,
                      struct sockaddr_storage *sa, socklen_t salen)
{
    return copy_addr(&this->myinfo, myaddr, addrlen, sa, salen);
}
