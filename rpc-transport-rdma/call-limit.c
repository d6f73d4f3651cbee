/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The outstanding calls of one connection; rules in call-limit.h (the
 * owner serialises).
 */
#include "call-limit.h"

#include <errno.h>
#include <stdlib.h>

#define ROUND_TO 8
#define MAX_LIMIT 65536 /* RPCSVC_MAX_OUTSTANDING_RPC_LIMIT */

struct counted_call {
    struct cds_list_head link;
    uint32_t xid;
};

uint32_t
gfr_call_limit_round(int64_t value)
{
    if (value <= 0)
        return 0;
    if (value > MAX_LIMIT)
        return MAX_LIMIT;
    return (uint32_t)((value + ROUND_TO - 1) / ROUND_TO * ROUND_TO);
}

void
gfr_call_limit_init(struct gfr_call_limit *cl, uint32_t limit)
{
    cl->limit = limit;
    cl->counted = 0;
    for (unsigned i = 0; i < GFR_CALL_LIMIT_BUCKETS; i++)
        CDS_INIT_LIST_HEAD(&cl->bucket[i]);
}

void
gfr_call_limit_clear(struct gfr_call_limit *cl)
{
    for (unsigned i = 0; i < GFR_CALL_LIMIT_BUCKETS; i++) {
        struct counted_call *c, *tmp;

        cds_list_for_each_entry_safe(c, tmp, &cl->bucket[i], link)
            free(c);
        CDS_INIT_LIST_HEAD(&cl->bucket[i]);
    }
    cl->counted = 0;
}

int
gfr_call_limit_called(struct gfr_call_limit *cl, uint32_t xid)
{
    struct counted_call *c;

    if (!cl->limit)
        return 0;
    c = malloc(sizeof(*c));
    if (!c)
        return -ENOMEM;
    c->xid = xid;
    cds_list_add_tail(&c->link, &cl->bucket[xid % GFR_CALL_LIMIT_BUCKETS]);
    cl->counted++;
    return 0;
}

void
gfr_call_limit_replied(struct gfr_call_limit *cl, uint32_t xid)
{
    struct counted_call *c;

    cds_list_for_each_entry(c, &cl->bucket[xid % GFR_CALL_LIMIT_BUCKETS], link) {
        if (c->xid == xid) {
            cds_list_del(&c->link);
            free(c);
            cl->counted--;
            return;
        }
    }
}
