/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The statistics socket (gfr_stat_server.h).  One thread polls the
 * listening socket and an eventfd that stop writes to; each accepted
 * reader is served to the end (or cut off at its deadline) before the next
 * one is accepted, so the server holds at most one reader's answer in
 * memory and no reader can make it wait longer than READ_MS + WRITE_MS.
 * The socket is bound under a temporary name, made 0600, then renamed into
 * place, so it is never reachable with the umask's mode.
 */
#define _GNU_SOURCE
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <urcu/uatomic.h>

#include "gfr_clock.h"
#include "gfr_stat_server.h"

#define READ_MS 1000  /* for the request line */
#define WRITE_MS 2000 /* for the whole answer */
#define REQUEST_MAX 64
/* The request lines a reader may send, one per format, and how a refusal
 * names them. */
static const char *const format_names[] = {
    [GFR_STAT_JSON] = "json",
    [GFR_STAT_TABLE] = "table",
    [GFR_STAT_OPENMETRICS] = "openmetrics",
};
#define FORMATS (sizeof(format_names) / sizeof(format_names[0]))
#define FORMAT_CHOICES "json, table or openmetrics"
/* After a failed accept (out of descriptors or memory, which poll still
 * reports as a waiting reader), the server waits this long before it tries
 * again, doubling up to the most: a full descriptor table must not keep
 * its thread spinning. */
#define ACCEPT_BACKOFF_FIRST_MS 10
#define ACCEPT_BACKOFF_MAX_MS 1000

struct gfr_stat_server {
    int fd;
    int stop_fd;
    pthread_t thread;
    gfr_stat_render_fn render;
    void *cb_arg;
    unsigned long served;  /* uatomic */
    unsigned long dropped; /* uatomic */
    unsigned long accept_failures; /* uatomic */
    char path[sizeof(((struct sockaddr_un *)0)->sun_path)];
};

const char *
gfr_stat_dir(void)
{
    const char *dir = getenv("GFR_STAT_DIR");

    return dir && *dir ? dir : GFR_STAT_DIR_DEFAULT;
}

int
gfr_stat_parse_name(const char *file, char *name, size_t name_len, long *pid)
{
    const char *suffix = strrchr(file, '.');
    const char *dot;
    char *end;
    long v;

    if (!suffix || strcmp(suffix, ".sock") != 0)
        return -EINVAL;
    for (dot = suffix - 1; dot > file && *dot != '.'; dot--)
        ;
    if (dot <= file || !isdigit((unsigned char)dot[1]))
        return -EINVAL;
    errno = 0;
    v = strtol(dot + 1, &end, 10);
    if (errno || end != suffix || v <= 0)
        return -EINVAL;
    if ((size_t)(dot - file) >= name_len)
        return -ENAMETOOLONG;
    memcpy(name, file, (size_t)(dot - file));
    name[dot - file] = '\0';
    *pid = v;
    return 0;
}

/* Sets *why to "WHAT PATH: ERROR" and returns err. */
static int
fail(char *why, size_t why_len, int err, const char *what, const char *path)
{
    if (why && why_len)
        snprintf(why, why_len, "%s %s: %s", what, path, strerror(-err));
    return err;
}

static int
make_dir(const char *dir, char *why, size_t why_len)
{
    char parent[PATH_MAX];
    char *slash;

    if (mkdir(dir, 0755) == 0 || errno == EEXIST)
        return 0;
    if (errno != ENOENT || strlen(dir) >= sizeof(parent))
        return fail(why, why_len, -errno, "cannot create", dir);
    strcpy(parent, dir);
    slash = strrchr(parent, '/');
    if (!slash || slash == parent)
        return fail(why, why_len, -ENOENT, "cannot create", dir);
    *slash = '\0';
    if (mkdir(parent, 0755) != 0 && errno != EEXIST)
        return fail(why, why_len, -errno, "cannot create", parent);
    if (mkdir(dir, 0755) != 0 && errno != EEXIST)
        return fail(why, why_len, -errno, "cannot create", dir);
    return 0;
}

/* Removes NAME.PID.sock files of processes that are gone, and `own`. */
static void
remove_stale(const char *dir, const char *own)
{
    DIR *d = opendir(dir);
    struct dirent *e;
    char name[256], path[PATH_MAX];
    long pid;

    if (!d)
        return;
    while ((e = readdir(d))) {
        if (gfr_stat_parse_name(e->d_name, name, sizeof(name), &pid) != 0)
            continue;
        if (strcmp(e->d_name, own) != 0 && (kill((pid_t)pid, 0) == 0 || errno != ESRCH))
            continue;
        if (snprintf(path, sizeof(path), "%s/%s", dir, e->d_name) < (int)sizeof(path))
            unlink(path);
    }
    closedir(d);
}

/* Waits for fd to be ready for events until deadline_ns: 1, 0 (timed out). */
static int
wait_fd(int fd, short events, uint64_t deadline_ns)
{
    struct pollfd pfd = {.fd = fd, .events = events};
    uint64_t now = gfr_now_ns();
    int n;

    if (now >= deadline_ns)
        return 0;
    do {
        n = poll(&pfd, 1, (int)((deadline_ns - now + 999999) / 1000000));
    } while (n < 0 && errno == EINTR);
    return n > 0;
}

/* Reads the request line: 0, or -ETIMEDOUT, -EMSGSIZE, -ECONNRESET. */
static int
read_request(int fd, char *line, size_t cap)
{
    uint64_t deadline = gfr_deadline_ns(READ_MS);
    size_t len = 0;

    for (;;) {
        ssize_t n;
        char *nl;

        if (!wait_fd(fd, POLLIN, deadline))
            return -ETIMEDOUT;
        n = recv(fd, line + len, cap - 1 - len, MSG_DONTWAIT);
        if (n < 0 && (errno == EAGAIN || errno == EINTR))
            continue;
        if (n <= 0)
            return -ECONNRESET;
        len += (size_t)n;
        line[len] = '\0';
        nl = memchr(line, '\n', len);
        if (nl) {
            /* A NUL must not cut the line short: shown as '?', like
             * every unprintable byte of an unknown request. */
            for (char *c = line; c < nl; c++)
                if (!*c)
                    *c = '?';
            *nl = '\0';
            if (nl > line && nl[-1] == '\r')
                nl[-1] = '\0';
            return 0;
        }
        if (len == cap - 1)
            return -EMSGSIZE;
    }
}

/* Writes all of buf by the deadline: 0, or -ETIMEDOUT, -EPIPE. */
static int
write_all(int fd, const char *buf, size_t len, uint64_t deadline)
{
    while (len) {
        ssize_t n;

        if (!wait_fd(fd, POLLOUT, deadline))
            return -ETIMEDOUT;
        n = send(fd, buf, len, MSG_DONTWAIT | MSG_NOSIGNAL);
        if (n < 0 && (errno == EAGAIN || errno == EINTR))
            continue;
        if (n <= 0)
            return -EPIPE;
        buf += n;
        len -= (size_t)n;
    }
    return 0;
}

static int
reply_text(int fd, const char *text)
{
    return write_all(fd, text, strlen(text), gfr_deadline_ns(WRITE_MS));
}

/* Serves one reader: 0 when it got its answer. */
static int
serve(struct gfr_stat_server *s, int fd)
{
    struct ucred cred;
    socklen_t len = sizeof(cred);
    char line[REQUEST_MAX], msg[160];
    size_t known;
    char *buf = NULL;
    size_t size = 0;
    FILE *out;
    int err;

    if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) != 0 ||
        (cred.uid != 0 && cred.uid != geteuid())) {
        reply_text(fd, "error: the statistics are root's only\n");
        return -EACCES;
    }
    err = read_request(fd, line, sizeof(line));
    if (err == -EMSGSIZE) {
        reply_text(fd, "error: request too long: send a line, " FORMAT_CHOICES "\n");
        return err;
    }
    if (err)
        return err;
    for (known = 0; known < FORMATS && strcmp(line, format_names[known]) != 0; known++)
        ;
    if (known == FORMATS) {
        for (char *c = line; *c; c++)
            if (!isprint((unsigned char)*c))
                *c = '?';
        snprintf(msg, sizeof(msg), "error: unknown request '%.40s': send " FORMAT_CHOICES "\n",
                 line);
        reply_text(fd, msg);
        return -EINVAL;
    }
    out = open_memstream(&buf, &size);
    if (!out) {
        reply_text(fd, "error: out of memory\n");
        return -ENOMEM;
    }
    err = s->render(out, (enum gfr_stat_format)known, s->cb_arg);
    if (fclose(out) != 0 && !err)
        err = -ENOMEM;
    if (err) {
        snprintf(msg, sizeof(msg), "error: cannot take the statistics: %s\n", strerror(-err));
        reply_text(fd, msg);
    } else {
        err = write_all(fd, buf, size, gfr_deadline_ns(WRITE_MS));
    }
    free(buf);
    return err;
}

/* Waits for a reader to accept, or, while backing off (backoff_ms > 0),
 * for that long with the stop signal alone watched.  1: try an accept;
 * 0: stop.  Server thread only. */
static int
wait_turn(struct pollfd pfds[2], int backoff_ms)
{
    for (;;) {
        int n = backoff_ms ? poll(&pfds[1], 1, backoff_ms) : poll(pfds, 2, -1);

        if (n < 0 && errno != EINTR)
            return 0;
        if (n > 0 && pfds[1].revents)
            return 0;
        if (backoff_ms ? n == 0 : n > 0 && (pfds[0].revents & POLLIN))
            return 1;
    }
}

static void *
server_main(void *arg)
{
    struct gfr_stat_server *s = arg;
    struct pollfd pfds[2] = {{.fd = s->fd, .events = POLLIN},
                             {.fd = s->stop_fd, .events = POLLIN}};
    int backoff_ms = 0;

    while (wait_turn(pfds, backoff_ms)) {
        int fd = accept4(s->fd, NULL, NULL, SOCK_CLOEXEC);

        if (fd < 0) {
            if (errno == EAGAIN || errno == EINTR || errno == ECONNABORTED) {
                backoff_ms = 0;
                continue;
            }
            uatomic_inc(&s->accept_failures);
            backoff_ms = backoff_ms ? backoff_ms * 2 : ACCEPT_BACKOFF_FIRST_MS;
            if (backoff_ms > ACCEPT_BACKOFF_MAX_MS)
                backoff_ms = ACCEPT_BACKOFF_MAX_MS;
            continue;
        }
        backoff_ms = 0;
        if (serve(s, fd) == 0)
            uatomic_inc(&s->served);
        else
            uatomic_inc(&s->dropped);
        close(fd);
    }
    return NULL;
}

/* Letters, digits, '-' and '_' of name, at most 32 of them. */
static void
clean_name(const char *name, char *out, size_t cap)
{
    size_t n = 0;

    for (; name && *name && n + 1 < cap && n < 32; name++)
        if (isalnum((unsigned char)*name) || *name == '-' || *name == '_')
            out[n++] = *name;
    if (!n)
        out[n++] = 'x';
    out[n] = '\0';
}

int
gfr_stat_server_start(const char *dir, const char *name, gfr_stat_render_fn render,
                      void *cb_arg, struct gfr_stat_server **serverp, char *why,
                      size_t why_len)
{
    struct sockaddr_un addr = {.sun_family = AF_UNIX};
    struct gfr_stat_server *s;
    char clean[40], file[80];
    int err;

    if (!dir || !render || !serverp)
        return -EINVAL;
    clean_name(name, clean, sizeof(clean));
    snprintf(file, sizeof(file), "%s.%ld.sock", clean, (long)getpid());
    s = calloc(1, sizeof(*s));
    if (!s)
        return -ENOMEM;
    s->fd = s->stop_fd = -1;
    s->render = render;
    s->cb_arg = cb_arg;
    if (snprintf(s->path, sizeof(s->path), "%s/%s", dir, file) >= (int)sizeof(s->path) ||
        snprintf(addr.sun_path, sizeof(addr.sun_path), "%s/.%s.tmp", dir, file) >=
            (int)sizeof(addr.sun_path)) {
        err = fail(why, why_len, -ENAMETOOLONG, "cannot serve statistics in", dir);
        goto out;
    }
    err = make_dir(dir, why, why_len);
    if (err)
        goto out;
    remove_stale(dir, file);
    unlink(addr.sun_path);
    s->fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    s->stop_fd = eventfd(0, EFD_CLOEXEC);
    if (s->fd < 0 || s->stop_fd < 0) {
        err = fail(why, why_len, -errno, "cannot open a socket for", s->path);
        goto out;
    }
    if (bind(s->fd, (struct sockaddr *)&addr, sizeof(addr)) != 0) {
        err = fail(why, why_len, -errno, "cannot bind", addr.sun_path);
        goto out;
    }
    if (chmod(addr.sun_path, 0600) != 0 || rename(addr.sun_path, s->path) != 0) {
        err = fail(why, why_len, -errno, "cannot put the socket at", s->path);
        unlink(addr.sun_path);
        goto out;
    }
    if (listen(s->fd, 8) != 0) {
        err = fail(why, why_len, -errno, "cannot listen on", s->path);
        unlink(s->path);
        goto out;
    }
    err = -pthread_create(&s->thread, NULL, server_main, s);
    if (err) {
        fail(why, why_len, err, "cannot start the thread serving", s->path);
        unlink(s->path);
        goto out;
    }
    pthread_setname_np(s->thread, "gfr-stat");
    *serverp = s;
    return 0;
out:
    if (s->fd >= 0)
        close(s->fd);
    if (s->stop_fd >= 0)
        close(s->stop_fd);
    free(s);
    return err;
}

const char *
gfr_stat_server_path(const struct gfr_stat_server *server)
{
    return server->path;
}

unsigned long
gfr_stat_server_served(const struct gfr_stat_server *server)
{
    return uatomic_read(&server->served);
}

unsigned long
gfr_stat_server_dropped(const struct gfr_stat_server *server)
{
    return uatomic_read(&server->dropped);
}

unsigned long
gfr_stat_server_accept_failures(const struct gfr_stat_server *server)
{
    return uatomic_read(&server->accept_failures);
}

void
gfr_stat_server_stop(struct gfr_stat_server *server)
{
    uint64_t one = 1;
    ssize_t n;

    if (!server)
        return;
    /* An eventfd's counter cannot overflow from one write: it is woken. */
    n = write(server->stop_fd, &one, sizeof(one));
    (void)n;
    pthread_join(server->thread, NULL);
    unlink(server->path);
    close(server->fd);
    close(server->stop_fd);
    free(server);
}
