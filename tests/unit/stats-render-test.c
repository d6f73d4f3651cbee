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

/* The view every format is rendered from, with its numbers. */
struct known {
    struct gfr_rdma_conn_info conns[2];
    struct gfr_rdma_poller_info pollers[1];
    struct gfr_rdma_snapshot snap;
    struct gfr_pool_stats pool;
    struct gfr_port_counters port;
    struct gfr_rdma_snapshot *engines[1];
    struct gfr_stats_view view;
};

static struct known *
known_view(void)
{
    static struct known k;
    struct gfr_hist live;

    memset(&k, 0, sizeof(k));
    k.engines[0] = &k.snap;
    k.view = (struct gfr_stats_view){.process = "gluster\"fs\\d",
                                     .pid = 4242,
                                     .nengines = 1,
                                     .engines = k.engines,
                                     .pool = &k.pool,
                                     .nports = 1,
                                     .ports = &k.port};
    snprintf(k.conns[0].peer, sizeof(k.conns[0].peer), "10.99.0.2:40001");
    snprintf(k.conns[0].local, sizeof(k.conns[0].local), "10.99.0.1:24008");
    snprintf(k.conns[0].device, sizeof(k.conns[0].device), "rxe0");
    k.conns[0].state = "ESTABLISHED";
    k.conns[0].is_server = 1;
    k.conns[0].credits_window = 64;
    k.conns[0].stats.sent = 7;
    k.conns[0].stats.bytes_received = 123456;
    k.conns[0].stats.registration_ns = 1500000001; /* 1.500000001 s */
    k.conns[0].rtt_mean_ns = 250000;
    k.conns[1].state = "RESOLVING_ADDR"; /* no addresses yet */
    k.conns[1].stats.sent = 99;
    snprintf(k.pollers[0].device, sizeof(k.pollers[0].device), "rxe0");
    k.pollers[0].index = 1;
    k.pollers[0].sleeps = 5;
    k.pollers[0].slow_handlers = 11;
    k.pollers[0].asleep_ns = 2000000000;
    k.snap.poll_mode = "adaptive";
    k.snap.dispatch = "direct";
    k.snap.latency_stats = 1;
    k.snap.nconns = 2;
    k.snap.conns = k.conns;
    k.snap.npollers = 1;
    k.snap.pollers = k.pollers;
    k.snap.untraced = 3;
    memset(&live, 0, sizeof(live));
    gfr_hist_add(&live, 500);     /* below the first bound, 1,023 ns */
    gfr_hist_add(&live, 1023);    /* on it */
    gfr_hist_add(&live, 1024);    /* just above */
    gfr_hist_add(&live, 3000000); /* 3 ms */
    gfr_hist_snapshot(&live, &k.snap.stage[GFR_STAGE_CALL]);
    gfr_hist_snapshot(&live, &k.pool.queue_ns);
    snprintf(k.port.device, sizeof(k.port.device), "rxe0");
    k.port.port = 1;
    k.port.n = 1;
    snprintf(k.port.counter[0].name, sizeof(k.port.counter[0].name), "retry_exceeded_err");
    k.port.counter[0].value = 17;
    k.pool.threads = 2;
    k.pool.submitted = 10;
    k.pool.queued_by_prio[GFR_POOL_PRIO_LOW] = 4;
    k.pool.sleeping = 1;
    k.pool.cancelled = 6;
    return &k;
}

static void
test_a_known_view_parses_with_its_values(void **state)
{
    static const struct {
        const char *le, *count;
    } buckets[] = {
        {"0.000001023", "2.0"}, /* 500 and 1,023 ns */
        {"0.000002047", "3.0"}, /* and 1,024 */
        {"0.002097151", "3.0"},
        {"0.004194303", "4.0"}, /* and 3 ms */
        {"+Inf", "4.0"},
    };
    struct rendered r;

    (void)state;
    render(&known_view()->view, &r);
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
                           "glusterfs_rdma_pool_queue_seconds_count{" PID "," PROC "} 4.0"));
    assert_true(dumped(&r, "glusterfs_rdma_poller_slow_handlers counter - "
                           "glusterfs_rdma_poller_slow_handlers_total{device=rxe0,engine=0," PID
                           ",poller=1," PROC "} 11.0"));
    assert_true(dumped(&r, "glusterfs_rdma_port_hw_counter unknown - glusterfs_rdma_port_hw_counter{"
                           "counter=retry_exceeded_err,device=rxe0," PID ",port=1," PROC "} 17.0"));
    rendered_free(&r);
}

/* Renders view with fn into a file and runs python3 on it with the given
 * program (the file is sys.argv[1]): the program's output. */
static char *
python_on(int (*fn)(FILE *, const struct gfr_stats_view *), const struct gfr_stats_view *view,
          const char *program)
{
    char path[] = "/tmp/gfr-render-XXXXXX";
    char cmd[2048];
    int fd = mkstemp(path);
    FILE *out, *p;
    char *text;

    assert_true(fd >= 0);
    out = fdopen(fd, "w");
    assert_non_null(out);
    assert_int_equal(fn(out, view), 0);
    fclose(out);
    snprintf(cmd, sizeof(cmd), "/usr/bin/python3 -c '%s' %s 2>&1", program, path);
    p = popen(cmd, "r");
    assert_non_null(p);
    text = read_all(p);
    pclose(p);
    unlink(path);
    return text;
}

static void
test_the_json_parses_with_its_values(void **state)
{
    char *out;

    (void)state;
    out = python_on(gfr_stats_render_json, &known_view()->view,
                    "import json, sys\n"
                    "j = json.load(open(sys.argv[1]))\n"
                    "e = j[\"engines\"][0]\n"
                    "c = [c for c in e[\"connections\"] if c[\"state\"] == \"ESTABLISHED\"][0]\n"
                    "p = e[\"pollers\"][0]\n"
                    "q = j[\"pool\"][\"queue_ns\"]\n"
                    "print(j[\"process\"], j[\"pid\"], c[\"messages\"][\"sent\"], "
                    "p[\"slow_handlers\"], q[\"sample\"], q[\"count\"], q[\"max_ns\"], "
                    "j[\"ports\"][0][\"device\"], j[\"ports\"][0][\"port\"], "
                    "j[\"ports\"][0][\"hw_counters\"][\"retry_exceeded_err\"])\n");
    assert_string_equal(out, "gluster\"fs\\d 4242 7 11 16 4 3000000 rxe0 1 17\n");
    free(out);
}

static void
test_the_table_shows_the_same_numbers(void **state)
{
    char *out;

    (void)state;
    out = python_on(gfr_stats_render_table, &known_view()->view,
                    "import re, sys\n"
                    "t = open(sys.argv[1]).read()\n"
                    "print(\"ports: 1\" in t, "
                    "bool(re.search(r\"retry_exceeded_err +17\", t)), "
                    "bool(re.search(r\"^  rxe0 +1(?: +[0-9.]+){11} +11 \", t, re.M)))\n");
    assert_string_equal(out, "True True True\n");
    free(out);
}

/* A rail of a bundle (multi-rail) says so in every format, with its
 * failovers, resends and duplicates dropped; a connection outside any
 * bundle reads as before. */
static void
test_a_rail_names_its_bundle(void **state)
{
    struct known *k = known_view();
    struct rendered r;
    const char *line;
    char *out;

    (void)state;
    k->conns[0].bundle = 3;
    k->conns[0].rail = 1;
    k->conns[0].stats.failovers = 2;
    k->conns[0].stats.resends = 17;
    k->conns[0].stats.duplicates = 5;
    out = python_on(gfr_stats_render_json, &k->view,
                    "import json, sys\n"
                    "c = json.load(open(sys.argv[1]))[\"engines\"][0][\"connections\"]\n"
                    "f = c[0][\"failover\"]\n"
                    "print(c[0][\"bundle\"], c[0][\"rail\"], \"bundle\" in c[1],\n"
                    "      f[\"failovers\"], f[\"resends\"], f[\"duplicates\"], \"failover\" in c[1])\n");
    assert_string_equal(out, "3 1 False 2 17 5 False\n");
    free(out);
    out = python_on(gfr_stats_render_table, &k->view,
                    "import sys\n"
                    "print(\"rail 1 of bundle 3, on rxe0: failovers 2, resends 17, duplicates \"\n"
                    "      \"dropped 5\" in open(sys.argv[1]).read())\n");
    assert_string_equal(out, "True\n");
    free(out);
    render(&k->view, &r);
    assert_int_equal(r.dump_status, 0);
    assert_non_null(strstr(r.text, ",bundle=\"3\",rail=\"1\""));
    line = strstr(r.dump, "glusterfs_rdma_rail_resends counter - "
                          "glusterfs_rdma_rail_resends_total{bundle=3,");
    assert_non_null(line);
    line = strstr(line, "} ");
    assert_non_null(line);
    assert_memory_equal(line, "} 17.0\n", 7);
    rendered_free(&r);
}

/* The device ports rails = DEV[:PORT],... names: each with its state, and
 * its interface and address or what it lacks, in every format; an engine
 * without them reads as before. */
static void
test_named_rail_ports_show_up_or_why_not(void **state)
{
    struct known *k = known_view();
    struct rendered r;
    char *out;

    (void)state;
    out = python_on(gfr_stats_render_json, &k->view,
                    "import json, sys\n"
                    "print(\"rail_ports\" in json.load(open(sys.argv[1]))[\"engines\"][0])\n");
    assert_string_equal(out, "False\n");
    free(out);
    k->snap.nrail_ports = 2;
    k->snap.rail_ports[0] = (struct gfr_rdma_rail_port_info){
        .device = "rxe1", .port = 1, .up = 1, .netdev = "veth1", .address = "10.99.0.2/24"};
    k->snap.rail_ports[1] = (struct gfr_rdma_rail_port_info){
        .device = "mlx5_1", .port = 2, .why = "port 2 of mlx5_1 is \"DOWN\""};
    out = python_on(gfr_stats_render_json, &k->view,
                    "import json, sys\n"
                    "r = json.load(open(sys.argv[1]))[\"engines\"][0][\"rail_ports\"]\n"
                    "print(len(r), r[0][\"device\"], r[0][\"port\"], r[0][\"state\"], "
                    "r[0][\"netdev\"], r[0][\"address\"], \"why\" in r[0])\n"
                    "print(r[1][\"device\"], r[1][\"port\"], r[1][\"state\"], "
                    "len(r[1][\"netdev\"]), r[1][\"why\"], \"address\" in r[1])\n");
    assert_string_equal(out, "2 rxe1 1 up veth1 10.99.0.2/24 False\n"
                             "mlx5_1 2 down 0 port 2 of mlx5_1 is \"DOWN\" False\n");
    free(out);
    out = python_on(gfr_stats_render_table, &k->view,
                    "import sys\n"
                    "t = open(sys.argv[1]).read()\n"
                    "print(\"rail ports (transport.rdma.rails): 2\\n\" in t,\n"
                    "      \"  rxe1:1 up, on veth1, 10.99.0.2/24\\n\" in t,\n"
                    "      \"  mlx5_1:2 down: port 2 of mlx5_1 is \\\"DOWN\\\"\\n\" in t)\n");
    assert_string_equal(out, "True True True\n");
    free(out);
    render(&k->view, &r);
    assert_int_equal(r.dump_status, 0);
    assert_true(dumped(&r, "glusterfs_rdma_rail_port_up gauge - glusterfs_rdma_rail_port_up"
                           "{device=rxe1,engine=0," PID ",port=1," PROC "} 1.0"));
    assert_true(dumped(&r, "glusterfs_rdma_rail_port_up gauge - glusterfs_rdma_rail_port_up"
                           "{device=mlx5_1,engine=0," PID ",port=2," PROC "} 0.0"));
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
        cmocka_unit_test(test_the_json_parses_with_its_values),
        cmocka_unit_test(test_the_table_shows_the_same_numbers),
        cmocka_unit_test(test_a_rail_names_its_bundle),
        cmocka_unit_test(test_named_rail_ports_show_up_or_why_not),
        cmocka_unit_test(test_no_engine_and_no_pool_is_still_openmetrics),
        cmocka_unit_test(test_the_checker_refuses_what_is_not_openmetrics),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
