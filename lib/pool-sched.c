/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Locking: every function here runs under the pool's scheduler mutex (see
 * pool-sched.h); the lists are plain urcu/list.h lists.
 */
#include "pool-sched.h"

#include <stdlib.h>

void
gfr_sched_init(struct gfr_sched *sched, unsigned starvation_limit)
{
    for (int c = 0; c < GFR_POOL_NR_PRIO; c++) {
        CDS_INIT_LIST_HEAD(&sched->ready[c]);
        sched->skipped[c] = 0;
    }
    CDS_INIT_LIST_HEAD(&sched->clients);
    sched->queued = 0;
    sched->starvation_limit = starvation_limit;
}

void
gfr_sched_client_init(struct gfr_sched *sched, struct gfr_pool_client *client,
                      struct gfr_pool *pool)
{
    client->pool = pool;
    for (int c = 0; c < GFR_POOL_NR_PRIO; c++) {
        CDS_INIT_LIST_HEAD(&client->jobs[c]);
        CDS_INIT_LIST_HEAD(&client->ready_link[c]);
    }
    client->queued = 0;
    client->released = 0;
    cds_list_add_tail(&client->all_link, &sched->clients);
}

static void
free_client(struct gfr_pool_client *client)
{
    cds_list_del(&client->all_link);
    free(client);
}

void
gfr_sched_add(struct gfr_sched *sched, struct gfr_pool_job *job)
{
    struct gfr_pool_client *client = job->client;

    if (job->is_release) {
        client->released = 1;
        if (client->queued == 0)
            free_client(client);
        return;
    }
    if (cds_list_empty(&client->jobs[job->prio]))
        cds_list_add_tail(&client->ready_link[job->prio],
                          &sched->ready[job->prio]);
    cds_list_add_tail(&job->u.link, &client->jobs[job->prio]);
    client->queued++;
    sched->queued++;
}

/*
 * The highest non-empty class, unless a lower non-empty class has been
 * skipped starvation_limit times: then the most skipped one (the lower on a
 * tie).  A non-empty class thus waits at most starvation_limit + 1 picks.
 */
static int
pick_class(struct gfr_sched *sched)
{
    int chosen = -1;
    int starving = -1;

    for (int c = 0; c < GFR_POOL_NR_PRIO; c++) {
        if (cds_list_empty(&sched->ready[c]))
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
        else if (!cds_list_empty(&sched->ready[c]))
            sched->skipped[c]++;
    }
    return chosen;
}

struct gfr_pool_job *
gfr_sched_take(struct gfr_sched *sched)
{
    struct gfr_pool_client *client;
    struct gfr_pool_job *job;
    int c;

    if (sched->queued == 0)
        return NULL;
    c = pick_class(sched);
    client = cds_list_first_entry(&sched->ready[c], struct gfr_pool_client,
                                  ready_link[c]);
    job = cds_list_first_entry(&client->jobs[c], struct gfr_pool_job, u.link);
    cds_list_del(&job->u.link);
    client->queued--;
    sched->queued--;

    /* One job per turn: the client goes to the back of the line. */
    cds_list_del(&client->ready_link[c]);
    if (!cds_list_empty(&client->jobs[c]))
        cds_list_add_tail(&client->ready_link[c], &sched->ready[c]);
    else if (client->released && client->queued == 0)
        free_client(client);
    return job;
}

void
gfr_sched_fini(struct gfr_sched *sched)
{
    struct gfr_pool_client *client;
    struct gfr_pool_client *tmp;

    cds_list_for_each_entry_safe(client, tmp, &sched->clients, all_link)
        free_client(client);
}
