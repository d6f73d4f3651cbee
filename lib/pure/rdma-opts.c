/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Engine options.  One table describes every key (name, kind, range,
 * default), so parsing, checking, the defaults and the messages agree;
 * the GlusterFS plugin's volume option table is tested against it
 * (tests/unit/plugin-opts-test.c).
 */
#include "gfr_rdma_opts.h"

#include <arpa/inet.h>
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

static const char *const poll_names[] = {"busy", "adaptive", "event", NULL};
static const char *const dispatch_names[] = {"pool", "inline", "direct", NULL};
static const char *const rq_names[] = {"srq", "per-connection", "auto", NULL};
static const char *const off_on_names[] = {"off", "on", NULL};

/* A table row: what the option accepts, and where it is stored. */
struct opt_desc {
    struct gfr_rdma_opt_info info;
    size_t offset;
    size_t width; /* bytes of the field */
};

/* store() and load() handle 1- and 4-byte fields; choices are stored into
 * enums. */
_Static_assert(sizeof(enum gfr_poll_mode) == 4 && sizeof(enum gfr_dispatch) == 4 &&
                   sizeof(enum gfr_receive_queue) == 4 && sizeof(enum gfr_latency_stats) == 4,
               "choice options are stored as 4-byte enums");

#define FIELD(f) offsetof(struct gfr_rdma_opts, f), sizeof(((struct gfr_rdma_opts *)0)->f)
#define NUMBER(key, kind, scope, min, max, def, field) \
    {{key, kind, scope, min, max, NULL, def}, FIELD(field)}
#define CHOICE(key, scope, names, def, field) \
    {{key, GFR_OPT_CHOICE, scope, 0, 0, names, def}, FIELD(field)}
#define CONN GFR_OPT_CONNECTION
#define ENGINE GFR_OPT_ENGINE

static const struct opt_desc descs[] = {
    CHOICE("poll-mode", ENGINE, poll_names, "adaptive", poll_mode),
    NUMBER("spin-us", GFR_OPT_UINT, ENGINE, 0, 1000000, "50", spin_us),
    NUMBER("spin-max-us", GFR_OPT_UINT, ENGINE, 0, 1000000, "2000", spin_max_us),
    NUMBER("reply-spin-max-us", GFR_OPT_UINT, CONN, 0, 1000000, "10000", reply_spin_max_us),
    NUMBER("pollers", GFR_OPT_UINT, ENGINE, 1, 64, "1", pollers),
    CHOICE("dispatch", ENGINE, dispatch_names, "direct", dispatch),
    CHOICE("receive-queue", ENGINE, rq_names, "auto", receive_queue),
    NUMBER("credits", GFR_OPT_UINT, CONN, 2, 4096, "64", credits),
    NUMBER("inline-max", GFR_OPT_SIZE, GFR_OPT_ENGINE_IF_SHARED_RECEIVES, 256, 16 << 20, "8K",
           inline_max),
    NUMBER("max-msg", GFR_OPT_SIZE, CONN, 256, 1 << 30, "4M", max_msg),
    NUMBER("segment-size", GFR_OPT_SIZE, CONN, 4096, 1 << 30, "1M", segment_size),
    NUMBER("copy-max", GFR_OPT_SIZE, CONN, 0, 4 << 20, "128K", copy_max),
    NUMBER("rdma-depth", GFR_OPT_UINT, CONN, 1, 64, "4", rdma_depth),
    NUMBER("connect-timeout-ms", GFR_OPT_UINT, CONN, 100, 600000, "5000", connect_timeout_ms),
    NUMBER("keepalive-ms", GFR_OPT_UINT, CONN, 0, 3600000, "10000", keepalive_ms),
    NUMBER("qp-timeout", GFR_OPT_UINT, CONN, 0, 31, "17", qp_timeout),
    NUMBER("retry-count", GFR_OPT_UINT, CONN, 0, 7, "7", retry_count),
    NUMBER("rnr-retry", GFR_OPT_UINT, CONN, 0, 7, "7", rnr_retry),
    NUMBER("port", GFR_OPT_UINT, CONN, 1, 255, "1", port),
    NUMBER("gid-index", GFR_OPT_INT, CONN, -1, 255, "-1", gid_index),
    {{"device", GFR_OPT_NAME, CONN, 0, 0, NULL, NULL}, FIELD(device)},
    CHOICE("latency-stats", ENGINE, off_on_names, "on", latency_stats),
    {{"rails", GFR_OPT_RAILS, ENGINE, 0, 0, NULL, "off"}, FIELD(rails)},
    {{"rail-addresses", GFR_OPT_ADDRESSES, ENGINE, 0, 0, NULL, NULL}, FIELD(rail_addresses)},
    NUMBER("rail-timeout-ms", GFR_OPT_UINT, CONN, 0, 600000, "5000", rail_timeout_ms),
};

#define NDESCS (sizeof(descs) / sizeof(descs[0]))

const struct gfr_rdma_opt_info *
gfr_rdma_opt_info(size_t i)
{
    return i < NDESCS ? &descs[i].info : NULL;
}

void
gfr_rdma_opts_init(struct gfr_rdma_opts *opts)
{
    memset(opts, 0, sizeof(*opts));
    for (size_t i = 0; i < NDESCS; i++)
        if (descs[i].info.default_value)
            gfr_rdma_opts_set(opts, descs[i].info.key, descs[i].info.default_value, NULL, 0);
}

static int
explain(char *why, size_t why_len, const char *fmt, ...)
{
    va_list ap;

    if (why && why_len) {
        va_start(ap, fmt);
        vsnprintf(why, why_len, fmt, ap);
        va_end(ap);
    }
    return -EINVAL;
}

static void
store(const struct opt_desc *d, struct gfr_rdma_opts *opts, long long value)
{
    void *field = (char *)opts + d->offset;

    if (d->width == 1)
        *(uint8_t *)field = (uint8_t)value;
    else if (d->info.kind == GFR_OPT_INT)
        *(int32_t *)field = (int32_t)value;
    else
        *(uint32_t *)field = (uint32_t)value;
}

static long long
load(const struct opt_desc *d, const struct gfr_rdma_opts *opts)
{
    const void *field = (const char *)opts + d->offset;

    if (d->width == 1)
        return *(const uint8_t *)field;
    if (d->info.kind == GFR_OPT_INT)
        return *(const int32_t *)field;
    return *(const uint32_t *)field;
}

/* Parses a whole number with an optional K or M suffix. */
static int
parse_number(const char *text, int sizes, long long *out)
{
    char *end;
    long long v;

    if (!text || !*text)
        return -EINVAL;
    errno = 0;
    v = strtoll(text, &end, 10);
    if (errno || end == text)
        return -EINVAL;
    if (sizes && (*end == 'K' || *end == 'k')) {
        v *= 1024;
        end++;
    } else if (sizes && (*end == 'M' || *end == 'm')) {
        v *= 1024 * 1024;
        end++;
    }
    if (*end)
        return -EINVAL;
    *out = v;
    return 0;
}

/* Index of value in the NULL-terminated names, or -1. */
static int
choose(const char *value, const char *const *names)
{
    for (int i = 0; names[i]; i++)
        if (value && strcmp(value, names[i]) == 0)
            return i;
    return -1;
}

/* "a, b, c" for the message of a bad choice. */
static void
join_names(const char *const *names, char *out, size_t len)
{
    size_t used = 0;

    out[0] = 0;
    for (int i = 0; names[i] && used < len; i++)
        used += (size_t)snprintf(out + used, len - used, "%s%s", i ? ", " : "",
                                 names[i]);
}

/* Parses "ADDR,ADDR" (numeric IPv4 or IPv6, at most GFR_RDMA_MAX_RAIL_ADDRS)
 * into out (up to max; NULL: only checks).  How many, or -EINVAL. */
static int
parse_addresses(const char *text, struct sockaddr_storage *out, unsigned max)
{
    char buf[INET6_ADDRSTRLEN];
    int n = 0;

    while (*text) {
        const char *end = strchr(text, ',');
        size_t len = end ? (size_t)(end - text) : strlen(text);
        struct sockaddr_storage ss;
        struct sockaddr_in *sin = (struct sockaddr_in *)&ss;
        struct sockaddr_in6 *sin6 = (struct sockaddr_in6 *)&ss;

        if (!len || len >= sizeof(buf) || n == GFR_RDMA_MAX_RAIL_ADDRS)
            return -EINVAL;
        memcpy(buf, text, len);
        buf[len] = 0;
        memset(&ss, 0, sizeof(ss));
        if (inet_pton(AF_INET, buf, &sin->sin_addr) == 1)
            sin->sin_family = AF_INET;
        else if (inet_pton(AF_INET6, buf, &sin6->sin6_addr) == 1)
            sin6->sin6_family = AF_INET6;
        else
            return -EINVAL;
        if (out && (unsigned)n < max)
            out[n] = ss;
        n++;
        text += len;
        if (end && !*++text)
            return -EINVAL; /* a trailing comma */
    }
    return n;
}

int
gfr_rdma_opts_rail_addresses(const struct gfr_rdma_opts *opts, struct sockaddr_storage *out,
                             unsigned max)
{
    if (!opts || memchr(opts->rail_addresses, 0, sizeof(opts->rail_addresses)) == NULL)
        return -EINVAL;
    return parse_addresses(opts->rail_addresses, out, max);
}

/* Parses "DEV[:PORT],..." (a device name of letters, digits, '_', '-' and
 * '.' other than on, off and auto, a port from 1 to 255, at most
 * GFR_RDMA_MAX_RAIL_DEVICES, none twice)
 * into out (up to max; NULL: only checks).  How many, or -EINVAL. */
static int
parse_rail_devices(const char *text, struct gfr_rail_device *out, unsigned max)
{
    struct gfr_rail_device seen[GFR_RDMA_MAX_RAIL_DEVICES];
    int n = 0;

    while (*text) {
        size_t len = strcspn(text, ":,");
        struct gfr_rail_device d = {.port = 1};

        if (!len || len >= sizeof(d.name) || n == GFR_RDMA_MAX_RAIL_DEVICES ||
            strspn(text, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-.") <
                len)
            return -EINVAL;
        memcpy(d.name, text, len);
        /* the choices' words, or a mistyped choice ("on"), name no device */
        if (strcmp(d.name, "on") == 0 || strcmp(d.name, "off") == 0 ||
            strcmp(d.name, "auto") == 0)
            return -EINVAL;
        text += len;
        if (*text == ':') {
            size_t digits = strspn(++text, "0123456789");
            long long port;
            char buf[4];

            if (!digits || digits >= sizeof(buf))
                return -EINVAL;
            memcpy(buf, text, digits);
            buf[digits] = 0;
            if (parse_number(buf, 0, &port) || port < 1 || port > 255)
                return -EINVAL;
            d.port = (uint8_t)port;
            text += digits;
        }
        if (*text && *text != ',')
            return -EINVAL;
        for (int i = 0; i < n; i++)
            if (seen[i].port == d.port && strcmp(seen[i].name, d.name) == 0)
                return -EINVAL;
        seen[n] = d;
        if (out && (unsigned)n < max)
            out[n] = d;
        n++;
        if (*text && !*++text)
            return -EINVAL; /* a trailing comma */
    }
    return n ? n : -EINVAL;
}

/* Which of off, auto and a device list text is; -1: none. */
static int
rails_kind(const char *text)
{
    if (strcmp(text, "off") == 0)
        return GFR_RAILS_OFF;
    if (strcmp(text, "auto") == 0)
        return GFR_RAILS_AUTO;
    return parse_rail_devices(text, NULL, 0) > 0 ? GFR_RAILS_DEVICES : -1;
}

enum gfr_rails
gfr_rdma_opts_rails(const struct gfr_rdma_opts *opts)
{
    int kind;

    if (!opts || memchr(opts->rails, 0, sizeof(opts->rails)) == NULL)
        return GFR_RAILS_OFF;
    kind = rails_kind(opts->rails);
    return kind < 0 ? GFR_RAILS_OFF : (enum gfr_rails)kind;
}

int
gfr_rdma_opts_rail_devices(const struct gfr_rdma_opts *opts, struct gfr_rail_device *out,
                           unsigned max)
{
    if (!opts || memchr(opts->rails, 0, sizeof(opts->rails)) == NULL)
        return -EINVAL;
    if (strcmp(opts->rails, "off") == 0 || strcmp(opts->rails, "auto") == 0)
        return 0;
    return parse_rail_devices(opts->rails, out, max); /* refuses off and auto as names */
}

static const struct opt_desc *
find(const char *key)
{
    for (size_t i = 0; key && i < NDESCS; i++)
        if (strcmp(key, descs[i].info.key) == 0)
            return &descs[i];
    return NULL;
}

static long long
count(const char *const *names)
{
    long long n = 0;

    while (names[n])
        n++;
    return n;
}

static int
is_number(const struct opt_desc *d)
{
    return d->info.kind == GFR_OPT_UINT || d->info.kind == GFR_OPT_SIZE ||
           d->info.kind == GFR_OPT_INT;
}

int
gfr_rdma_opts_set(struct gfr_rdma_opts *opts, const char *key,
                  const char *value, char *why, size_t why_len)
{
    const struct opt_desc *d = find(key);
    const struct gfr_rdma_opt_info *o;
    char accepted[64];
    long long v;
    int choice;

    if (!opts || !d) {
        explain(why, why_len, "unknown option '%s'", key ? key : "(null)");
        return -ENOENT;
    }
    o = &d->info;
    switch (o->kind) {
    case GFR_OPT_CHOICE:
        choice = choose(value, o->choices);
        if (choice < 0) {
            join_names(o->choices, accepted, sizeof(accepted));
            return explain(why, why_len, "%s: '%s' is not one of %s", o->key,
                           value ? value : "", accepted);
        }
        store(d, opts, choice);
        return 0;
    case GFR_OPT_NAME:
    case GFR_OPT_ADDRESSES:
    case GFR_OPT_RAILS:
        if (!value || strlen(value) >= d->width)
            return explain(why, why_len, "%s: %s of at most %zu characters", o->key,
                           o->kind == GFR_OPT_NAME ? "a device name" : "a list", d->width - 1);
        if (o->kind == GFR_OPT_ADDRESSES && parse_addresses(value, NULL, 0) < 0)
            return explain(why, why_len,
                           "%s: '%s' is not a comma-separated list of at most %d numeric "
                           "IPv4 or IPv6 addresses",
                           o->key, value, GFR_RDMA_MAX_RAIL_ADDRS);
        if (o->kind == GFR_OPT_RAILS && rails_kind(value) < 0)
            return explain(why, why_len,
                           "%s: '%s' is not off, auto, or a comma-separated list of at most "
                           "%d device ports DEV[:PORT] (port 1 to 255, each named once)",
                           o->key, value, GFR_RDMA_MAX_RAIL_DEVICES);
        /* zeroed first: the engine-wide comparison compares whole fields */
        memset((char *)opts + d->offset, 0, d->width);
        strcpy((char *)opts + d->offset, value);
        return 0;
    case GFR_OPT_INT:
    case GFR_OPT_UINT:
    case GFR_OPT_SIZE:
        if (parse_number(value, o->kind == GFR_OPT_SIZE, &v) || v < o->min || v > o->max)
            return explain(why, why_len, "%s: '%s' is not a whole number from %lld to %lld%s",
                           o->key, value ? value : "", o->min, o->max,
                           o->kind == GFR_OPT_SIZE ? " (K and M suffixes allowed)" : "");
        store(d, opts, v);
        return 0;
    }
    return -EINVAL;
}

int
gfr_rdma_opts_check(const struct gfr_rdma_opts *opts, char *why, size_t why_len)
{
    long long v;

    if (!opts)
        return explain(why, why_len, "no options");
    for (size_t i = 0; i < NDESCS; i++) {
        const struct opt_desc *d = &descs[i];

        if (d->info.kind == GFR_OPT_CHOICE) {
            v = load(d, opts);
            if (v >= count(d->info.choices))
                return explain(why, why_len, "%s (%lld) is not one of its choices",
                               d->info.key, v);
        } else if (d->info.kind == GFR_OPT_ADDRESSES) {
            if (gfr_rdma_opts_rail_addresses(opts, NULL, 0) < 0)
                return explain(why, why_len, "%s is not a list of at most %d addresses",
                               d->info.key, GFR_RDMA_MAX_RAIL_ADDRS);
        } else if (d->info.kind == GFR_OPT_RAILS) {
            if (gfr_rdma_opts_rail_devices(opts, NULL, 0) < 0)
                return explain(why, why_len,
                               "%s is not off, auto, or a list of at most %d device ports",
                               d->info.key, GFR_RDMA_MAX_RAIL_DEVICES);
        } else if (is_number(d)) {
            v = load(d, opts);
            if (v < d->info.min || v > d->info.max)
                return explain(why, why_len, "%s (%lld) is not from %lld to %lld", d->info.key,
                               v, d->info.min, d->info.max);
        }
    }
    if (opts->max_msg < opts->inline_max)
        return explain(why, why_len, "max-msg (%u) is smaller than inline-max (%u)",
                       opts->max_msg, opts->inline_max);
    if (opts->segment_size > opts->max_msg)
        return explain(why, why_len, "segment-size (%u) is larger than max-msg (%u)",
                       opts->segment_size, opts->max_msg);
    return 0;
}

/* Whether d is engine-wide for an engine with options engine. */
static int
engine_wide(const struct opt_desc *d, const struct gfr_rdma_opts *engine)
{
    return d->info.scope == GFR_OPT_ENGINE ||
           (d->info.scope == GFR_OPT_ENGINE_IF_SHARED_RECEIVES &&
            engine->receive_queue != GFR_RQ_PER_CONN);
}

static int
same_field(const struct opt_desc *d, const struct gfr_rdma_opts *a,
           const struct gfr_rdma_opts *b)
{
    return memcmp((const char *)a + d->offset, (const char *)b + d->offset, d->width) == 0;
}

const char *
gfr_rdma_opts_engine_conflict(const struct gfr_rdma_opts *engine,
                              const struct gfr_rdma_opts *conn)
{
    for (size_t i = 0; i < NDESCS; i++)
        if (engine_wide(&descs[i], engine) && !same_field(&descs[i], engine, conn))
            return descs[i].info.key;
    return NULL;
}

const char *
gfr_poll_mode_str(enum gfr_poll_mode mode)
{
    return (unsigned)mode <= GFR_POLL_EVENT ? poll_names[mode] : "unknown";
}

const char *
gfr_dispatch_str(enum gfr_dispatch dispatch)
{
    return (unsigned)dispatch <= GFR_DISPATCH_DIRECT ? dispatch_names[dispatch] : "unknown";
}
