/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The wire header: round trips, the exact bytes of docs/wire-protocol.md,
 * and every violation a peer can commit.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "gfr_wire.h"

static const struct gfr_wire_limits limits = {.max_msg = 1 << 20, .max_segs = 8};

static uint8_t buf[4096];

/* Encodes a MSG with two read and one write segment and 5 inline bytes. */
static size_t
encode_sample(void)
{
    struct gfr_wire_hdr hdr = {.type = GFR_WIRE_MSG, .n_read = 2, .n_write = 1,
                               .credits = 7, .xid = 0x01020304,
                               .inline_len = 5, .written = 0};
    struct gfr_wire_seg read[2] = {{0x1122334455667788ull, 0xaabbccdd, 100},
                                   {0x10, 0x20, 28}};
    struct gfr_wire_seg write[1] = {{0x2000, 0x30, 4096}};
    ssize_t n = gfr_wire_encode(&hdr, read, write, buf, sizeof(buf));

    assert_int_equal(n, 24 + 3 * 16);
    memcpy(buf + n, "hello", 5);
    return (size_t)n + 5;
}

static void
test_header_bytes_are_as_documented(void **state)
{
    static const uint8_t expect[24 + 16] = {
        1, 1, 2, 1,             /* version, type MSG, n_read, n_write */
        0, 7, 0, 0,             /* credits, flags */
        1, 2, 3, 4,             /* xid */
        0, 0, 0, 5,             /* inline_len */
        0, 0, 0, 128,           /* read_len = 100 + 28 */
        0, 0, 0, 0,             /* written */
        0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77, 0x88, /* addr */
        0xaa, 0xbb, 0xcc, 0xdd, /* rkey */
        0, 0, 0, 100,           /* length */
    };

    encode_sample();
    assert_memory_equal(buf, expect, sizeof(expect));
}

static void
test_round_trip(void **state)
{
    struct gfr_wire_msg msg;
    const char *reason = NULL;
    size_t len = encode_sample();

    assert_int_equal(gfr_wire_decode(buf, len, &limits, &msg, &reason), 0);
    assert_int_equal(msg.hdr.type, GFR_WIRE_MSG);
    assert_int_equal(msg.hdr.credits, 7);
    assert_int_equal(msg.hdr.xid, 0x01020304);
    assert_int_equal(msg.hdr.read_len, 128);
    assert_int_equal(msg.read[0].addr, 0x1122334455667788ull);
    assert_int_equal(msg.read[0].rkey, 0xaabbccdd);
    assert_int_equal(msg.read[1].length, 28);
    assert_int_equal(msg.write[0].length, 4096);
    assert_memory_equal(msg.payload, "hello", 5);
}

static void
test_control_messages_round_trip(void **state)
{
    struct gfr_wire_hdr hdr = {.type = GFR_WIRE_ERROR, .xid = 9, .written = 5};
    struct gfr_wire_msg msg;
    ssize_t n = gfr_wire_encode(&hdr, NULL, NULL, buf, sizeof(buf));

    assert_int_equal(n, 24);
    assert_int_equal(gfr_wire_decode(buf, 24, &limits, &msg, NULL), 0);
    assert_int_equal(msg.hdr.written, 5);
}

static void
expect_violation(size_t len, const char *why)
{
    struct gfr_wire_msg msg;
    const char *reason = NULL;

    assert_int_equal(gfr_wire_decode(buf, len, &limits, &msg, &reason), -EPROTO);
    assert_non_null(reason);
    assert_string_equal(reason, why);
}

static void
test_truncated_messages(void **state)
{
    size_t len = encode_sample();

    expect_violation(0, "message shorter than the header");
    expect_violation(23, "message shorter than the header");
    expect_violation(len - 1, "length does not match the header");
    expect_violation(len + 1, "length does not match the header");
    expect_violation(30, "length does not match the header");
}

static void
test_bad_version_and_type(void **state)
{
    size_t len = encode_sample();

    buf[0] = 2;
    expect_violation(len, "unknown protocol version");
    len = encode_sample();
    buf[1] = 0;
    expect_violation(len, "unknown message type");
    buf[1] = 7;
    expect_violation(len, "unknown message type");
}

static void
test_too_many_segments(void **state)
{
    size_t len = encode_sample();

    buf[2] = 8; /* 8 + 1 > limits.max_segs */
    expect_violation(len, "more segments than negotiated");
    buf[2] = 200;
    expect_violation(len, "more segments than negotiated");
}

static void
test_read_lengths_must_add_up(void **state)
{
    size_t len = encode_sample();

    buf[19] = 129; /* read_len */
    expect_violation(len, "read segments do not add up to read_len");
    len = encode_sample();
    memset(buf + 24 + 12, 0, 4); /* first read segment length 0 */
    buf[19] = 28;
    expect_violation(len, "read segment of length 0");
}

static void
test_oversized_messages(void **state)
{
    struct gfr_wire_hdr hdr = {.type = GFR_WIRE_MSG, .n_read = 1};
    struct gfr_wire_seg read = {0x1000, 1, 1 << 20};
    struct gfr_wire_seg write = {0x1000, 1, (1 << 20) + 1};
    struct gfr_wire_msg msg;
    ssize_t n = gfr_wire_encode(&hdr, &read, NULL, buf, sizeof(buf));

    /* max_msg bounds the body: exactly max_msg of read data is fine, one
     * inline byte more is not. */
    assert_true(n > 0);
    assert_int_equal(gfr_wire_decode(buf, (size_t)n, &limits, &msg, NULL), 0);
    hdr.inline_len = 1;
    n = gfr_wire_encode(&hdr, &read, NULL, buf, sizeof(buf));
    expect_violation((size_t)n + 1, "message larger than negotiated");
    hdr.inline_len = 0;
    hdr.n_read = 0;
    hdr.n_write = 1;
    n = gfr_wire_encode(&hdr, NULL, &write, buf, sizeof(buf));
    expect_violation((size_t)n, "write list larger than negotiated");
}

static void
test_control_message_with_payload(void **state)
{
    struct gfr_wire_hdr hdr = {.type = GFR_WIRE_DONE, .inline_len = 4};
    ssize_t n = gfr_wire_encode(&hdr, NULL, NULL, buf, sizeof(buf));

    expect_violation((size_t)n + 4, "lists or payload on a control message");
}

/* A reply names what it wrote, and only a reply does; a reply offers no
 * write list (nothing answers it). */
static void
test_reply_rules(void **state)
{
    struct gfr_wire_hdr hdr = {.type = GFR_WIRE_REPLY, .n_read = 1, .xid = 3,
                               .inline_len = 2, .written = 4096};
    struct gfr_wire_seg read = {0x1000, 7, 100};
    struct gfr_wire_seg write = {0x2000, 8, 4096};
    struct gfr_wire_msg msg;
    ssize_t n = gfr_wire_encode(&hdr, &read, NULL, buf, sizeof(buf));

    assert_true(n > 0);
    assert_int_equal(gfr_wire_decode(buf, (size_t)n + 2, &limits, &msg, NULL), 0);
    assert_int_equal(msg.hdr.type, GFR_WIRE_REPLY);
    assert_int_equal(msg.hdr.written, 4096);
    assert_int_equal(msg.hdr.read_len, 100);

    hdr.n_read = 0;
    hdr.n_write = 1;
    n = gfr_wire_encode(&hdr, NULL, &write, buf, sizeof(buf));
    expect_violation((size_t)n + 2, "write list on a reply");

    hdr.type = GFR_WIRE_MSG;
    hdr.n_write = 0;
    n = gfr_wire_encode(&hdr, NULL, NULL, buf, sizeof(buf));
    expect_violation((size_t)n + 2,
                     "bytes written claimed by a message that is not a reply");

    /* found by tests/fuzz/fuzz-wire: DONE and CREDIT passed with written */
    hdr.inline_len = 0;
    for (uint8_t type = GFR_WIRE_DONE; type <= GFR_WIRE_FENCE; type++) {
        if (type == GFR_WIRE_ERROR || type == GFR_WIRE_REPLY)
            continue;
        hdr.type = type;
        n = gfr_wire_encode(&hdr, NULL, NULL, buf, sizeof(buf));
        expect_violation((size_t)n,
                         "bytes written claimed by a message that is not a reply");
    }
}

/* The flags field (offset 6): REPLY_ENDS_READS only on a MSG with a read
 * list, AWAITS_REPLY only on a MSG; a bit this side does not know is
 * ignored (a newer peer's). */
static void
test_flags(void **state)
{
    struct gfr_wire_hdr hdr = {.type = GFR_WIRE_MSG, .n_read = 1, .xid = 3,
                               .flags = GFR_WIRE_F_REPLY_ENDS_READS | 0x8000};
    struct gfr_wire_hdr awaits;
    struct gfr_wire_seg read = {0x1000, 7, 100};
    struct gfr_wire_msg msg;
    ssize_t n = gfr_wire_encode(&hdr, &read, NULL, buf, sizeof(buf));

    assert_true(n > 0);
    assert_int_equal(buf[6], 0x80);
    assert_int_equal(buf[7], 0x01);
    assert_int_equal(gfr_wire_decode(buf, (size_t)n, &limits, &msg, NULL), 0);
    assert_int_equal(msg.hdr.flags, GFR_WIRE_F_REPLY_ENDS_READS | 0x8000);

    hdr.n_read = 0;
    n = gfr_wire_encode(&hdr, NULL, NULL, buf, sizeof(buf));
    expect_violation((size_t)n, "a reply asked to end a read list on a message without one");
    hdr.type = GFR_WIRE_REPLY;
    hdr.n_read = 1;
    n = gfr_wire_encode(&hdr, &read, NULL, buf, sizeof(buf));
    expect_violation((size_t)n, "a reply asked to end a read list on a message without one");

    /* AWAITS_REPLY (multi-rail): on a MSG only */
    awaits = (struct gfr_wire_hdr){.type = GFR_WIRE_MSG, .xid = 4,
                                   .flags = GFR_WIRE_F_AWAITS_REPLY};
    n = gfr_wire_encode(&awaits, NULL, NULL, buf, sizeof(buf));
    assert_int_equal(gfr_wire_decode(buf, (size_t)n, &limits, &msg, NULL), 0);
    assert_int_equal(msg.hdr.flags, GFR_WIRE_F_AWAITS_REPLY);
    awaits.type = GFR_WIRE_REPLY;
    n = gfr_wire_encode(&awaits, NULL, NULL, buf, sizeof(buf));
    expect_violation((size_t)n, "a reply awaited for a message that is not a request");
    hdr.flags = 0x8000;
    n = gfr_wire_encode(&hdr, &read, NULL, buf, sizeof(buf));
    assert_int_equal(gfr_wire_decode(buf, (size_t)n, &limits, &msg, NULL), 0);

    /* RESEND only with AWAITS_REPLY */
    awaits = (struct gfr_wire_hdr){.type = GFR_WIRE_MSG, .xid = 4, .flags = GFR_WIRE_F_RESEND};
    n = gfr_wire_encode(&awaits, NULL, NULL, buf, sizeof(buf));
    expect_violation((size_t)n, "a resend of a message that is not an awaited request");
    awaits.flags |= GFR_WIRE_F_AWAITS_REPLY;
    n = gfr_wire_encode(&awaits, NULL, NULL, buf, sizeof(buf));
    assert_int_equal(gfr_wire_decode(buf, (size_t)n, &limits, &msg, NULL), 0);
    assert_int_equal(msg.hdr.flags, GFR_WIRE_F_AWAITS_REPLY | GFR_WIRE_F_RESEND);
}

/* An awaited request carries its sender's mark in written (offset 20):
 * never after its own xid, in serial-number order. */
static void
test_the_mark_of_an_awaited_request(void **state)
{
    struct gfr_wire_hdr hdr = {.type = GFR_WIRE_MSG, .xid = 10, .written = 7,
                               .flags = GFR_WIRE_F_AWAITS_REPLY};
    struct gfr_wire_msg msg;
    ssize_t n = gfr_wire_encode(&hdr, NULL, NULL, buf, sizeof(buf));

    assert_int_equal(gfr_wire_decode(buf, (size_t)n, &limits, &msg, NULL), 0);
    assert_int_equal(msg.hdr.written, 7);
    hdr.written = 10;
    n = gfr_wire_encode(&hdr, NULL, NULL, buf, sizeof(buf));
    assert_int_equal(gfr_wire_decode(buf, (size_t)n, &limits, &msg, NULL), 0);
    hdr.written = 11;
    n = gfr_wire_encode(&hdr, NULL, NULL, buf, sizeof(buf));
    expect_violation((size_t)n, "a request whose mark is after its own xid");
    /* across the wrap */
    hdr.xid = 2;
    hdr.written = 0xfffffff0u;
    n = gfr_wire_encode(&hdr, NULL, NULL, buf, sizeof(buf));
    assert_int_equal(gfr_wire_decode(buf, (size_t)n, &limits, &msg, NULL), 0);
    hdr.xid = 0xfffffff0u;
    hdr.written = 2;
    n = gfr_wire_encode(&hdr, NULL, NULL, buf, sizeof(buf));
    expect_violation((size_t)n, "a request whose mark is after its own xid");
}

/* FENCE: a control message, its xid a QP number; no lists, no payload. */
static void
test_fence(void **state)
{
    struct gfr_wire_hdr hdr = {.type = GFR_WIRE_FENCE, .xid = 0x123456};
    struct gfr_wire_seg read = {0x1000, 7, 100};
    struct gfr_wire_msg msg;
    ssize_t n = gfr_wire_encode(&hdr, NULL, NULL, buf, sizeof(buf));

    assert_int_equal(gfr_wire_decode(buf, (size_t)n, &limits, &msg, NULL), 0);
    assert_int_equal(msg.hdr.type, GFR_WIRE_FENCE);
    assert_int_equal(msg.hdr.xid, 0x123456);
    hdr.n_read = 1;
    n = gfr_wire_encode(&hdr, &read, NULL, buf, sizeof(buf));
    expect_violation((size_t)n, "lists or payload on a control message");
}

static void
test_encode_refuses_bad_input(void **state)
{
    struct gfr_wire_hdr hdr = {.type = GFR_WIRE_MSG, .n_read = 1};
    struct gfr_wire_seg zero = {0, 0, 0};
    struct gfr_wire_seg big[2] = {{0, 0, UINT32_MAX}, {0, 0, 1}};

    assert_int_equal(gfr_wire_encode(NULL, NULL, NULL, buf, sizeof(buf)), -EINVAL);
    assert_int_equal(gfr_wire_encode(&hdr, NULL, NULL, buf, sizeof(buf)), -EINVAL);
    assert_int_equal(gfr_wire_encode(&hdr, &zero, NULL, buf, sizeof(buf)), -EINVAL);
    hdr.n_read = 2;
    assert_int_equal(gfr_wire_encode(&hdr, big, NULL, buf, sizeof(buf)), -EINVAL);
    hdr.n_read = GFR_WIRE_MAX_SEGS + 1;
    assert_int_equal(gfr_wire_encode(&hdr, big, NULL, buf, sizeof(buf)), -EINVAL);
    hdr.n_read = 0;
    hdr.type = 9;
    assert_int_equal(gfr_wire_encode(&hdr, NULL, NULL, buf, sizeof(buf)), -EINVAL);
    hdr.type = GFR_WIRE_MSG;
    assert_int_equal(gfr_wire_encode(&hdr, NULL, NULL, buf, 23), -EMSGSIZE);
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_header_bytes_are_as_documented),
        cmocka_unit_test(test_round_trip),
        cmocka_unit_test(test_control_messages_round_trip),
        cmocka_unit_test(test_truncated_messages),
        cmocka_unit_test(test_bad_version_and_type),
        cmocka_unit_test(test_too_many_segments),
        cmocka_unit_test(test_read_lengths_must_add_up),
        cmocka_unit_test(test_oversized_messages),
        cmocka_unit_test(test_control_message_with_payload),
        cmocka_unit_test(test_reply_rules),
        cmocka_unit_test(test_flags),
        cmocka_unit_test(test_the_mark_of_an_awaited_request),
        cmocka_unit_test(test_fence),
        cmocka_unit_test(test_encode_refuses_bad_input),
    };

    return cmocka_run_group_tests_name("wire", tests, NULL, NULL);
}
