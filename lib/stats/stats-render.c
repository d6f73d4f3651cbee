/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Statistics as JSON and as tables (gfr_stats_render.h).  Every string
 * that comes from outside (addresses, error messages, the process name)
 * goes through json_str, so the JSON always parses.
 */
#include <errno.h>
#include <inttypes.h>
#include <string.h>

#include "gfr_clock.h"
#include "gfr_stats_render.h"

/* A JSON string literal of s. */
static void
json_str(FILE *out, const char *s)
{
    fputc('"', out);
    for (; s && *s; s++) {
        unsigned char c = (unsigned char)*s;

        if (c == '"' || c == '\\')
            fprintf(out, "\\%c", c);
        else if (c < 0x20 || c >= 0x7f)
            fprintf(out, "\\u%04x", c);
        else
            fputc(c, out);
    }
    fputc('"', out);
}

static void
json_hist(FILE *out, const struct gfr_hist *h)
{
    int first = 1;

    fprintf(out, "\"count\":%" PRIu64 ",\"sum_ns\":%" PRIu64 ",\"max_ns\":%" PRIu64
                 ",\"mean_ns\":%" PRIu64 ",\"p50_ns\":%" PRIu64 ",\"p99_ns\":%" PRIu64
                 ",\"p999_ns\":%" PRIu64 ",\"buckets\":[",
            h->count, h->sum_ns, h->max_ns, gfr_hist_mean(h), gfr_hist_percentile(h, 0.5),
            gfr_hist_percentile(h, 0.99), gfr_hist_percentile(h, 0.999));
    for (unsigned b = 0; b < GFR_HIST_BUCKETS; b++) {
        if (!h->bucket[b])
            continue;
        fprintf(out, "%s[%" PRIu64 ",%" PRIu64 "]", first ? "" : ",", gfr_hist_bucket_low(b),
                h->bucket[b]);
        first = 0;
    }
    fputc(']', out);
}

static void
json_conn(FILE *out, const struct gfr_rdma_conn_info *c)
{
    const struct gfr_rdma_conn_stats *s = &c->stats;

    fputs("{\"peer\":", out);
    json_str(out, c->peer);
    fputs(",\"local\":", out);
    json_str(out, c->local);
    fprintf(out, ",\"role\":\"%s\",\"state\":", c->is_server ? "server" : "client");
    json_str(out, c->state);
    if (c->bundle) /* multi-rail: only then, so that one rail reads as before */
        fprintf(out, ",\"bundle\":%u,\"rail\":%u,\"failover\":{\"failovers\":%lu,"
                     "\"resends\":%lu,\"duplicates\":%lu}",
                c->bundle, c->rail, s->failovers, s->resends, s->duplicates);
    fputs(",\"device\":", out);
    json_str(out, c->device);
    fprintf(out,
            ",\"poller\":%u,\"credits\":{\"window\":%u,\"ours\":%u,\"theirs\":%u}"
            ",\"queued\":%u,\"offers\":%u,\"rdma_inflight\":%u,\"send_queue\":%u"
            ",\"throttle\":{\"on\":%s,\"times\":%lu,\"withheld\":%u}"
            ",\"messages\":{\"sent\":%lu,\"received\":%lu,\"credit_updates\":%lu,"
            "\"waited_for_credits\":%lu}"
            ",\"bytes\":{\"sent\":%lu,\"received\":%lu,\"pulled\":%lu,\"pushed\":%lu,"
            "\"staged\":%lu,\"copied\":%lu}"
            ",\"rdma\":{\"reads\":%lu,\"writes\":%lu,\"offered\":%lu}"
            ",\"registrations\":{\"count\":%lu,\"ns\":%lu}"
            ",\"rtt\":{\"mean_ns\":%" PRIu64 ",\"dev_ns\":%" PRIu64 "}"
            ",\"errors\":{\"count\":%lu,\"reason\":%d,\"last\":",
            c->poller, c->credits_window, c->credits_ours, c->credits_theirs, c->queued,
            c->offers, c->rdma_inflight, c->send_queue, c->throttled ? "true" : "false",
            s->throttles,
            c->withheld, s->sent, s->received, s->credit_updates,
            s->queued_for_credits, s->bytes_sent, s->bytes_received, s->bulk_pulled,
            s->bulk_pushed, s->staged_bytes, s->copied_bytes, s->rdma_reads, s->rdma_writes, s->bulk_offered, s->registrations,
            s->registration_ns, c->rtt_mean_ns, c->rtt_dev_ns, s->errors,
            c->reason);
    json_str(out, c->last_error);
    fputs("}}", out);
}

static void
json_poller(FILE *out, const struct gfr_rdma_poller_info *p)
{
    fputs("{\"device\":", out);
    json_str(out, p->device);
    fprintf(out,
            ",\"index\":%u,\"polls\":%" PRIu64 ",\"completions\":%" PRIu64
            ",\"reaped_after_sleep\":%" PRIu64 ",\"sleeps\":%" PRIu64 ",\"wakeups\":%" PRIu64
            ",\"asleep_ns\":%" PRIu64 ",\"spin_ns\":%" PRIu64 ",\"alive_ns\":%" PRIu64
            ",\"window_ns\":%" PRIu64 ",\"kicks\":%" PRIu64 ",\"direct\":%" PRIu64
            ",\"relays\":%" PRIu64 ",\"slow_handlers\":%" PRIu64 ",\"timed_sleeps\":%" PRIu64
            ",\"timer_wakeups\":%" PRIu64 ",\"lead_ns\":%" PRIu64 "}",
            p->index, p->polls, p->completions, p->reaped_after_sleep, p->sleeps, p->wakeups,
            p->asleep_ns, p->spin_ns, p->alive_ns, p->window_ns, p->kicks, p->direct, p->relays,
            p->slow_handlers, p->timed_sleeps, p->timer_wakeups, p->lead_ns);
}

static void
json_engine(FILE *out, const struct gfr_rdma_snapshot *e)
{
    fprintf(out, "{\"poll_mode\":\"%s\",\"dispatch\":\"%s\",\"latency_stats\":%s,\"connections\":[",
            e->poll_mode, e->dispatch, e->latency_stats ? "true" : "false");
    for (unsigned i = 0; i < e->nconns; i++) {
        fputs(i ? "," : "", out);
        json_conn(out, &e->conns[i]);
    }
    fputs("],\"pollers\":[", out);
    for (unsigned i = 0; i < e->npollers; i++) {
        fputs(i ? "," : "", out);
        json_poller(out, &e->pollers[i]);
    }
    fputc(']', out);
    if (e->nrail_ports) { /* rails = DEV[:PORT],... only: otherwise as before */
        fputs(",\"rail_ports\":[", out);
        for (unsigned i = 0; i < e->nrail_ports; i++) {
            const struct gfr_rdma_rail_port_info *r = &e->rail_ports[i];

            fprintf(out, "%s{\"device\":", i ? "," : "");
            json_str(out, r->device);
            fprintf(out, ",\"port\":%u,\"state\":\"%s\",\"netdev\":", r->port,
                    r->up ? "up" : "down");
            json_str(out, r->netdev);
            fputs(r->up ? ",\"address\":" : ",\"why\":", out);
            json_str(out, r->up ? r->address : r->why);
            fputc('}', out);
        }
        fputc(']', out);
    }
    fprintf(out, ",\"untraced_calls\":%" PRIu64 ",\"stages\":[", e->untraced);
    for (int s = 0; s < GFR_STAGE_COUNT; s++) {
        fprintf(out, "%s{\"name\":\"%s\",\"about\":", s ? "," : "", gfr_rdma_stage_name(s));
        json_str(out, gfr_rdma_stage_about(s));
        fputc(',', out);
        json_hist(out, &e->stage[s]);
        fputc('}', out);
    }
    fputs("]}", out);
}

static void
json_pool(FILE *out, const struct gfr_pool_stats *p)
{
    fprintf(out,
            "{\"threads\":%u,\"peak_threads\":%u,\"running\":%u,\"sleeping\":%u,"
            "\"spinning\":%u,\"blocked\":%u,\"submitted\":%" PRIu64 ",\"executed\":%" PRIu64
            ",\"cancelled\":%" PRIu64 ",\"queued\":%" PRIu64 ",\"queued_by_class\":{\"high\":%"
            PRIu64 ",\"normal\":%" PRIu64 ",\"low\":%" PRIu64 "},\"wakeups\":%" PRIu64
            ",\"threads_started\":%" PRIu64 ",\"threads_exited\":%" PRIu64
            ",\"queue_ns\":{\"sample\":%u,",
            p->threads, p->peak_threads, p->running, p->sleeping, p->spinning, p->blocked,
            p->submitted, p->executed, p->cancelled, p->queued,
            p->queued_by_prio[GFR_POOL_PRIO_HIGH], p->queued_by_prio[GFR_POOL_PRIO_NORMAL],
            p->queued_by_prio[GFR_POOL_PRIO_LOW], p->wakeups, p->threads_started,
            p->threads_exited, GFR_POOL_HIST_SAMPLE);
    json_hist(out, &p->queue_ns);
    fputs("}}", out);
}

int
gfr_stats_render_json(FILE *out, const struct gfr_stats_view *v)
{
    fputs("{\"process\":", out);
    json_str(out, v->process);
    fprintf(out, ",\"pid\":%ld,\"time_ns\":%" PRIu64 ",\"engines\":[", (long)v->pid,
            gfr_now_ns());
    for (unsigned i = 0; i < v->nengines; i++) {
        fputs(i ? "," : "", out);
        json_engine(out, v->engines[i]);
    }
    fputs("],\"pool\":", out);
    if (v->pool)
        json_pool(out, v->pool);
    else
        fputs("null", out);
    fputs(",\"ports\":[", out);
    for (unsigned i = 0; i < v->nports; i++) {
        const struct gfr_port_counters *pc = &v->ports[i];

        fputs(i ? ",{\"device\":" : "{\"device\":", out);
        json_str(out, pc->device);
        fprintf(out, ",\"port\":%u,\"hw_counters\":{", pc->port);
        for (unsigned c = 0; c < pc->n; c++) {
            fputs(c ? "," : "", out);
            json_str(out, pc->counter[c].name);
            fprintf(out, ":%" PRIu64, pc->counter[c].value);
        }
        fputs("}}", out);
    }
    fputs("]}\n", out);
    return ferror(out) ? -EIO : 0;
}

/* ns as microseconds with one decimal. */
static double
us(uint64_t ns)
{
    return (double)ns / 1000.0;
}

static double
percent(uint64_t part, uint64_t whole)
{
    return whole ? 100.0 * (double)part / (double)whole : 0.0;
}

static void
table_engine(FILE *out, unsigned n, const struct gfr_rdma_snapshot *e)
{
    fprintf(out, "\nengine %u: poll-mode %s, dispatch %s, latency-stats %s\n", n, e->poll_mode,
            e->dispatch, e->latency_stats ? "on" : "off");
    if (e->nrail_ports)
        fprintf(out, "\nrail ports (transport.rdma.rails): %u\n", e->nrail_ports);
    for (unsigned i = 0; i < e->nrail_ports; i++) {
        const struct gfr_rdma_rail_port_info *r = &e->rail_ports[i];

        if (r->up)
            fprintf(out, "  %s:%u up, on %s, %s\n", r->device, r->port, r->netdev, r->address);
        else
            fprintf(out, "  %s:%u down: %s\n", r->device, r->port, r->why);
    }
    fprintf(out, "\nconnections: %u\n", e->nconns);
    if (e->nconns)
        fprintf(out, "  %-24s %-24s %-6s %-12s %-14s %6s %10s %10s %12s %12s %7s %7s %6s %9s %6s\n",
                "peer", "local", "role", "state", "credits o/t/w", "queued", "sent", "received",
                "bytes-out", "bytes-in", "reads", "writes", "regs", "reg-ms", "errors");
    for (unsigned i = 0; i < e->nconns; i++) {
        const struct gfr_rdma_conn_info *c = &e->conns[i];
        char credits[40];

        snprintf(credits, sizeof(credits), "%u/%u/%u", c->credits_ours, c->credits_theirs,
                 c->credits_window);
        fprintf(out, "  %-24s %-24s %-6s %-12s %-14s %6u %10lu %10lu %12lu %12lu %7lu %7lu %6lu "
                     "%9.1f %6lu\n",
                c->peer[0] ? c->peer : "-", c->local[0] ? c->local : "-",
                c->is_server ? "server" : "client", c->state, credits, c->queued, c->stats.sent,
                c->stats.received, c->stats.bytes_sent, c->stats.bytes_received,
                c->stats.rdma_reads, c->stats.rdma_writes, c->stats.registrations,
                (double)c->stats.registration_ns / 1e6, c->stats.errors);
        if (c->bundle)
            fprintf(out, "    rail %u of bundle %u, on %s: failovers %lu, resends %lu, "
                         "duplicates dropped %lu\n", c->rail, c->bundle, c->device,
                    c->stats.failovers, c->stats.resends, c->stats.duplicates);
        if (c->throttled || c->stats.throttles)
            fprintf(out, "    throttle: %s, %u credits not yet returned, put on %lu times\n",
                    c->throttled ? "on" : "off", c->withheld, c->stats.throttles);
        if (c->last_error[0])
            fprintf(out, "    last error: %s\n", c->last_error);
    }
    fprintf(out, "\npollers: %u\n", e->npollers);
    if (e->npollers)
        fprintf(out, "  %-10s %5s %12s %12s %12s %10s %10s %8s %8s %10s %10s %12s %8s %6s %10s %8s\n",
                "device", "index", "polls", "completions", "after-sleep", "sleeps", "wakeups",
                "asleep%", "spin%", "window-us", "kicks", "direct", "relays", "slow", "timed",
                "lead-us");
    for (unsigned i = 0; i < e->npollers; i++) {
        const struct gfr_rdma_poller_info *p = &e->pollers[i];

        fprintf(out, "  %-10s %5u %12" PRIu64 " %12" PRIu64 " %12" PRIu64 " %10" PRIu64
                     " %10" PRIu64 " %8.1f %8.1f %10.1f %10" PRIu64 " %12" PRIu64 " %8" PRIu64
                     " %6" PRIu64 " %10" PRIu64 " %8.1f\n",
                p->device, p->index, p->polls, p->completions, p->reaped_after_sleep, p->sleeps,
                p->wakeups, percent(p->asleep_ns, p->alive_ns), percent(p->spin_ns, p->alive_ns),
                us(p->window_ns), p->kicks, p->direct, p->relays, p->slow_handlers,
                p->timed_sleeps, us(p->lead_ns));
    }
    fprintf(out, "\nstages (us)%s: untraced calls %" PRIu64 "\n",
            e->latency_stats ? "" : " [latency-stats off]", e->untraced);
    fprintf(out, "  %-15s %10s %10s %10s %10s %10s  %s\n", "stage", "count", "mean", "p50", "p99",
            "p999", "what");
    for (int s = 0; s < GFR_STAGE_COUNT; s++) {
        const struct gfr_hist *h = &e->stage[s];

        fprintf(out, "  %-15s %10" PRIu64 " %10.1f %10.1f %10.1f %10.1f  %s\n",
                gfr_rdma_stage_name(s), h->count, us(gfr_hist_mean(h)),
                us(gfr_hist_percentile(h, 0.5)), us(gfr_hist_percentile(h, 0.99)),
                us(gfr_hist_percentile(h, 0.999)), gfr_rdma_stage_about(s));
    }
}

/* The ports' counters, four to a line, by name. */
static void
table_ports(FILE *out, const struct gfr_stats_view *v)
{
    fprintf(out, "\nports: %u (the provider's hw_counters)\n", v->nports);
    for (unsigned i = 0; i < v->nports; i++) {
        const struct gfr_port_counters *pc = &v->ports[i];

        fprintf(out, "  %s port %u:%s\n", pc->device, pc->port,
                pc->n ? "" : " no counters (the provider keeps none)");
        for (unsigned c = 0; c < pc->n; c++)
            fprintf(out, "%s%-28s %12" PRIu64 "%s", c % 4 ? "  " : "    ", pc->counter[c].name,
                    pc->counter[c].value, c % 4 == 3 || c + 1 == pc->n ? "\n" : "");
    }
}

int
gfr_stats_render_table(FILE *out, const struct gfr_stats_view *v)
{
    const struct gfr_pool_stats *p = v->pool;

    fprintf(out, "%s, pid %ld: %u engine%s\n", v->process, (long)v->pid, v->nengines,
            v->nengines == 1 ? "" : "s");
    for (unsigned i = 0; i < v->nengines; i++)
        table_engine(out, i, v->engines[i]);
    if (p) {
        fprintf(out, "\npool: threads %u (peak %u): running %u, spinning %u, sleeping %u, "
                     "blocked %u\n",
                p->threads, p->peak_threads, p->running, p->spinning, p->sleeping, p->blocked);
        fprintf(out, "  jobs: submitted %" PRIu64 ", run %" PRIu64 ", cancelled %" PRIu64
                     ", queued %" PRIu64 " (high %" PRIu64 ", normal %" PRIu64 ", low %" PRIu64
                     "); worker wake-ups %" PRIu64 "\n",
                p->submitted, p->executed, p->cancelled, p->queued,
                p->queued_by_prio[GFR_POOL_PRIO_HIGH], p->queued_by_prio[GFR_POOL_PRIO_NORMAL],
                p->queued_by_prio[GFR_POOL_PRIO_LOW], p->wakeups);
        fprintf(out, "  time in queue (1 job in %u): p50 %.1f us, p99 %.1f us, "
                     "p999 %.1f us\n",
                GFR_POOL_HIST_SAMPLE, us(gfr_hist_percentile(&p->queue_ns, 0.5)),
                us(gfr_hist_percentile(&p->queue_ns, 0.99)),
                us(gfr_hist_percentile(&p->queue_ns, 0.999)));
    }
    table_ports(out, v);
    return ferror(out) ? -EIO : 0;
}
