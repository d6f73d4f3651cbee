/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Back-pressure on an accepted connection (docs/plugin.md, "Back-pressure"):
 * the brick's rpc.outstanding-rpc-limit, applied by counting the calls
 * handed to GlusterFS against their replies (call-limit.h), and rpcsvc's
 * own throttle op for a service that turns it on.  Either one throttles
 * the engine connection: it returns no credits, so the client stops
 * sending and queues.  Locking: priv->lock around the count and the
 * verdict; the engine call takes the connection's lock under it, as
 * submit does.
 */
#include "gfr_plugin.h"

/* rpcsvc's default for protocol/server (RPCSVC_DEFAULT_OUTSTANDING_RPC_LIMIT). */
#define DEFAULT_OUTSTANDING_LIMIT 64

/* Tells the engine when the verdict changes.  Caller holds priv->lock. */
static void
throttle_update_locked(struct gfr_trans *priv)
{
    int want = priv->svc_throttled || gfr_call_limit_over(&priv->calls);

    if (want == priv->throttled || !priv->conn)
        return;
    priv->throttled = want;
    gfr_rdma_throttle(priv->conn, want);
    gf_msg_debug(priv->trans->name, 0, "throttle %s for %s (%u calls outstanding)",
                 want ? "on" : "off", priv->trans->peerinfo.identifier, priv->calls.counted);
}

/*
 * rpcsvc's own back-pressure, for a service that turns it on (stock
 * protocol/server does not; the plugin's count below does the brick's):
 * called with the transport's lock held, on while a request is being
 * taken in, off when the request that brought the count down is
 * destroyed.  A connection already gone has nothing to hold back: 0, as
 * for socket.so.
 */
int32_t
gfr_plugin_throttle(rpc_transport_t *this, gf_boolean_t onoff)
{
    struct gfr_trans *priv = this->private;

    pthread_mutex_lock(&priv->lock);
    priv->svc_throttled = onoff ? 1 : 0;
    throttle_update_locked(priv);
    pthread_mutex_unlock(&priv->lock);
    return 0;
}

void
gfr_plugin_call_arrived(struct gfr_trans *priv, uint32_t xid)
{
    pthread_mutex_lock(&priv->lock);
    if (gfr_call_limit_called(&priv->calls, xid) == 0)
        throttle_update_locked(priv);
    pthread_mutex_unlock(&priv->lock);
}

void
gfr_plugin_call_replied(struct gfr_trans *priv, uint32_t xid)
{
    pthread_mutex_lock(&priv->lock);
    gfr_call_limit_replied(&priv->calls, xid);
    throttle_update_locked(priv);
    pthread_mutex_unlock(&priv->lock);
}

/* An accepted transport's limit: the brick's rpc.outstanding-rpc-limit
 * (in the listener's options), read as rpcsvc reads it. */
void
gfr_plugin_calls_init(struct gfr_trans *priv, dict_t *brick_options)
{
    int32_t value = DEFAULT_OUTSTANDING_LIMIT;

    if (brick_options &&
        dict_get_int32(brick_options, "rpc.outstanding-rpc-limit", &value) != 0)
        value = DEFAULT_OUTSTANDING_LIMIT;
    gfr_call_limit_init(&priv->calls, gfr_call_limit_round(value));
}
