/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The statistics socket: it answers json and table, replaces the socket a
 * crashed process left and removes those of processes that are gone, is
 * 0600, refuses a garbage request (NUL bytes included) with a message,
 * cuts off a reader that sends nothing and one that never reads (and
 * serves the next reader after each), refuses a non-root caller, and
 * leaves nothing behind.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <poll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>
#if __has_include(<valgrind/valgrind.h>)
#include <valgrind/valgrind.h>
#else
#define RUNNING_ON_VALGRIND 0
#endif

#include "gfr_clock.h"
#include "gfr_stat_server.h"

static char dir[64];
static int big_answers; /* answers still to make larger than socket buffers hold */

static int
render(FILE *out, enum gfr_stat_format format, void *cb_arg)
{
    (void)cb_arg;
    fputs(format == GFR_STAT_JSON ? "{\"json\":1}\n" : "table\n", out);
    if (__atomic_load_n(&big_answers, __ATOMIC_ACQUIRE) > 0) {
        __atomic_sub_fetch(&big_answers, 1, __ATOMIC_RELEASE);
        static char block[1 << 16];

        memset(block, 'x', sizeof(block));
        for (int i = 0; i < 64; i++) /* 4 MiB */
            fwrite(block, 1, sizeof(block), out);
    }
    return 0;
}

static int
setup(void **state)
{
    (void)state;
    snprintf(dir, sizeof(dir), "/tmp/gfr-stat-test.XXXXXX");
    assert_non_null(mkdtemp(dir));
    big_answers = 0;
    return 0;
}

static int
teardown(void **state)
{
    char cmd[128];

    (void)state;
    snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
    return system(cmd) == 0 ? 0 : -1;
}

static int
connect_to(const char *path)
{
    struct sockaddr_un addr = {.sun_family = AF_UNIX};
    int fd = socket(AF_UNIX, SOCK_STREAM, 0);

    assert_true(fd >= 0);
    snprintf(addr.sun_path, sizeof(addr.sun_path), "%s", path);
    if (connect(fd, (struct sockaddr *)&addr, sizeof(addr)) != 0) {
        int err = errno;

        close(fd);
        return -err;
    }
    return fd;
}

/* Sends request and returns the whole answer (malloc'd). */
/* Sends size bytes of request and returns the whole answer (caller frees). */
static char *
ask_bytes(const char *path, const char *request, size_t size)
{
    int fd = connect_to(path);
    char *buf = calloc(1, 1 << 16);
    size_t len = 0;
    ssize_t n;

    assert_true(fd >= 0);
    assert_non_null(buf);
    assert_int_equal(write(fd, request, size), (ssize_t)size);
    while ((n = read(fd, buf + len, (1 << 16) - 1 - len)) > 0)
        len += (size_t)n;
    close(fd);
    return buf;
}

static char *
ask(const char *path, const char *request)
{
    return ask_bytes(path, request, strlen(request));
}

static struct gfr_stat_server *
start(void)
{
    struct gfr_stat_server *s = NULL;
    char why[256] = "";

    assert_int_equal(gfr_stat_server_start(dir, "srv/test!", render, NULL, &s, why, sizeof(why)),
                     0);
    return s;
}

static void
test_answers_json_and_table_on_a_private_socket(void **state)
{
    struct gfr_stat_server *s;
    char want[128], *a;
    struct stat st;

    (void)state;
    s = start();
    snprintf(want, sizeof(want), "%s/srvtest.%ld.sock", dir, (long)getpid());
    assert_string_equal(gfr_stat_server_path(s), want);
    assert_int_equal(stat(want, &st), 0);
    assert_true(S_ISSOCK(st.st_mode));
    assert_int_equal(st.st_mode & 0777, 0600);
    a = ask(want, "json\n");
    assert_string_equal(a, "{\"json\":1}\n");
    free(a);
    a = ask(want, "table\r\n");
    assert_string_equal(a, "table\n");
    free(a);
    assert_int_equal(gfr_stat_server_served(s), 2);
    gfr_stat_server_stop(s);
    assert_int_equal(stat(want, &st), -1); /* nothing left behind */
}

static void
test_stale_sockets_are_replaced_or_removed(void **state)
{
    char own[128], gone[128], other[128];
    struct gfr_stat_server *s;
    struct stat st;
    char *a;
    int fd;

    (void)state;
    /* Left by a crashed process with our pid, and by one that is gone
     * (no pid is above pid_max: 4194304 at most); a live one stays. */
    snprintf(own, sizeof(own), "%s/srvtest.%ld.sock", dir, (long)getpid());
    snprintf(gone, sizeof(gone), "%s/glusterfsd.4194305.sock", dir);
    snprintf(other, sizeof(other), "%s/glusterd.1.sock", dir);
    for (const char *p = own; p; p = p == own ? gone : p == gone ? other : NULL) {
        fd = open(p, O_CREAT | O_WRONLY, 0600);
        assert_true(fd >= 0);
        close(fd);
    }
    s = start();
    assert_int_equal(stat(own, &st), 0);
    assert_true(S_ISSOCK(st.st_mode));
    assert_int_equal(stat(gone, &st), -1);
    assert_int_equal(stat(other, &st), 0); /* pid 1 lives */
    a = ask(own, "json\n");
    assert_string_equal(a, "{\"json\":1}\n");
    free(a);
    gfr_stat_server_stop(s);
    unlink(other);
}

static void
test_garbage_gets_a_message_and_costs_nothing(void **state)
{
    struct gfr_stat_server *s = start();
    char *a;

    (void)state;
    a = ask(gfr_stat_server_path(s), "DROP TABLE\x01\n");
    assert_string_equal(a, "error: unknown request 'DROP TABLE?': send json, table or openmetrics\n");
    free(a);
    a = ask_bytes(gfr_stat_server_path(s), "\0junk\n", 6);
    assert_string_equal(a, "error: unknown request '?junk': send json, table or openmetrics\n");
    free(a);
    a = ask(gfr_stat_server_path(s), "0123456789012345678901234567890123456789"
                                     "0123456789012345678901234567890123456789");
    assert_non_null(strstr(a, "error: request too long"));
    free(a);
    a = ask(gfr_stat_server_path(s), "json\n");
    assert_string_equal(a, "{\"json\":1}\n");
    free(a);
    assert_int_equal(gfr_stat_server_dropped(s), 3);
    assert_int_equal(gfr_stat_server_served(s), 1);
    gfr_stat_server_stop(s);
}

static void
test_silent_and_stuck_readers_are_cut_off(void **state)
{
    struct gfr_stat_server *s;
    int silent, stuck;
    char *a;

    (void)state;
    big_answers = 1; /* the stuck reader's */
    s = start();
    silent = connect_to(gfr_stat_server_path(s)); /* sends nothing */
    stuck = connect_to(gfr_stat_server_path(s));  /* asks, never reads */
    assert_true(silent >= 0 && stuck >= 0);
    assert_int_equal(write(stuck, "json\n", 5), 5);
    /* Served after the two are cut off (1 s and 2 s): nothing stalls. */
    a = ask(gfr_stat_server_path(s), "json\n");
    assert_string_equal(a, "{\"json\":1}\n");
    free(a);
    assert_int_equal(gfr_stat_server_dropped(s), 2);
    close(silent);
    close(stuck);
    gfr_stat_server_stop(s);
}

/* The lowest descriptor number free now. */
static int
lowest_free_fd(void)
{
    int fd = open("/dev/null", O_RDONLY | O_CLOEXEC);

    assert_true(fd >= 0);
    close(fd);
    return fd;
}

static void
test_out_of_descriptors_backs_off_then_serves(void **state)
{
    struct gfr_stat_server *s;
    struct rlimit saved, low;
    uint64_t from_ns, elapsed_ms, next_ms, gap_ms;
    unsigned long failures, most = 1;
    struct pollfd pfd;
    char buf[64] = "";
    size_t len = 0;
    ssize_t n;
    int reader;

    (void)state;
    s = start();
    reader = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    assert_true(reader >= 0);
    assert_int_equal(getrlimit(RLIMIT_NOFILE, &saved), 0);
    low = saved;
    low.rlim_cur = (rlim_t)lowest_free_fd();
    from_ns = gfr_now_ns();
    assert_int_equal(setrlimit(RLIMIT_NOFILE, &low), 0);
    {
        struct sockaddr_un addr = {.sun_family = AF_UNIX};

        snprintf(addr.sun_path, sizeof(addr.sun_path), "%s", gfr_stat_server_path(s));
        assert_int_equal(connect(reader, (struct sockaddr *)&addr, sizeof(addr)), 0);
    }
    /* Under valgrind the server's side may already be closed (below):
     * no SIGPIPE, and the request is sent again on a new connection. */
    assert_true(send(reader, "json\n", 5, MSG_NOSIGNAL) == 5 || RUNNING_ON_VALGRIND);
    usleep(300 * 1000);
    failures = gfr_stat_server_accept_failures(s);
    elapsed_ms = (gfr_now_ns() - from_ns) / 1000000;
    assert_int_equal(setrlimit(RLIMIT_NOFILE, &saved), 0);
    /* Tries at 0, 10, 30, 70, ... ms after the first (gaps doubling up to
     * 1 s), so this many at the most: a spinning server would have failed
     * thousands of times by now. */
    for (next_ms = gap_ms = 10; next_ms <= elapsed_ms; next_ms += gap_ms) {
        most++;
        gap_ms = gap_ms * 2 > 1000 ? 1000 : gap_ms * 2;
    }
    assert_true(failures >= 1);
    assert_true(failures <= most);
    /* The reader waited in the backlog and is served at the next try.
     * (valgrind emulates the limit by closing what the kernel accepted,
     * so there the reader is gone and a new one asks.) */
    if (RUNNING_ON_VALGRIND) {
        close(reader);
        reader = connect_to(gfr_stat_server_path(s));
        assert_true(reader >= 0);
        assert_int_equal(send(reader, "json\n", 5, MSG_NOSIGNAL), 5);
    }
    /* Read to the end: the server counts a reader served before it
     * closes, so the count is sure only once the reader sees EOF. */
    pfd = (struct pollfd){.fd = reader, .events = POLLIN};
    assert_int_equal(poll(&pfd, 1, 10000), 1);
    while ((n = read(reader, buf + len, sizeof(buf) - 1 - len)) > 0)
        len += (size_t)n;
    assert_string_equal(buf, "{\"json\":1}\n");
    close(reader);
    assert_int_equal(gfr_stat_server_served(s), 1);
    gfr_stat_server_stop(s);
}

static void
test_a_non_root_caller_is_refused(void **state)
{
    /* Static so the forked child, which has no server thread, still reaches
     * it: valgrind checks the child for leaks when it exits too. */
    static struct gfr_stat_server *s;
    pid_t child;
    int status;

    (void)state;
    if (geteuid() != 0)
        skip(); /* only root can become another user */
    s = start();
    child = fork();
    assert_true(child >= 0);
    if (child == 0) {
        int fd;

        if (setgid(65534) != 0 || setuid(65534) != 0)
            _exit(3);
        fd = connect_to(gfr_stat_server_path(s));
        _exit(fd == -EACCES ? 0 : 4);
    }
    assert_int_equal(waitpid(child, &status, 0), child);
    assert_true(WIFEXITED(status));
    assert_int_equal(WEXITSTATUS(status), 0);
    gfr_stat_server_stop(s);
}

static void
test_socket_names_parse(void **state)
{
    char name[32];
    long pid;

    (void)state;
    assert_int_equal(gfr_stat_parse_name("glusterfsd.1234.sock", name, sizeof(name), &pid), 0);
    assert_string_equal(name, "glusterfsd");
    assert_int_equal(pid, 1234);
    assert_int_equal(gfr_stat_parse_name("a.b.77.sock", name, sizeof(name), &pid), 0);
    assert_string_equal(name, "a.b");
    assert_int_equal(gfr_stat_parse_name(".x.1.sock.tmp", name, sizeof(name), &pid), -EINVAL);
    assert_int_equal(gfr_stat_parse_name("glusterfsd.sock", name, sizeof(name), &pid), -EINVAL);
    assert_int_equal(gfr_stat_parse_name("x.12a.sock", name, sizeof(name), &pid), -EINVAL);
    assert_int_equal(gfr_stat_parse_name("x.0.sock", name, sizeof(name), &pid), -EINVAL);
    assert_int_equal(gfr_stat_parse_name(".5.sock", name, sizeof(name), &pid), -EINVAL);
}

static void
test_a_bad_directory_is_named(void **state)
{
    struct gfr_stat_server *s = NULL;
    char why[256] = "";

    (void)state;
    assert_int_equal(gfr_stat_server_start("/proc/no/such/dir", "x", render, NULL, &s, why,
                                           sizeof(why)),
                     -ENOENT);
    assert_null(s);
    assert_non_null(strstr(why, "cannot create /proc/no/such"));
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_answers_json_and_table_on_a_private_socket, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_stale_sockets_are_replaced_or_removed, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_garbage_gets_a_message_and_costs_nothing, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_silent_and_stuck_readers_are_cut_off, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_out_of_descriptors_backs_off_then_serves, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_a_non_root_caller_is_refused, setup, teardown),
        cmocka_unit_test(test_socket_names_parse),
        cmocka_unit_test(test_a_bad_directory_is_named),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
