/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * siw's reserved mmap key, kept out of reach.
 *
 * siw (soft-iWARP) lets user space map each queue it creates (a CQ, an
 * SRQ, a QP's send and receive queues) at an mmap offset the kernel hands
 * out: page N of the user context's mmap space is offset N * 4096, pages
 * placed first-fit from 0.  libsiw still takes SIW_INVAL_UOBJ_KEY,
 * 0x90000, for "nothing to map", a value from before siw used the common
 * mmap helpers (Linux 6.1 and rdma-core 44 as shipped by Debian 12; the
 * rdma-core source read on 2026-11-27 still has it), so it refuses the
 * object whose queue lands on page 0x90: ibv_create_qp, _cq or _srq
 * return NULL, errno left as it was.  Once the pages below are taken,
 * every new object lands there and every one is refused: measured in the
 * VM, the 8th connection of a process with per-connection receives at
 * the defaults, the 71st QP with 8 send and 8 receive work requests.
 *
 * The guard is a CQ that spans page 0x90, made before anything else of the
 * device's is mapped and kept until the device is freed: in the context's
 * fresh mmap space it starts at page 0, and no queue of ours can start
 * inside it.  About 1 MiB of kernel memory per device, siw only.  A
 * refused guard is logged and the device works as it would have without
 * it; a guard made in a context that was used before may start past the
 * page and cover nothing, which nothing here can see.
 */
#include <errno.h>
#include <string.h>

#include <rdma/siw-abi.h>

#include "gfr_mmap_guard.h"
#include "engine-res.h"

/* Enough completion entries that the CQ's mapping (entries, then a
 * control word) reaches past the start of the reserved page. */
#define GUARD_ENTRIES ((int)(SIW_INVAL_UOBJ_KEY / sizeof(struct siw_cqe)) + 1)

/*
 * The guard for verbs, a siw context; NULL when the provider refuses it,
 * which is logged and not fatal.  Call before anything else is mapped in
 * verbs (a QP, CQ or SRQ of anyone's in the process: rdma_cm shares one
 * context per device).  The caller owns the CQ and frees it with
 * gfr_mmap_guard_destroy once nothing it made in verbs is left.
 */
struct ibv_cq *
gfr_mmap_guard_create(struct ibv_context *verbs)
{
    struct ibv_cq *guard = ibv_create_cq(verbs, GUARD_ENTRIES, NULL, NULL, 0);

    if (!guard)
        gfr_rdma_log("%s: cannot create the CQ that keeps siw's reserved mmap key (%#x) from "
                     "being handed out: %s; should a queue land on it, its QP, CQ or SRQ "
                     "will be refused (docs/providers.md)",
                     ibv_get_device_name(verbs->device), (unsigned)SIW_INVAL_UOBJ_KEY,
                     strerror(errno ? errno : ENOMEM));
    return guard;
}

void
gfr_mmap_guard_destroy(struct ibv_cq *guard)
{
    if (guard)
        ibv_destroy_cq(guard);
}
