/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The plugin's framing of RPC records in engine bodies
 * (rpc-transport-rdma/rpc-frame.c): every split of a body between the
 * inline head and the pulled bulk gives the same header and payload, and
 * every malformed frame a peer could send is refused.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "rpc-frame.h"

#define XID 0x0a0b0c0du

/* prefix | header (XID first) | payload, in buf; returns the body length. */
static size_t
build(uint8_t *buf, uint32_t header_len, size_t payload_len, uint32_t xid)
{
    gfr_frame_prefix(buf, header_len);
    buf[4] = (uint8_t)(xid >> 24);
    buf[5] = (uint8_t)(xid >> 16);
    buf[6] = (uint8_t)(xid >> 8);
    buf[7] = (uint8_t)xid;
    for (size_t i = 8; i < GFR_FRAME_PREFIX + header_len + payload_len; i++)
        buf[i] = (uint8_t)(i * 7 + 3);
    return GFR_FRAME_PREFIX + header_len + payload_len;
}

static struct gfr_rdma_rx
split(const uint8_t *body, size_t len, size_t head_len)
{
    struct gfr_rdma_rx rx = {.xid = XID, .head = body, .head_len = head_len,
                             .bulk = body + head_len, .bulk_len = len - head_len};
    return rx;
}

static void
test_every_split_gives_the_same_parts(void **state)
{
    uint8_t body[256], out[256];
    size_t len = build(body, 40, 100, XID);

    (void)state;
    for (size_t head = 0; head <= len; head++) {
        struct gfr_rdma_rx rx = split(body, len, head);
        struct gfr_frame f;
        const char *why = NULL;

        assert_int_equal(gfr_frame_parse(&rx, &f, &why), 0);
        assert_int_equal(f.header_off, GFR_FRAME_PREFIX);
        assert_int_equal(f.header_len, 40);
        assert_int_equal(f.payload_off, GFR_FRAME_PREFIX + 40);
        assert_int_equal(f.payload_len, 100);
        memset(out, 0, sizeof(out));
        gfr_frame_copy(&rx, f.header_off, f.header_len + f.payload_len, out);
        assert_memory_equal(out, body + GFR_FRAME_PREFIX, 140);
        gfr_frame_copy(&rx, f.payload_off, f.payload_len, out);
        assert_memory_equal(out, body + f.payload_off, 100);
    }
}

static void
test_a_record_without_payload(void **state)
{
    uint8_t body[64];
    size_t len = build(body, 24, 0, XID);
    struct gfr_rdma_rx rx = split(body, len, len);
    struct gfr_frame f;
    const char *why;

    (void)state;
    assert_int_equal(gfr_frame_parse(&rx, &f, &why), 0);
    assert_int_equal(f.payload_len, 0);
}

static void
expect_refused(const uint8_t *body, size_t len, uint32_t xid, const char *fault)
{
    struct gfr_rdma_rx rx = split(body, len, len);
    struct gfr_frame f;
    const char *why = NULL;

    rx.xid = xid;
    assert_int_equal(gfr_frame_parse(&rx, &f, &why), -EPROTO);
    assert_non_null(why);
    assert_non_null(strstr(why, fault));
}

static void
test_malformed_frames_are_refused(void **state)
{
    uint8_t body[64] = {0};
    size_t len;

    (void)state;
    expect_refused(body, 3, XID, "shorter than the frame prefix");
    len = build(body, 7, 10, XID);
    expect_refused(body, len, XID, "too short to hold an XID");
    len = build(body, 20, 0, XID);
    gfr_frame_prefix(body, 21);
    expect_refused(body, len, XID, "longer than the message");
    gfr_frame_prefix(body, 0xffffffffu);
    expect_refused(body, len, XID, "longer than the message");
    len = build(body, 20, 4, XID);
    expect_refused(body, len, XID + 1, "XID that differs");
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_split_gives_the_same_parts),
        cmocka_unit_test(test_a_record_without_payload),
        cmocka_unit_test(test_malformed_frames_are_refused),
    };

    return cmocka_run_group_tests_name("rpc-frame", tests, NULL, NULL);
}
