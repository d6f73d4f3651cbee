/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * A process's statistics as OpenMetrics text (gfr-stat --openmetrics,
 * docs/statistics.md), for Prometheus and the collectors that read its
 * text: every metric is named glusterfs_rdma_..., with its unit in its name
 * (seconds and bytes, the base units), counters end in _total, and labels
 * say which process, engine, connection, poller or stage a sample is of.
 * Each family is written once, with the samples of every engine under it,
 * as OpenMetrics requires; the text ends with "# EOF".
 *
 * Pure: writes to out from snapshots already taken; any thread.
 */
#include <errno.h>
#include <inttypes.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "gfr_hist.h"
#include "gfr_stats_render.h"

#define PREFIX "glusterfs_rdma_"

enum metric_type { COUNTER, GAUGE };

enum field_width { ULONG, U32, U64 };

/* One number of a snapshot's struct, by its offset and width.  Every
 * metric in seconds is kept as a count of nanoseconds. */
struct field {
    const char *name; /* without the prefix and without _total */
    const char *unit; /* "seconds", "bytes", or NULL */
    enum metric_type type;
    const char *help;
    size_t offset;
    enum field_width width;
};

#define CONN_COUNTER(n, u, f, h) \
    {n, u, COUNTER, h, offsetof(struct gfr_rdma_conn_info, stats.f), ULONG}
#define CONN_GAUGE32(n, f, h) {n, NULL, GAUGE, h, offsetof(struct gfr_rdma_conn_info, f), U32}
#define CONN_GAUGE64(n, u, f, h) {n, u, GAUGE, h, offsetof(struct gfr_rdma_conn_info, f), U64}
#define POLLER(n, u, t, f, h) {n, u, t, h, offsetof(struct gfr_rdma_poller_info, f), U64}

static const struct field conn_fields[] = {
    CONN_COUNTER("messages_sent", NULL, sent, "Messages sent (SENDs of every type)."),
    CONN_COUNTER("messages_received", NULL, received, "Messages received."),
    CONN_COUNTER("sent_bytes", "bytes", bytes_sent, "SEND payloads sent, headers included."),
    CONN_COUNTER("received_bytes", "bytes", bytes_received, "SEND payloads received."),
    CONN_COUNTER("credit_waits", NULL, queued_for_credits,
                 "Sends that had to wait for a credit or a send slot."),
    CONN_COUNTER("credit_updates", NULL, credit_updates, "CREDIT messages sent."),
    CONN_COUNTER("bulk_pulled_bytes", "bytes", bulk_pulled,
                 "Bulk bytes read from the peer by RDMA READ."),
    CONN_COUNTER("bulk_pushed_bytes", "bytes", bulk_pushed,
                 "Bulk bytes written to the peer by RDMA WRITE."),
    CONN_COUNTER("bulk_offers", NULL, bulk_offered, "Messages offered as a read list."),
    CONN_COUNTER("rdma_reads", NULL, rdma_reads, "RDMA READ operations posted."),
    CONN_COUNTER("rdma_writes", NULL, rdma_writes, "RDMA WRITE operations posted (bulk)."),
    CONN_COUNTER("staged_bytes", "bytes", staged_bytes,
                 "Bulk bytes copied through registered staging buffers."),
    CONN_COUNTER("copied_bytes", "bytes", copied_bytes,
                 "Payload bytes copied in memory, by the engine and its owner."),
    CONN_COUNTER("registrations", NULL, registrations, "Memory registrations."),
    CONN_COUNTER("registration_seconds", "seconds", registration_ns,
                 "Time spent registering and deregistering memory."),
    CONN_COUNTER("errors", NULL, errors, "Problems logged about the connection."),
    CONN_COUNTER("throttles", NULL, throttles, "Times back-pressure was put on."),
    CONN_COUNTER("keepalives", NULL, keepalives, "Liveness probes the peer answered."),
    CONN_COUNTER("rail_failovers", NULL, failovers,
                 "Multi-rail: rails of the bundle that ended while this one went on."),
    CONN_COUNTER("rail_resends", NULL, resends,
                 "Multi-rail: messages this rail carried again, lost with another rail."),
    CONN_COUNTER("rail_duplicates", NULL, duplicates,
                 "Multi-rail: copies received on this rail and dropped as duplicates."),
    CONN_GAUGE32("credits_window", credits_window, "The negotiated credit window."),
    CONN_GAUGE32("credits_available", credits_ours, "Messages this side may still send."),
    CONN_GAUGE32("peer_credits_available", credits_theirs,
                 "Messages the peer may still send."),
    CONN_GAUGE32("queued_messages", queued, "Messages waiting for a credit or a slot."),
    CONN_GAUGE32("held_offers", offers,
                 "Messages of this side whose buffers the engine still holds."),
    CONN_GAUGE32("rdma_inflight", rdma_inflight, "RDMA READs and WRITEs under way."),
    CONN_GAUGE32("send_queue_depth", send_queue,
                 "Work requests posted and not yet seen complete."),
    CONN_GAUGE32("withheld_credits", withheld, "Credits owed to the peer, not yet returned."),
    CONN_GAUGE64("rtt_mean_seconds", "seconds", rtt_mean_ns,
                 "A client's smoothed round trip (0: no sample)."),
    CONN_GAUGE64("rtt_deviation_seconds", "seconds", rtt_dev_ns,
                 "A client's round-trip mean deviation (0: no sample)."),
};

static const struct field poller_fields[] = {
    POLLER("poller_polls", NULL, COUNTER, polls, "ibv_poll_cq calls."),
    POLLER("poller_completions", NULL, COUNTER, completions, "Work completions reaped."),
    POLLER("poller_reaped_after_sleep", NULL, COUNTER, reaped_after_sleep,
           "Completions found by the first poll after a wake-up."),
    POLLER("poller_sleeps", NULL, COUNTER, sleeps, "Times the poller armed its CQ and waited."),
    POLLER("poller_wakeups", NULL, COUNTER, wakeups, "Sleeps ended by a completion event."),
    POLLER("poller_asleep_seconds", "seconds", COUNTER, asleep_ns,
           "Time spent waiting for a completion event."),
    POLLER("poller_spin_seconds", "seconds", COUNTER, spin_ns,
           "Time spent polling an empty CQ before sleeping."),
    POLLER("poller_kicks", NULL, COUNTER, kicks, "Times submitters woke the poller to poll."),
    POLLER("poller_handlers_run", NULL, COUNTER, direct,
           "Messages whose handlers the poller ran itself (dispatch direct)."),
    POLLER("poller_relays", NULL, COUNTER, relays, "Times a pool worker polled in its place."),
    POLLER("poller_slow_handlers", NULL, COUNTER, slow_handlers,
           "Handler runs of 20 ms or more."),
    POLLER("poller_timed_sleeps", NULL, COUNTER, timed_sleeps,
           "Sleeps until shortly before a reply is due."),
    POLLER("poller_timer_wakeups", NULL, COUNTER, timer_wakeups,
           "Timed sleeps ended by their timer."),
    POLLER("poller_alive_seconds", "seconds", GAUGE, alive_ns,
           "Time since the poller thread started."),
    POLLER("poller_window_seconds", "seconds", GAUGE, window_ns,
           "The adaptive poll window now."),
    POLLER("poller_lead_seconds", "seconds", GAUGE, lead_ns,
           "How long before a reply's earliest arrival a timed sleep ends."),
};

/* The pool's thread counts are unsigned, read as U32. */
_Static_assert(sizeof(unsigned) == sizeof(uint32_t), "unsigned is not 32 bits");
#define POOL_THREADS(n, f, h) {n, NULL, GAUGE, h, offsetof(struct gfr_pool_stats, f), U32}
#define POOL_COUNTER(n, f, h) {n, NULL, COUNTER, h, offsetof(struct gfr_pool_stats, f), U64}

static const struct field pool_gauges[] = {
    POOL_THREADS("pool_threads", threads, "Worker threads now."),
    POOL_THREADS("pool_peak_threads", peak_threads, "The most worker threads at once."),
};

static const struct field pool_counters[] = {
    POOL_COUNTER("pool_jobs_submitted", submitted, "Jobs submitted."),
    POOL_COUNTER("pool_wakeups", wakeups, "Wake-ups of sleeping workers."),
    POOL_COUNTER("pool_threads_started", threads_started, "Worker threads started."),
    POOL_COUNTER("pool_threads_exited", threads_exited, "Worker threads exited."),
    POOL_COUNTER("pool_timers_fired", timers_fired, "Worker timers fired."),
};

/* A label value with backslash, double quote and newline escaped. */
static void
put_label_value(FILE *out, const char *s)
{
    fputc('"', out);
    for (; s && *s; s++) {
        if (*s == '\\' || *s == '"')
            fprintf(out, "\\%c", *s);
        else if (*s == '\n')
            fputs("\\n", out);
        else
            fputc(*s, out);
    }
    fputc('"', out);
}

static void
put_family(FILE *out, const char *name, const char *type, const char *unit, const char *help)
{
    fprintf(out, "# TYPE " PREFIX "%s %s\n", name, type);
    if (unit)
        fprintf(out, "# UNIT " PREFIX "%s %s\n", name, unit);
    fprintf(out, "# HELP " PREFIX "%s %s\n", name, help);
}

/* ,name="value", the value escaped. */
static void
put_label(FILE *out, const char *name, const char *value)
{
    fprintf(out, ",%s=", name);
    put_label_value(out, value);
}

/* The labels every sample carries: the process's name and pid. */
static void
put_process_labels(FILE *out, const struct gfr_stats_view *v)
{
    fputs("process=", out);
    put_label_value(out, v->process);
    fprintf(out, ",pid=\"%ld\"", (long)v->pid);
}

/* A poller's labels, without the braces. */
static void
put_poller_labels(FILE *out, const struct gfr_stats_view *v, unsigned engine,
                  const struct gfr_rdma_poller_info *p)
{
    put_process_labels(out, v);
    fprintf(out, ",engine=\"%u\",poller=\"%u\"", engine, p->index);
    put_label(out, "device", p->device);
}

/* A connection's labels, without the braces. */
static void
put_conn_labels(FILE *out, const struct gfr_stats_view *v, unsigned engine,
                const struct gfr_rdma_conn_info *c)
{
    put_process_labels(out, v);
    fprintf(out, ",engine=\"%u\",role=\"%s\"", engine, c->is_server ? "server" : "client");
    put_label(out, "peer", c->peer);
    put_label(out, "local", c->local);
    if (c->bundle) /* multi-rail: each rail is a connection of its own */
        fprintf(out, ",bundle=\"%u\",rail=\"%u\"", c->bundle, c->rail);
}

static uint64_t
field_value(const struct field *f, const void *base)
{
    const char *p = (const char *)base + f->offset;

    switch (f->width) {
    case U32:
        return *(const uint32_t *)p;
    case U64:
        return *(const uint64_t *)p;
    default:
        return *(const unsigned long *)p;
    }
}

/* A count, or nanoseconds as seconds: exact, in integer arithmetic. */
static void
put_number(FILE *out, uint64_t v, int in_ns)
{
    if (in_ns)
        fprintf(out, "%" PRIu64 ".%09" PRIu64, v / 1000000000u, v % 1000000000u);
    else
        fprintf(out, "%" PRIu64, v);
}

/* A field's family lines, and the start of one of its samples, up to the
 * opening brace (a counter's sample name ends in _total). */
static void
put_field_family(FILE *out, const struct field *f)
{
    put_family(out, f->name, f->type == COUNTER ? "counter" : "gauge", f->unit, f->help);
}

static void
put_field_sample(FILE *out, const struct field *f)
{
    fprintf(out, PREFIX "%s%s{", f->name, f->type == COUNTER ? "_total" : "");
}

/* A field's value in base, after the sample's labels. */
static void
put_field(FILE *out, const struct field *f, const void *base)
{
    fputc(' ', out);
    put_number(out, field_value(f, base), f->unit && strcmp(f->unit, "seconds") == 0);
    fputc('\n', out);
}

/* A connection still resolving has no addresses: its labels would not
 * tell it from another such, so it is left out. */
static int
conn_labelled(const struct gfr_rdma_conn_info *c)
{
    return c->peer[0] || c->local[0];
}

/* A family for each of fields, with a sample for each connection (or, with
 * of_pollers, each poller) of every engine. */
static void
put_fields(FILE *out, const struct gfr_stats_view *v, const struct field *fields, size_t n,
           int of_pollers)
{
    for (size_t k = 0; k < n; k++) {
        const struct field *f = &fields[k];

        put_field_family(out, f);
        for (unsigned e = 0; e < v->nengines; e++) {
            const struct gfr_rdma_snapshot *s = v->engines[e];

            for (unsigned i = 0; i < (of_pollers ? s->npollers : s->nconns); i++) {
                if (!of_pollers && !conn_labelled(&s->conns[i]))
                    continue;
                put_field_sample(out, f);
                if (of_pollers)
                    put_poller_labels(out, v, e, &s->pollers[i]);
                else
                    put_conn_labels(out, v, e, &s->conns[i]);
                fputc('}', out);
                put_field(out, f, of_pollers ? (const void *)&s->pollers[i]
                                             : (const void *)&s->conns[i]);
            }
        }
    }
}

static void
conn_families(FILE *out, const struct gfr_stats_view *v)
{
    put_family(out, "connection", "info", NULL,
               "A connection: its device, poller and state (value 1).");
    for (unsigned e = 0; e < v->nengines; e++)
        for (unsigned i = 0; i < v->engines[e]->nconns; i++) {
            const struct gfr_rdma_conn_info *c = &v->engines[e]->conns[i];

            if (!conn_labelled(c))
                continue;
            fputs(PREFIX "connection_info{", out);
            put_conn_labels(out, v, e, c);
            put_label(out, "device", c->device);
            put_label(out, "state", c->state);
            fprintf(out, ",poller=\"%u\"} 1\n", c->poller);
        }
    put_fields(out, v, conn_fields, sizeof(conn_fields) / sizeof(conn_fields[0]), 0);
}

static void
poller_families(FILE *out, const struct gfr_stats_view *v)
{
    put_fields(out, v, poller_fields, sizeof(poller_fields) / sizeof(poller_fields[0]), 1);
}

/*
 * A histogram's samples, in seconds.  Its bucket bounds are 2^k - 1 ns (k
 * from 10, about 1 us, to 35, about 34 s): the histogram's own buckets
 * begin at powers of two, so every value <= such a bound lies in a bucket
 * wholly below it, and the cumulative counts are exact, not interpolated.
 * extra_label is written first inside the braces, or nothing when NULL.
 */
#define LE_FIRST_OCTAVE 10
#define LE_LAST_OCTAVE 35

/* One histogram sample's name and labels, without the closing brace. */
static void
put_hist_sample(FILE *out, const char *name, const char *suffix, const struct gfr_stats_view *v,
                const char *extra_label)
{
    fprintf(out, PREFIX "%s_%s{%s", name, suffix, extra_label ? extra_label : "");
    put_process_labels(out, v);
}

static void
put_hist(FILE *out, const char *name, const struct gfr_stats_view *v, const char *extra_label,
         const struct gfr_hist *h)
{
    unsigned b = 0;
    uint64_t cumulative = 0;

    for (unsigned k = LE_FIRST_OCTAVE; k <= LE_LAST_OCTAVE; k++) {
        uint64_t bound = ((uint64_t)1 << k) - 1;

        for (; b < GFR_HIST_BUCKETS && gfr_hist_bucket_low(b) <= bound; b++)
            cumulative += h->bucket[b];
        put_hist_sample(out, name, "bucket", v, extra_label);
        fputs(",le=\"", out);
        put_number(out, bound, 1);
        fprintf(out, "\"} %" PRIu64 "\n", cumulative);
    }
    put_hist_sample(out, name, "bucket", v, extra_label);
    fprintf(out, ",le=\"+Inf\"} %" PRIu64 "\n", h->count);
    put_hist_sample(out, name, "count", v, extra_label);
    fprintf(out, "} %" PRIu64 "\n", h->count);
    put_hist_sample(out, name, "sum", v, extra_label);
    fputs("} ", out);
    put_number(out, h->sum_ns, 1);
    fputc('\n', out);
}

static void
engine_families(FILE *out, const struct gfr_stats_view *v)
{
    char label[96];

    put_family(out, "engine", "info", NULL,
               "An RDMA engine of the process and its settings (value 1).");
    for (unsigned e = 0; e < v->nengines; e++) {
        const struct gfr_rdma_snapshot *s = v->engines[e];

        fputs(PREFIX "engine_info{", out);
        put_process_labels(out, v);
        fprintf(out, ",engine=\"%u\"", e);
        put_label(out, "poll_mode", s->poll_mode);
        put_label(out, "dispatch", s->dispatch);
        fprintf(out, ",latency_stats=\"%s\"} 1\n", s->latency_stats ? "on" : "off");
    }
    put_family(out, "rail_port_up", "gauge", NULL,
               "Multi-rail: a device port transport.rdma.rails names, 1 when it can carry a "
               "rail (active, on an interface with an address).");
    for (unsigned e = 0; e < v->nengines; e++)
        for (unsigned i = 0; i < v->engines[e]->nrail_ports; i++) {
            const struct gfr_rdma_rail_port_info *r = &v->engines[e]->rail_ports[i];

            fputs(PREFIX "rail_port_up{", out);
            put_process_labels(out, v);
            fprintf(out, ",engine=\"%u\"", e);
            put_label(out, "device", r->device);
            fprintf(out, ",port=\"%u\"} %d\n", r->port, r->up);
        }
    put_family(out, "untraced_calls", "counter", NULL,
               "Calls whose stage stamps another call's took.");
    for (unsigned e = 0; e < v->nengines; e++) {
        fputs(PREFIX "untraced_calls_total{", out);
        put_process_labels(out, v);
        fprintf(out, ",engine=\"%u\"} %" PRIu64 "\n", e, v->engines[e]->untraced);
    }
    put_family(out, "stage_seconds", "histogram", "seconds",
               "Time of each stage of an RPC (transport.rdma.latency-stats).");
    for (unsigned e = 0; e < v->nengines; e++) {
        if (!v->engines[e]->latency_stats)
            continue;
        for (int st = 0; st < GFR_STAGE_COUNT; st++) {
            snprintf(label, sizeof(label), "engine=\"%u\",stage=\"%s\",", e,
                     gfr_rdma_stage_name(st));
            put_hist(out, "stage_seconds", v, label, &v->engines[e]->stage[st]);
        }
    }
}

/* The pool's numbers with no label but the process's. */
static void
put_pool_fields(FILE *out, const struct gfr_stats_view *v, const struct field *fields, size_t n)
{
    for (size_t k = 0; k < n; k++) {
        const struct field *f = &fields[k];

        put_field_family(out, f);
        put_field_sample(out, f);
        put_process_labels(out, v);
        fputc('}', out);
        put_field(out, f, v->pool);
    }
}

/* One family of n samples told apart by one label. */
static void
put_by_label(FILE *out, const struct gfr_stats_view *v, const char *name, int counter,
             const char *help, const char *label, const char *const *values,
             const uint64_t *numbers, unsigned n)
{
    put_family(out, name, counter ? "counter" : "gauge", NULL, help);
    for (unsigned i = 0; i < n; i++) {
        fprintf(out, PREFIX "%s%s{%s=\"%s\",", name, counter ? "_total" : "", label, values[i]);
        put_process_labels(out, v);
        fprintf(out, "} %" PRIu64 "\n", numbers[i]);
    }
}

static void
pool_families(FILE *out, const struct gfr_stats_view *v)
{
    const struct gfr_pool_stats *p = v->pool;
    static const char *const classes[GFR_POOL_NR_PRIO] = {"high", "normal", "low"};
    static const char *const states[] = {"running", "spinning", "sleeping", "blocked"};
    static const char *const outcomes[] = {"run", "cancelled"};
    const uint64_t in_state[] = {p->running, p->spinning, p->sleeping, p->blocked};
    const uint64_t ended[] = {p->executed, p->cancelled};

    put_pool_fields(out, v, pool_gauges, sizeof(pool_gauges) / sizeof(pool_gauges[0]));
    put_by_label(out, v, "pool_workers", 0, "Worker threads by what they do now.", "state",
                 states, in_state, 4);
    put_pool_fields(out, v, pool_counters, sizeof(pool_counters) / sizeof(pool_counters[0]));
    put_by_label(out, v, "pool_jobs_ended", 1,
                 "Jobs ended: run, or cancelled at the pool's destruction.", "outcome", outcomes,
                 ended, 2);
    put_by_label(out, v, "pool_queued_jobs", 0, "Jobs submitted, not yet started.", "class",
                 classes, p->queued_by_prio, GFR_POOL_NR_PRIO);
    put_family(out, "pool_queue_seconds", "histogram", "seconds",
               "Time in the pool's queue, of one job in 16 per producer thread.");
    put_hist(out, "pool_queue_seconds", v, NULL, &p->queue_ns);
}

/* The providers' own counters, by the provider's name for each: most
 * count, some are settings (mlx5's lifespan), so their type is unknown. */
static void
port_families(FILE *out, const struct gfr_stats_view *v)
{
    put_family(out, "port_hw_counter", "unknown", NULL,
               "An RDMA port's own counter, as its provider names it (sysfs hw_counters).");
    for (unsigned i = 0; i < v->nports; i++) {
        const struct gfr_port_counters *pc = &v->ports[i];

        for (unsigned c = 0; c < pc->n; c++) {
            fputs(PREFIX "port_hw_counter{", out);
            put_process_labels(out, v);
            put_label(out, "device", pc->device);
            put_label(out, "counter", pc->counter[c].name);
            fprintf(out, ",port=\"%u\"} %" PRIu64 "\n", pc->port, pc->counter[c].value);
        }
    }
}

int
gfr_stats_render_openmetrics(FILE *out, const struct gfr_stats_view *v)
{
    engine_families(out, v);
    conn_families(out, v);
    poller_families(out, v);
    if (v->pool)
        pool_families(out, v);
    port_families(out, v);
    fputs("# EOF\n", out);
    return ferror(out) ? -EIO : 0;
}
