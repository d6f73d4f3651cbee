/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Connection parameters in the CM private data: bytes, round trip,
 * negotiation, and every reason to reject a peer.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "gfr_cm_private.h"

static const struct gfr_cm_params sample = {
    .credits = 128, .inline_max = 4096, .max_msg = 4 << 20, .max_segs = 16};

static void
test_bytes_are_as_documented(void **state)
{
    static const uint8_t expect[32] = {
        0x47, 0x46, 0x52, 0x31, 1, 0, 0, 128, /* magic, version, flags, credits */
        0, 0, 0x10, 0,                        /* inline_max 4096 */
        0, 0x40, 0, 0,                        /* max_msg 4 MiB */
        0, 16, 0, 0,                          /* max_segs, reserved */
        0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,   /* no probe offered */
    };
    static const uint8_t probe[12] = {
        0, 0, 0x7f, 0x12, 0x34, 0x56, 0x78, 0x40, /* address */
        0xab, 0xcd, 0, 0x11,                      /* rkey */
    };
    struct gfr_cm_params with_probe = sample;
    uint8_t buf[64];

    assert_int_equal(gfr_cm_encode(&sample, buf, sizeof(buf)), 32);
    assert_memory_equal(buf, expect, sizeof(expect));
    with_probe.probe_addr = 0x7f1234567840ull;
    with_probe.probe_rkey = 0xabcd0011u;
    assert_int_equal(gfr_cm_encode(&with_probe, buf, sizeof(buf)), 32);
    assert_memory_equal(buf, expect, 20);
    assert_memory_equal(buf + 20, probe, sizeof(probe));
}

/* A peer from before the probe sends 20 bytes (iWARP's MPA carries them as
 * they are) or 20 and the CM's zero padding (IB): it offers no probe. */
static void
test_a_peer_without_the_probe_offers_none(void **state)
{
    struct gfr_cm_params got, with_probe = sample;
    enum gfr_cm_reject_reason why;
    uint8_t buf[56];

    with_probe.probe_addr = 0x1000;
    with_probe.probe_rkey = 7;
    assert_int_equal(gfr_cm_encode(&with_probe, buf, sizeof(buf)), 32);
    assert_int_equal(gfr_cm_decode(buf, 20, &got, &why), 0);
    assert_int_equal(got.probe_rkey, 0);
    assert_int_equal(got.probe_addr, 0);
    assert_int_equal(got.credits, 128);
    memset(buf + 20, 0, sizeof(buf) - 20);
    assert_int_equal(gfr_cm_decode(buf, sizeof(buf), &got, &why), 0);
    assert_int_equal(got.probe_rkey, 0);
    assert_int_equal(gfr_cm_decode(buf, 31, &got, &why), 0); /* a probe cut short */
    assert_int_equal(got.probe_rkey, 0);
}

static void
test_round_trip_with_padding(void **state)
{
    struct gfr_cm_params got;
    enum gfr_cm_reject_reason why = GFR_CM_REJECT_PARAMS;
    uint8_t buf[56];

    struct gfr_cm_params with_probe = sample;

    memset(buf, 0xee, sizeof(buf)); /* the CM pads to its own size */
    with_probe.probe_addr = 0x7f0000001000ull;
    with_probe.probe_rkey = 0x1234;
    assert_int_equal(gfr_cm_encode(&with_probe, buf, sizeof(buf)), 32);
    assert_int_equal(gfr_cm_decode(buf, sizeof(buf), &got, &why), 0);
    assert_int_equal(why, GFR_CM_REJECT_NONE);
    assert_int_equal(got.credits, 128);
    assert_int_equal(got.inline_max, 4096);
    assert_int_equal(got.max_msg, 4 << 20);
    assert_int_equal(got.max_segs, 16);
    assert_int_equal(got.probe_addr, 0x7f0000001000ull);
    assert_int_equal(got.probe_rkey, 0x1234);
}

static void
test_negotiation_takes_each_minimum(void **state)
{
    struct gfr_cm_params peer = {.credits = 256, .inline_max = 1024,
                                 .max_msg = 8 << 20, .max_segs = 4};
    struct gfr_cm_params agreed;

    gfr_cm_negotiate(&sample, &peer, &agreed);
    assert_int_equal(agreed.credits, 128);
    assert_int_equal(agreed.inline_max, 1024);
    assert_int_equal(agreed.max_msg, 4 << 20);
    assert_int_equal(agreed.max_segs, 4);
}

static void
expect_reject(const uint8_t *buf, size_t len, enum gfr_cm_reject_reason reason)
{
    struct gfr_cm_params got;
    enum gfr_cm_reject_reason why = GFR_CM_REJECT_NONE;

    assert_int_equal(gfr_cm_decode(buf, len, &got, &why), -EPROTO);
    assert_int_equal(why, reason);
    assert_string_not_equal(gfr_cm_reject_str(why), "accepted");
}

static void
test_incompatible_peers_rejected(void **state)
{
    uint8_t buf[32];

    gfr_cm_encode(&sample, buf, sizeof(buf));
    expect_reject(NULL, 0, GFR_CM_REJECT_SHORT);
    expect_reject(buf, 19, GFR_CM_REJECT_SHORT);
    buf[0] = 'X';
    expect_reject(buf, 20, GFR_CM_REJECT_MAGIC);
    gfr_cm_encode(&sample, buf, sizeof(buf));
    buf[4] = 2;
    expect_reject(buf, 20, GFR_CM_REJECT_VERSION);
    gfr_cm_encode(&sample, buf, sizeof(buf));
    buf[7] = 1; /* credits 1 */
    expect_reject(buf, 20, GFR_CM_REJECT_PARAMS);
    gfr_cm_encode(&sample, buf, sizeof(buf));
    buf[10] = 0; /* inline_max 0 */
    expect_reject(buf, 20, GFR_CM_REJECT_PARAMS);
    gfr_cm_encode(&sample, buf, sizeof(buf));
    buf[8] = 0xff; /* inline_max over 16 MiB */
    expect_reject(buf, 20, GFR_CM_REJECT_PARAMS);
    gfr_cm_encode(&sample, buf, sizeof(buf));
    memset(buf + 12, 0, 4); /* max_msg below inline_max */
    expect_reject(buf, 20, GFR_CM_REJECT_PARAMS);
    gfr_cm_encode(&sample, buf, sizeof(buf));
    buf[17] = 0; /* max_segs 0 */
    expect_reject(buf, 20, GFR_CM_REJECT_PARAMS);
}

static void
test_encode_refuses_what_decode_would_reject(void **state)
{
    struct gfr_cm_params bad = sample;
    uint8_t buf[20];

    bad.credits = 1;
    assert_int_equal(gfr_cm_encode(&bad, buf, sizeof(buf)), -EINVAL);
    assert_int_equal(gfr_cm_encode(NULL, buf, sizeof(buf)), -EINVAL);
    assert_int_equal(gfr_cm_encode(&sample, buf, 19), -EMSGSIZE);
}

/* The rails part: a bare RAILS request is today's 32 bytes with one flag;
 * a JOIN request adds bundle, token and rail id (45 bytes, within an IB
 * REQ's 56);
 * a RAILS accept adds the addresses; the CM's zero padding reads as no
 * bundle; and a peer's bad rails part is refused with its reason. */
static void
test_rails_round_trip_and_refusals(void **state)
{
    struct gfr_cm_rails rails = {.flags = GFR_CM_F_RAILS}, got;
    enum gfr_cm_reject_reason why;
    uint8_t buf[GFR_CM_PRIVATE_MAX + 8];

    (void)state;
    memset(buf, 0, sizeof(buf));
    assert_int_equal(gfr_cm_encode(&sample, buf, sizeof(buf)), 32);
    assert_int_equal(gfr_cm_rails_encode(&rails, buf, sizeof(buf)), 32);
    assert_int_equal(buf[5], GFR_CM_F_RAILS);
    assert_int_equal(gfr_cm_rails_decode(buf, 56, &got, &why), 0); /* padded */
    assert_int_equal(got.flags, GFR_CM_F_RAILS);
    assert_int_equal(got.bundle, 0);
    assert_int_equal(got.naddrs, 0);

    rails = (struct gfr_cm_rails){.flags = GFR_CM_F_JOIN, .bundle = 0x01020304,
                                  .token = 0x1122334455667788ull, .rail_id = 7};
    assert_int_equal(gfr_cm_rails_encode(&rails, buf, sizeof(buf)), GFR_CM_JOIN_SIZE);
    assert_int_equal(gfr_cm_rails_encode(&rails, buf, 44), -EMSGSIZE);
    assert_int_equal(gfr_cm_rails_decode(buf, 56, &got, &why), 0);
    assert_int_equal(got.bundle, 0x01020304);
    assert_true(got.token == 0x1122334455667788ull);
    assert_int_equal(got.rail_id, 7);
    assert_int_equal(got.naddrs, 0);
    assert_int_equal(gfr_cm_rails_decode(buf, 44, &got, &why), -EPROTO); /* JOIN cut short */
    assert_int_equal(why, GFR_CM_REJECT_SHORT);
    buf[44] = 0; /* the lead's id: no joining rail's */
    assert_int_equal(gfr_cm_rails_decode(buf, 56, &got, &why), -EPROTO);
    assert_int_equal(why, GFR_CM_REJECT_PARAMS);
    rails.rail_id = 0;
    assert_int_equal(gfr_cm_rails_encode(&rails, buf, sizeof(buf)), -EINVAL);
    rails.rail_id = 7;
    rails.bundle = 0;
    assert_int_equal(gfr_cm_rails_encode(&rails, buf, sizeof(buf)), -EINVAL);

    rails = (struct gfr_cm_rails){.flags = GFR_CM_F_RAILS, .bundle = 9, .token = 5,
                                  .naddrs = 2};
    rails.addrs[0] = (struct gfr_cm_rail_addr){.family = 4, .port = 24008,
                                               .addr = {10, 99, 0, 2}};
    rails.addrs[1] = (struct gfr_cm_rail_addr){.family = 6, .port = 24008,
                                               .addr = {0xfd, 0, [15] = 2}};
    assert_int_equal(gfr_cm_rails_encode(&rails, buf, sizeof(buf)), 88);
    assert_int_equal(gfr_cm_rails_decode(buf, 88, &got, &why), 0);
    assert_int_equal(got.naddrs, 2);
    assert_memory_equal(&got.addrs, &rails.addrs, sizeof(rails.addrs));
    assert_int_equal(gfr_cm_rails_decode(buf, 87, &got, &why), -EPROTO);
    assert_int_equal(why, GFR_CM_REJECT_SHORT);
    buf[48] = 5; /* no such family */
    assert_int_equal(gfr_cm_rails_decode(buf, 88, &got, &why), -EPROTO);
    assert_int_equal(why, GFR_CM_REJECT_PARAMS);
    buf[44] = GFR_CM_MAX_RAILS + 1;
    assert_int_equal(gfr_cm_rails_decode(buf, sizeof(buf), &got, &why), -EPROTO);
    assert_int_equal(why, GFR_CM_REJECT_PARAMS);
    rails.naddrs = GFR_CM_MAX_RAILS + 1;
    assert_int_equal(gfr_cm_rails_encode(&rails, buf, sizeof(buf)), -EINVAL);
    assert_string_equal(gfr_cm_reject_str(GFR_CM_REJECT_BUNDLE),
                        "a joining rail named no live bundle of the peer, or a wrong token");
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_bytes_are_as_documented),
        cmocka_unit_test(test_round_trip_with_padding),
        cmocka_unit_test(test_a_peer_without_the_probe_offers_none),
        cmocka_unit_test(test_negotiation_takes_each_minimum),
        cmocka_unit_test(test_incompatible_peers_rejected),
        cmocka_unit_test(test_encode_refuses_what_decode_would_reject),
        cmocka_unit_test(test_rails_round_trip_and_refusals),
    };

    return cmocka_run_group_tests_name("cm-private", tests, NULL, NULL);
}
