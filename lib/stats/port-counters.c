/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * An RDMA port's hw_counters from sysfs (gfr_port_counters.h).
 */
#define _GNU_SOURCE
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "gfr_port_counters.h"

const char *
gfr_sysfs_root(void)
{
    const char *root = getenv("GFR_SYSFS");

    return root && *root ? root : "/sys";
}

/* The number a counter's file holds: 0, or -EINVAL when it holds none. */
static int
read_number(int dir_fd, const char *name, uint64_t *value)
{
    char buf[32], *end;
    ssize_t n;
    int fd = openat(dir_fd, name, O_RDONLY | O_CLOEXEC);

    if (fd < 0)
        return -errno;
    n = read(fd, buf, sizeof(buf) - 1);
    close(fd);
    if (n <= 0)
        return -EINVAL;
    buf[n] = '\0';
    if (!isdigit((unsigned char)buf[0]))
        return -EINVAL;
    errno = 0;
    *value = strtoull(buf, &end, 10);
    if (errno || (*end && *end != '\n'))
        return -EINVAL;
    return 0;
}

static int
by_name(const void *a, const void *b)
{
    return strcmp(((const struct gfr_port_counter *)a)->name,
                  ((const struct gfr_port_counter *)b)->name);
}

int
gfr_port_counters_read(const char *sysfs, const char *device, unsigned port,
                       struct gfr_port_counters *out)
{
    char path[PATH_MAX];
    struct dirent *e;
    struct stat st;
    DIR *d;
    int len;

    memset(out, 0, sizeof(*out));
    if (snprintf(out->device, sizeof(out->device), "%s", device) >= (int)sizeof(out->device))
        return -ENAMETOOLONG;
    out->port = port;
    len = snprintf(path, sizeof(path), "%s/class/infiniband/%s/ports/%u", sysfs, device, port);
    if (len >= (int)sizeof(path))
        return -ENAMETOOLONG;
    if (stat(path, &st) != 0)
        return -errno;
    if (snprintf(path + len, sizeof(path) - (size_t)len, "/hw_counters") >=
        (int)(sizeof(path) - (size_t)len))
        return -ENAMETOOLONG;
    d = opendir(path);
    if (!d)
        return errno == ENOENT ? 0 : -errno;
    while ((e = readdir(d)) && out->n < GFR_PORT_COUNTERS_MAX) {
        struct gfr_port_counter *c = &out->counter[out->n];

        if (e->d_name[0] == '.' || strlen(e->d_name) >= sizeof(c->name))
            continue;
        if (read_number(dirfd(d), e->d_name, &c->value) != 0)
            continue;
        memcpy(c->name, e->d_name, strlen(e->d_name) + 1);
        out->n++;
    }
    closedir(d);
    qsort(out->counter, out->n, sizeof(out->counter[0]), by_name);
    return 0;
}

static int
ascending(const void *a, const void *b)
{
    unsigned x = *(const unsigned *)a, y = *(const unsigned *)b;

    return x < y ? -1 : x > y;
}

int
gfr_port_list(const char *sysfs, const char *device, unsigned *ports, unsigned max)
{
    char path[PATH_MAX];
    struct dirent *e;
    unsigned n = 0;
    DIR *d;

    if (snprintf(path, sizeof(path), "%s/class/infiniband/%s/ports", sysfs, device) >=
        (int)sizeof(path))
        return -ENAMETOOLONG;
    d = opendir(path);
    if (!d)
        return -errno;
    while ((e = readdir(d)) && n < max) {
        char *end;
        unsigned long v;

        if (!isdigit((unsigned char)e->d_name[0]))
            continue;
        v = strtoul(e->d_name, &end, 10);
        if (*end || v == 0 || v > UINT_MAX)
            continue;
        ports[n++] = (unsigned)v;
    }
    closedir(d);
    qsort(ports, n, sizeof(*ports), ascending);
    return (int)n;
}
