/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * lib/stats/stats-openmetrics.c: a view with known numbers is rendered, parsed
 * by python3-prometheus-client's OpenMetrics parser (openmetrics-dump,
 * which fails on text the format forbids), and the parsed samples must
 * carry the view's values: counters as _total with units in their names,
 * nanoseconds as exact seconds, label values escaped, histogram buckets
 * cumulative up to +Inf = count, a still-resolving connection left out,
 * a port's hw_counters by the provider's names.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "gfr_hist.h"
#include "gfr_stats_render.h"

#ifndef OPENMETRICS_DUMP
#error "OPENMETRICS_DUMP: the path of tests/unit/openmetrics-dump"
#endif

struct rendered {
    char *text; /* the renderer's output */
    char *dump; /* openmetrics-dump's lines */
    int dump_status;
};

static char *
read_all(FILE *f)
{
    size_t cap = 1 << 16, len = 0, n;
    char *buf = malloc(cap);

    assert_non_null(buf);
    while ((n = fread(buf + len, 1, cap - len - 1, f)) > 0) {
        len += n;
        if (len + 1 == cap) {
            cap *= 2;
            buf = realloc(buf, cap);
            assert_non_null(buf);
        }
    }
    buf[len] = '\0';
    return buf;
}

/* Renders view, and parses it with openmetrics-dump. */
static void
render(const struct gfr_stats_view *view, struct rendered *r)
{
    char path[] = "/tmp/gfr-openmetrics-XXXXXX";
    char cmd[512];
    int fd = mkstemp(path);
    FILE *out, *p;

    assert_true(fd >= 0);
    out = fdopen(fd, "w+");
    assert_non_null(out);
    assert_int_equal(gfr_stats_render_openmetrics(out, view), 0);
    rewind(out);
    r->text = read_all(out);
    fclose(out);
    snprintf(cmd, sizeof(cmd), "%s %s", OPENMETRICS_DUMP, path);
    p = popen(cmd, "r");
    assert_non_null(p);
    r->dump = read_all(p);
    r->dump_status = pclose(p);
    unlink(path);
}

static void
rendered_free(struct rendered *r)
{
    free(r->text);
    free(r->dump);
}

/* A line of the dump that starts with prefix. */
static int
dumped(const struct rendered *r, const char *line)
{
    const char *at = r->dump;
    size_t n = strlen(line);

    while ((at = strstr(at, line)) != NULL) {
        if ((at == r->dump || at[-1] == '\n') && (at[n] == '\n' || at[n] == '\0'))
            return 1;
        at += n;
    }
    print_message("not in the parsed samples: %s\n", line);
    return 0;
}

/* The process's labels, as the parser gives them back (sorted by name,
 * so other labels may stand between the two). */
#define PID "pid=4242"
#define PROC "process=gluster\"fs\\d"
#define CONN "engine=0,local=10.99.0.1:24008,peer=10.99.0.2:40001," PID "," PROC ",role=server"

static void
test_a_known_view_parses_with_its_values(void **state)
{
    static struct gfr_rdma_conn_info conns[2];
    static struct gfr_rdma_poller_info pollers[1];
    static struct gfr_rdma_snapshot snap;
    static struct gfr_pool_stats pool;
    static struct gfr_port_counters port = {.device = "rxe0", .port = 1, .n = 1};
    struct gfr_rdma_snapshot *engines[1] = {&snap};
    struct gfr_stats_view view = {.process = "gluster\"fs\\d",
                                  .pid = 4242,
                                  .nengines = 1,
                                  .engines = engines,
                                  .pool = &pool,
                                  .nports = 1,
                                  .ports = &port};
    static const struct {
        const char *le, *count;
    } buckets[] = {
        {"0.000001023", "2.0"}, /* 500 and 1,023 ns */
        {"0.000002047", "3.0"}, /* and 1,024 */
        {"0.002097151", "3.0"},
        {"0.004194303", "4.0"}, /* and 3 ms */
        {"+Inf", "4.0"},
    };
    struct gfr_hist live;
    struct rendered r;

    (void)state;
    snprintf(conns[0].peer, sizeof(conns[0].peer), "10.99.0.2:40001");
    snprintf(conns[0].local, sizeof(conns[0].local), "10.99.0.1:24008");
    snprintf(conns[0].device, sizeof(conns[0].device), "rxe0");
    conns[0].state = "ESTABLISHED";
    conns[0].is_server = 1;
    conns[0].credits_window = 64;
    conns[0].stats.sent = 7;
    conns[0].stats.bytes_received = 123456;
    conns[0].stats.registration_ns = 1500000001; /* 1.500000001 s */
    conns[0].rtt_mean_ns = 250000;
    conns[1].state = "RESOLVING_ADDR"; /* no addresses yet: left out */
    conns[1].stats.sent = 99;
    snprintf(pollers[0].device, sizeof(pollers[0].device), "rxe0");
    pollers[0].index = 1;
    pollers[0].sleeps = 5;
    pollers[0].asleep_ns = 2000000000;
    snap.poll_mode = "adaptive";
    snap.dispatch = "direct";
    snap.latency_stats = 1;
    snap.nconns = 2;
    snap.conns = conns;
    snap.npollers = 1;
    snap.pollers = pollers;
    snap.untraced = 3;
    memset(&live, 0, sizeof(live));
    gfr_hist_add(&live, 500);      /* below the first bound, 1,023 ns */
    gfr_hist_add(&live, 1023);     /* on it */
    gfr_hist_add(&live, 1024);     /* just above */
    gfr_hist_add(&live, 3000000);  /* 3 ms */
    gfr_hist_snapshot(&live, &snap.stage[GFR_STAGE_CALL]);
    snprintf(port.counter[0].name, sizeof(port.counter[0].name), "retry_exceeded_err");
    port.counter[0].value = 17;
    pool.threads = 2;
    pool.submitted = 10;
    pool.queued_by_prio[GFR_POOL_PRIO_LOW] = 4;
    pool.sleeping = 1;
    pool.cancelled = 6;

    render(&view, &r);
    assert_int_equal(r.dump_status, 0);
    assert_non_null(strstr(r.text, "\n# EOF\n"));
    assert_true(dumped(&r, "glusterfs_rdma_messages_sent counter - "
                           "glusterfs_rdma_messages_sent_total{" CONN "} 7.0"));
    assert_true(dumped(&r, "glusterfs_rdma_received_bytes counter bytes "
                           "glusterfs_rdma_received_bytes_total{" CONN "} 123456.0"));
    assert_true(dumped(&r, "glusterfs_rdma_registration_seconds counter seconds "
                           "glusterfs_rdma_registration_seconds_total{" CONN "} 1.500000001"));
    assert_true(dumped(&r, "glusterfs_rdma_credits_window gauge - "
                           "glusterfs_rdma_credits_window{" CONN "} 64.0"));
    assert_true(dumped(&r, "glusterfs_rdma_rtt_mean_seconds gauge seconds "
                           "glusterfs_rdma_rtt_mean_seconds{" CONN "} 0.00025"));
    assert_true(dumped(&r, "glusterfs_rdma_connection info - glusterfs_rdma_connection_info{"
                           "device=rxe0,engine=0,local=10.99.0.1:24008,peer=10.99.0.2:40001,"
                           PID ",poller=0," PROC ",role=server,state=ESTABLISHED} 1.0"));
    /* The resolving connection's 99 is nowhere. */
    assert_null(strstr(r.dump, "} 99.0"));
    assert_null(strstr(r.dump, "RESOLVING_ADDR"));
    assert_true(dumped(&r, "glusterfs_rdma_poller_sleeps counter - glusterfs_rdma_poller_sleeps_total{"
                           "device=rxe0,engine=0," PID ",poller=1," PROC "} 5.0"));
    assert_true(dumped(&r, "glusterfs_rdma_poller_asleep_seconds counter seconds "
                           "glusterfs_rdma_poller_asleep_seconds_total{device=rxe0,engine=0,"
                           PID ",poller=1," PROC "} 2.0"));
    assert_true(dumped(&r, "glusterfs_rdma_engine info - glusterfs_rdma_engine_info{dispatch=direct,"
                           "engine=0,latency_stats=on," PID ",poll_mode=adaptive," PROC "} 1.0"));
    assert_true(dumped(&r, "glusterfs_rdma_untraced_calls counter - "
                           "glusterfs_rdma_untraced_calls_total{engine=0," PID "," PROC "} 3.0"));
    /* The histogram: cumulative, exact at its bounds (2^k - 1 ns). */
    for (size_t i = 0; i < sizeof(buckets) / sizeof(buckets[0]); i++) {
        char line[256];

        snprintf(line, sizeof(line),
                 "glusterfs_rdma_stage_seconds histogram seconds glusterfs_rdma_stage_seconds_bucket"
                 "{engine=0,le=%s," PID "," PROC ",stage=call} %s",
                 buckets[i].le, buckets[i].count);
        assert_true(dumped(&r, line));
    }
    assert_true(dumped(&r, "glusterfs_rdma_stage_seconds histogram seconds "
                           "glusterfs_rdma_stage_seconds_count{engine=0," PID "," PROC ",stage=call} 4.0"));
    assert_true(dumped(&r, "glusterfs_rdma_stage_seconds histogram seconds "
                           "glusterfs_rdma_stage_seconds_sum{engine=0," PID "," PROC
                           ",stage=call} 0.003002547"));
    assert_true(dumped(&r, "glusterfs_rdma_pool_threads gauge - glusterfs_rdma_pool_threads{" PID
                           "," PROC "} 2.0"));
    assert_true(dumped(&r, "glusterfs_rdma_pool_jobs_submitted counter - "
                           "glusterfs_rdma_pool_jobs_submitted_total{" PID "," PROC "} 10.0"));
    assert_true(dumped(&r, "glusterfs_rdma_pool_workers gauge - "
                           "glusterfs_rdma_pool_workers{" PID "," PROC ",state=sleeping} 1.0"));
    assert_true(dumped(&r, "glusterfs_rdma_pool_jobs_ended counter - "
                           "glusterfs_rdma_pool_jobs_ended_total{outcome=cancelled," PID "," PROC
                           "} 6.0"));
    assert_true(dumped(&r, "glusterfs_rdma_pool_queued_jobs gauge - "
                           "glusterfs_rdma_pool_queued_jobs{class=low," PID "," PROC "} 4.0"));
    assert_true(dumped(&r, "glusterfs_rdma_pool_queue_seconds histogram seconds "
                           "glusterfs_rdma_pool_queue_seconds_count{" PID "," PROC "} 0.0"));
    assert_true(dumped(&r, "glusterfs_rdma_port_hw_counter unknown - glusterfs_rdma_port_hw_counter{"
                           "counter=retry_exceeded_err,device=rxe0," PID ",port=1," PROC "} 17.0"));
    rendered_free(&r);
}

static void
test_no_engine_and_no_pool_is_still_openmetrics(void **state)
{
    struct gfr_stats_view view = {.process = "glusterfs", .pid = 1};
    struct rendered r;

    (void)state;
    render(&view, &r);
    assert_int_equal(r.dump_status, 0);
    assert_string_equal(r.dump, "");
    assert_non_null(strstr(r.text, "# EOF\n"));
    rendered_free(&r);
}

static void
test_the_checker_refuses_what_is_not_openmetrics(void **state)
{
    char cmd[512];
    FILE *p;
    char *out;

    (void)state;
    /* A counter sample without _total, and no # EOF: the parser must
     * refuse it, or the tests above prove nothing. */
    snprintf(cmd, sizeof(cmd),
             "printf '# TYPE x counter\\nx 1\\n' | %s 2>/dev/null; echo \"rc=$?\"",
             OPENMETRICS_DUMP);
    p = popen(cmd, "r");
    assert_non_null(p);
    out = read_all(p);
    pclose(p);
    assert_non_null(strstr(out, "rc=1"));
    free(out);
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_a_known_view_parses_with_its_values),
        cmocka_unit_test(test_no_engine_and_no_pool_is_still_openmetrics),
        cmocka_unit_test(test_the_checker_refuses_what_is_not_openmetrics),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
