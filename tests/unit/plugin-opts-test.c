/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * rdma.so's volume options (rpc-transport-rdma/plugin-opts.c), read from
 * real GlusterFS dicts in a real GlusterFS context: the table's defaults
 * are the engine's, aliases and sizes reach the engine, and a bad value is
 * refused — by GlusterFS's own validation against the exported table, as
 * rpc_transport_load does, and by init's reading, with a message (init
 * logs it) that names the option and what it accepts; and the node's
 * file (node-conf.c) under the volfile's options, its bad lines refused by
 * file and line.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>
#include <glusterfs/api/glfs.h>

#include "gfr_plugin.h"
#include "node-conf.h"

static glfs_t *fs;

static int
setup(void **state)
{
    (void)state;
    fs = glfs_new("gfr-plugin-opts");
    return fs && glfs_set_logging(fs, "/dev/null", GF_LOG_NONE) == 0 ? 0 : -1;
}

static int
teardown(void **state)
{
    (void)state;
    glfs_fini(fs);
    return 0;
}

static dict_t *
dict_of(const char *const *kv)
{
    dict_t *d = dict_new();

    assert_non_null(d);
    for (; kv && kv[0]; kv += 2)
        assert_int_equal(dict_set_str(d, (char *)kv[0], (char *)kv[1]), 0);
    return d;
}

static void
test_table_defaults_are_the_engines(void **state)
{
    struct gfr_plugin_cfg cfg;
    struct gfr_rdma_opts want;
    char why[256];
    dict_t *d = dict_new();

    (void)state;
    for (volume_option_t *opt = options; opt->key[0]; opt++)
        if (opt->default_value)
            assert_int_equal(dict_set_str(d, (char *)opt->key[0], opt->default_value), 0);
    assert_int_equal(gfr_plugin_cfg_read(d, NULL, NULL, &cfg, why, sizeof(why)), 0);
    gfr_rdma_opts_init(&want);
    assert_memory_equal(&cfg.engine, &want, sizeof(want));
    assert_int_equal(cfg.listen_port, 24008);
    assert_int_equal(cfg.remote_port, 24008);
    assert_int_equal(cfg.family, AF_INET);
    dict_unref(d);

    /* and an empty dict gives the same */
    assert_int_equal(gfr_plugin_cfg_read(NULL, NULL, NULL, &cfg, why, sizeof(why)), 0);
    assert_memory_equal(&cfg.engine, &want, sizeof(want));
}

static const volume_option_t *
plugin_option(const char *engine_key)
{
    for (const volume_option_t *opt = options; opt->key[0]; opt++)
        if (strncmp(opt->key[0], "transport.rdma.", 15) == 0 &&
            strcmp(opt->key[0] + 15, engine_key) == 0)
            return opt;
    return NULL;
}

static const struct gfr_rdma_opt_info *
engine_option(const char *plugin_key)
{
    const struct gfr_rdma_opt_info *info;

    for (size_t i = 0; (info = gfr_rdma_opt_info(i)); i++)
        if (strncmp(plugin_key, "transport.rdma.", 15) == 0 &&
            strcmp(plugin_key + 15, info->key) == 0)
            return info;
    return NULL;
}

static volume_option_type_t
type_for(enum gfr_rdma_opt_kind kind)
{
    switch (kind) {
    case GFR_OPT_SIZE: return GF_OPTION_TYPE_SIZET;
    case GFR_OPT_UINT:
    case GFR_OPT_INT: return GF_OPTION_TYPE_INT;
    case GFR_OPT_CHOICE:
    case GFR_OPT_NAME:
    case GFR_OPT_ADDRESSES:
    case GFR_OPT_RAILS: return GF_OPTION_TYPE_STR;
    }
    return GF_OPTION_TYPE_ANY;
}

/*
 * glusterd and GlusterFS validate against the plugin's table, the engine
 * against its own (lib/pure/rdma-opts.c): every engine option must appear in the
 * plugin's with the same type, range, choices and default, and every
 * "transport.rdma." option of the plugin's is the engine's or one of the
 * plugin's own three.
 */
static void
test_the_table_repeats_the_engines_options(void **state)
{
    const struct gfr_rdma_opt_info *info;
    struct gfr_plugin_cfg cfg;
    struct gfr_rdma_opts want;
    char why[256];

    (void)state;
    gfr_rdma_opts_init(&want);
    for (size_t i = 0; (info = gfr_rdma_opt_info(i)); i++) {
        const volume_option_t *opt = plugin_option(info->key);
        const char *const kv[] = {opt ? opt->key[0] : NULL, opt ? opt->default_value : NULL,
                                  NULL};
        size_t c;

        if (!opt)
            fail_msg("engine option %s is not transport.rdma.%s in options[]", info->key,
                     info->key);
        if (opt->type != type_for(info->kind))
            fail_msg("%s: type %d in options[], the engine's is kind %d", opt->key[0],
                     (int)opt->type, (int)info->kind);
        if ((info->kind == GFR_OPT_UINT || info->kind == GFR_OPT_SIZE ||
             info->kind == GFR_OPT_INT) &&
            ((long long)opt->min != info->min || (long long)opt->max != info->max))
            fail_msg("%s: range %.0f..%.0f in options[], %lld..%lld in the engine",
                     opt->key[0], opt->min, opt->max, info->min, info->max);
        for (c = 0; info->kind == GFR_OPT_CHOICE && info->choices[c]; c++)
            if (!opt->value[c] || strcmp(opt->value[c], info->choices[c]) != 0)
                fail_msg("%s: choice %zu is %s in options[], %s in the engine", opt->key[0], c,
                         opt->value[c] ? opt->value[c] : "missing", info->choices[c]);
        if (info->kind == GFR_OPT_CHOICE && opt->value[c])
            fail_msg("%s: options[] allows %s, the engine does not", opt->key[0],
                     opt->value[c]);
        if (!opt->default_value != !info->default_value)
            fail_msg("%s: a default on one side only", opt->key[0]);
        if (!opt->default_value)
            continue;
        dict_t *d = dict_of(kv);

        assert_int_equal(gfr_plugin_cfg_read(d, NULL, NULL, &cfg, why, sizeof(why)), 0);
        if (memcmp(&cfg.engine, &want, sizeof(want)) != 0)
            fail_msg("%s: default %s in options[] is not the engine's %s", opt->key[0],
                     opt->default_value, info->default_value);
        dict_unref(d);
    }
    for (const volume_option_t *opt = options; opt->key[0]; opt++)
        if (strncmp(opt->key[0], "transport.rdma.", 15) == 0 && !engine_option(opt->key[0]) &&
            strcmp(opt->key[0], "transport.rdma.listen-port") != 0 &&
            strcmp(opt->key[0], "transport.rdma.bind-address") != 0 &&
            strcmp(opt->key[0], "transport.rdma.volume-name") != 0)
            fail_msg("%s in options[] is no engine option", opt->key[0]);
}

static void
test_values_aliases_and_sizes_reach_the_engine(void **state)
{
    static const char *const kv[] = {
        "transport.rdma.device-name", "rxe0",
        "transport.rdma.attr-timeout", "20",
        "transport.rdma.inline-max", "16KB",
        "transport.rdma.poll-mode", "event",
        "transport.rdma.dispatch", "inline",
        "listen-port", "24321",
        "transport.address-family", "inet6",
        "transport.rdma.bind-address", "fd99::1",
        "remote-port", "24555",
        NULL};
    struct gfr_plugin_cfg cfg;
    char why[256];
    dict_t *d = dict_of(kv);

    (void)state;
    assert_int_equal(gfr_plugin_cfg_read(d, NULL, NULL, &cfg, why, sizeof(why)), 0);
    assert_string_equal(cfg.engine.device, "rxe0");
    assert_int_equal(cfg.engine.qp_timeout, 20);
    assert_int_equal(cfg.engine.inline_max, 16384);
    assert_int_equal(cfg.engine.poll_mode, GFR_POLL_EVENT);
    assert_int_equal(cfg.engine.dispatch, GFR_DISPATCH_INLINE);
    assert_int_equal(cfg.listen_port, 24321);
    assert_int_equal(cfg.family, AF_INET6);
    assert_string_equal(cfg.bind_address, "fd99::1");
    assert_int_equal(cfg.remote_port, 24555);
    dict_unref(d);
}

static void
expect_bad(const char *key, const char *value, const char *accepted)
{
    const char *const kv[] = {key, value, NULL};
    struct gfr_plugin_cfg cfg;
    char named[128], why[256];
    dict_t *d = dict_of(kv);

    assert_int_equal(gfr_plugin_cfg_read(d, NULL, NULL, &cfg, why, sizeof(why)), -EINVAL);
    snprintf(named, sizeof(named), "%s=%s", key, value);
    if (!strstr(why, named) || !strstr(why, accepted))
        fail_msg("'%s' does not name %s and '%s'", why, named, accepted);
    dict_unref(d);
}

static void
test_bad_values_fail_with_a_message_naming_them(void **state)
{
    (void)state;
    expect_bad("transport.rdma.poll-mode", "spin", "busy, adaptive, event");
    expect_bad("transport.rdma.pollers", "0", "from 1 to 64");
    expect_bad("transport.rdma.inline-max", "lots", "a size such as 8KB");
    expect_bad("transport.address-family", "unix", "one of inet, inet6");
    expect_bad("remote-port", "70000", "from 1 to 65535");
    expect_bad("transport.rdma.device", "a-device-name-longer-than-sixty-three-characters-"
                                        "is-refused-here", "at most 63");
}

static void
test_options_that_do_not_fit_together_are_refused(void **state)
{
    static const char *const kv[] = {"transport.rdma.inline-max", "64KB",
                                     "transport.rdma.max-msg", "16KB", NULL};
    struct gfr_plugin_cfg cfg;
    char why[256];
    dict_t *d = dict_of(kv);

    (void)state;
    assert_int_equal(gfr_plugin_cfg_read(d, NULL, NULL, &cfg, why, sizeof(why)), -EINVAL);
    assert_non_null(strstr(why, "do not fit together"));
    assert_non_null(strstr(why, "max-msg"));
    dict_unref(d);
}

/* rpc_transport_load validates the volume's dict against `options` before
 * init: GlusterFS itself must refuse what the table says is wrong and
 * rename aliases to the key init reads. */
static void
test_glusterfs_validates_against_the_table(void **state)
{
    static const char *const good[] = {"transport.rdma.device-name", "rxe0",
                                       "transport.rdma.poll-mode", "busy", NULL};
    static const char *const bad[] = {"transport.rdma.poll-mode", "spin", NULL};
    volume_opt_list_t list = {.given_opt = options};
    char *errstr = NULL;
    char *value = NULL;
    dict_t *d = dict_of(good);

    (void)state;
    INIT_LIST_HEAD(&list.list);
    assert_int_equal(xlator_options_validate_list(THIS, d, &list, &errstr), 0);
    assert_int_equal(dict_get_str(d, "transport.rdma.device", &value), 0);
    assert_string_equal(value, "rxe0");
    dict_unref(d);
    d = dict_of(bad);
    assert_int_not_equal(xlator_options_validate_list(THIS, d, &list, &errstr), 0);
    assert_non_null(errstr);
    assert_non_null(strstr(errstr, "spin"));
    GF_FREE(errstr);
    dict_unref(d);
}

/* A node file with text in a fresh temporary directory; its path. */
static const char *
node_file(const char *text)
{
    static char path[64];
    char dir[] = "/tmp/gfr-node-conf-XXXXXX";
    FILE *f;

    assert_non_null(mkdtemp(dir));
    snprintf(path, sizeof(path), "%s/rdma.conf", dir);
    f = fopen(path, "w");
    assert_non_null(f);
    assert_int_equal(fputs(text, f) >= 0, 1);
    assert_int_equal(fclose(f), 0);
    return path;
}

static void
node_file_remove(const char *path)
{
    char dir[64];

    snprintf(dir, sizeof(dir), "%s", path);
    *strrchr(dir, '/') = '\0';
    assert_int_equal(unlink(path), 0);
    assert_int_equal(rmdir(dir), 0);
}

static void
test_node_file_fills_what_the_volfile_leaves_out(void **state)
{
    /* comments, blank lines, spaces, an alias; the volfile's poll-mode wins */
    const char *path = node_file("# the node's rdma.so options\n"
                                 "\n"
                                 "  transport.rdma.poll-mode = busy  \n"
                                 "transport.rdma.device-name=rxe1\n"
                                 "transport.rdma.inline-max = 8KB\n"
                                 "remote-port = 24444\n");
    static const char *const kv[] = {"transport.rdma.poll-mode", "event", NULL};
    struct gfr_plugin_cfg cfg;
    char why[256];
    dict_t *d = dict_of(kv);

    (void)state;
    assert_int_equal(gfr_plugin_cfg_read(d, path, NULL, &cfg, why, sizeof(why)), 0);
    assert_int_equal(cfg.engine.poll_mode, GFR_POLL_EVENT);
    assert_string_equal(cfg.engine.device, "rxe1");
    assert_int_equal(cfg.engine.inline_max, 8192);
    assert_int_equal(cfg.remote_port, 24444);
    assert_int_equal(gfr_plugin_cfg_read(NULL, path, NULL, &cfg, why, sizeof(why)), 0);
    assert_int_equal(cfg.engine.poll_mode, GFR_POLL_BUSY);
    dict_unref(d);
    node_file_remove(path);
}

static void
test_no_node_file_is_normal(void **state)
{
    struct gfr_plugin_cfg cfg, plain;
    char why[256];

    (void)state;
    assert_int_equal(gfr_plugin_cfg_read(NULL, "/nonexistent/rdma.conf", NULL, &cfg, why,
                                         sizeof(why)),
                     0);
    assert_int_equal(gfr_plugin_cfg_read(NULL, NULL, NULL, &plain, why, sizeof(why)), 0);
    assert_memory_equal(&cfg, &plain, sizeof(cfg));
}

/* text as a node file is refused, and the message holds each of want. */
static void
expect_bad_file(const char *text, const char *const *want)
{
    const char *path = node_file(text);
    struct gfr_plugin_cfg cfg;
    char why[512];

    assert_int_equal(gfr_plugin_cfg_read(NULL, path, NULL, &cfg, why, sizeof(why)), -EINVAL);
    if (!strstr(why, path))
        fail_msg("'%s' does not name the file %s", why, path);
    for (; *want; want++)
        if (!strstr(why, *want))
            fail_msg("'%s' does not say '%s'", why, *want);
    node_file_remove(path);
}

/* A node file and what the message refusing it must say. */
struct bad_file {
    const char *text;
    const char *want[6]; /* NULL-terminated */
};

static void
expect_bad_files(const struct bad_file *cases, size_t n)
{
    for (size_t i = 0; i < n; i++)
        expect_bad_file(cases[i].text, cases[i].want);
}

static void
test_bad_node_file_lines_are_refused_by_file_and_line(void **state)
{
    static const struct bad_file cases[] = {
        {"# ok\ntransport.rdma.poll-mode = spin\n",
         {"line 2", "transport.rdma.poll-mode=spin", "busy", "adaptive", "event"}},
        {"transport.rdma.pollers = 0\n",
         {"line 1", "transport.rdma.pollers=0"}},
        {"remote-port = 70000\n",
         {"line 1", "remote-port=70000"}},
        {"\ntransport.rdma.poll-mod = busy\n",
         {"line 2", "'transport.rdma.poll-mod' is no option"}},
        {"transport.rdma.poll-mode busy\n",
         {"line 1", "not 'key = value'"}},
        {"transport.rdma.spin-us =\n",
         {"line 1", "has no value"}},
        {"transport.rdma.device = rxe0\ntransport.rdma.device-name = rxe1\n",
         {"line 2", "set again (first on line 1)"}},
        /* a value GlusterFS's validation passes but the engine refuses */
        {"transport.rdma.device = a-device-name-longer-than-sixty-three-"
         "characters-is-refused-here\n",
         {"line 1", "at most 63"}},
    };

    (void)state;
    expect_bad_files(cases, sizeof(cases) / sizeof(cases[0]));
}

/* A volume's section over the node's lines, for that volume's transports
 * only, found by the translator's name or the volfile's volume-name; the
 * volfile still wins. */
static void
test_a_volume_section_overrides_the_node_for_its_volume(void **state)
{
    const char *path = node_file("transport.rdma.credits = 32\n"
                                 "transport.rdma.keepalive-ms = 3000\n"
                                 "transport.rdma.pollers = 2\n"
                                 "\n"
                                 "[volume fast]\n"
                                 "transport.rdma.credits = 128\n"
                                 "transport.rdma.pollers = 2\n"
                                 "  [ volume  slow-1 ]  \n"
                                 "transport.rdma.rdma-depth = 1\n"
                                 "transport.rdma.connect-timeout-ms = 20000\n");
    static const char *const named[] = {"transport.rdma.volume-name", "fast", NULL};
    static const char *const wins[] = {"transport.rdma.credits", "16", NULL};
    struct gfr_plugin_cfg cfg;
    char why[512];
    dict_t *d;

    (void)state;
    assert_int_equal(gfr_plugin_cfg_read(NULL, path, "fast-client-0", &cfg, why, sizeof(why)), 0);
    assert_int_equal(cfg.engine.credits, 128);
    assert_int_equal(cfg.engine.keepalive_ms, 3000); /* the node's, not set in the section */
    assert_int_equal(cfg.engine.rdma_depth, 4);      /* another section's */
    assert_string_equal(cfg.volume, "fast");
    assert_int_equal(cfg.section_line, 5);
    assert_int_equal(gfr_plugin_cfg_read(NULL, path, "fast-server", &cfg, why, sizeof(why)), 0);
    assert_int_equal(cfg.engine.credits, 128);
    assert_int_equal(gfr_plugin_cfg_read(NULL, path, "slow-1-client-3", &cfg, why, sizeof(why)),
                     0);
    assert_int_equal(cfg.engine.credits, 32);
    assert_int_equal(cfg.engine.rdma_depth, 1);
    assert_int_equal(cfg.engine.connect_timeout_ms, 20000);
    assert_int_equal(cfg.section_line, 8);
    /* a volume without a section, a translator of no volume */
    assert_int_equal(gfr_plugin_cfg_read(NULL, path, "other-client-0", &cfg, why, sizeof(why)),
                     0);
    assert_int_equal(cfg.engine.credits, 32);
    assert_string_equal(cfg.volume, "other");
    assert_int_equal(cfg.section_line, 0);
    assert_int_equal(gfr_plugin_cfg_read(NULL, path, "management", &cfg, why, sizeof(why)), 0);
    assert_int_equal(cfg.engine.credits, 32);
    assert_string_equal(cfg.volume, "");
    /* a hand-written volfile names its volume */
    d = dict_of(named);
    assert_int_equal(gfr_plugin_cfg_read(d, path, "my-client", &cfg, why, sizeof(why)), 0);
    assert_int_equal(cfg.engine.credits, 128);
    dict_unref(d);
    d = dict_of(wins);
    assert_int_equal(gfr_plugin_cfg_read(d, path, "fast-client-0", &cfg, why, sizeof(why)), 0);
    assert_int_equal(cfg.engine.credits, 16);
    dict_unref(d);
    node_file_remove(path);
}

/* inline-max sizes the device's shared receive buffers: a section may set
 * it only where the node's receive buffers are each connection's own. */
static void
test_inline_max_is_a_volumes_only_with_its_own_receive_buffers(void **state)
{
    const char *path = node_file("transport.rdma.receive-queue = per-connection\n"
                                 "[volume big]\n"
                                 "transport.rdma.inline-max = 64KB\n");
    struct gfr_plugin_cfg cfg;
    char why[512];

    (void)state;
    assert_int_equal(gfr_plugin_cfg_read(NULL, path, "big-server", &cfg, why, sizeof(why)), 0);
    assert_int_equal(cfg.engine.inline_max, 64 << 10);
    node_file_remove(path);
    expect_bad_file("[volume big]\ntransport.rdma.inline-max = 64KB\n",
                    (const char *const[]){"line 2", "[volume big]", "inline-max = 64KB",
                                          "8KB for the node", "before the first section",
                                          NULL});
}

static void
test_bad_sections_are_refused_by_file_and_line(void **state)
{
    static const struct bad_file cases[] = {
        {"transport.rdma.pollers = 1\n[volume v]\ntransport.rdma.pollers = 4\n",
         {"line 3", "[volume v]", "transport.rdma.pollers = 4", "it is 1 for the node",
          "shares it"}},
        {"[volume v]\n\ntransport.rdma.poll-mode = busy\n",
         {"line 3", "transport.rdma.poll-mode = busy", "adaptive for the node"}},
        {"[volume v]\ntransport.rdma.dispatch = pool\n",
         {"line 2", "dispatch"}},
        {"[volume v]\ntransport.rdma.credit = 8\n",
         {"line 2", "'transport.rdma.credit' is no option"}},
        {"[volume v]\ntransport.rdma.credits = 1\n",
         {"line 2", "transport.rdma.credits=1"}},
        {"[volume v]\ntransport.rdma.credits = 8\ntransport.rdma.credits = 9\n",
         {"line 3", "set again (first on line 2)"}},
        {"[volume v]\n[volume w]\n[volume v]\n",
         {"line 3", "[volume v] again (first on line 1)"}},
        {"[volume]\n",
         {"line 1", "'[volume NAME]'"}},
        {"[volume a b]\n",
         {"line 1", "'[volume NAME]'"}},
        {"\n[brick v]\n",
         {"line 2", "'[volume NAME]'"}},
        {"[volume v\n",
         {"line 1", "'[volume NAME]'"}},
        {"[volume v]\ntransport.rdma.volume-name = w\n",
         {"line 2", "volume-name", "[volume NAME] header"}},
        {"[volume v]\ntransport.rdma.max-msg = 4KB\n",
         {"line 1", "of [volume v]", "max-msg"}},
    };

    (void)state;
    expect_bad_files(cases, sizeof(cases) / sizeof(cases[0]));
}

static void
test_the_volume_follows_glusterds_translator_names(void **state)
{
    static const struct {
        const char *xlator, *volume;
    } cases[] = {
        {"v-client-0", "v"},
        {"my-vol-client-12", "my-vol"},
        {"v-ta-3", "v"},
        {"v-snapd-client", "v"},
        {"v-server", "v"},
        {"a-server-server", "a-server"},
        {"v-client-1-client-2", "v-client-1"},
    };
    static const char *const none[] = {"management", "v-client-", "v-client-x", "-server",
                                       "-client-0", "client-0", "v", ""};
    char volume[16];

    (void)state;
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        assert_int_equal(gfr_node_conf_volume_of(cases[i].xlator, volume, sizeof(volume)), 0);
        assert_string_equal(volume, cases[i].volume);
    }
    for (size_t i = 0; i < sizeof(none) / sizeof(none[0]); i++)
        if (gfr_node_conf_volume_of(none[i], volume, sizeof(volume)) != -ENOENT)
            fail_msg("'%s' gave a volume", none[i]);
    assert_int_equal(gfr_node_conf_volume_of(NULL, volume, sizeof(volume)), -ENOENT);
    assert_int_equal(gfr_node_conf_volume_of("a-volume-name-too-long-client-0", volume,
                                             sizeof(volume)),
                     -ENAMETOOLONG);
}

static void
test_unreadable_node_file_is_refused(void **state)
{
    struct gfr_plugin_cfg cfg;
    char why[256];
    char dir[] = "/tmp/gfr-node-conf-XXXXXX";

    (void)state;
    assert_non_null(mkdtemp(dir));
    /* a directory where the file should be: fopen works, reading fails */
    assert_int_equal(gfr_plugin_cfg_read(NULL, dir, NULL, &cfg, why, sizeof(why)), -EISDIR);
    assert_non_null(strstr(why, dir));
    assert_non_null(strstr(why, "cannot be read"));
    assert_int_equal(rmdir(dir), 0);
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_table_defaults_are_the_engines),
        cmocka_unit_test(test_the_table_repeats_the_engines_options),
        cmocka_unit_test(test_values_aliases_and_sizes_reach_the_engine),
        cmocka_unit_test(test_bad_values_fail_with_a_message_naming_them),
        cmocka_unit_test(test_options_that_do_not_fit_together_are_refused),
        cmocka_unit_test(test_glusterfs_validates_against_the_table),
        cmocka_unit_test(test_node_file_fills_what_the_volfile_leaves_out),
        cmocka_unit_test(test_no_node_file_is_normal),
        cmocka_unit_test(test_bad_node_file_lines_are_refused_by_file_and_line),
        cmocka_unit_test(test_a_volume_section_overrides_the_node_for_its_volume),
        cmocka_unit_test(test_inline_max_is_a_volumes_only_with_its_own_receive_buffers),
        cmocka_unit_test(test_bad_sections_are_refused_by_file_and_line),
        cmocka_unit_test(test_the_volume_follows_glusterds_translator_names),
        cmocka_unit_test(test_unreadable_node_file_is_refused),
    };

    return cmocka_run_group_tests_name("plugin-opts", tests, setup, teardown);
}
