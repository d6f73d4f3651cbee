/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * gfr-stat: the live statistics of the processes that run rdma.so
 * (docs/statistics.md).
 *
 *   gfr-stat                      the processes serving statistics
 *   gfr-stat PID|NAME             their tables
 *   gfr-stat --json PID|NAME      one JSON object
 *   gfr-stat --openmetrics PID|NAME   OpenMetrics text, for Prometheus
 *   gfr-stat --port-counters [DEV]    the RDMA ports' hw_counters alone
 *   gfr-stat --watch N PID|NAME   again every N seconds
 *
 * It reads $GFR_STAT_DIR (default /run/gluster/rdma), where each process
 * serves NAME.PID.sock (lib/stats/stat-server.c).
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "gfr_port_counters.h"
#include "gfr_stat_server.h"

#define MAX_PROCS 256

struct proc {
    char name[128];
    long pid;
    int alive;
    char path[PATH_MAX];
};

static void
usage(FILE *out)
{
    fprintf(out, "usage: gfr-stat [--json | --openmetrics] [--watch SECONDS] [PID|NAME]\n"
                 "  without PID or NAME: list the processes serving RDMA statistics\n"
                 "  --json         print one JSON object instead of tables\n"
                 "  --openmetrics  print OpenMetrics text (Prometheus) instead of tables\n"
                 "  --watch N      print again every N seconds (1-3600)\n"
                 "usage: gfr-stat --port-counters [DEVICE]\n"
                 "  the hw_counters of every RDMA port (of DEVICE's), a line each:\n"
                 "  DEVICE PORT COUNTER VALUE (sysfs: $GFR_SYSFS, default /sys)\n"
                 "statistics sockets are read from %s ($GFR_STAT_DIR)\n",
            gfr_stat_dir());
}

/* The processes with a socket in dir: their count, or -errno. */
static int
find_procs(const char *dir, struct proc *procs, int max)
{
    DIR *d = opendir(dir);
    struct dirent *e;
    int n = 0;

    if (!d)
        return -errno;
    while ((e = readdir(d)) && n < max) {
        struct proc *p = &procs[n];

        if (gfr_stat_parse_name(e->d_name, p->name, sizeof(p->name), &p->pid) != 0)
            continue;
        if (snprintf(p->path, sizeof(p->path), "%s/%s", dir, e->d_name) >= (int)sizeof(p->path))
            continue;
        p->alive = kill((pid_t)p->pid, 0) == 0 || errno == EPERM;
        n++;
    }
    closedir(d);
    return n;
}

static int
list_procs(const char *dir)
{
    struct proc procs[MAX_PROCS];
    int n = find_procs(dir, procs, MAX_PROCS);

    if (n == -ENOENT) {
        printf("no process serves RDMA statistics (%s does not exist)\n", dir);
        return 0;
    }
    if (n < 0) {
        fprintf(stderr, "gfr-stat: cannot read %s: %s\n", dir, strerror(-n));
        return 1;
    }
    if (n == 0) {
        printf("no process serves RDMA statistics in %s\n", dir);
        return 0;
    }
    printf("%-8s %-20s %s\n", "PID", "NAME", "SOCKET");
    for (int i = 0; i < n; i++)
        printf("%-8ld %-20s %s%s\n", procs[i].pid, procs[i].name, procs[i].path,
               procs[i].alive ? "" : " (process gone)");
    return 0;
}

/* Prints DEVICE PORT COUNTER VALUE for each counter of device's ports:
 * 0, or 1 with a message when the device is not there. */
static int
print_device_counters(const char *sysfs, const char *device)
{
    static struct gfr_port_counters pc;
    unsigned ports[64];
    int n = gfr_port_list(sysfs, device, ports, 64);

    if (n < 0) {
        fprintf(stderr, "gfr-stat: no RDMA device %s in %s/class/infiniband: %s\n", device, sysfs,
                strerror(-n));
        return 1;
    }
    for (int i = 0; i < n; i++) {
        int err = gfr_port_counters_read(sysfs, device, ports[i], &pc);

        if (err) {
            fprintf(stderr, "gfr-stat: cannot read the counters of %s port %u: %s\n", device,
                    ports[i], strerror(-err));
            return 1;
        }
        for (unsigned c = 0; c < pc.n; c++)
            printf("%s %u %s %" PRIu64 "\n", device, ports[i], pc.counter[c].name,
                   pc.counter[c].value);
    }
    return 0;
}

/* --port-counters [DEVICE]: one device's, or every device's. */
static int
port_counters(const char *device)
{
    const char *sysfs = gfr_sysfs_root();
    char dir[PATH_MAX];
    struct dirent *e;
    int status = 0;
    DIR *d;

    if (device)
        return print_device_counters(sysfs, device);
    snprintf(dir, sizeof(dir), "%s/class/infiniband", sysfs);
    d = opendir(dir);
    if (!d) {
        if (errno == ENOENT)
            return 0; /* no RDMA device: no counters */
        fprintf(stderr, "gfr-stat: cannot read %s: %s\n", dir, strerror(errno));
        return 1;
    }
    while ((e = readdir(d)))
        if (e->d_name[0] != '.')
            status |= print_device_counters(sysfs, e->d_name);
    closedir(d);
    return status;
}

/* The one live process that `which` (a pid or a name) names. */
static int
pick(const char *dir, const char *which, struct proc *out)
{
    struct proc procs[MAX_PROCS];
    int n = find_procs(dir, procs, MAX_PROCS);
    char *end;
    long pid = strtol(which, &end, 10);
    int by_pid = *which && !*end;
    int found = 0;

    if (n < 0) {
        fprintf(stderr, "gfr-stat: cannot read %s: %s\n", dir, strerror(-n));
        return -1;
    }
    for (int i = 0; i < n; i++) {
        if (!procs[i].alive || (by_pid ? procs[i].pid != pid : strcmp(procs[i].name, which)))
            continue;
        if (found++)
            continue;
        *out = procs[i];
    }
    if (found == 1)
        return 0;
    if (!found)
        fprintf(stderr, "gfr-stat: no running process %s %s serves RDMA statistics in %s "
                        "(gfr-stat without arguments lists them)\n",
                by_pid ? "with pid" : "named", which, dir);
    else
        fprintf(stderr, "gfr-stat: %d processes are named %s: give one's pid (gfr-stat lists "
                        "them)\n",
                found, which);
    return -1;
}

/* Asks p for its statistics ("table\n", "json\n" or "openmetrics\n") and
 * copies the answer to stdout: 0, or 1. */
static int
query(const struct proc *p, const char *request)
{
    struct sockaddr_un addr = {.sun_family = AF_UNIX};
    char buf[65536];
    ssize_t n;
    int fd, got = 0;

    if (strlen(p->path) >= sizeof(addr.sun_path)) {
        fprintf(stderr, "gfr-stat: %s: path too long for a unix socket\n", p->path);
        return 1;
    }
    strcpy(addr.sun_path, p->path);
    fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0 || connect(fd, (struct sockaddr *)&addr, sizeof(addr)) != 0) {
        int err = errno;

        if (err == EACCES || err == EPERM)
            fprintf(stderr, "gfr-stat: %s: permission denied: the RDMA statistics are "
                            "root's only (run gfr-stat as root)\n",
                    p->path);
        else
            fprintf(stderr, "gfr-stat: cannot connect to %s (%s, pid %ld): %s\n", p->path,
                    p->name, p->pid, strerror(err));
        if (fd >= 0)
            close(fd);
        return 1;
    }
    if (send(fd, request, strlen(request), MSG_NOSIGNAL) != (ssize_t)strlen(request)) {
        fprintf(stderr, "gfr-stat: cannot send to %s: %s\n", p->path, strerror(errno));
        close(fd);
        return 1;
    }
    while ((n = read(fd, buf, sizeof(buf))) > 0) {
        if (!got && n >= 6 && strncmp(buf, "error:", 6) == 0) {
            fprintf(stderr, "gfr-stat: %s (pid %ld) answered: %.*s", p->name, p->pid, (int)n,
                    buf);
            close(fd);
            return 1;
        }
        fwrite(buf, 1, (size_t)n, stdout);
        got = 1;
    }
    close(fd);
    if (n < 0 || !got) {
        fprintf(stderr, "gfr-stat: %s (pid %ld) closed without statistics%s%s\n", p->name,
                p->pid, n < 0 ? ": " : "", n < 0 ? strerror(errno) : "");
        return 1;
    }
    fflush(stdout);
    return 0;
}

int
main(int argc, char **argv)
{
    static const struct option longopts[] = {
        {"json", no_argument, NULL, 'j'},
        {"openmetrics", no_argument, NULL, 'o'},
        {"port-counters", no_argument, NULL, 'p'},
        {"watch", required_argument, NULL, 'w'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    const char *dir = gfr_stat_dir();
    const char *request = "table\n";
    long watch = 0;
    int ports = 0, c;
    struct proc p;

    while ((c = getopt_long(argc, argv, "jopw:h", longopts, NULL)) != -1) {
        char *end;

        switch (c) {
        case 'j':
        case 'o':
            if (strcmp(request, "table\n") != 0) {
                fprintf(stderr, "gfr-stat: --json and --openmetrics exclude each other\n");
                return 2;
            }
            request = c == 'j' ? "json\n" : "openmetrics\n";
            break;
        case 'p':
            ports = 1;
            break;
        case 'w':
            watch = strtol(optarg, &end, 10);
            if (*end || watch < 1 || watch > 3600) {
                fprintf(stderr, "gfr-stat: --watch '%s': give whole seconds from 1 to 3600\n",
                        optarg);
                return 2;
            }
            break;
        case 'h':
            usage(stdout);
            return 0;
        default:
            usage(stderr);
            return 2;
        }
    }
    if (ports) {
        if (strcmp(request, "table\n") != 0 || watch || optind + 1 < argc) {
            usage(stderr);
            return 2;
        }
        return port_counters(optind < argc ? argv[optind] : NULL);
    }
    if (optind == argc) {
        if (strcmp(request, "table\n") != 0 || watch) {
            fprintf(stderr, "gfr-stat: --json, --openmetrics and --watch need a PID or NAME\n");
            return 2;
        }
        return list_procs(dir);
    }
    if (optind + 1 != argc) {
        usage(stderr);
        return 2;
    }
    if (pick(dir, argv[optind], &p) != 0)
        return 1;
    for (;;) {
        if (watch && strcmp(request, "table\n") == 0)
            fputs("\033[H\033[2J", stdout);
        if (query(&p, request) != 0)
            return 1;
        if (!watch)
            return 0;
        sleep((unsigned)watch);
    }
}
