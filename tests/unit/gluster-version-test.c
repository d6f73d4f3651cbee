/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * gluster-version.c: the transport directory found among a library's
 * strings, and the running libgfrpc (the one this test links) taken for
 * the version configure found.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "config.h"
#include "gluster-version.h"

#define BLOB(s) s, sizeof(s)

static void
finds_the_directory_among_other_strings(void **state)
{
    /* the format that builds the path, and a look-alike one component too
     * deep, come before the real string */
    static const char blob[] = "%s/%s.so\0/x/glusterfs/a/b/rpc-transport\0"
                               "/rpc-transport\0/usr/lib/x86_64-linux-gnu/glusterfs/"
                               "11.1/rpc-transport\0tail";
    char v[16];

    (void)state;
    assert_int_equal(gfr_gluster_version_in(BLOB(blob), v, sizeof(v)), 0);
    assert_string_equal(v, "11.1");
}

static void
wants_a_whole_string(void **state)
{
    /* "/rpc-transportX" and a directory not under glusterfs/ do not count */
    static const char blob[] = "/usr/lib/glusterfs/10.3/rpc-transportX\0"
                               "/usr/lib/gluster/10.3/rpc-transport\0";
    char v[16];

    (void)state;
    assert_int_equal(gfr_gluster_version_in(BLOB(blob), v, sizeof(v)), -ENOENT);
    assert_int_equal(gfr_gluster_version_in("", 0, v, sizeof(v)), -ENOENT);
}

static void
at_the_blob_edges(void **state)
{
    /* the string starts the blob; a tail cut off by the blob's end */
    static const char first[] = "/glusterfs/10.3/rpc-transport";
    static const char cut[] = "/glusterfs/10.3/rpc-transport";
    char v[16];

    (void)state;
    assert_int_equal(gfr_gluster_version_in(BLOB(first), v, sizeof(v)), 0);
    assert_string_equal(v, "10.3");
    assert_int_equal(gfr_gluster_version_in(cut, sizeof(cut) - 1, v, sizeof(v)), -ENOENT);
    assert_int_equal(gfr_gluster_version_in("glusterfs/10.3/rpc-transport",
                                            sizeof("glusterfs/10.3/rpc-transport"), v,
                                            sizeof(v)),
                     -ENOENT);
}

static void
too_long_a_version(void **state)
{
    static const char blob[] = "/glusterfs/10.3.1234567/rpc-transport";
    char v[8];

    (void)state;
    assert_int_equal(gfr_gluster_version_in(BLOB(blob), v, sizeof(v)), -ENAMETOOLONG);
}

static void
running_libgfrpc_is_the_configured_one(void **state)
{
    char v[64], why[512];

    (void)state;
    assert_int_equal(gfr_gluster_running_version(v, sizeof(v)), 0);
    assert_string_equal(v, GFR_GLUSTERFS_VERSION);
    assert_int_equal(gfr_gluster_version_check(why, sizeof(why)), 0);
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(finds_the_directory_among_other_strings),
        cmocka_unit_test(wants_a_whole_string),
        cmocka_unit_test(at_the_blob_edges),
        cmocka_unit_test(too_long_a_version),
        cmocka_unit_test(running_libgfrpc_is_the_configured_one),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
