/*
 * ThreadSanitizer builds only (configure --enable-tsan puts lib/tsan first
 * on the include path).  Wraps liburcu's own <urcu/uatomic.h>.
 *
 * On x86, liburcu 0.13/0.14 implements the uatomic read-modify-write
 * operations with inline assembly (lock; cmpxchg/xchg/xadd/add/...:
 * urcu/uatomic/x86.h), which TSan cannot see, and there is no switch to
 * pick its __sync fallback (urcu/uatomic/generic.h fills in only what the
 * architecture header left undefined; the x86 header defines them all).
 * liburcu 0.15 added CONFIG_RCU_USE_ATOMIC_BUILTINS, a choice made when
 * liburcu itself is configured, not by its users.
 *
 * So after liburcu's header has defined them, the operations the project
 * (and liburcu's inline queue and RCU read-side code) expand are redefined
 * with __atomic builtins, in the order liburcu documents for x86:
 * xchg, cmpxchg and add_return imply full barriers; add/inc/dec/and/or are
 * lock-prefixed there too, which cmm_smp_mb__{before,after}_uatomic_*()
 * (empty on x86) rely on, so they are seq_cst as well.  uatomic_read/set
 * follow CMM_LOAD/STORE_SHARED (see system.h next to this file).
 * uatomic_sub/sub_return/inc/dec come from liburcu's generic header,
 * defined on top of these.
 */
#ifndef GFR_TSAN_URCU_UATOMIC_H
#define GFR_TSAN_URCU_UATOMIC_H

#include_next <urcu/uatomic.h>
#include <urcu/system.h> /* the wrapper next to this file */

/* liburcu 0.15 rewrote these (memory-order arguments, uatomic_load) */
#ifdef uatomic_load
#error "liburcu >= 0.15: build it with --enable-compiler-atomic-builtins and drop lib/tsan"
#endif

#undef uatomic_read
#undef uatomic_set
#undef uatomic_xchg
#undef uatomic_cmpxchg
#undef uatomic_add_return
#undef uatomic_add
#undef uatomic_inc
#undef uatomic_dec
#undef uatomic_and
#undef uatomic_or

#ifdef GFR_TSAN_URCU_STRICT
/* Opt-in: liburcu's documented contract, no ordering without cmm_smp_*mb()
 * (which TSan cannot see), so reports include code that relies on x86's. */
#define GFR_TSAN_URCU_READ_ORDER_ __ATOMIC_RELAXED
#define GFR_TSAN_URCU_SET_ORDER_ __ATOMIC_RELAXED
#else
#define GFR_TSAN_URCU_READ_ORDER_ __ATOMIC_ACQUIRE
#define GFR_TSAN_URCU_SET_ORDER_ __ATOMIC_RELEASE
#endif
#define uatomic_read(addr) __atomic_load_n((addr), GFR_TSAN_URCU_READ_ORDER_)
#define uatomic_set(addr, v) ((void)__atomic_store_n((addr), (v), GFR_TSAN_URCU_SET_ORDER_))
#define uatomic_xchg(addr, v) __atomic_exchange_n((addr), (v), __ATOMIC_SEQ_CST)
#define uatomic_cmpxchg(addr, old, _new)                                       \
    __extension__({                                                            \
        __typeof__(*(addr)) gfr_tsan_old_ = (old);                             \
        __atomic_compare_exchange_n((addr), &gfr_tsan_old_, (_new), 0,         \
                                    __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);       \
        gfr_tsan_old_;                                                         \
    })
#define uatomic_add_return(addr, v) __atomic_add_fetch((addr), (v), __ATOMIC_SEQ_CST)
#define uatomic_add(addr, v) ((void)__atomic_add_fetch((addr), (v), __ATOMIC_SEQ_CST))
#define uatomic_inc(addr) uatomic_add((addr), 1)
#define uatomic_dec(addr) uatomic_add((addr), -1)
#define uatomic_and(addr, v) ((void)__atomic_and_fetch((addr), (v), __ATOMIC_SEQ_CST))
#define uatomic_or(addr, v) ((void)__atomic_or_fetch((addr), (v), __ATOMIC_SEQ_CST))

#endif /* GFR_TSAN_URCU_UATOMIC_H */
