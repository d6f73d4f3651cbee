/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The rte_ring pool of pool-bench (configure --with-dpdk): DPDK's lock-free
 * multi-producer multi-consumer ring of job pointers, and max_threads
 * workers that dequeue up to 8 jobs at a time.  An idle worker polls for
 * 20 us (gfr_pool's default) and then sleeps on a futex; a producer wakes
 * one sleeper after each enqueue when any sleeps.  The ring lives in plain
 * memory (rte_ring_init), so no EAL, hugepages or devices are needed.
 *
 * The ring runs in RTS mode (relaxed tail sync): in the classic MP/MC mode a
 * producer preempted between moving the head and publishing the tail stalls
 * every other producer and consumer, and with 2 producers and 4 workers on
 * 2 CPUs a flood took over 120 s.
 */
#include <errno.h>
#include <linux/futex.h>
#include <pthread.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <rte_pause.h>
#include <rte_ring.h>

#include "pool-bench.h"

#define RING_SIZE (1u << 21) /* more than a flood's 600,000 jobs */
#define DEQUEUE_BURST 8
#define SPIN_NS 20000

static struct {
    struct rte_ring *ring;
    pthread_t threads[GFR_POOL_MAX_THREADS];
    unsigned nthreads;
    int stopping;
    int32_t futex_word;
    int sleepers;
} dp;

static void
futex_call(int op, int32_t val)
{
    syscall(SYS_futex, &dp.futex_word, op, val, NULL, NULL, 0);
}

static void *
dp_worker(void *arg)
{
    void *jobs[DEQUEUE_BURST];

    for (;;) {
        uint64_t idle_since = 0;
        unsigned n;

        n = rte_ring_dequeue_burst(dp.ring, jobs, DEQUEUE_BURST, NULL);
        for (unsigned i = 0; i < n; i++) {
            struct bench_job *job = jobs[i];
            job->fn(job);
        }
        if (n)
            continue;
        if (__atomic_load_n(&dp.stopping, __ATOMIC_ACQUIRE))
            break;
        idle_since = bench_now_ns();
        while (rte_ring_empty(dp.ring) && bench_now_ns() - idle_since < SPIN_NS)
            rte_pause();
        if (!rte_ring_empty(dp.ring))
            continue;
        /* Dekker with dp_submit: count ourselves a sleeper (full barrier),
         * then look at the ring one last time. */
        int32_t seen = __atomic_load_n(&dp.futex_word, __ATOMIC_ACQUIRE);
        __atomic_add_fetch(&dp.sleepers, 1, __ATOMIC_SEQ_CST);
        if (rte_ring_empty(dp.ring) && !__atomic_load_n(&dp.stopping, __ATOMIC_SEQ_CST))
            futex_call(FUTEX_WAIT_PRIVATE, seen);
        __atomic_sub_fetch(&dp.sleepers, 1, __ATOMIC_SEQ_CST);
    }
    return NULL;
}

static int
dp_init(unsigned max_threads)
{
    ssize_t size = rte_ring_get_memsize(RING_SIZE);

    if (size < 0 || posix_memalign((void **)&dp.ring, 64, (size_t)size))
        return -ENOMEM;
    if (rte_ring_init(dp.ring, "pool-bench", RING_SIZE,
                      RING_F_MP_RTS_ENQ | RING_F_MC_RTS_DEQ) != 0)
        return -EINVAL;
    for (dp.nthreads = 0; dp.nthreads < max_threads; dp.nthreads++)
        if (pthread_create(&dp.threads[dp.nthreads], NULL, dp_worker, NULL))
            return -EAGAIN;
    return 0;
}

static void
dp_wake(int all)
{
    __atomic_add_fetch(&dp.futex_word, 1, __ATOMIC_SEQ_CST);
    futex_call(FUTEX_WAKE_PRIVATE, all ? (int32_t)dp.nthreads : 1);
}

static void
dp_submit(struct bench_job *job)
{
    while (rte_ring_enqueue(dp.ring, job) != 0)
        rte_pause();
    __atomic_thread_fence(__ATOMIC_SEQ_CST);
    if (__atomic_load_n(&dp.sleepers, __ATOMIC_SEQ_CST))
        dp_wake(0);
}

static void
dp_fini(void)
{
    __atomic_store_n(&dp.stopping, 1, __ATOMIC_SEQ_CST);
    dp_wake(1);
    for (unsigned i = 0; i < dp.nthreads; i++)
        pthread_join(dp.threads[i], NULL);
    free(dp.ring);
}

const struct bench_pool_ops bench_rte_ring_ops = {
    .name = "rte_ring",
    .init = dp_init,
    .submit = dp_submit,
    .fini = dp_fini,
};
