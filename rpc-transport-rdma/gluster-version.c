/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The running GlusterFS's version, read from libgfrpc's own memory
 * (gluster-version.h explains why and how).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <link.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <glusterfs/glusterfs.h>
#include <glusterfs/rpc/rpc-transport.h>

#include "config.h"
#include "gluster-version.h"

static const char dir_key[] = "/glusterfs/";
static const char dir_tail[] = "/rpc-transport";

int
gfr_gluster_version_in(const char *blob, size_t len, char *version, size_t size)
{
    const char *end = blob + len, *at = blob;

    /* every "/rpc-transport" that ends a string, whose string holds
     * ".../glusterfs/VERSION" right before it, VERSION one component */
    while ((at = memmem(at, (size_t)(end - at), dir_tail, sizeof(dir_tail) - 1))) {
        const char *tail = at, *start = at;

        at += sizeof(dir_tail) - 1;
        if (at >= end || *at != '\0')
            continue;
        while (start > blob && start[-1] != '\0' && start[-1] != '/')
            start--;
        if (start == tail || start - blob < (ptrdiff_t)sizeof(dir_key) - 1 ||
            memcmp(start - (sizeof(dir_key) - 1), dir_key, sizeof(dir_key) - 1) != 0)
            continue;
        if ((size_t)(tail - start) >= size)
            return -ENAMETOOLONG;
        memcpy(version, start, (size_t)(tail - start));
        version[tail - start] = '\0';
        return 0;
    }
    return -ENOENT;
}

struct search {
    uintptr_t inside; /* an address of the object searched for */
    char *version;
    size_t size;
    int found;        /* the object: 0 or -errno of its search */
    int seen;
};

static int
holds(const struct dl_phdr_info *info, uintptr_t addr)
{
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        uintptr_t lo = info->dlpi_addr + ph->p_vaddr;

        if (ph->p_type == PT_LOAD && addr >= lo && addr - lo < ph->p_memsz)
            return 1;
    }
    return 0;
}

/* dl_iterate_phdr's callback: in the object holding s->inside, each
 * readable segment searched in turn (its file-backed part). */
static int
search_object(struct dl_phdr_info *info, size_t info_size, void *arg)
{
    struct search *s = arg;

    (void)info_size;
    if (!holds(info, s->inside))
        return 0;
    s->seen = 1;
    s->found = -ENOENT;
    for (int i = 0; i < info->dlpi_phnum && s->found == -ENOENT; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];

        if (ph->p_type == PT_LOAD && (ph->p_flags & PF_R) && !(ph->p_flags & PF_X))
            s->found = gfr_gluster_version_in((const char *)(info->dlpi_addr + ph->p_vaddr),
                                              ph->p_filesz, s->version, s->size);
    }
    return 1;
}

int
gfr_gluster_running_version(char *version, size_t size)
{
    struct search s = {.inside = (uintptr_t)&rpc_transport_unref,
                       .version = version,
                       .size = size};

    dl_iterate_phdr(search_object, &s);
    return s.seen ? s.found : -ENOENT;
}

int
gfr_gluster_version_check(char *why, size_t size)
{
    char running[64];
    int err = gfr_gluster_running_version(running, sizeof(running));

    if (err) {
        snprintf(why, size,
                 "rdma.so was built for GlusterFS %s and cannot tell which GlusterFS "
                 "runs it (no transport directory in libgfrpc: %s); it refuses to "
                 "start rather than risk another version's structures",
                 GFR_GLUSTERFS_VERSION, strerror(-err));
        return -ENOENT;
    }
    if (strcmp(running, GFR_GLUSTERFS_VERSION) != 0) {
        snprintf(why, size,
                 "rdma.so was built for GlusterFS %s but runs under GlusterFS %s, "
                 "whose structures differ: install the glusterfs-rdma built for %s",
                 GFR_GLUSTERFS_VERSION, running, running);
        return -EPROTO;
    }
    return 0;
}
