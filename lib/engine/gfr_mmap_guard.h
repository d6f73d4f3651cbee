/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * siw's reserved mmap offset, kept out of reach (lib/engine/rdma-mmap-guard.c).
 * For the engine's devices and for test programs that make verbs objects
 * of their own on siw.
 */
#ifndef GFR_MMAP_GUARD_H
#define GFR_MMAP_GUARD_H

#include <infiniband/verbs.h>

/* ibv_device_attr.vendor_id of siw (soft-iWARP): "bmt" in ASCII. */
#define GFR_SIW_VENDOR_ID 0x626d74

struct ibv_cq *gfr_mmap_guard_create(struct ibv_context *verbs);
void gfr_mmap_guard_destroy(struct ibv_cq *guard);

#endif
