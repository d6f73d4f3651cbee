/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The plugin's volume options: the table GlusterFS validates a volume's
 * options against (exported as `options` by rdma.c) and the reading of a
 * transport's dict into a gfr_plugin_cfg.  docs/options.md lists them.
 *
 * The engine's options appear as "transport.rdma.<engine key>" (lib/
 * rdma-opts.c parses the value), with the old transport's names as aliases
 * where they differ; GlusterFS renames an alias to key[0] when it validates.
 * The node's file (node-conf.h) gives the options a volfile leaves out,
 * its volume section's over its own; a section may not set an engine-wide
 * option (gfr_rdma_opt_scope) differently, since a process's volumes share
 * one engine.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "gfr_plugin.h"
#include "node-conf.h"

#define ENGINE_PREFIX "transport.rdma."

/* Exported under GlusterFS's name for it: dlsym("options") must find the
 * array itself. */
volume_option_t options[] = {
    {.key = {"transport.rdma.listen-port", "listen-port"},
     .type = GF_OPTION_TYPE_INT, .min = 0, .max = 65535, .default_value = "24008",
     .description = "Port the brick listens on (0: any free port, which is then "
                    "registered with glusterd as the brick's rdma port)."},
    {.key = {"transport.rdma.bind-address"}, .type = GF_OPTION_TYPE_INTERNET_ADDRESS,
     .description = "Address the brick listens on; default: every address."},
    {.key = {"transport.rdma.volume-name"}, .type = GF_OPTION_TYPE_STR,
     .description = "The volume whose [volume NAME] section of the node's file applies "
                    "(volfile only); default: the volume glusterd's name for the "
                    "translator gives (VOL-client-N, VOL-server)."},
    {.key = {"transport.address-family", "address-family"}, .type = GF_OPTION_TYPE_STR,
     .value = {"inet", "inet6"}, .default_value = "inet",
     .description = "inet (IPv4) or inet6 (IPv6) for listening and resolving remote-host."},
    {.key = {"transport.listen-backlog"}, .type = GF_OPTION_TYPE_INT, .min = 1,
     .max = 65535, .default_value = "1024",
     .description = "Connection requests the kernel queues for a listener."},
    {.key = {"remote-port"}, .type = GF_OPTION_TYPE_INT, .min = 1, .max = 65535,
     .default_value = "24008",
     .description = "Port a client connects to when GlusterFS gives none."},
    {.key = {"transport.rdma.poll-mode"}, .type = GF_OPTION_TYPE_STR,
     .value = {"busy", "adaptive", "event"}, .default_value = "adaptive",
     .description = "How completion-queue pollers wait: busy (a core each), adaptive "
                    "(poll a window that follows the gap between messages, then "
                    "sleep) or event (sleep at once)."},
    {.key = {"transport.rdma.spin-us"}, .type = GF_OPTION_TYPE_INT, .min = 0,
     .max = 1000000, .default_value = "50",
     .description = "Adaptive polling: the shortest time a poller polls before sleeping."},
    {.key = {"transport.rdma.spin-max-us"}, .type = GF_OPTION_TYPE_INT, .min = 0,
     .max = 1000000, .default_value = "2000",
     .description = "Adaptive polling: the longest time a poller polls before sleeping "
                    "(the window grows while messages come sooner than this); at or "
                    "below spin-us the window is fixed at spin-us."},
    {.key = {"transport.rdma.reply-spin-max-us"}, .type = GF_OPTION_TYPE_INT, .min = 0,
     .max = 1000000, .default_value = "10000",
     .description = "The longest time a client's poller polls for the replies it "
                    "expects (about the mean round trip plus four deviations, "
                    "at most this) before it sleeps; 0: never polls for them."},
    {.key = {"transport.rdma.pollers"}, .type = GF_OPTION_TYPE_INT, .min = 1, .max = 64,
     .default_value = "1", .description = "Completion-queue poller threads per device."},
    {.key = {"transport.rdma.dispatch"}, .type = GF_OPTION_TYPE_STR,
     .value = {"pool", "inline", "direct"}, .default_value = "direct",
     .description = "Where received messages are handled: direct (on the poller "
                    "thread, a pool worker polling in its place while a handler "
                    "blocks or runs long), pool (the global worker pool) or inline "
                    "(on the poller thread, nothing polls meanwhile)."},
    {.key = {"transport.rdma.receive-queue"}, .type = GF_OPTION_TYPE_STR,
     .value = {"srq", "per-connection", "auto"}, .default_value = "auto",
     .description = "Receive buffers shared by the device's connections (srq) or "
                    "owned by each connection (per-connection); auto: shared, "
                    "except on iWARP, which has no receiver-not-ready retry."},
    {.key = {"transport.rdma.credits", "transport.rdma.work-request-recv-count"},
     .type = GF_OPTION_TYPE_INT, .min = 2, .max = 4096, .default_value = "64",
     .description = "Messages a peer may send before this side returns credit: the "
                    "receive work requests per connection; the peer's send queue "
                    "is sized from it."},
    {.key = {"transport.rdma.inline-max", "transport.rdma.inline-threshold"},
     .type = GF_OPTION_TYPE_SIZET, .min = 256, .max = 16 * GF_UNIT_MB,
     .default_value = "8KB",
     .description = "Receive buffer size: larger messages move by RDMA READ/WRITE."},
    {.key = {"transport.rdma.max-msg"}, .type = GF_OPTION_TYPE_SIZET, .min = 256,
     .max = GF_UNIT_GB, .default_value = "4MB",
     .description = "Largest RPC message, inline or bulk."},
    {.key = {"transport.rdma.segment-size"}, .type = GF_OPTION_TYPE_SIZET,
     .min = 4 * GF_UNIT_KB, .max = GF_UNIT_GB, .default_value = "1MB",
     .description = "Largest single RDMA READ or WRITE."},
    {.key = {"transport.rdma.copy-max"}, .type = GF_OPTION_TYPE_SIZET, .min = 0,
     .max = 4 * GF_UNIT_MB, .default_value = "128KB",
     .description = "Bulk data up to this size is copied through buffers each connection "
                    "registered once, instead of registering the caller's memory for each "
                    "transfer; 0: always register."},
    {.key = {"transport.rdma.rdma-depth"}, .type = GF_OPTION_TYPE_INT, .min = 1,
     .max = 64, .default_value = "4",
     .description = "RDMA READs/WRITEs in flight per connection."},
    {.key = {"transport.rdma.connect-timeout-ms"}, .type = GF_OPTION_TYPE_INT,
     .min = 100, .max = 600000, .default_value = "5000",
     .description = "Address resolution, route resolution, the connection handshake and "
                    "the disconnect handshake: timeout of each."},
    {.key = {"transport.rdma.keepalive-ms"}, .type = GF_OPTION_TYPE_INT, .min = 0,
     .max = 3600000, .default_value = "10000",
     .description = "How often each connection probes its peer with a zero-length "
                    "RDMA WRITE, so that a peer gone without a word is noticed "
                    "(within qp-timeout and retry-count); 0: never."},
    {.key = {"transport.rdma.qp-timeout", "transport.rdma.attr-timeout"},
     .type = GF_OPTION_TYPE_INT, .min = 0, .max = 31, .default_value = "17",
     .description = "Local ACK timeout exponent: 4.096 us * 2^n."},
    {.key = {"transport.rdma.retry-count", "transport.rdma.attr-retry-cnt"},
     .type = GF_OPTION_TYPE_INT, .min = 0, .max = 7, .default_value = "7",
     .description = "Retransmissions before a connection fails."},
    {.key = {"transport.rdma.rnr-retry", "transport.rdma.attr-rnr-retry"},
     .type = GF_OPTION_TYPE_INT, .min = 0, .max = 7, .default_value = "7",
     .description = "Receiver-not-ready retries (7: forever)."},
    {.key = {"transport.rdma.port"}, .type = GF_OPTION_TYPE_INT, .min = 1, .max = 255,
     .default_value = "1", .description = "Device port connections must use."},
    {.key = {"transport.rdma.gid-index"}, .type = GF_OPTION_TYPE_INT, .min = -1,
     .max = 255, .default_value = "-1",
     .description = "GID index connections must use (-1: the one rdma_cm picks)."},
    {.key = {"transport.rdma.device", "transport.rdma.device-name"},
     .type = GF_OPTION_TYPE_STR,
     .description = "RDMA device connections must use (e.g. mlx5_0, rxe0); default: "
                    "the one the address resolves to."},
    {.key = {"transport.rdma.latency-stats"}, .type = GF_OPTION_TYPE_STR,
     .value = {"off", "on"}, .default_value = "on",
     .description = "Time every call's stages in the transport (histograms that gfr-stat "
                    "shows); off: no clock is read for them."},
    {.key = {"transport.rdma.rails"}, .type = GF_OPTION_TYPE_STR, .default_value = "off",
     .description = "Multi-rail: auto spreads each connection over every rail address the "
                    "server advertises (docs/multi-rail.md); DEV[:PORT],... (at most four) "
                    "the same, from those device ports only; off: one queue pair."},
    {.key = {"transport.rdma.rail-addresses"}, .type = GF_OPTION_TYPE_STR,
     .description = "A server's rail addresses, advertised to clients with rails: numeric "
                    "IPv4 or IPv6 addresses, comma-separated, at most four."},
    {.key = {"transport.rdma.rail-timeout-ms"}, .type = GF_OPTION_TYPE_INT, .min = 0,
     .max = 600000, .default_value = "5000",
     .description = "Multi-rail: a rail whose sends have made no progress for this long "
                    "while another rail's have ends, and its calls go on over the others; "
                    "0: never."},
    {.key = {NULL}},
};

/* The option's value under its key or one of its aliases, or NULL. */
static char *
lookup(dict_t *dict, const volume_option_t *opt)
{
    char *value;

    for (int k = 0; k < ZR_VOLUME_MAX_NUM_KEY && opt->key[k]; k++)
        if (dict_get_str(dict, (char *)opt->key[k], &value) == 0)
            return value;
    return NULL;
}

/* Where a refusal is explained. */
struct why {
    char *text;
    size_t len;
};

static int
bad(struct why *out, const char *key, const char *value, const char *why)
{
    snprintf(out->text, out->len, "option %s=%s is not valid: %s", key, value, why);
    return -EINVAL;
}

/* "a, b, c" from the option's value list. */
static void
accepted_values(const volume_option_t *opt, char *out, size_t len)
{
    size_t used = 0;

    out[0] = 0;
    for (int i = 0; i < ZR_OPTION_MAX_ARRAY_SIZE && opt->value[i] && used < len; i++)
        used += (size_t)snprintf(out + used, len - used, "%s%s", i ? ", " : "",
                                 opt->value[i]);
}

/* Reads one of the plugin's own options (not the engine's). */
static int
read_plugin_option(struct why *out, const volume_option_t *opt, const char *value,
                   struct gfr_plugin_cfg *cfg)
{
    const char *key = opt->key[0];
    char accepted[64];
    int n = 0;

    if (opt->type == GF_OPTION_TYPE_INT &&
        (gf_string2int(value, &n) != 0 || n < opt->min || n > opt->max)) {
        char why[96];

        snprintf(why, sizeof(why), "a whole number from %.0f to %.0f is expected",
                 opt->min, opt->max);
        return bad(out, key, value, why);
    }
    if (strcmp(key, "transport.rdma.listen-port") == 0) {
        cfg->listen_port = (uint16_t)n;
    } else if (strcmp(key, "remote-port") == 0) {
        cfg->remote_port = (uint16_t)n;
    } else if (strcmp(key, "transport.listen-backlog") == 0) {
        cfg->listen_backlog = n;
    } else if (strcmp(key, "transport.address-family") == 0) {
        if (strcmp(value, "inet") == 0) {
            cfg->family = AF_INET;
        } else if (strcmp(value, "inet6") == 0) {
            cfg->family = AF_INET6;
        } else {
            char why[96];

            accepted_values(opt, accepted, sizeof(accepted));
            snprintf(why, sizeof(why), "one of %s is expected", accepted);
            return bad(out, key, value, why);
        }
    } else if (strcmp(key, "transport.rdma.bind-address") == 0) {
        if (strlen(value) >= sizeof(cfg->bind_address))
            return bad(out, key, value, "the address is too long");
        strcpy(cfg->bind_address, value);
    }
    return 0;
}

/* Hands an engine option to lib/'s parser, sizes in bytes. */
static int
read_engine_option(struct why *out, const volume_option_t *opt, const char *value,
                   struct gfr_plugin_cfg *cfg)
{
    const char *engine_key = opt->key[0] + strlen(ENGINE_PREFIX);
    char number[32];
    char why[160];
    uint64_t bytes;

    if (opt->type == GF_OPTION_TYPE_SIZET) {
        if (gf_string2bytesize_uint64(value, &bytes) != 0)
            return bad(out, opt->key[0], value, "a size such as 8KB or 1MB is expected");
        snprintf(number, sizeof(number), "%llu", (unsigned long long)bytes);
        value = number;
    }
    if (gfr_rdma_opts_set(&cfg->engine, engine_key, value, why, sizeof(why)) != 0)
        return bad(out, opt->key[0], value, why);
    return 0;
}

/* The engine's options are the "transport.rdma." ones lib/ knows. */
static int
is_engine_option(const volume_option_t *opt)
{
    struct gfr_rdma_opts probe;

    gfr_rdma_opts_init(&probe);
    return strncmp(opt->key[0], ENGINE_PREFIX, strlen(ENGINE_PREFIX)) == 0 &&
           gfr_rdma_opts_set(&probe, opt->key[0] + strlen(ENGINE_PREFIX), NULL, NULL, 0) !=
               -ENOENT;
}

/* A value from the node's file, checked as GlusterFS checks a volfile's
 * (type, range, accepted values) before it is read: 0, or -EINVAL with why
 * (the caller adds the file and the line). */
static int
validate_file_value(struct why *out, const volume_option_t *opt, const char *value)
{
    char *err = NULL;
    int ret = 0;

    if (xlator_option_validate(THIS, (char *)opt->key[0], (char *)value,
                               (volume_option_t *)opt, &err) != 0)
        ret = bad(out, opt->key[0], value, err ? err : "GlusterFS refuses it");
    GF_FREE(err);
    return ret;
}

/* The defaults of the plugin's own options, the engine's.  Copied whole
 * from a static object, padding zeroed, so that settings compare with
 * memcmp. */
static void
cfg_defaults(struct gfr_plugin_cfg *cfg)
{
    static const struct gfr_plugin_cfg plugin_defaults = {
        .family = AF_INET,
        .listen_port = GFR_DEFAULT_PORT,
        .remote_port = GFR_DEFAULT_PORT,
        .listen_backlog = 1024,
    };

    memcpy(cfg, &plugin_defaults, sizeof(*cfg));
    gfr_rdma_opts_init(&cfg->engine);
}

static int
is_volume_name_option(const volume_option_t *opt)
{
    return strcmp(opt->key[0], "transport.rdma.volume-name") == 0;
}

/*
 * cfg from dict (NULL: none) over the node's lines for volume (NULL: the
 * node's own), over the defaults: 0, or -EINVAL with why naming the option
 * and the value, and the file and line for the file's.
 */
static int
read_options(dict_t *dict, const struct gfr_node_conf *node, const char *volume,
             struct gfr_plugin_cfg *cfg, char *why, size_t why_len)
{
    struct why out = {why, why_len};
    char engine_why[160], line_why[384];
    int err = 0;

    cfg_defaults(cfg);
    for (const volume_option_t *opt = options; opt->key[0] && !err; opt++) {
        const char *value = dict ? lookup(dict, opt) : NULL;
        struct why at_line = {line_why, sizeof(line_why)};
        unsigned line = 0;

        if (!value)
            value = gfr_node_conf_value(node, volume, opt, &line);
        if (!value)
            continue;
        if (line && is_volume_name_option(opt))
            err = bad(&at_line, opt->key[0], value,
                      "it names a transport's volume in a volfile; in this file, a "
                      "[volume NAME] header does");
        if (!err && line)
            err = validate_file_value(&at_line, opt, value);
        if (!err)
            err = is_engine_option(opt)
                      ? read_engine_option(line ? &at_line : &out, opt, value, cfg)
                      : read_plugin_option(line ? &at_line : &out, opt, value, cfg);
        if (err && line)
            snprintf(why, why_len, "%s line %u: %s", gfr_node_conf_path(node), line,
                     line_why);
    }
    if (err)
        return err;
    if (gfr_rdma_opts_check(&cfg->engine, engine_why, sizeof(engine_why)) != 0) {
        unsigned line = gfr_node_conf_section_line(node, volume);

        if (line)
            snprintf(why, why_len,
                     "%s line %u: the transport.rdma options of [volume %s] do not fit "
                     "together: %s",
                     gfr_node_conf_path(node), line, volume, engine_why);
        else
            snprintf(why, why_len, "the transport.rdma options do not fit together: %s",
                     engine_why);
        return -EINVAL;
    }
    return 0;
}

/* A section's engine-wide option that differs from the node's: -EINVAL
 * with why naming the file, the line and the reason; otherwise 0. */
static int
refuse_engine_wide(const struct gfr_node_conf *node, const char *volume,
                   const struct gfr_plugin_cfg *base, const struct gfr_plugin_cfg *vol,
                   char *why, size_t why_len)
{
    const char *engine_key = gfr_rdma_opts_engine_conflict(&base->engine, &vol->engine);
    const char *value, *node_value = NULL;
    unsigned line = 0;

    if (!engine_key)
        return 0;
    for (const volume_option_t *opt = options; opt->key[0]; opt++) {
        if (strncmp(opt->key[0], ENGINE_PREFIX, strlen(ENGINE_PREFIX)) != 0 ||
            strcmp(opt->key[0] + strlen(ENGINE_PREFIX), engine_key) != 0)
            continue;
        value = gfr_node_conf_value(node, volume, opt, &line);
        node_value = gfr_node_conf_value(node, NULL, opt, NULL);
        snprintf(why, why_len,
                 "%s line %u: [volume %s] sets %s = %s, but it is %s for the node: "
                 "every volume a process serves shares it (its pollers, its dispatch, "
                 "its shared receive buffers), so it is set before the first section",
                 gfr_node_conf_path(node), line, volume, opt->key[0], value ? value : "?",
                 node_value ? node_value : opt->default_value);
        return -EINVAL;
    }
    snprintf(why, why_len, "%s: [volume %s] sets %s differently from the node",
             gfr_node_conf_path(node), volume, engine_key);
    return -EINVAL;
}

/* Every section read against the node's lines, so that a bad one fails
 * every transport's start, not only its volume's. */
static int
check_sections(const struct gfr_node_conf *node, char *why, size_t why_len)
{
    struct gfr_plugin_cfg base, vol;
    const char *volume;
    int err = read_options(NULL, node, NULL, &base, why, why_len);

    for (size_t i = 0; !err && (volume = gfr_node_conf_volume(node, i)); i++) {
        err = read_options(NULL, node, volume, &vol, why, why_len);
        if (!err)
            err = refuse_engine_wide(node, volume, &base, &vol, why, why_len);
    }
    return err;
}

/* The transport's volume (len bytes): the volfile's volume-name, or the
 * one the translator's name gives; "" for none. */
static void
find_volume(dict_t *dict, const char *xlator_name, char *volume, size_t len)
{
    char *named = NULL;

    if (dict && dict_get_str(dict, "transport.rdma.volume-name", &named) == 0 && named)
        snprintf(volume, len, "%s", named);
    else if (gfr_node_conf_volume_of(xlator_name, volume, len) != 0)
        volume[0] = '\0';
}

int
gfr_plugin_cfg_read(dict_t *dict, const char *node_conf, const char *xlator_name,
                    struct gfr_plugin_cfg *cfg, char *why, size_t why_len)
{
    struct gfr_node_conf *node = NULL;
    char volume[sizeof(cfg->volume)];
    int err = 0;

    if (node_conf) {
        err = gfr_node_conf_load(node_conf, options, &node, why, why_len);
        if (err)
            return err;
    }
    find_volume(dict, xlator_name, volume, sizeof(volume));
    err = check_sections(node, why, why_len);
    if (!err)
        err = read_options(dict, node, volume[0] ? volume : NULL, cfg, why, why_len);
    if (!err) {
        snprintf(cfg->volume, sizeof(cfg->volume), "%s", volume);
        cfg->section_line = gfr_node_conf_section_line(node, volume);
    }
    gfr_node_conf_free(node);
    return err;
}
