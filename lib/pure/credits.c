/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Credit accounting; see gfr_credits.h for the locking rule (the caller's).
 */
#include "gfr_credits.h"

#include <errno.h>

int
gfr_credits_init(struct gfr_credits *credits, uint32_t window)
{
    if (!credits || window < 2 || window > UINT16_MAX)
        return -EINVAL;
    credits->window = window;
    credits->send_avail = window;
    credits->peer_avail = window;
    credits->pending_grant = 0;
    credits->withheld = false;
    return 0;
}

bool
gfr_credits_can_send_data(const struct gfr_credits *credits)
{
    return credits->send_avail >= 2;
}

/* Moves the pending grant into an outgoing header. */
static uint16_t
announce(struct gfr_credits *credits)
{
    uint32_t grant = credits->withheld ? 0 : credits->pending_grant;

    if (grant > UINT16_MAX)
        grant = UINT16_MAX;
    credits->pending_grant -= grant;
    credits->peer_avail += grant;
    return (uint16_t)grant;
}

uint16_t
gfr_credits_take_data(struct gfr_credits *credits)
{
    credits->send_avail--;
    return announce(credits);
}

void
gfr_credits_untake(struct gfr_credits *credits, uint16_t grant)
{
    credits->send_avail++;
    credits->pending_grant += grant;
    credits->peer_avail -= grant;
}

bool
gfr_credits_need_update(const struct gfr_credits *credits)
{
    return !credits->withheld && credits->pending_grant > 0 && credits->send_avail >= 1 &&
           (credits->peer_avail <= 1 ||
            credits->pending_grant >= credits->window / 2);
}

uint16_t
gfr_credits_take_update(struct gfr_credits *credits)
{
    credits->send_avail--;
    return announce(credits);
}

int
gfr_credits_on_receive(struct gfr_credits *credits, uint16_t grant)
{
    if (credits->peer_avail == 0)
        return -EPROTO;
    if ((uint64_t)credits->send_avail + grant > credits->window)
        return -EPROTO;
    credits->peer_avail--;
    credits->send_avail += grant;
    return 0;
}

void
gfr_credits_on_repost(struct gfr_credits *credits, uint32_t n)
{
    credits->pending_grant += n;
}

void
gfr_credits_withhold(struct gfr_credits *credits, bool withhold)
{
    credits->withheld = withhold;
}
