/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * An RDMA port's own counters, as its provider keeps them in sysfs:
 * SYSFS/class/infiniband/DEV/ports/PORT/hw_counters/NAME, one number a
 * file (rxe's sent_pkts, retry_exceeded_err, send_rnr_err; mlx5's
 * out_of_sequence, rnr_nak_retry_err; ...), read by name, whatever the
 * provider calls them.  A provider that keeps none (siw) has no such
 * directory: that reads as a port with no counters, not as an error.
 *
 * The one reader of them: gfr-stat shows them beside a process's
 * statistics (the process reads its devices' ports, lib/stats/stats-render.c),
 * `gfr-stat --port-counters` prints them alone, and the VM tests read
 * theirs through it (tests/softroce/fabric-lib.sh, rdma_counter).
 *
 * No state: any thread.  Reading costs one open and read per counter.
 */
#ifndef GFR_PORT_COUNTERS_H
#define GFR_PORT_COUNTERS_H

#include <stdint.h>

/* Where sysfs is: $GFR_SYSFS (tests), else /sys. */
const char *gfr_sysfs_root(void);

#define GFR_PORT_COUNTERS_MAX 128
#define GFR_PORT_COUNTER_NAME 64

struct gfr_port_counter {
    char name[GFR_PORT_COUNTER_NAME];
    uint64_t value;
};

struct gfr_port_counters {
    char device[64];
    unsigned port;
    unsigned n; /* 0: the provider keeps none */
    struct gfr_port_counter counter[GFR_PORT_COUNTERS_MAX]; /* sorted by name */
};

/*
 * Reads every counter of device's port into *out, sorted by name (the
 * first GFR_PORT_COUNTERS_MAX of them).  A file that is not one number
 * (none is, on the providers seen) is skipped.  0; -ENOENT when sysfs has
 * no such device or port; -ENAMETOOLONG; another -errno when the counters'
 * directory cannot be read.
 */
int gfr_port_counters_read(const char *sysfs, const char *device, unsigned port,
                           struct gfr_port_counters *out);

/*
 * The port numbers of device, ascending, into ports (at most max): their
 * count, or -ENOENT (no such device), another -errno.
 */
int gfr_port_list(const char *sysfs, const char *device, unsigned *ports, unsigned max);

#endif /* GFR_PORT_COUNTERS_H */
