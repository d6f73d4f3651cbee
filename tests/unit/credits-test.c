/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Credit accounting: the reserve, grants, violations, and a simulation of
 * two peers that shows no sender ever overruns its receiver and neither
 * side stalls.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "gfr_credits.h"

static void
test_init_refuses_small_windows(void **state)
{
    struct gfr_credits c;

    assert_int_equal(gfr_credits_init(NULL, 8), -EINVAL);
    assert_int_equal(gfr_credits_init(&c, 1), -EINVAL);
    assert_int_equal(gfr_credits_init(&c, 70000), -EINVAL);
    assert_int_equal(gfr_credits_init(&c, 2), 0);
}

static void
test_last_credit_is_reserved_for_updates(void **state)
{
    struct gfr_credits c;

    gfr_credits_init(&c, 4);
    for (int i = 0; i < 3; i++) {
        assert_true(gfr_credits_can_send_data(&c));
        gfr_credits_take_data(&c);
    }
    assert_false(gfr_credits_can_send_data(&c));
    assert_int_equal(c.send_avail, 1);
    assert_false(gfr_credits_need_update(&c)); /* nothing to announce */
    gfr_credits_on_repost(&c, 1);
    /* The peer still has its 4: no hurry until it runs low... */
    assert_false(gfr_credits_need_update(&c));
    gfr_credits_on_repost(&c, 1);
    /* ...or half the window waits. */
    assert_true(gfr_credits_need_update(&c));
    assert_int_equal(gfr_credits_take_update(&c), 2);
    assert_int_equal(c.send_avail, 0);
    assert_false(gfr_credits_need_update(&c));
}

static void
test_grants_ride_on_data(void **state)
{
    struct gfr_credits c;

    gfr_credits_init(&c, 8);
    assert_int_equal(gfr_credits_on_receive(&c, 0), 0);
    gfr_credits_on_repost(&c, 1);
    assert_int_equal(gfr_credits_take_data(&c), 1);
    assert_int_equal(c.peer_avail, 8);
    assert_int_equal(gfr_credits_take_data(&c), 0);
}

/* A message that took a credit and a grant but was never posted gives both
 * back: the next message carries the grant, and the credit is spendable. */
static void
test_an_unsent_message_gives_back_credit_and_grant(void **state)
{
    struct gfr_credits c, before;

    (void)state;
    assert_int_equal(gfr_credits_init(&c, 8), 0);
    assert_int_equal(gfr_credits_on_receive(&c, 0), 0);
    gfr_credits_on_repost(&c, 1);
    before = c;
    gfr_credits_untake(&c, gfr_credits_take_data(&c));
    assert_int_equal(c.send_avail, before.send_avail);
    assert_int_equal(c.peer_avail, before.peer_avail);
    assert_int_equal(c.pending_grant, before.pending_grant);
    assert_int_equal(gfr_credits_take_data(&c), 1);
}

static void
test_peer_violations(void **state)
{
    struct gfr_credits c;

    gfr_credits_init(&c, 2);
    assert_int_equal(gfr_credits_on_receive(&c, 1), -EPROTO); /* over window */
    assert_int_equal(gfr_credits_on_receive(&c, 0), 0);
    assert_int_equal(gfr_credits_on_receive(&c, 0), 0);
    assert_int_equal(gfr_credits_on_receive(&c, 0), -EPROTO); /* no credit */
    assert_int_equal(gfr_credits_on_receive(&c, 65535), -EPROTO);
}

static void
test_withheld_grant_stops_the_peer_until_released(void **state)
{
    struct gfr_credits server, client;
    unsigned sent = 0;

    gfr_credits_init(&server, 8);
    gfr_credits_init(&client, 8);
    gfr_credits_withhold(&server, true);
    /* The client sends all it may; the server takes each message and
     * reposts its buffer at once, but returns nothing. */
    while (gfr_credits_can_send_data(&client)) {
        uint16_t grant = gfr_credits_take_data(&client);

        assert_int_equal(gfr_credits_on_receive(&server, grant), 0);
        gfr_credits_on_repost(&server, 1);
        /* Its replies carry no grant, and no CREDIT message is due. */
        assert_int_equal(gfr_credits_take_data(&server), 0);
        assert_int_equal(gfr_credits_on_receive(&client, 0), 0);
        assert_false(gfr_credits_need_update(&server));
        sent++;
    }
    assert_int_equal(sent, 7); /* the window less the reserved credit */
    assert_int_equal(server.pending_grant, 7);
    /* Released: the whole grant goes out in one CREDIT message. */
    gfr_credits_withhold(&server, false);
    assert_true(gfr_credits_need_update(&server));
    assert_int_equal(gfr_credits_on_receive(&client, gfr_credits_take_update(&server)), 0);
    assert_int_equal(server.pending_grant, 0);
    assert_true(gfr_credits_can_send_data(&client));
    assert_int_equal(client.send_avail, 8);
}

/*
 * Two peers with random appetites.  Each message is delivered in order;
 * the receiver "reposts" its buffer after a random delay.  Checks: nobody
 * sends into a full receive queue, every queued message is sent eventually.
 */
struct peer {
    struct gfr_credits c;
    unsigned queued;      /* data messages waiting for credits */
    unsigned posted_free; /* receive buffers free for the other side */
    unsigned to_repost;   /* consumed buffers not yet reposted */
};

struct wire_msg {
    uint16_t grant;
};

#define WINDOW 4
#define INFLIGHT_MAX 64

struct link {
    struct wire_msg q[INFLIGHT_MAX];
    unsigned head, count;
};

static void
deliver(struct peer *to, struct wire_msg m, int *ok)
{
    if (to->posted_free == 0)
        *ok = 0; /* overrun: a SEND without a posted receive */
    else
        to->posted_free--;
    to->to_repost++;
    if (gfr_credits_on_receive(&to->c, m.grant) != 0)
        *ok = 0;
}

static void
send_one(struct peer *from, struct link *l, uint16_t grant)
{
    assert_true(l->count < INFLIGHT_MAX);
    l->q[(l->head + l->count++) % INFLIGHT_MAX].grant = grant;
}

static void
step_sender(struct peer *p, struct link *out)
{
    if (p->queued && gfr_credits_can_send_data(&p->c)) {
        p->queued--;
        send_one(p, out, gfr_credits_take_data(&p->c));
    } else if (gfr_credits_need_update(&p->c)) {
        send_one(p, out, gfr_credits_take_update(&p->c));
    }
}

/* With throttle set, b withholds its grants at random moments (a rpcsvc
 * above its outstanding-rpc-limit) and releases them before the drain. */
static void
simulate_two_peers(int throttle)
{
    struct peer a = {.posted_free = WINDOW}, b = {.posted_free = WINDOW};
    struct link ab = {0}, ba = {0};
    unsigned sent_total = 0;
    int ok = 1;

    srand(12345);
    gfr_credits_init(&a.c, WINDOW);
    gfr_credits_init(&b.c, WINDOW);
    for (int step = 0; step < 200000 && ok; step++) {
        int r = rand() % 8;

        if (r == 0 && sent_total < 20000) {
            a.queued++;
            sent_total++;
        } else if (r == 1 && sent_total < 20000) {
            b.queued++;
            sent_total++;
        } else if (r == 2 && ab.count) {
            deliver(&b, ab.q[ab.head], &ok);
            ab.head = (ab.head + 1) % INFLIGHT_MAX;
            ab.count--;
        } else if (r == 3 && ba.count) {
            deliver(&a, ba.q[ba.head], &ok);
            ba.head = (ba.head + 1) % INFLIGHT_MAX;
            ba.count--;
        } else if (r == 4 && a.to_repost) {
            a.to_repost--;
            a.posted_free++;
            gfr_credits_on_repost(&a.c, 1);
        } else if (r == 5 && b.to_repost) {
            b.to_repost--;
            b.posted_free++;
            gfr_credits_on_repost(&b.c, 1);
        } else if (r == 6 && throttle && rand() % 64 == 0) {
            gfr_credits_withhold(&b.c, !b.c.withheld);
        } else if (r == 6) {
            step_sender(&a, &ab);
        } else {
            step_sender(&b, &ba);
        }
    }
    assert_true(ok);
    gfr_credits_withhold(&b.c, false);
    /* Drain: keep delivering, reposting and sending until quiet. */
    for (int round = 0; round < 100000 && ok; round++) {
        while (ab.count) {
            deliver(&b, ab.q[ab.head], &ok);
            ab.head = (ab.head + 1) % INFLIGHT_MAX;
            ab.count--;
        }
        while (ba.count) {
            deliver(&a, ba.q[ba.head], &ok);
            ba.head = (ba.head + 1) % INFLIGHT_MAX;
            ba.count--;
        }
        gfr_credits_on_repost(&a.c, a.to_repost);
        a.posted_free += a.to_repost;
        a.to_repost = 0;
        gfr_credits_on_repost(&b.c, b.to_repost);
        b.posted_free += b.to_repost;
        b.to_repost = 0;
        step_sender(&a, &ab);
        step_sender(&b, &ba);
        if (!a.queued && !b.queued && !ab.count && !ba.count)
            break;
    }
    assert_true(ok);
    assert_int_equal(a.queued, 0);
    assert_int_equal(b.queued, 0);
}

static void
test_two_peers_never_overrun_and_never_stall(void **state)
{
    simulate_two_peers(0);
}

static void
test_throttled_peer_never_overruns_and_resumes(void **state)
{
    simulate_two_peers(1);
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_init_refuses_small_windows),
        cmocka_unit_test(test_last_credit_is_reserved_for_updates),
        cmocka_unit_test(test_grants_ride_on_data),
        cmocka_unit_test(test_an_unsent_message_gives_back_credit_and_grant),
        cmocka_unit_test(test_peer_violations),
        cmocka_unit_test(test_withheld_grant_stops_the_peer_until_released),
        cmocka_unit_test(test_two_peers_never_overrun_and_never_stall),
        cmocka_unit_test(test_throttled_peer_never_overruns_and_resumes),
    };

    return cmocka_run_group_tests_name("credits", tests, NULL, NULL);
}
