/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The RDMA engine's options: defaults, parsing from "key=value" strings
 * (gfr-perf's command line, the GlusterFS plugin's volume options) and
 * validation.  Pure functions, any thread.
 */
#ifndef GFR_RDMA_OPTS_H
#define GFR_RDMA_OPTS_H

#include <stddef.h>
#include <stdint.h>

/* How a CQ poller thread waits for completions. */
enum gfr_poll_mode {
    GFR_POLL_BUSY,     /* poll without sleeping (one core per poller) */
    GFR_POLL_ADAPTIVE, /* poll a window of spin_us..spin_max_us, then sleep */
    GFR_POLL_EVENT,    /* arm and sleep after every empty poll */
};

/* Where a received message is handled. */
enum gfr_dispatch {
    GFR_DISPATCH_POOL,   /* a job in the global worker pool */
    GFR_DISPATCH_INLINE, /* on the poller thread (run to completion) */
    GFR_DISPATCH_DIRECT, /* on the thread that reaped it, a pool job polling
                          * in its place while a handler blocks or runs long */
};

/* Where a connection's receive buffers come from. */
enum gfr_receive_queue {
    GFR_RQ_SRQ,      /* the device's shared receive queue */
    GFR_RQ_PER_CONN, /* buffers of its own, on its own QP */
    GFR_RQ_AUTO,     /* shared where a SEND that finds none waits (RNR), own on iWARP */
};

/* Whether a connection may spread over several rails (docs/multi-rail.md):
 * what gfr_rdma_opts_rails reads from the rails option. */
enum gfr_rails {
    GFR_RAILS_OFF,
    GFR_RAILS_AUTO,    /* join every rail address the server advertises */
    GFR_RAILS_DEVICES, /* the same, only from the device ports the option names */
};

/* rails = DEV[:PORT],...: at most this many, each named once. */
#define GFR_RDMA_MAX_RAIL_DEVICES 4

/* One device port of rails = DEV[:PORT],... */
struct gfr_rail_device {
    char name[64];
    uint8_t port; /* 1 when the option leaves it out */
};

/* rail-addresses: at most this many. */
#define GFR_RDMA_MAX_RAIL_ADDRS 4

/* Whether the engine times the stages of each call (rdma-trace.c). */
enum gfr_latency_stats {
    GFR_LATENCY_STATS_OFF,
    GFR_LATENCY_STATS_ON,
};

struct gfr_rdma_opts {
    enum gfr_poll_mode poll_mode;
    uint32_t spin_us;         /* adaptive: the shortest poll before sleeping */
    uint32_t spin_max_us;     /* adaptive: the longest; <= spin_us: fixed */
    uint32_t reply_spin_max_us; /* longest poll for an expected reply; 0: none */
    uint32_t pollers;         /* CQ poller threads per device */
    enum gfr_dispatch dispatch;
    enum gfr_receive_queue receive_queue;
    uint32_t credits;         /* messages a peer may have in flight */
    uint32_t inline_max;      /* receive buffer size, header included */
    uint32_t max_msg;         /* largest message, inline and bulk */
    uint32_t segment_size;    /* largest single RDMA READ/WRITE */
    uint32_t copy_max;        /* bulk up to this goes through staging buffers */
    uint32_t rdma_depth;      /* RDMA READs/WRITEs in flight per connection */
    uint32_t connect_timeout_ms; /* address, route, CM connect, disconnect */
    uint32_t keepalive_ms;    /* a probe per connection this often, 0: none */
    uint32_t rail_timeout_ms; /* multi-rail: a rail whose sends make no progress this
                               * long while another rail's do ends, 0: never */
    uint8_t qp_timeout;       /* local ACK timeout: 4.096 us * 2^n */
    uint8_t retry_count;      /* 0-7 */
    uint8_t rnr_retry;        /* 0-7; 7 = retry forever */
    uint8_t port;             /* device port, 1-based */
    int32_t gid_index;        /* -1: chosen by the CM */
    char device[64];          /* "": the device the CM resolves */
    enum gfr_latency_stats latency_stats;
    /* "off", "auto" or "DEV[:PORT],...": see gfr_rdma_opts_rails. */
    char rails[128];
    /* A server's rail addresses, advertised to clients with rails:
     * "ADDR,ADDR", numeric IPv4 or IPv6; "": none. */
    char rail_addresses[192];
};

/* What one option accepts: a row of the engine's option table, the one
 * source of every option's key, range and default.  The GlusterFS plugin's
 * volume option table repeats them for glusterd, and a unit test compares
 * the two. */
enum gfr_rdma_opt_kind {
    GFR_OPT_UINT,
    GFR_OPT_SIZE, /* a whole number of bytes; K and M suffixes */
    GFR_OPT_INT,
    GFR_OPT_CHOICE,
    GFR_OPT_NAME, /* a device name */
    GFR_OPT_ADDRESSES, /* numeric IP addresses, comma-separated */
    GFR_OPT_RAILS, /* off, auto, or device ports DEV[:PORT], comma-separated */
};

/* Where an option's value applies.  A connection may run by options of
 * its own (gfr_rdma_connect, gfr_rdma_listen) only where they agree with
 * its engine's on every option the engine runs by as a whole. */
enum gfr_rdma_opt_scope {
    GFR_OPT_CONNECTION, /* each connection's own */
    GFR_OPT_ENGINE,     /* the engine's pollers, dispatch or buffers */
    /* the engine's while receive buffers are shared (receive-queue other
     * than per-connection: the shared queue has one buffer size),
     * otherwise each connection's */
    GFR_OPT_ENGINE_IF_SHARED_RECEIVES,
};

struct gfr_rdma_opt_info {
    const char *key;
    enum gfr_rdma_opt_kind kind;
    enum gfr_rdma_opt_scope scope;
    long long min; /* numbers */
    long long max;
    const char *const *choices; /* GFR_OPT_CHOICE: NULL-terminated */
    const char *default_value;  /* as gfr_rdma_opts_set takes it; NULL: none */
};

/* The option at index i (0, 1, ...), or NULL past the last.  Any thread. */
const struct gfr_rdma_opt_info *gfr_rdma_opt_info(size_t i);

/* Fills every option's default from the table: adaptive, 50..2000 us,
 * replies polled for up to 10 ms, 1 poller, direct, srq, 64 credits, 8 KiB inline, 4 MiB messages, 1 MiB
 * segments, depth 4, connect 5 s, keepalive 10 s, timeout 17, retry 7,
 * rnr 7, port 1, gid -1, no device, latency-stats on, rails off, no rail
 * addresses, rail timeout 5 s. */
void gfr_rdma_opts_init(struct gfr_rdma_opts *opts);

/*
 * Sets one option from its text form: key is one of poll-mode, spin-us,
 * spin-max-us, reply-spin-max-us, pollers, dispatch, receive-queue, credits, inline-max,
 * max-msg, segment-size, rdma-depth, connect-timeout-ms, keepalive-ms,
 * qp-timeout, retry-count, rnr-retry, port, gid-index, device,
 * latency-stats, rails, rail-addresses, rail-timeout-ms.  Sizes accept K, M suffixes (powers of 1024).
 * Returns 0, -ENOENT (unknown key) or -EINVAL (bad value); on error *why
 * (if not NULL) gets a sentence naming the key and the accepted values.
 */
int gfr_rdma_opts_set(struct gfr_rdma_opts *opts, const char *key,
                      const char *value, char *why, size_t why_len);

/* Checks the options: each within its table range (a caller may have
 * written the struct directly), and the relations between them; 0 or
 * -EINVAL with *why as above. */
int gfr_rdma_opts_check(const struct gfr_rdma_opts *opts, char *why,
                        size_t why_len);

/*
 * The first option that engine and conn set differently among those
 * engine's options make engine-wide (gfr_rdma_opt_scope), or NULL when a
 * connection may run by conn on an engine created with engine.  Any
 * thread.
 */
const char *gfr_rdma_opts_engine_conflict(const struct gfr_rdma_opts *engine,
                                          const struct gfr_rdma_opts *conn);

/*
 * The rail addresses of opts, parsed into out (up to max); the port is
 * left 0.  Returns how many, or -EINVAL for text gfr_rdma_opts_set would
 * have refused.  Any thread.
 */
struct sockaddr_storage;
int gfr_rdma_opts_rail_addresses(const struct gfr_rdma_opts *opts,
                                 struct sockaddr_storage *out, unsigned max);

/* Whether opts->rails is off, auto or a list of device ports; off for
 * text gfr_rdma_opts_set would have refused.  Any thread. */
enum gfr_rails gfr_rdma_opts_rails(const struct gfr_rdma_opts *opts);

/*
 * The device ports rails = DEV[:PORT],... names, parsed into out (up to
 * max).  Returns how many (0 for off and auto), or -EINVAL for text
 * gfr_rdma_opts_set would have refused.  Any thread.
 */
int gfr_rdma_opts_rail_devices(const struct gfr_rdma_opts *opts, struct gfr_rail_device *out,
                               unsigned max);

const char *gfr_poll_mode_str(enum gfr_poll_mode mode);
const char *gfr_dispatch_str(enum gfr_dispatch dispatch);

#endif /* GFR_RDMA_OPTS_H */
