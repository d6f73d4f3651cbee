/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * A server's calls by xid within one bundle (gfr_calls.h).  The caller
 * serialises every call.
 */
#include <errno.h>
#include <stdlib.h>

#include "gfr_calls.h"

/* The smallest table; it doubles while more than half full, so at most
 * to the power of two that holds max entries at half load. */
#define CALLS_MIN_SIZE 64u

int
gfr_calls_init(struct gfr_calls *calls, uint32_t max)
{
    if (!calls || max < 2 || max > (1u << 30))
        return -EINVAL;
    *calls = (struct gfr_calls){.max = max};
    return 0;
}

void
gfr_calls_fini(struct gfr_calls *calls)
{
    free(calls->slots);
    calls->slots = NULL;
    calls->size = calls->used = calls->answered = 0;
}

static uint32_t
home(const struct gfr_calls *calls, uint32_t xid)
{
    return (xid * 2654435761u) & (calls->size - 1);
}

/* xid's slot, or size when it is not there. */
static uint32_t
find(const struct gfr_calls *calls, uint32_t xid)
{
    if (!calls->size)
        return 0;
    for (uint32_t s = home(calls, xid); calls->slots[s].state; s = (s + 1) & (calls->size - 1))
        if (calls->slots[s].xid == xid)
            return s;
    return calls->size;
}

/* Empties slot s, moving back the entries of its probe run that it would
 * hide (no tombstones). */
static void
del(struct gfr_calls *calls, uint32_t s)
{
    uint32_t mask = calls->size - 1;

    if (calls->slots[s].state == GFR_CALL_ANSWERED)
        calls->answered--;
    calls->slots[s].state = 0;
    calls->used--;
    for (uint32_t j = (s + 1) & mask; calls->slots[j].state; j = (j + 1) & mask) {
        uint32_t h = home(calls, calls->slots[j].xid);

        /* j's entry may move to s when s lies on its way from home to j */
        if (((j - h) & mask) >= ((j - s) & mask)) {
            calls->slots[s] = calls->slots[j];
            calls->slots[j].state = 0;
            s = j;
        }
    }
}

/* Forgets the answers that match: those the mark has passed, or (all)
 * every one, remembering the newest of those for resends. */
static void
sweep(struct gfr_calls *calls, bool all)
{
    uint32_t s = 0;

    while (s < calls->size) {
        struct gfr_call *c = &calls->slots[s];

        if (c->state != GFR_CALL_ANSWERED ||
            (!all && !(calls->marked && gfr_xid_before(c->xid, calls->mark)))) {
            s++;
            continue;
        }
        if (all) {
            if (!calls->evicted || gfr_xid_before(calls->evicted_to, c->xid))
                calls->evicted_to = c->xid;
            calls->evicted = true;
            calls->evictions++;
        }
        del(calls, s); /* an entry may have moved into s */
    }
}

static int
grow(struct gfr_calls *calls)
{
    uint32_t size = calls->size ? calls->size * 2 : CALLS_MIN_SIZE;
    struct gfr_call *old = calls->slots;
    uint32_t old_size = calls->size;
    struct gfr_call *slots = calloc(size, sizeof(*slots));

    if (!slots)
        return -ENOMEM;
    calls->slots = slots;
    calls->size = size;
    for (uint32_t i = 0; i < old_size; i++) {
        if (!old[i].state)
            continue;
        uint32_t s = home(calls, old[i].xid);

        while (slots[s].state)
            s = (s + 1) & (size - 1);
        slots[s] = old[i];
    }
    free(old);
    return 0;
}

/* Room for one entry more: at max entries, the answers the mark passed
 * are forgotten, and if that is not enough, every answer; below it, the
 * table grows once it is half full, unless forgetting such answers
 * brought it back under that. */
static int
make_room(struct gfr_calls *calls)
{
    if (calls->used >= calls->max && calls->answered)
        sweep(calls, false);
    if (calls->used >= calls->max && calls->answered)
        sweep(calls, true);
    if (calls->used >= calls->max)
        return -ENOSPC;
    if ((calls->used + 1) * 2 <= calls->size)
        return 0;
    if (calls->answered) {
        sweep(calls, false);
        if ((calls->used + 1) * 2 <= calls->size)
            return 0;
    }
    return grow(calls);
}

int
gfr_calls_arrived(struct gfr_calls *calls, uint32_t xid, uint32_t mark, bool resend,
                  unsigned rail, enum gfr_call_verdict *verdict)
{
    uint32_t s;
    int err;

    if (gfr_xid_before(xid, mark))
        return -EPROTO;
    if (!calls->marked || gfr_xid_before(calls->mark, mark)) {
        calls->mark = mark;
        calls->marked = true;
    }
    s = find(calls, xid);
    if (s < calls->size) {
        if (calls->slots[s].state == GFR_CALL_RUNNING)
            calls->slots[s].rail = (uint8_t)rail;
        *verdict = GFR_CALL_DUPLICATE;
        return 0;
    }
    if (resend && gfr_xid_before(xid, calls->mark)) {
        *verdict = GFR_CALL_STALE;
        return 0;
    }
    if (resend && calls->evicted && !gfr_xid_before(calls->evicted_to, xid)) {
        *verdict = GFR_CALL_AMBIGUOUS;
        return 0;
    }
    err = make_room(calls);
    if (err)
        return err;
    for (s = home(calls, xid); calls->slots[s].state; s = (s + 1) & (calls->size - 1))
        continue;
    calls->slots[s] = (struct gfr_call){.xid = xid, .state = GFR_CALL_RUNNING,
                                        .rail = (uint8_t)rail};
    calls->used++;
    *verdict = GFR_CALL_NEW;
    return 0;
}

enum gfr_call_state
gfr_calls_state(const struct gfr_calls *calls, uint32_t xid, unsigned *rail)
{
    uint32_t s = find(calls, xid);

    if (s >= calls->size)
        return 0;
    if (rail)
        *rail = calls->slots[s].rail;
    return calls->slots[s].state;
}

int
gfr_calls_replying(struct gfr_calls *calls, uint32_t xid, unsigned rail)
{
    uint32_t s = find(calls, xid);

    if (s >= calls->size || calls->slots[s].state == GFR_CALL_ANSWERED)
        return -ENOENT;
    calls->slots[s].state = GFR_CALL_REPLYING;
    calls->slots[s].rail = (uint8_t)rail;
    return 0;
}

int
gfr_calls_answered(struct gfr_calls *calls, uint32_t xid)
{
    uint32_t s = find(calls, xid);

    if (s >= calls->size || calls->slots[s].state != GFR_CALL_REPLYING)
        return -ENOENT;
    if (calls->marked && gfr_xid_before(xid, calls->mark)) {
        del(calls, s);
        return 0;
    }
    calls->slots[s].state = GFR_CALL_ANSWERED;
    calls->answered++;
    return 0;
}
