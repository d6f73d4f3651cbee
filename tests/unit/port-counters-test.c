/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * lib/stats/port-counters.c on a made-up sysfs: an rxe-like port's counters are
 * read by name and sorted, a file that is no number is skipped, a
 * provider without hw_counters (siw) reads as a port with none, a device
 * or port that is not there is -ENOENT, and ports are listed in order.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "test-sh.h"

#include "gfr_port_counters.h"

static char root[64];

/* A made-up sysfs: rxe0 with counters on two ports (one file no number)
 * and a third port with none, siw0 with none at all. */
static int
setup(void **state)
{
    const char *ib;

    (void)state;
    snprintf(root, sizeof(root), "/tmp/gfr-sysfs-XXXXXX");
    if (!mkdtemp(root))
        return -1;
    ib = "class/infiniband";
    return test_sh("cd %s && mkdir -p %s/rxe0/ports/1/hw_counters %s/rxe0/ports/2/hw_counters "
              "%s/rxe0/ports/10 %s/siw0/ports/1 && cd %s/rxe0/ports/1/hw_counters && "
              "echo 12 >sent_pkts && echo 7 >rcvd_pkts && echo 0 >retry_exceeded_err && "
              "echo 10 >lifespan && echo N/A >not_a_number && echo 1 >../../2/hw_counters/sent_pkts",
              root, ib, ib, ib, ib, ib);
}

static int
teardown(void **state)
{
    (void)state;
    return test_sh("rm -rf %s", root);
}

static void
test_counters_are_read_by_name_and_sorted(void **state)
{
    static struct gfr_port_counters pc;

    (void)state;
    assert_int_equal(gfr_port_counters_read(root, "rxe0", 1, &pc), 0);
    assert_string_equal(pc.device, "rxe0");
    assert_int_equal(pc.port, 1);
    assert_int_equal(pc.n, 4); /* not_a_number is skipped */
    assert_string_equal(pc.counter[0].name, "lifespan");
    assert_int_equal(pc.counter[0].value, 10);
    assert_string_equal(pc.counter[1].name, "rcvd_pkts");
    assert_int_equal(pc.counter[1].value, 7);
    assert_string_equal(pc.counter[2].name, "retry_exceeded_err");
    assert_int_equal(pc.counter[2].value, 0);
    assert_string_equal(pc.counter[3].name, "sent_pkts");
    assert_int_equal(pc.counter[3].value, 12);
}

static void
test_a_provider_without_counters_has_none(void **state)
{
    static struct gfr_port_counters pc;

    (void)state;
    assert_int_equal(gfr_port_counters_read(root, "siw0", 1, &pc), 0);
    assert_int_equal(pc.n, 0);
    assert_int_equal(gfr_port_counters_read(root, "rxe0", 10, &pc), 0);
    assert_int_equal(pc.n, 0);
}

static void
test_what_is_not_there_is_enoent(void **state)
{
    static struct gfr_port_counters pc;
    unsigned ports[4];

    (void)state;
    assert_int_equal(gfr_port_counters_read(root, "mlx5_0", 1, &pc), -ENOENT);
    assert_int_equal(gfr_port_counters_read(root, "rxe0", 3, &pc), -ENOENT);
    assert_int_equal(gfr_port_list(root, "mlx5_0", ports, 4), -ENOENT);
}

static void
test_ports_are_listed_in_order(void **state)
{
    unsigned ports[4];

    (void)state;
    assert_int_equal(gfr_port_list(root, "rxe0", ports, 4), 3);
    assert_int_equal(ports[0], 1);
    assert_int_equal(ports[1], 2);
    assert_int_equal(ports[2], 10);
    assert_int_equal(gfr_port_list(root, "siw0", ports, 4), 1);
}

static void
test_sysfs_root_follows_the_environment(void **state)
{
    (void)state;
    unsetenv("GFR_SYSFS");
    assert_string_equal(gfr_sysfs_root(), "/sys");
    setenv("GFR_SYSFS", root, 1);
    assert_string_equal(gfr_sysfs_root(), root);
    unsetenv("GFR_SYSFS");
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_counters_are_read_by_name_and_sorted),
        cmocka_unit_test(test_a_provider_without_counters_has_none),
        cmocka_unit_test(test_what_is_not_there_is_enoent),
        cmocka_unit_test(test_ports_are_listed_in_order),
        cmocka_unit_test(test_sysfs_root_follows_the_environment),
    };

    return cmocka_run_group_tests(tests, setup, teardown);
}
