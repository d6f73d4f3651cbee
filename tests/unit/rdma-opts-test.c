/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Engine options: defaults, every key, and the messages for bad values.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include <cmocka.h>

#include "gfr_rdma_opts.h"

static void
test_defaults_are_consistent(void **state)
{
    struct gfr_rdma_opts opts;
    char why[128] = "";

    gfr_rdma_opts_init(&opts);
    assert_int_equal(gfr_rdma_opts_check(&opts, why, sizeof(why)), 0);
    assert_int_equal(opts.poll_mode, GFR_POLL_ADAPTIVE);
    assert_int_equal(opts.dispatch, GFR_DISPATCH_DIRECT);
    assert_int_equal(opts.reply_spin_max_us, 10000);
    assert_int_equal(opts.receive_queue, GFR_RQ_AUTO);
    assert_int_equal(opts.inline_max, 8192);
    assert_int_equal(opts.gid_index, -1);
}

static void
test_every_key_parses(void **state)
{
    struct gfr_rdma_opts o;
    char why[128];

    gfr_rdma_opts_init(&o);
    assert_int_equal(gfr_rdma_opts_set(&o, "poll-mode", "busy", why, sizeof(why)), 0);
    assert_int_equal(o.poll_mode, GFR_POLL_BUSY);
    assert_int_equal(gfr_rdma_opts_set(&o, "poll-mode", "event", why, sizeof(why)), 0);
    assert_int_equal(o.poll_mode, GFR_POLL_EVENT);
    assert_int_equal(gfr_rdma_opts_set(&o, "spin-us", "200", why, sizeof(why)), 0);
    assert_int_equal(o.spin_us, 200);
    assert_int_equal(o.spin_max_us, 2000);
    assert_int_equal(gfr_rdma_opts_set(&o, "spin-max-us", "5000", why, sizeof(why)), 0);
    assert_int_equal(o.spin_max_us, 5000);
    assert_int_equal(gfr_rdma_opts_set(&o, "pollers", "2", why, sizeof(why)), 0);
    assert_int_equal(o.pollers, 2);
    assert_int_equal(gfr_rdma_opts_set(&o, "dispatch", "inline", why, sizeof(why)), 0);
    assert_int_equal(o.dispatch, GFR_DISPATCH_INLINE);
    assert_int_equal(gfr_rdma_opts_set(&o, "receive-queue", "per-connection", why,
                                       sizeof(why)), 0);
    assert_int_equal(o.receive_queue, GFR_RQ_PER_CONN);
    assert_int_equal(gfr_rdma_opts_set(&o, "receive-queue", "srq", why, sizeof(why)), 0);
    assert_int_equal(o.receive_queue, GFR_RQ_SRQ);
    assert_int_equal(gfr_rdma_opts_set(&o, "credits", "128", why, sizeof(why)), 0);
    assert_int_equal(o.credits, 128);
    assert_int_equal(gfr_rdma_opts_set(&o, "inline-max", "8K", why, sizeof(why)), 0);
    assert_int_equal(o.inline_max, 8192);
    assert_int_equal(gfr_rdma_opts_set(&o, "max-msg", "16M", why, sizeof(why)), 0);
    assert_int_equal(o.max_msg, 16 << 20);
    assert_int_equal(gfr_rdma_opts_set(&o, "segment-size", "256k", why, sizeof(why)), 0);
    assert_int_equal(o.segment_size, 256 << 10);
    assert_int_equal(gfr_rdma_opts_set(&o, "rdma-depth", "8", why, sizeof(why)), 0);
    assert_int_equal(gfr_rdma_opts_set(&o, "connect-timeout-ms", "2000", why, sizeof(why)), 0);
    assert_int_equal(o.connect_timeout_ms, 2000);
    assert_int_equal(gfr_rdma_opts_set(&o, "keepalive-ms", "0", why, sizeof(why)), 0);
    assert_int_equal(o.keepalive_ms, 0);
    assert_int_equal(gfr_rdma_opts_set(&o, "keepalive-ms", "3600001", why, sizeof(why)),
                     -EINVAL);
    assert_int_equal(gfr_rdma_opts_set(&o, "qp-timeout", "18", why, sizeof(why)), 0);
    assert_int_equal(o.qp_timeout, 18);
    assert_int_equal(gfr_rdma_opts_set(&o, "retry-count", "3", why, sizeof(why)), 0);
    assert_int_equal(gfr_rdma_opts_set(&o, "rnr-retry", "0", why, sizeof(why)), 0);
    assert_int_equal(o.rnr_retry, 0);
    assert_int_equal(gfr_rdma_opts_set(&o, "port", "2", why, sizeof(why)), 0);
    assert_int_equal(gfr_rdma_opts_set(&o, "gid-index", "3", why, sizeof(why)), 0);
    assert_int_equal(o.gid_index, 3);
    assert_int_equal(gfr_rdma_opts_set(&o, "device", "rxe0", why, sizeof(why)), 0);
    assert_string_equal(o.device, "rxe0");
    assert_int_equal(gfr_rdma_opts_check(&o, why, sizeof(why)), 0);
}

static void
expect_bad(const char *key, const char *value, int err, const char *message)
{
    struct gfr_rdma_opts o;
    char why[160] = "";

    gfr_rdma_opts_init(&o);
    assert_int_equal(gfr_rdma_opts_set(&o, key, value, why, sizeof(why)), err);
    assert_string_equal(why, message);
}

static void
test_bad_values_name_the_option_and_the_range(void **state)
{
    expect_bad("poll-mode", "spin", -EINVAL,
               "poll-mode: 'spin' is not one of busy, adaptive, event");
    expect_bad("dispatch", "threads", -EINVAL,
               "dispatch: 'threads' is not one of pool, inline, direct");
    expect_bad("receive-queue", "shared", -EINVAL,
               "receive-queue: 'shared' is not one of srq, per-connection, auto");
    expect_bad("credits", "1", -EINVAL,
               "credits: '1' is not a whole number from 2 to 4096");
    expect_bad("credits", "12x", -EINVAL,
               "credits: '12x' is not a whole number from 2 to 4096");
    expect_bad("spin-max-us", "1000001", -EINVAL,
               "spin-max-us: '1000001' is not a whole number from 0 to 1000000");
    expect_bad("retry-count", "8", -EINVAL,
               "retry-count: '8' is not a whole number from 0 to 7");
    expect_bad("inline-max", "1G", -EINVAL,
               "inline-max: '1G' is not a whole number from 256 to 16777216 (K and M suffixes allowed)");
    expect_bad("gid-index", "-2", -EINVAL,
               "gid-index: '-2' is not a whole number from -1 to 255");
    expect_bad("credits", "", -EINVAL,
               "credits: '' is not a whole number from 2 to 4096");
    expect_bad("no-such-option", "1", -ENOENT, "unknown option 'no-such-option'");
}

static void
test_relations_are_checked(void **state)
{
    struct gfr_rdma_opts o;
    char why[160] = "";

    gfr_rdma_opts_init(&o);
    o.max_msg = 1024;
    assert_int_equal(gfr_rdma_opts_check(&o, why, sizeof(why)), -EINVAL);
    assert_string_equal(why, "max-msg (1024) is smaller than inline-max (8192)");
    gfr_rdma_opts_init(&o);
    o.segment_size = 8 << 20;
    assert_int_equal(gfr_rdma_opts_check(&o, why, sizeof(why)), -EINVAL);
    assert_string_equal(why, "segment-size (8388608) is larger than max-msg (4194304)");
}

/* Writes value straight into key's field, as a caller of the struct may;
 * false when this test does not know the key. */
static bool
poke(struct gfr_rdma_opts *o, const char *key, long long value)
{
    static const struct {
        const char *key;
        size_t offset;
        size_t width;
    } fields[] = {
#define F(k, f) {k, offsetof(struct gfr_rdma_opts, f), sizeof(((struct gfr_rdma_opts *)0)->f)}
        F("poll-mode", poll_mode), F("spin-us", spin_us), F("spin-max-us", spin_max_us),
        F("reply-spin-max-us", reply_spin_max_us),
        F("pollers", pollers), F("dispatch", dispatch), F("receive-queue", receive_queue),
        F("credits", credits), F("inline-max", inline_max), F("max-msg", max_msg),
        F("segment-size", segment_size), F("copy-max", copy_max), F("rdma-depth", rdma_depth),
        F("connect-timeout-ms", connect_timeout_ms), F("keepalive-ms", keepalive_ms),
        F("qp-timeout", qp_timeout), F("retry-count", retry_count), F("rnr-retry", rnr_retry),
        F("port", port), F("gid-index", gid_index), F("latency-stats", latency_stats),
        F("rails", rails), F("rail-timeout-ms", rail_timeout_ms),
#undef F
    };

    for (size_t i = 0; i < sizeof(fields) / sizeof(fields[0]); i++) {
        if (strcmp(fields[i].key, key) != 0)
            continue;
        if (fields[i].width == 1)
            *((uint8_t *)o + fields[i].offset) = (uint8_t)value;
        else
            *(int32_t *)((char *)o + fields[i].offset) = (int32_t)value;
        return true;
    }
    return false;
}

/*
 * The table is the one source of ranges: gfr_rdma_opts_set refuses a value
 * just outside an option's range and takes its ends, and gfr_rdma_opts_check
 * refuses the same values written into the struct directly, naming the
 * option.
 */
static void
test_set_and_check_follow_the_table_ranges(void **state)
{
    const struct gfr_rdma_opt_info *info;
    struct gfr_rdma_opts o;
    char text[32], why[160];
    size_t n = 0;

    for (size_t i = 0; (info = gfr_rdma_opt_info(i)); i++) {
        if (info->kind == GFR_OPT_NAME || info->kind == GFR_OPT_ADDRESSES ||
            info->kind == GFR_OPT_RAILS)
            continue;
        if (info->kind == GFR_OPT_CHOICE) {
            long long nchoices = 0;

            while (info->choices[nchoices])
                nchoices++;
            gfr_rdma_opts_init(&o);
            assert_true(poke(&o, info->key, nchoices));
            assert_int_equal(gfr_rdma_opts_check(&o, why, sizeof(why)), -EINVAL);
            assert_true(strncmp(why, info->key, strlen(info->key)) == 0);
            n++;
            continue;
        }
        const long long outside[] = {info->min - 1, info->max + 1};
        const long long ends[] = {info->min, info->max};

        for (size_t k = 0; k < 2; k++) {
            long long v = outside[k];

            gfr_rdma_opts_init(&o);
            snprintf(text, sizeof(text), "%lld", v);
            assert_int_equal(gfr_rdma_opts_set(&o, info->key, text, why, sizeof(why)), -EINVAL);
            if (!poke(&o, info->key, v))
                fail_msg("the test knows no field for option %s", info->key);
            /* a 1-byte field cannot hold 256: what it holds must be refused too */
            assert_int_equal(gfr_rdma_opts_check(&o, why, sizeof(why)), -EINVAL);
            assert_true(strncmp(why, info->key, strlen(info->key)) == 0);
        }
        for (size_t k = 0; k < 2; k++) {
            gfr_rdma_opts_init(&o);
            snprintf(text, sizeof(text), "%lld", ends[k]);
            assert_int_equal(gfr_rdma_opts_set(&o, info->key, text, why, sizeof(why)), 0);
        }
        n++;
    }
    assert_int_equal(n, 22); /* every option but device, rail-addresses and rails */
}

/* A valid value of info's option other than its default, as text. */
static void
another_value(const struct gfr_rdma_opt_info *info, char *text, size_t len)
{
    if (info->kind == GFR_OPT_NAME)
        snprintf(text, len, "mlx5_0");
    else if (info->kind == GFR_OPT_ADDRESSES)
        snprintf(text, len, "10.0.0.1");
    else if (info->kind == GFR_OPT_RAILS)
        snprintf(text, len, "auto");
    else if (info->kind == GFR_OPT_CHOICE)
        snprintf(text, len, "%s",
                 strcmp(info->choices[0], info->default_value) ? info->choices[0]
                                                               : info->choices[1]);
    else
        snprintf(text, len, "%lld",
                 atoll(info->default_value) == info->min ? info->max : info->min);
}

/*
 * A connection may differ from its engine on exactly the options the table
 * scopes to connections: every other one is named as the conflict, and
 * inline-max only while receive buffers are shared (the shared queue has
 * one buffer size).
 */
static void
test_engine_conflicts_follow_the_scopes(void **state)
{
    const struct gfr_rdma_opt_info *info;
    struct gfr_rdma_opts engine, conn;
    char text[32];
    size_t engine_wide = 0;

    (void)state;
    for (int per_conn_receives = 0; per_conn_receives <= 1; per_conn_receives++) {
        for (size_t i = 0; (info = gfr_rdma_opt_info(i)); i++) {
            int wide = info->scope == GFR_OPT_ENGINE ||
                       (info->scope == GFR_OPT_ENGINE_IF_SHARED_RECEIVES && !per_conn_receives);

            gfr_rdma_opts_init(&engine);
            if (per_conn_receives)
                assert_int_equal(gfr_rdma_opts_set(&engine, "receive-queue", "per-connection",
                                                   NULL, 0), 0);
            conn = engine;
            assert_null(gfr_rdma_opts_engine_conflict(&engine, &conn));
            another_value(info, text, sizeof(text));
            assert_int_equal(gfr_rdma_opts_set(&conn, info->key, text, NULL, 0), 0);
            if (wide) {
                assert_string_equal(gfr_rdma_opts_engine_conflict(&engine, &conn), info->key);
                engine_wide++;
            } else {
                assert_null(gfr_rdma_opts_engine_conflict(&engine, &conn));
            }
        }
    }
    /* poll-mode, spin-us, spin-max-us, pollers, dispatch, receive-queue,
     * latency-stats, rails, rail-addresses twice; inline-max once */
    assert_int_equal(engine_wide, 9 + 9 + 1);
}

/* rail-addresses: numeric IPv4 and IPv6 addresses, at most four, and a
 * refusal that says what the list must be. */
static void
test_rail_addresses_parse(void **state)
{
    static const char *const bad[] = {
        "10.0.0.1,", ",10.0.0.1", "10.0.0.1,,10.0.0.2", "server1", "10.0.0.256",
        "1.1.1.1,2.2.2.2,3.3.3.3,4.4.4.4,5.5.5.5", "10.0.0.1 ,10.0.0.2",
    };
    struct sockaddr_storage got[GFR_RDMA_MAX_RAIL_ADDRS];
    struct gfr_rdma_opts o, fresh;
    char why[200];

    (void)state;
    gfr_rdma_opts_init(&o);
    assert_int_equal(gfr_rdma_opts_rails(&o), GFR_RAILS_OFF);
    assert_int_equal(gfr_rdma_opts_rail_addresses(&o, got, 4), 0);
    assert_int_equal(gfr_rdma_opts_set(&o, "rail-addresses", "10.99.0.2,fd00::2", why,
                                       sizeof(why)), 0);
    assert_int_equal(gfr_rdma_opts_rail_addresses(&o, got, 4), 2);
    assert_int_equal(got[0].ss_family, AF_INET);
    assert_int_equal(((struct sockaddr_in *)&got[0])->sin_addr.s_addr, htonl(0x0a630002));
    assert_int_equal(got[1].ss_family, AF_INET6);
    assert_int_equal(gfr_rdma_opts_check(&o, why, sizeof(why)), 0);
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        struct gfr_rdma_opts before = o;

        if (gfr_rdma_opts_set(&o, "rail-addresses", bad[i], why, sizeof(why)) != -EINVAL)
            fail_msg("rail-addresses '%s' was taken", bad[i]);
        assert_non_null(strstr(why, "rail-addresses: '"));
        assert_memory_equal(&o, &before, sizeof(o));
    }
    /* a shorter list after a longer one compares equal to itself set afresh */
    assert_int_equal(gfr_rdma_opts_set(&o, "rail-addresses", "10.0.0.1", NULL, 0), 0);
    gfr_rdma_opts_init(&fresh);
    assert_int_equal(gfr_rdma_opts_set(&fresh, "rail-addresses", "10.0.0.1", NULL, 0), 0);
    assert_null(gfr_rdma_opts_engine_conflict(&fresh, &o));
}

/* rails: off, auto, or at most four device ports DEV[:PORT], each once,
 * the port 1 when left out; a refusal says what the option takes and
 * leaves the options as they were. */
static void
test_rail_devices_parse(void **state)
{
    static const char *const bad[] = {
        "", "on", "rxe0,", ",rxe0", "rxe0,,rxe2", "rxe0:", "rxe0:0", "rxe0:256", "rxe0:1:2",
        "rxe0:x", "rxe 0", "rxe0;rxe2", "rxe0,rxe0:1", "a,b,c,d,e", "mlx5_0:+1", "rxe0,auto",
    };
    struct gfr_rail_device got[GFR_RDMA_MAX_RAIL_DEVICES];
    struct gfr_rdma_opts o;
    char why[240];

    (void)state;
    gfr_rdma_opts_init(&o);
    assert_int_equal(gfr_rdma_opts_rail_devices(&o, got, 4), 0);
    assert_int_equal(gfr_rdma_opts_set(&o, "rails", "auto", why, sizeof(why)), 0);
    assert_int_equal(gfr_rdma_opts_rails(&o), GFR_RAILS_AUTO);
    assert_int_equal(gfr_rdma_opts_rail_devices(&o, got, 4), 0);
    assert_int_equal(gfr_rdma_opts_set(&o, "rails", "mlx5_0:2,rxe-1.a,rxe0:1,mlx5_0:1", why,
                                       sizeof(why)), 0);
    assert_int_equal(gfr_rdma_opts_rails(&o), GFR_RAILS_DEVICES);
    assert_int_equal(gfr_rdma_opts_check(&o, why, sizeof(why)), 0);
    assert_int_equal(gfr_rdma_opts_rail_devices(&o, got, 4), 4);
    assert_string_equal(got[0].name, "mlx5_0");
    assert_int_equal(got[0].port, 2);
    assert_string_equal(got[1].name, "rxe-1.a");
    assert_int_equal(got[1].port, 1);
    assert_string_equal(got[2].name, "rxe0");
    assert_int_equal(got[2].port, 1);
    assert_int_equal(got[3].port, 1);
    /* fewer room than ports: how many there are, the first ones filled */
    memset(got, 0, sizeof(got));
    assert_int_equal(gfr_rdma_opts_rail_devices(&o, got, 1), 4);
    assert_string_equal(got[0].name, "mlx5_0");
    assert_int_equal(got[1].port, 0);
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        struct gfr_rdma_opts before = o;

        if (gfr_rdma_opts_set(&o, "rails", bad[i], why, sizeof(why)) != -EINVAL)
            fail_msg("rails '%s' was taken", bad[i]);
        assert_non_null(strstr(why, "rails: '"));
        assert_non_null(strstr(why, "DEV[:PORT]"));
        assert_memory_equal(&o, &before, sizeof(o));
    }
    /* text written into the struct directly is checked too, and reads as off */
    snprintf(o.rails, sizeof(o.rails), "rxe0:0");
    assert_int_equal(gfr_rdma_opts_check(&o, why, sizeof(why)), -EINVAL);
    assert_true(strncmp(why, "rails", 5) == 0);
    assert_int_equal(gfr_rdma_opts_rails(&o), GFR_RAILS_OFF);
    assert_int_equal(gfr_rdma_opts_rail_devices(&o, got, 4), -EINVAL);
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_defaults_are_consistent),
        cmocka_unit_test(test_every_key_parses),
        cmocka_unit_test(test_bad_values_name_the_option_and_the_range),
        cmocka_unit_test(test_relations_are_checked),
        cmocka_unit_test(test_set_and_check_follow_the_table_ranges),
        cmocka_unit_test(test_engine_conflicts_follow_the_scopes),
        cmocka_unit_test(test_rail_addresses_parse),
        cmocka_unit_test(test_rail_devices_parse),
    };

    return cmocka_run_group_tests_name("rdma-opts", tests, NULL, NULL);
}
