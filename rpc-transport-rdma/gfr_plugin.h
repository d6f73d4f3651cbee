/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * rdma.so's internals: the state behind one rpc_transport_t and the pieces
 * the plugin's files share.  docs/plugin.md describes the design.
 *
 * Stages, one file each: plugin-opts.c (volume options), plugin-engine.c
 * (the process's engines, its worker pool and the log bridge),
 * plugin-conn.c (listen, accept, connect, disconnect, addresses),
 * plugin-rx.c (a received message handed to GlusterFS), plugin-tx.c
 * (submit_request and submit_reply), plugin-throttle.c (back-pressure),
 * node-conf.c (the node's options file), plugin-retry.c (a listener
 * trying again in the background), plugin-stats.c (the statistics
 * socket), gluster-version.c (which GlusterFS runs), rdma.c (the exported
 * symbols).
 */
#ifndef GFR_PLUGIN_H
#define GFR_PLUGIN_H

#include <pthread.h>
#include <stdint.h>
#include <sys/socket.h>

#include <glusterfs/glusterfs.h>
#include <glusterfs/xlator.h>
#include <glusterfs/glfs-message-id.h>
#include <glusterfs/rpc/rpc-transport.h>

#include <urcu/list.h>

#include "call-limit.h"
#include "gfr_rdma.h"

#define GFR_PLUGIN_DOMAIN "rpc-transport/rdma"
#define GFR_DEFAULT_PORT 24008 /* GF_DEFAULT_BASE_PORT + 1, as the old transport */

/* Message ids in GlusterFS's block for the rdma transport. */
GLFS_MSGID(RPC_TRANS_RDMA, GFR_MSG_BAD_OPTION, GFR_MSG_ENGINE, GFR_MSG_LISTEN_FAILED,
           GFR_MSG_LISTENING, GFR_MSG_CONNECT_FAILED, GFR_MSG_DISCONNECTED,
           GFR_MSG_ACCEPT_FAILED, GFR_MSG_BAD_MESSAGE, GFR_MSG_SUBMIT_FAILED,
           GFR_MSG_NO_MEMORY, GFR_MSG_UNKNOWN_XID, GFR_MSG_RECONFIGURE, GFR_MSG_STATS,
           GFR_MSG_WRONG_GLUSTERFS, GFR_MSG_VOLUME_SECTION);

/* What the volume options say (plugin-opts.c). */
struct gfr_plugin_cfg {
    struct gfr_rdma_opts engine;
    sa_family_t family;      /* AF_INET or AF_INET6 */
    char bind_address[256];  /* listener; "" = any */
    uint16_t listen_port;
    int listen_backlog;
    uint16_t remote_port;    /* client, when connect is given port 0 */
    char volume[256];        /* the transport's volume; "" when unknown */
    unsigned section_line;   /* of its [volume] section in the node's file; 0: none */
};

enum gfr_trans_role {
    GFR_TRANS_NEW,      /* initialised, neither listening nor connecting yet */
    GFR_TRANS_CLIENT,   /* connect()ed */
    GFR_TRANS_LISTENER, /* listen()ing */
    GFR_TRANS_ACCEPTED, /* created by the plugin for an accepted connection */
};

struct gfr_plugin_engine;
struct gfr_plugin_retry;

/*
 * rpc_transport_t.private.  Owned by its transport: freed by fini.  While
 * an engine connection exists the plugin holds a reference on the
 * transport (taken when the connection is made or accepted, dropped after
 * its disconnected callback), so the engine never calls back into a freed
 * transport.
 */
struct gfr_trans {
    rpc_transport_t *trans;
    enum gfr_trans_role role;
    struct gfr_plugin_cfg cfg;      /* not filled for accepted transports */
    struct gfr_plugin_engine *engine; /* a reference; NULL until needed */
    pthread_mutex_t lock;           /* guards conn, connected, offered, calls, *throttled */
    struct gfr_rdma_conn *conn;     /* the engine connection, or NULL */
    int connected;
    /* Submissions that use conn without priv->lock (plugin-tx.c): the
     * disconnected callback waits on no_submitter until none is left
     * before it releases conn. */
    unsigned submitting;
    pthread_cond_t no_submitter;
    /* READ requests whose reply buffer the server may write into, from
     * submit until the engine's done (plugin-tx.c).  rpc-clnt's own record
     * of that buffer (MAP_XID_REQUEST's rsp_payload) points into the stack
     * of the call that submitted the request, long gone by the reply. */
    struct cds_list_head offered;
    /* Back-pressure on an accepted connection (plugin-conn.c): its
     * outstanding calls against rpc.outstanding-rpc-limit, whether rpcsvc
     * asked for it (the throttle op), and what the engine was told. */
    struct gfr_call_limit calls;
    int svc_throttled;
    int throttled;
    struct gfr_rdma_listener *listener; /* listeners: until disconnect/fini */
    struct sockaddr_storage listen_addr; /* listeners: where they listen */
    /* listeners that could not listen yet: trying again (plugin-conn.c) */
    struct gfr_plugin_retry *listen_retry;
    struct cds_list_head listening_link; /* plugin-listeners.c, while listener */
};

/* plugin-opts.c */
/* The table GlusterFS validates a volume's options against; rdma.so
 * exports it as `options`. */
extern volume_option_t options[];
/* Reads options (NULL: none) into cfg; what they leave out from the node's
 * file node_conf (NULL: none; node-conf.h; a missing file is normal), the
 * section of the transport's volume first (transport.rdma.volume-name, or
 * the volume of the translator xlator_name, NULL: none), and defaults for
 * the rest.  Returns 0, or -errno with *why naming the option, the value
 * and what it accepts (and the file and line for the file's); a section
 * that sets an engine-wide option differently from the node is refused,
 * whichever volume the transport serves. */
int gfr_plugin_cfg_read(dict_t *dict, const char *node_conf, const char *xlator_name,
                        struct gfr_plugin_cfg *cfg, char *why, size_t why_len);

/* plugin-listeners.c */
void gfr_plugin_listeners_add(struct gfr_trans *priv);
void gfr_plugin_listeners_remove(struct gfr_trans *priv);
/* The worker pool's thread_exit hook (gfr_pool_opts). */
void gfr_plugin_thread_exit(void *cb_arg);

/* plugin-engine.c */
/* A reference on an engine whose connections may run by opts (the same on
 * every engine-wide option), created with the process's worker pool when
 * none exists yet.  Any thread but an engine's own. */
int gfr_plugin_engine_get(const struct gfr_rdma_opts *opts, struct gfr_plugin_engine **engine);
struct gfr_rdma *gfr_plugin_engine_rdma(struct gfr_plugin_engine *engine);
void gfr_plugin_engine_ref(struct gfr_plugin_engine *engine);
/* Drops a reference; the last one destroys the engine on a thread of its
 * own (engine and pool threads may drop it, and cannot join themselves). */
void gfr_plugin_engine_put(struct gfr_plugin_engine *engine);
/* Snapshots of every engine of the process (*snaps: an array of *n, the
 * caller frees each and the array) and the pool's statistics (*have_pool
 * 0 when there is no pool).  Holds a reference on each engine while it
 * reads it, not engines_lock.  Not from an engine or pool thread.  0 or
 * -ENOMEM. */
int gfr_plugin_engines_snapshot(struct gfr_rdma_snapshot ***snaps, unsigned *n,
                                struct gfr_pool_stats *pool_stats, int *have_pool);

/* plugin-stats.c */
/* Starts the process's statistics socket (once; later calls do nothing).
 * A failure is logged and leaves the transport working. */
void gfr_plugin_stats_start(void);

/* plugin-conn.c */
int32_t gfr_plugin_listen(rpc_transport_t *this);
int32_t gfr_plugin_connect(rpc_transport_t *this, int port);
int32_t gfr_plugin_disconnect(rpc_transport_t *this, gf_boolean_t wait);

/* plugin-throttle.c */
int32_t gfr_plugin_throttle(rpc_transport_t *this, gf_boolean_t onoff);
/* An accepted transport's call limit, from the brick's options. */
void gfr_plugin_calls_init(struct gfr_trans *priv, dict_t *brick_options);
/* A counting call arrived (plugin-rx.c) or a call's reply was submitted
 * (plugin-tx.c): counts it and throttles or lets go.  Takes priv->lock. */
void gfr_plugin_call_arrived(struct gfr_trans *priv, uint32_t xid);
void gfr_plugin_call_replied(struct gfr_trans *priv, uint32_t xid);
int32_t gfr_plugin_get_peername(rpc_transport_t *this, char *hostname, int hostlen);
int32_t gfr_plugin_get_peeraddr(rpc_transport_t *this, char *peeraddr, int addrlen,
                                struct sockaddr_storage *sa, socklen_t salen);
int32_t gfr_plugin_get_myname(rpc_transport_t *this, char *hostname, int hostlen);
int32_t gfr_plugin_get_myaddr(rpc_transport_t *this, char *myaddr, int addrlen,
                              struct sockaddr_storage *sa, socklen_t salen);
/* Closes a listener's engine listener, if open (fini). */
void gfr_plugin_close_listener(struct gfr_trans *priv);

/* plugin-rx.c: the engine's received callback for every role. */
void gfr_plugin_received(struct gfr_rdma_conn *conn, const struct gfr_rdma_rx *rx,
                         void *cb_arg);

/* plugin-tx.c */
/* The reply buffer request xid offered, and a reference on its iobref:
 * 0, or -ENOENT when xid offered none.  Takes priv->lock. */
int gfr_plugin_offered_find(struct gfr_trans *priv, uint32_t xid, struct iovec *buf,
                            struct iobref **iobref);
int32_t gfr_plugin_submit_request(rpc_transport_t *this, rpc_transport_req_t *req);
int32_t gfr_plugin_submit_reply(rpc_transport_t *this, rpc_transport_reply_t *reply);

#endif /* GFR_PLUGIN_H */
