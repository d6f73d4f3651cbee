/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * rdma.so: the symbols GlusterFS's rpc_transport_load looks up — tops,
 * init, fini, reconfigure (here) and options (plugin-opts.c); docs/plugin.md.
 *
 * init refuses to run under a GlusterFS other than the one rdma.so was
 * built for (gluster-version.h), then only reads the options: a bad one
 * fails the load with a message naming it.  The engine starts with the
 * first listen or connect, so that loading never depends on the fabric.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "gfr_plugin.h"
#include "gluster-version.h"

struct rpc_transport_ops tops = {
    .submit_request = gfr_plugin_submit_request,
    .submit_reply = gfr_plugin_submit_reply,
    .connect = gfr_plugin_connect,
    .listen = gfr_plugin_listen,
    .disconnect = gfr_plugin_disconnect,
    .get_peername = gfr_plugin_get_peername,
    .get_peeraddr = gfr_plugin_get_peeraddr,
    .get_myname = gfr_plugin_get_myname,
    .get_myaddr = gfr_plugin_get_myaddr,
    .throttle = gfr_plugin_throttle,
};

/* The translator the transport serves (rpc_transport_load sets xl before
 * init), or NULL. */
static const char *
xlator_name(const rpc_transport_t *this)
{
    const xlator_t *xl = this->xl;

    return xl ? xl->name : NULL;
}

int32_t
init(rpc_transport_t *this)
{
    struct gfr_trans *priv;
    char why[512];

    /* before anything reads a GlusterFS structure past its name */
    if (gfr_gluster_version_check(why, sizeof(why)) != 0) {
        gf_msg(this->name, GF_LOG_ERROR, EPROTO, GFR_MSG_WRONG_GLUSTERFS, "%s", why);
        return -1;
    }
    priv = calloc(1, sizeof(*priv));
    if (!priv) {
        gf_msg(this->name, GF_LOG_ERROR, ENOMEM, GFR_MSG_NO_MEMORY, "no memory");
        return -1;
    }
    if (gfr_plugin_cfg_read(this->options, GFR_NODE_CONF, xlator_name(this), &priv->cfg, why,
                            sizeof(why)) != 0) {
        gf_msg(this->name, GF_LOG_ERROR, EINVAL, GFR_MSG_BAD_OPTION, "%s", why);
        free(priv);
        return -1;
    }
    if (priv->cfg.section_line)
        gf_msg(this->name, GF_LOG_INFO, 0, GFR_MSG_VOLUME_SECTION,
               "the options of [volume %s] in %s (line %u) apply", priv->cfg.volume,
               GFR_NODE_CONF, priv->cfg.section_line);
    priv->trans = this;
    priv->role = GFR_TRANS_NEW;
    pthread_mutex_init(&priv->lock, NULL);
    pthread_cond_init(&priv->no_submitter, NULL);
    CDS_INIT_LIST_HEAD(&priv->offered);
    gfr_call_limit_init(&priv->calls, 0); /* accepted transports set theirs */
    this->private = priv;
    gfr_plugin_stats_start();
    return 0;
}

/* Runs when the transport's last reference goes, which the plugin's
 * connection reference prevents while an engine connection exists. */
void
fini(rpc_transport_t *this)
{
    struct gfr_trans *priv = this->private;

    if (!priv)
        return;
    gfr_plugin_close_listener(priv);
    gfr_plugin_engine_put(priv->engine);
    gfr_call_limit_clear(&priv->calls);
    pthread_mutex_destroy(&priv->lock);
    pthread_cond_destroy(&priv->no_submitter);
    free(priv);
    this->private = NULL;
}

/* Engine options shape an engine's devices and threads: a change applies
 * to connections made after a restart of the process. */
int32_t
reconfigure(rpc_transport_t *this, dict_t *dict)
{
    struct gfr_trans *priv = this->private;
    struct gfr_plugin_cfg cfg;
    char why[512]; /* as init's: the node file's path and line come first */

    if (gfr_plugin_cfg_read(dict, GFR_NODE_CONF, xlator_name(this), &cfg, why,
                            sizeof(why)) != 0) {
        gf_msg(this->name, GF_LOG_ERROR, EINVAL, GFR_MSG_BAD_OPTION, "%s", why);
        return -1;
    }
    if (memcmp(&cfg.engine, &priv->cfg.engine, sizeof(cfg.engine)) != 0)
        gf_msg(this->name, GF_LOG_WARNING, 0, GFR_MSG_RECONFIGURE,
               "changed transport.rdma options take effect when the process restarts");
    priv->cfg.remote_port = cfg.remote_port;
    return 0;
}
