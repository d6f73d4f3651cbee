/*
 * ThreadSanitizer builds only (configure --enable-tsan puts lib/tsan first
 * on the include path).  Wraps liburcu's own <urcu/system.h>.
 *
 * liburcu 0.13/0.14 implements CMM_LOAD_SHARED/CMM_STORE_SHARED (and so
 * uatomic_read/uatomic_set) as volatile accesses ordered by separate
 * barriers (cmm_smp_rmb/wmb, cmm_smp_read_barrier_depends), and TSan sees
 * neither: a volatile access is a plain access to it, and it models no
 * fence.  Every node handed over through a cds_wfcq queue would then be
 * reported as a race.  Here the same macros become __atomic accesses with
 * acquire/release order, which is what the hardware gives these accesses
 * on x86 (TSO) and what liburcu's queues rely on (the dequeuer reads a
 * node through the pointer it loaded, i.e. consume order).
 *
 * Blind spot, accepted: TSan cannot tell whether a cmm_smp_wmb()/rmb() was
 * missing between two *marked* accesses; unmarked (plain) accesses that
 * race are still reported.  Nothing of liburcu is copied; the macros keep
 * liburcu's names and documented results (CMM_STORE_SHARED returns v).
 */
#ifndef GFR_TSAN_URCU_SYSTEM_H
#define GFR_TSAN_URCU_SYSTEM_H

#include_next <urcu/system.h>

#if defined(__has_feature)
#if !__has_feature(thread_sanitizer)
#error "lib/tsan is for -fsanitize=thread builds only (configure --enable-tsan)"
#endif
#elif !defined(__SANITIZE_THREAD__)
#error "lib/tsan is for -fsanitize=thread builds only (configure --enable-tsan)"
#endif

#undef _CMM_LOAD_SHARED
#undef CMM_LOAD_SHARED
#undef _CMM_STORE_SHARED
#undef CMM_STORE_SHARED

#define _CMM_LOAD_SHARED(p) __atomic_load_n(&(p), __ATOMIC_ACQUIRE)
#define CMM_LOAD_SHARED(p) _CMM_LOAD_SHARED(p)
#define _CMM_STORE_SHARED(x, v)                                                \
    __extension__({                                                            \
        __typeof__(x) gfr_tsan_v_ = (v);                                       \
        __atomic_store_n(&(x), gfr_tsan_v_, __ATOMIC_RELEASE);                 \
        gfr_tsan_v_;                                                           \
    })
#define CMM_STORE_SHARED(x, v) _CMM_STORE_SHARED(x, v)

#endif /* GFR_TSAN_URCU_SYSTEM_H */
