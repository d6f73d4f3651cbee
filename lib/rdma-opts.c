/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Engine options.  One table describes every key (name, kind, range), so
 * parsing, checking and the messages agree.
 */
#include "gfr_rdma_opts.h"

#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum opt_kind { OPT_UINT, OPT_SIZE, OPT_INT, OPT_CHOICE, OPT_NAME };

static const char *const poll_names[] = {"busy", "adaptive", "event", NULL};
static const char *const dispatch_names[] = {"pool", "inline", NULL};
static const char *const rq_names[] = {"srq", "per-connection", NULL};

struct opt_desc {
    const char *key;
    enum opt_kind kind;
    size_t offset;
    size_t width; /* bytes of the field, for integers */
    long long min;
    long long max;
    const char *const *names; /* OPT_CHOICE: value i is names[i] */
};

/* store() writes 1- and 4-byte fields; choices are stored into enums. */
_Static_assert(sizeof(enum gfr_poll_mode) == 4 && sizeof(enum gfr_dispatch) == 4 &&
                   sizeof(enum gfr_receive_queue) == 4,
               "choice options are stored as 4-byte enums");

#define FIELD(f) offsetof(struct gfr_rdma_opts, f), sizeof(((struct gfr_rdma_opts *)0)->f)

static const struct opt_desc descs[] = {
    {"poll-mode", OPT_CHOICE, FIELD(poll_mode), 0, 0, poll_names},
    {"spin-us", OPT_UINT, FIELD(spin_us), 0, 1000000},
    {"spin-max-us", OPT_UINT, FIELD(spin_max_us), 0, 1000000},
    {"pollers", OPT_UINT, FIELD(pollers), 1, 64},
    {"dispatch", OPT_CHOICE, FIELD(dispatch), 0, 0, dispatch_names},
    {"receive-queue", OPT_CHOICE, FIELD(receive_queue), 0, 0, rq_names},
    {"credits", OPT_UINT, FIELD(credits), 2, 4096},
    {"inline-max", OPT_SIZE, FIELD(inline_max), 256, 16 << 20},
    {"max-msg", OPT_SIZE, FIELD(max_msg), 256, 1 << 30},
    {"segment-size", OPT_SIZE, FIELD(segment_size), 4096, 1 << 30},
    {"rdma-depth", OPT_UINT, FIELD(rdma_depth), 1, 64},
    {"connect-timeout-ms", OPT_UINT, FIELD(connect_timeout_ms), 100, 600000},
    {"keepalive-ms", OPT_UINT, FIELD(keepalive_ms), 0, 3600000},
    {"qp-timeout", OPT_UINT, FIELD(qp_timeout), 0, 31},
    {"retry-count", OPT_UINT, FIELD(retry_count), 0, 7},
    {"rnr-retry", OPT_UINT, FIELD(rnr_retry), 0, 7},
    {"port", OPT_UINT, FIELD(port), 1, 255},
    {"gid-index", OPT_INT, FIELD(gid_index), -1, 255},
    {"device", OPT_NAME, FIELD(device), 0, 0},
};

void
gfr_rdma_opts_init(struct gfr_rdma_opts *opts)
{
    memset(opts, 0, sizeof(*opts));
    opts->poll_mode = GFR_POLL_ADAPTIVE;
    opts->spin_us = 50;
    opts->spin_max_us = 2000;
    opts->pollers = 1;
    opts->dispatch = GFR_DISPATCH_POOL;
    opts->receive_queue = GFR_RQ_SRQ;
    opts->credits = 64;
    opts->inline_max = 8192;
    opts->max_msg = 4 << 20;
    opts->segment_size = 1 << 20;
    opts->rdma_depth = 4;
    opts->connect_timeout_ms = 5000;
    opts->keepalive_ms = 10000;
    opts->qp_timeout = 17;
    opts->retry_count = 7;
    opts->rnr_retry = 7;
    opts->port = 1;
    opts->gid_index = -1;
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
store(void *field, size_t width, long long value)
{
    switch (width) {
    case 1: *(uint8_t *)field = (uint8_t)value; break;
    case 4: *(uint32_t *)field = (uint32_t)value; break;
    default: break;
    }
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

int
gfr_rdma_opts_set(struct gfr_rdma_opts *opts, const char *key,
                  const char *value, char *why, size_t why_len)
{
    const struct opt_desc *d = NULL;
    char accepted[64];
    long long v;
    int choice;

    for (size_t i = 0; i < sizeof(descs) / sizeof(descs[0]); i++)
        if (key && strcmp(key, descs[i].key) == 0)
            d = &descs[i];
    if (!opts || !d) {
        explain(why, why_len, "unknown option '%s'", key ? key : "(null)");
        return -ENOENT;
    }
    switch (d->kind) {
    case OPT_CHOICE:
        choice = choose(value, d->names);
        if (choice < 0) {
            join_names(d->names, accepted, sizeof(accepted));
            return explain(why, why_len, "%s: '%s' is not one of %s", d->key,
                           value ? value : "", accepted);
        }
        store((char *)opts + d->offset, d->width, choice);
        return 0;
    case OPT_NAME:
        if (!value || strlen(value) >= sizeof(opts->device))
            return explain(why, why_len, "%s: a device name of at most %zu characters",
                           d->key, sizeof(opts->device) - 1);
        strcpy(opts->device, value);
        return 0;
    case OPT_INT:
    case OPT_UINT:
    case OPT_SIZE:
        if (parse_number(value, d->kind == OPT_SIZE, &v) || v < d->min || v > d->max)
            return explain(why, why_len, "%s: '%s' is not a whole number from %lld to %lld%s",
                           d->key, value ? value : "", d->min, d->max,
                           d->kind == OPT_SIZE ? " (K and M suffixes allowed)" : "");
        if (d->kind == OPT_INT)
            *(int32_t *)((char *)opts + d->offset) = (int32_t)v;
        else
            store((char *)opts + d->offset, d->width, v);
        return 0;
    }
    return -EINVAL;
}

int
gfr_rdma_opts_check(const struct gfr_rdma_opts *opts, char *why, size_t why_len)
{
    if (!opts)
        return explain(why, why_len, "no options");
    if (opts->max_msg < opts->inline_max)
        return explain(why, why_len, "max-msg (%u) is smaller than inline-max (%u)",
                       opts->max_msg, opts->inline_max);
    if (opts->segment_size > opts->max_msg)
        return explain(why, why_len, "segment-size (%u) is larger than max-msg (%u)",
                       opts->segment_size, opts->max_msg);
    if (opts->credits < 2 || opts->credits > 4096)
        return explain(why, why_len, "credits (%u) must be from 2 to 4096", opts->credits);
    if (opts->retry_count > 7 || opts->rnr_retry > 7 || opts->qp_timeout > 31)
        return explain(why, why_len, "retry-count and rnr-retry go to 7, qp-timeout to 31");
    if (opts->pollers < 1 || opts->rdma_depth < 1)
        return explain(why, why_len, "pollers and rdma-depth must be at least 1");
    return 0;
}

const char *
gfr_poll_mode_str(enum gfr_poll_mode mode)
{
    return (unsigned)mode <= GFR_POLL_EVENT ? poll_names[mode] : "unknown";
}
