/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * A verbs and rdma_cm model with hardware semantics, for host tests: two
 * simulated hosts (10.0.0.1 on device model0, 10.0.0.2 on model1) joined
 * by a fabric thread, over which two engines in one test process talk;
 * each host has a second rail (10.0.1.1 on model2, 10.0.1.2 on model3),
 * which an address resolved without a source reaches from its own.
 * It replaces libibverbs' and librdmacm's stateful calls for the whole
 * test program (the string helpers stay the libraries').  A test double:
 * it never ships in rdma.so.
 *
 * The fabric thread moves the work: it executes posted work requests and
 * hands their completions to the CQs in an order drawn from the seed,
 * across QPs and within what RC allows, and injects the planned fault.
 * The engines' own threads still interleave as the kernel schedules them,
 * so a seed fixes the fault schedule and the fabric's choices, not every
 * run's exact history.
 *
 * It checks what the strictest hardware checks, and records each breach
 * as a finding instead of trusting the engine: local and remote access by
 * key, range, PD and access flags; posts in the wrong QP state; send,
 * receive, SRQ and CQ capacity; and, at model_stop, every object freed.
 *
 * Locking: one mutex guards the whole model; the engines' threads call in
 * with their own locks held (conn->lock before the model's), and the
 * model calls nothing of theirs while holding it.
 */
#ifndef GFR_VERBS_MODEL_H
#define GFR_VERBS_MODEL_H

#include <stddef.h>
#include <stdint.h>
#include <netinet/in.h>

enum model_profile {
    MODEL_RXE,   /* lenient: a destroyed QP's completions stay, no LAST_WQE */
    MODEL_MLX5,  /* destroying a QP drops its unpolled CQEs with their SRQ WQEs */
    MODEL_IWARP, /* posts in error fail, READ sinks need remote write, no RNR */
    MODEL_NPROFILES,
};

enum model_fault {
    MODEL_FAULT_NONE,
    MODEL_FAULT_QP_ERROR,        /* the chosen work request completes in error */
    MODEL_FAULT_PORT_DOWN,       /* the device's port goes down for good */
    MODEL_FAULT_DEVICE_REMOVAL,  /* the device is hot-unplugged, with what it
                                  * received and had not completed */
    MODEL_FAULT_PEER_DISCONNECT, /* a connection is disconnected by its owner */
    MODEL_NFAULTS,
};

/* One fault, injected when the at_post-th send work request is posted
 * (counted over both hosts, from 1). */
struct model_plan {
    enum model_fault fault;
    unsigned at_post;
    unsigned host; /* 0 to 3: which device (port down, removal; model_addr) */
};

/* Called by the fabric thread, without the model's lock, for
 * MODEL_FAULT_PEER_DISCONNECT; pick is a number from the seed. */
typedef void (*model_disconnect_fn)(void *cb_arg, uint64_t pick);

/* Resets the model and starts its fabric thread.  0 or -errno. */
int model_start(enum model_profile profile, uint64_t seed, const struct model_plan *plan,
                model_disconnect_fn disconnect, void *cb_arg);

/* Stops the fabric thread, then checks that every object the engines
 * made was freed.  Writes the findings of the run (one per line) into
 * report and returns how many there were. */
unsigned model_stop(char *report, size_t len);

/* QPs not yet destroyed. */
unsigned model_live_qps(void);

/* A silent stall: the sends of every QP now on host's device (0 to 3:
 * model_addr) wait, without an error, until the QP fails; QPs made later
 * are not stalled.  Any thread. */
void model_stall(unsigned host);

/* How many faults the plan injected (0 or 1) by now. */
unsigned model_faults_injected(void);

/* How many completions the profile gave twice by now (siw's duplicate
 * flush of a READ: flushes_read_twice). */
unsigned model_duplicates(void);

/* The address of device 0 to 3 (host 0 or 1, on rail 0 or 1: device
 * host + 2 * rail) with port. */
void model_addr(unsigned host, uint16_t port, struct sockaddr_in *sin);

const char *model_profile_name(enum model_profile profile);
const char *model_fault_name(enum model_fault fault);

#endif /* GFR_VERBS_MODEL_H */
