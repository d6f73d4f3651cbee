/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * lib/engine/rdma-rail-ports.c on a made-up sysfs whose ports sit on the
 * loopback interface (the one interface every host has, with 127.0.0.1/8):
 * a usable port is found through its GID table's interface or its
 * device's parent, and each port that is not usable says why (no device,
 * no such port, its port down, no interface, no address); a source is
 * picked by subnet, prefixes of any length compare right, and the
 * option's off and auto name no port.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "test-sh.h"

#include "gfr_rail_ports.h"

static char root[64];

/* roce0: port 1 active on lo by its GID table; soft0: active on lo by its
 * parent (rxe's attribute); down0: port 1 down; bare0: active, no hint of
 * an interface; noaddr0: active on an interface that does not exist. */
static int
setup(void **state)
{
    (void)state;
    snprintf(root, sizeof(root), "/tmp/gfr-sysfs-XXXXXX");
    if (!mkdtemp(root))
        return -1;
    return test_sh("cd %s && mkdir -p class/infiniband && cd class/infiniband && "
              "mkdir -p roce0/ports/1/gid_attrs/ndevs soft0/ports/1 down0/ports/1 "
              "bare0/ports/1 noaddr0/ports/1/gid_attrs/ndevs && "
              "for d in roce0 soft0 bare0 noaddr0; do echo '4: ACTIVE' >$d/ports/1/state; done && "
              "echo '1: DOWN' >down0/ports/1/state && echo lo >roce0/ports/1/gid_attrs/ndevs/0 && "
              "echo lo >soft0/parent && echo gfr-no-such-if0 >noaddr0/ports/1/gid_attrs/ndevs/0",
              root);
}

static int
teardown(void **state)
{
    (void)state;
    return test_sh("rm -rf %s", root);
}

static int
read_ports(const char *rails, struct gfr_rail_port *ports)
{
    struct gfr_rdma_opts opts;

    gfr_rdma_opts_init(&opts);
    assert_int_equal(gfr_rdma_opts_set(&opts, "rails", rails, NULL, 0), 0);
    return gfr_rail_ports_read(root, &opts, ports, GFR_RDMA_MAX_RAIL_DEVICES);
}

static struct sockaddr_storage
ipv4(const char *text)
{
    struct sockaddr_storage ss = {0};
    struct sockaddr_in *sin = (struct sockaddr_in *)&ss;

    sin->sin_family = AF_INET;
    sin->sin_port = htons(24007);
    assert_int_equal(inet_pton(AF_INET, text, &sin->sin_addr), 1);
    return ss;
}

static void
test_usable_ports_are_found_with_their_addresses(void **state)
{
    struct gfr_rail_port ports[GFR_RDMA_MAX_RAIL_DEVICES];
    struct sockaddr_storage dst = ipv4("127.3.2.1"), src;
    char names[64];

    (void)state;
    assert_int_equal(read_ports("roce0,soft0:1", ports), 2);
    for (int i = 0; i < 2; i++) {
        int v4 = 0;

        assert_true(ports[i].usable);
        assert_string_equal(ports[i].netdev, "lo");
        for (unsigned k = 0; k < ports[i].naddrs; k++)
            if (ports[i].addrs[k].addr.ss_family == AF_INET) {
                assert_int_equal(((struct sockaddr_in *)&ports[i].addrs[k].addr)->sin_addr.s_addr,
                                 htonl(0x7f000001));
                assert_int_equal(ports[i].addrs[k].prefix, 8);
                v4 = 1;
            }
        assert_true(v4);
    }
    assert_string_equal(gfr_rail_ports_names(ports, 2, names, sizeof(names)),
                        "roce0:1, soft0:1");
    /* the first port in the option's order on dst's subnet, port 0 */
    assert_int_equal(gfr_rail_ports_source(ports, 2, (struct sockaddr *)&dst, &src), 0);
    assert_int_equal(src.ss_family, AF_INET);
    assert_int_equal(((struct sockaddr_in *)&src)->sin_addr.s_addr, htonl(0x7f000001));
    assert_int_equal(((struct sockaddr_in *)&src)->sin_port, 0);
    dst = ipv4("10.99.1.1");
    assert_int_equal(gfr_rail_ports_source(ports, 2, (struct sockaddr *)&dst, &src), -ENOENT);
    dst = ipv4("127.0.0.1");
    assert_true(gfr_rail_ports_own(ports, 2, (struct sockaddr *)&dst));
    dst = ipv4("127.0.0.2");
    assert_false(gfr_rail_ports_own(ports, 2, (struct sockaddr *)&dst));
}

static void
test_each_port_that_cannot_carry_a_rail_says_why(void **state)
{
    struct gfr_rail_port ports[GFR_RDMA_MAX_RAIL_DEVICES];
    struct sockaddr_storage dst = ipv4("127.0.0.1"), src;
    char want[160];

    (void)state;
    assert_int_equal(read_ports("nosuch0,roce0:2,down0,bare0", ports), 4);
    snprintf(want, sizeof(want), "no RDMA device nosuch0 (none in %s/class/infiniband)", root);
    assert_string_equal(ports[0].why, want);
    assert_string_equal(ports[1].why, "roce0 has no port 2");
    assert_string_equal(ports[2].why, "port 1 of down0 is DOWN");
    assert_string_equal(ports[3].why, "cannot tell which network interface bare0:1 is on");
    assert_int_equal(read_ports("noaddr0", ports), 1);
    assert_string_equal(ports[0].why, "noaddr0:1 is on gfr-no-such-if0, which has no IP address");
    assert_false(ports[0].usable);
    /* a port that is no use is never picked, even with an address */
    ports[0].naddrs = 1;
    ports[0].addrs[0].addr = dst;
    ports[0].addrs[0].prefix = 8;
    assert_int_equal(gfr_rail_ports_source(ports, 1, (struct sockaddr *)&dst, &src), -ENOENT);
    assert_false(gfr_rail_ports_own(ports, 1, (struct sockaddr *)&dst));
}

static void
test_subnets_compare_at_any_prefix(void **state)
{
    struct gfr_rail_port port = {.usable = 1, .naddrs = 1};
    struct sockaddr_storage dst, src;
    static const struct {
        const char *addr, *dst;
        unsigned prefix;
        int same;
    } cases[] = {
        {"10.99.1.2", "10.99.0.9", 23, 1},  {"10.99.1.2", "10.99.2.1", 23, 0},
        {"10.99.1.2", "10.99.1.200", 24, 1}, {"10.99.1.2", "10.99.0.2", 24, 0},
        {"10.99.1.2", "192.168.0.1", 0, 1},  {"10.99.1.2", "10.99.1.3", 32, 0},
        {"10.99.1.2", "10.99.1.3", 31, 1},  {"10.99.1.2", "10.99.1.1", 31, 0},
    };

    (void)state;
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        port.addrs[0].addr = ipv4(cases[i].addr);
        port.addrs[0].prefix = cases[i].prefix;
        dst = ipv4(cases[i].dst);
        if ((gfr_rail_ports_source(&port, 1, (struct sockaddr *)&dst, &src) == 0) !=
            cases[i].same)
            fail_msg("%s/%u and %s: %s expected", cases[i].addr, cases[i].prefix,
                     cases[i].dst, cases[i].same ? "one subnet" : "two subnets");
    }
    /* an IPv6 destination is on no IPv4 subnet */
    memset(&dst, 0, sizeof(dst));
    dst.ss_family = AF_INET6;
    port.addrs[0].prefix = 0;
    assert_int_equal(gfr_rail_ports_source(&port, 1, (struct sockaddr *)&dst, &src), -ENOENT);
}

static void
test_off_and_auto_name_no_port(void **state)
{
    struct gfr_rail_port ports[GFR_RDMA_MAX_RAIL_DEVICES];

    (void)state;
    assert_int_equal(read_ports("off", ports), 0);
    assert_int_equal(read_ports("auto", ports), 0);
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_usable_ports_are_found_with_their_addresses),
        cmocka_unit_test(test_each_port_that_cannot_carry_a_rail_says_why),
        cmocka_unit_test(test_subnets_compare_at_any_prefix),
        cmocka_unit_test(test_off_and_auto_name_no_port),
    };

    return cmocka_run_group_tests_name("rdma-rail-ports", tests, setup, teardown);
}
