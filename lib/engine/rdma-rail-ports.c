/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The device ports rails = DEV[:PORT],... names, from sysfs and
 * getifaddrs (gfr_rail_ports.h).
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "gfr_addr.h"
#include "gfr_rail_ports.h"

/* The first line of a sysfs file into buf, without its newline: 0 or -errno. */
static int
read_line(const char *path, char *buf, size_t len)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    ssize_t n;

    if (fd < 0)
        return -errno;
    n = read(fd, buf, len - 1);
    if (n < 0)
        n = -errno;
    close(fd);
    if (n <= 0)
        return n < 0 ? (int)n : -ENODATA;
    buf[n] = '\0';
    buf[strcspn(buf, "\n")] = '\0';
    return buf[0] ? 0 : -ENODATA;
}

/* The interface a port is on: the GID table's (RoCE), the device's parent
 * (rxe), or the PCI function's (an adapter with an interface of its own). */
static int
port_netdev(const char *base, const struct gfr_rail_device *dev, char *netdev, size_t len)
{
    char path[PATH_MAX];
    struct dirent *e;
    DIR *dir;

    if (snprintf(path, sizeof(path), "%s/ports/%u/gid_attrs/ndevs/0", base, dev->port) <
            (int)sizeof(path) &&
        read_line(path, netdev, len) == 0)
        return 0;
    if (snprintf(path, sizeof(path), "%s/parent", base) < (int)sizeof(path) &&
        read_line(path, netdev, len) == 0)
        return 0;
    if (snprintf(path, sizeof(path), "%s/device/net", base) >= (int)sizeof(path))
        return -ENAMETOOLONG;
    dir = opendir(path);
    if (!dir)
        return -ENOENT;
    while ((e = readdir(dir)))
        if (e->d_name[0] != '.' && strlen(e->d_name) < len) {
            strcpy(netdev, e->d_name);
            closedir(dir);
            return 0;
        }
    closedir(dir);
    return -ENOENT;
}

static unsigned
mask_bits(const struct sockaddr *mask)
{
    const unsigned char *b;
    unsigned n, bits = 0;

    if (!mask)
        return 0;
    if (mask->sa_family == AF_INET) {
        b = (const unsigned char *)&((const struct sockaddr_in *)mask)->sin_addr;
        n = 4;
    } else if (mask->sa_family == AF_INET6) {
        b = ((const struct sockaddr_in6 *)mask)->sin6_addr.s6_addr;
        n = 16;
    } else {
        return 0;
    }
    for (unsigned i = 0; i < n; i++)
        bits += (unsigned)__builtin_popcount(b[i]);
    return bits;
}

/* Adds netdev's addresses from ifs to p. */
static void
port_addrs(struct gfr_rail_port *p, const struct ifaddrs *ifs)
{
    for (const struct ifaddrs *i = ifs; i && p->naddrs < GFR_RAIL_PORT_ADDRS; i = i->ifa_next) {
        struct gfr_rail_addr *a = &p->addrs[p->naddrs];

        if (!i->ifa_addr || strcmp(i->ifa_name, p->netdev) != 0 ||
            (i->ifa_addr->sa_family != AF_INET && i->ifa_addr->sa_family != AF_INET6))
            continue;
        memset(a, 0, sizeof(*a));
        memcpy(&a->addr, i->ifa_addr,
               i->ifa_addr->sa_family == AF_INET ? sizeof(struct sockaddr_in)
                                                 : sizeof(struct sockaddr_in6));
        a->prefix = mask_bits(i->ifa_netmask);
        p->naddrs++;
    }
}

static void
read_port(const char *sysfs, struct gfr_rail_port *p, const struct ifaddrs *ifs)
{
    char base[PATH_MAX], path[PATH_MAX + 32], state[64];
    const char *name = p->dev.name;
    unsigned port = p->dev.port;

    if (snprintf(base, sizeof(base), "%s/class/infiniband/%s", sysfs, name) >=
            (int)sizeof(base) ||
        access(base, F_OK) != 0) {
        snprintf(p->why, sizeof(p->why), "no RDMA device %s (none in %s/class/infiniband)",
                 name, sysfs);
        return;
    }
    if (snprintf(path, sizeof(path), "%s/ports/%u/state", base, port) >= (int)sizeof(path) ||
        read_line(path, state, sizeof(state)) != 0) {
        snprintf(p->why, sizeof(p->why), "%s has no port %u", name, port);
        return;
    }
    if (!strstr(state, "ACTIVE")) {
        const char *colon = strchr(state, ':');

        snprintf(p->why, sizeof(p->why), "port %u of %s is %s", port, name,
                 colon ? colon + 1 + strspn(colon + 1, " ") : state);
        return;
    }
    if (port_netdev(base, &p->dev, p->netdev, sizeof(p->netdev)) != 0) {
        snprintf(p->why, sizeof(p->why), "cannot tell which network interface %s:%u is on",
                 name, port);
        return;
    }
    port_addrs(p, ifs);
    if (!p->naddrs) {
        snprintf(p->why, sizeof(p->why), "%s:%u is on %s, which has no IP address", name,
                 port, p->netdev);
        return;
    }
    p->usable = 1;
}

int
gfr_rail_ports_read(const char *sysfs, const struct gfr_rdma_opts *opts,
                    struct gfr_rail_port *out, unsigned max)
{
    struct gfr_rail_device devs[GFR_RDMA_MAX_RAIL_DEVICES];
    struct ifaddrs *ifs = NULL;
    int n = gfr_rdma_opts_rail_devices(opts, devs, GFR_RDMA_MAX_RAIL_DEVICES);

    if (n <= 0)
        return n;
    if (getifaddrs(&ifs) != 0)
        return -ENOMEM;
    if ((unsigned)n > max)
        n = (int)max;
    for (int i = 0; i < n; i++) {
        memset(&out[i], 0, sizeof(out[i]));
        out[i].dev = devs[i];
        read_port(sysfs, &out[i], ifs);
    }
    freeifaddrs(ifs);
    return n;
}

/* Whether a and b agree on their first bits (IPv4 or IPv6 addresses of
 * one family). */
static int
same_prefix(const struct sockaddr *a, const struct sockaddr *b, unsigned bits)
{
    const unsigned char *x, *y;
    unsigned len;

    if (a->sa_family != b->sa_family)
        return 0;
    if (a->sa_family == AF_INET) {
        x = (const unsigned char *)&((const struct sockaddr_in *)a)->sin_addr;
        y = (const unsigned char *)&((const struct sockaddr_in *)b)->sin_addr;
        len = 32;
    } else {
        x = ((const struct sockaddr_in6 *)a)->sin6_addr.s6_addr;
        y = ((const struct sockaddr_in6 *)b)->sin6_addr.s6_addr;
        len = 128;
    }
    if (bits > len)
        bits = len;
    if (memcmp(x, y, bits / 8) != 0)
        return 0;
    return bits % 8 == 0 || ((x[bits / 8] ^ y[bits / 8]) & (0xff00 >> (bits % 8)) & 0xff) == 0;
}

int
gfr_rail_ports_source(const struct gfr_rail_port *ports, unsigned n,
                      const struct sockaddr *dst, struct sockaddr_storage *src)
{
    for (unsigned i = 0; dst && i < n; i++) {
        for (unsigned k = 0; ports[i].usable && k < ports[i].naddrs; k++) {
            const struct gfr_rail_addr *a = &ports[i].addrs[k];

            if (!same_prefix((const struct sockaddr *)&a->addr, dst, a->prefix))
                continue;
            *src = a->addr;
            if (src->ss_family == AF_INET)
                ((struct sockaddr_in *)src)->sin_port = 0;
            else
                ((struct sockaddr_in6 *)src)->sin6_port = 0;
            return (int)i;
        }
    }
    return -ENOENT;
}

int
gfr_rail_ports_own(const struct gfr_rail_port *ports, unsigned n, const struct sockaddr *addr)
{
    for (unsigned i = 0; addr && i < n; i++)
        for (unsigned k = 0; ports[i].usable && k < ports[i].naddrs; k++)
            if (same_prefix((const struct sockaddr *)&ports[i].addrs[k].addr, addr,
                            UINT_MAX))
                return 1;
    return 0;
}

const char *
gfr_rail_port_address(const struct gfr_rail_port *port, char *buf, size_t len)
{
    char host[INET6_ADDRSTRLEN];
    unsigned ip_port;

    gfr_addr_host_port((const struct sockaddr *)&port->addrs[0].addr, host, &ip_port);
    snprintf(buf, len, "%s/%u", host, port->addrs[0].prefix);
    return buf;
}

const char *
gfr_rail_ports_names(const struct gfr_rail_port *ports, unsigned n, char *buf, size_t len)
{
    size_t used = 0;

    buf[0] = '\0';
    for (unsigned i = 0; i < n && used < len; i++)
        used += (size_t)snprintf(buf + used, len - used, "%s%s:%u", i ? ", " : "",
                                 ports[i].dev.name, ports[i].dev.port);
    return buf;
}
