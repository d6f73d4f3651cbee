/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * See pool-sched.h for who may call what.  Every function but
 * gfr_sched_enqueue and gfr_sched_has_work runs under the pool's sched_lock,
 * which makes it the single consumer that liburcu's __cds_wfcq_* calls
 * require.  Only the non-blocking variants are used: a producer preempted
 * between its exchange and its link must never make a worker sleep (the
 * blocking variants poll for 10 ms).
 */
#include "pool-sched.h"

#include <stdlib.h>

#include <urcu/uatomic.h>

static void
fifo_init(struct gfr_sched_fifo *fifo)
{
    cds_wfcq_init(&fifo->head, &fifo->tail);
}

static int
fifo_empty(struct gfr_sched_fifo *fifo)
{
    return cds_wfcq_empty(&fifo->head, &fifo->tail);
}

static int
fifo_enqueue(struct gfr_sched_fifo *fifo, struct cds_wfcq_node *node)
{
    cds_wfcq_node_init(node);
    return cds_wfcq_enqueue(&fifo->head, &fifo->tail, node);
}

void
gfr_sched_init(struct gfr_sched *sched, unsigned starvation_limit)
{
    for (int c = 0; c < GFR_POOL_NR_PRIO; c++) {
        fifo_init(&sched->ready[c]);
        sched->skipped[c] = 0;
    }
    fifo_init(&sched->returned);
    CDS_INIT_LIST_HEAD(&sched->clients);
    sched->starvation_limit = starvation_limit;
}

struct gfr_pool_client *
gfr_sched_client_new(struct gfr_sched *sched, struct gfr_pool *pool)
{
    struct gfr_pool_client *client;

    if (posix_memalign((void **)&client, CAA_CACHE_LINE_SIZE, sizeof(*client)))
        return NULL;
    for (int c = 0; c < GFR_POOL_NR_PRIO; c++) {
        fifo_init(&client->jobs[c]);
        client->scheduled[c] = 0;
    }
    client->pool = pool;
    client->released = 0;
    cds_list_add_tail(&client->all_link, &sched->clients);
    return client;
}

int
gfr_sched_enqueue(struct gfr_sched *sched, struct gfr_pool_client *client,
                  int c, struct gfr_pool_job *job)
{
    if (fifo_enqueue(&client->jobs[c], &job->node))
        return 0; /* the client was scheduled already */
    if (uatomic_xchg(&client->scheduled[c], 1) != 0)
        return 0; /* a worker re-scheduled it meanwhile */
    if (fifo_enqueue(&sched->ready[c], &client->ready_node[c]))
        return 0;
    cmm_smp_mb();
    return 1;
}

void
gfr_sched_return(struct gfr_sched *sched, struct gfr_pool_job **jobs,
                 unsigned n)
{
    for (unsigned i = 0; i < n; i++)
        fifo_enqueue(&sched->returned, &jobs[i]->node);
}

int
gfr_sched_has_work(struct gfr_sched *sched)
{
    if (!fifo_empty(&sched->returned))
        return 1;
    for (int c = 0; c < GFR_POOL_NR_PRIO; c++)
        if (!fifo_empty(&sched->ready[c]))
            return 1;
    return 0;
}

static int
client_idle(struct gfr_pool_client *client)
{
    for (int c = 0; c < GFR_POOL_NR_PRIO; c++)
        if (uatomic_read(&client->scheduled[c]))
            return 0;
    return 1;
}

static void
free_client(struct gfr_pool_client *client)
{
    cds_list_del(&client->all_link);
    for (int c = 0; c < GFR_POOL_NR_PRIO; c++)
        cds_wfcq_destroy(&client->jobs[c].head, &client->jobs[c].tail);
    free(client);
}

/*
 * The highest class with ready clients, unless a lower one has been skipped
 * starvation_limit times: then the most skipped one (the lower on a tie).
 * A class with ready clients thus waits at most starvation_limit + 1 picks.
 */
static int
pick_class(struct gfr_sched *sched)
{
    int ready[GFR_POOL_NR_PRIO];
    int chosen = -1;
    int starving = -1;

    for (int c = 0; c < GFR_POOL_NR_PRIO; c++) {
        ready[c] = !fifo_empty(&sched->ready[c]);
        if (!ready[c])
            continue;
        if (chosen < 0)
            chosen = c;
        if (sched->skipped[c] >= sched->starvation_limit &&
            (starving < 0 || sched->skipped[c] >= sched->skipped[starving]))
            starving = c;
    }
    if (starving >= 0)
        chosen = starving;
    for (int c = 0; c < GFR_POOL_NR_PRIO; c++) {
        if (c == chosen)
            sched->skipped[c] = 0;
        else if (ready[c])
            sched->skipped[c]++;
    }
    return chosen;
}

/*
 * The client at the head of ready[c] has no job left (as far as its queue
 * shows): take it off the ready queue and clear its flag, then look again,
 * since a producer that found the flag still set left the scheduling to us.
 * Returns 0, or -1 when a half-linked ready queue stops us (retry later).
 */
static int
unschedule_head(struct gfr_sched *sched, int c, struct gfr_pool_client *client)
{
    struct cds_wfcq_node *node =
        __cds_wfcq_dequeue_nonblocking(&sched->ready[c].head,
                                       &sched->ready[c].tail);

    if (node == CDS_WFCQ_WOULDBLOCK)
        return -1;
    /* A full barrier on both sides: the dequeue and this consumer's reads
     * of the client's jobs complete before a producer can see the flag
     * clear (uatomic_set's plain store would let them pass it on weakly
     * ordered CPUs), and the look at the jobs below follows the store. */
    (void)uatomic_xchg(&client->scheduled[c], 0);
    if (!fifo_empty(&client->jobs[c])) {
        if (uatomic_xchg(&client->scheduled[c], 1) == 0)
            fifo_enqueue(&sched->ready[c], &client->ready_node[c]);
    } else if (client->released && client_idle(client)) {
        free_client(client);
    }
    return 0;
}

/* Round-robin: the head client goes to the back when others wait. */
static void
rotate_head(struct gfr_sched *sched, int c, struct cds_wfcq_node *head)
{
    struct cds_wfcq_node *next;
    struct cds_wfcq_node *node;

    next = __cds_wfcq_next_nonblocking(&sched->ready[c].head,
                                       &sched->ready[c].tail, head);
    if (next == NULL)
        return; /* alone: it keeps its turn */
    node = __cds_wfcq_dequeue_nonblocking(&sched->ready[c].head,
                                          &sched->ready[c].tail);
    if (node == CDS_WFCQ_WOULDBLOCK)
        return;
    fifo_enqueue(&sched->ready[c], node);
}

struct gfr_pool_job *
gfr_sched_take(struct gfr_sched *sched, int *blocked)
{
    struct cds_wfcq_node *returned;

    /* Handed-back jobs were picked before anything still queued. */
    returned = __cds_wfcq_dequeue_nonblocking(&sched->returned.head,
                                              &sched->returned.tail);
    if (returned == CDS_WFCQ_WOULDBLOCK) {
        *blocked = 1;
        return NULL;
    }
    if (returned)
        return caa_container_of(returned, struct gfr_pool_job, node);

    /* Each round either returns or removes a client from a ready queue;
     * the bound only guards against a queue that keeps half-linking. */
    for (int round = 0; round < 64; round++) {
        struct gfr_pool_client *client;
        struct cds_wfcq_node *head;
        struct cds_wfcq_node *node;
        int state;
        int c = pick_class(sched);

        if (c < 0)
            return NULL;
        head = __cds_wfcq_first_nonblocking(&sched->ready[c].head,
                                            &sched->ready[c].tail);
        if (head == NULL)
            continue;
        if (head == CDS_WFCQ_WOULDBLOCK) {
            *blocked = 1;
            return NULL;
        }
        client = caa_container_of(head, struct gfr_pool_client, ready_node[c]);
        node = __cds_wfcq_dequeue_with_state_nonblocking(
            &client->jobs[c].head, &client->jobs[c].tail, &state);
        if (node == CDS_WFCQ_WOULDBLOCK) {
            /* Its producer is mid-enqueue: serve the others first. */
            *blocked = 1;
            rotate_head(sched, c, head);
            continue;
        }
        if (node == NULL) {
            if (unschedule_head(sched, c, client) != 0) {
                *blocked = 1;
                return NULL;
            }
            continue;
        }
        if (state & CDS_WFCQ_STATE_LAST) {
            if (unschedule_head(sched, c, client) != 0)
                *blocked = 1;
        } else {
            rotate_head(sched, c, head);
        }
        return caa_container_of(node, struct gfr_pool_job, node);
    }
    *blocked = 1;
    return NULL;
}

void
gfr_sched_release(struct gfr_sched *sched, struct gfr_pool_client *client)
{
    client->released = 1;
    if (client_idle(client))
        free_client(client);
}

void
gfr_sched_fini(struct gfr_sched *sched)
{
    /* Not cds_list_for_each_entry: its end test forms a client pointer
     * from the list head, which is not aligned like a client. */
    while (!cds_list_empty(&sched->clients))
        free_client(cds_list_first_entry(&sched->clients,
                                         struct gfr_pool_client, all_link));
    for (int c = 0; c < GFR_POOL_NR_PRIO; c++)
        cds_wfcq_destroy(&sched->ready[c].head, &sched->ready[c].tail);
    cds_wfcq_destroy(&sched->returned.head, &sched->returned.tail);
}
