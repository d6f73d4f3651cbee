/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The device ports `rails = DEV[:PORT],...` names (docs/multi-rail.md), as
 * the system shows them now: whether each exists and is active, the
 * network interface it is on and that interface's addresses; and, for a
 * server's address, the named port to connect from.
 *
 * Read from sysfs (SYSFS/class/infiniband/DEV/ports/PORT: its state, and
 * its interface from gid_attrs/ndevs/0, else the device's parent or
 * device/net/) and getifaddrs, never through verbs: a device the engine
 * only looked at stays closed, so that its removal is not held up.
 *
 * No state: any thread.  Reading costs a few sysfs reads a port and one
 * getifaddrs.
 */
#ifndef GFR_RAIL_PORTS_H
#define GFR_RAIL_PORTS_H

#include <net/if.h>
#include <sys/socket.h>

#include "gfr_rdma_opts.h"

/* An interface address and its netmask. */
struct gfr_rail_addr {
    struct sockaddr_storage addr;
    unsigned prefix; /* bits of the netmask */
};

#define GFR_RAIL_PORT_ADDRS 8

/* A named device port as it is now. */
struct gfr_rail_port {
    struct gfr_rail_device dev;
    int usable;             /* exists, active, on an interface with an address */
    char why[160];          /* when not usable: what is missing, for the log */
    char netdev[IF_NAMESIZE];
    unsigned naddrs;
    struct gfr_rail_addr addrs[GFR_RAIL_PORT_ADDRS];
};

/*
 * Reads the device ports opts->rails names (none unless rails is a device
 * list) into out (at most max), in the option's order.  sysfs: as
 * gfr_sysfs_root() gives it.  Returns how many, or -EINVAL (rails is not a
 * valid list), -ENOMEM (getifaddrs).
 */
int gfr_rail_ports_read(const char *sysfs, const struct gfr_rdma_opts *opts,
                        struct gfr_rail_port *out, unsigned max);

/*
 * The usable port of ports[0..n) with an address on dst's subnet (the
 * first such, in the option's order), its address in *src with port 0.
 * Returns the port's index, or -ENOENT.
 */
int gfr_rail_ports_source(const struct gfr_rail_port *ports, unsigned n,
                          const struct sockaddr *dst, struct sockaddr_storage *src);

/* Whether addr is one of the usable ports' addresses (port ignored). */
int gfr_rail_ports_own(const struct gfr_rail_port *ports, unsigned n,
                       const struct sockaddr *addr);

/* A usable port's first address as "ADDR/PREFIX" into buf; buf. */
const char *gfr_rail_port_address(const struct gfr_rail_port *port, char *buf, size_t len);

/* "rxe1:1, rxe3:1" into buf, for log lines; buf. */
const char *gfr_rail_ports_names(const struct gfr_rail_port *ports, unsigned n, char *buf,
                                 size_t len);

#endif /* GFR_RAIL_PORTS_H */
