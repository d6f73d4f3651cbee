/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Which GlusterFS this process runs, against the one rdma.so was built
 * for.  GlusterFS's structures change between releases while its library
 * names and symbols stay (docs/plugin.md, "Supported GlusterFS versions"):
 * a plugin built for 10.3 loaded by 11.1 would load and corrupt memory, so
 * init refuses to run under any other version.
 */
#ifndef GFR_GLUSTER_VERSION_H
#define GFR_GLUSTER_VERSION_H

#include <stddef.h>

/*
 * Finds in blob (len bytes: a library's read-only data) the transport
 * directory libgfrpc was built with, a string ".../glusterfs/VERSION/
 * rpc-transport", and copies VERSION into version.  GlusterFS exports no
 * call that tells its version; this string is in every libgfrpc, since
 * rpc_transport_load builds the plugin's path from it.  0, -ENOENT when
 * blob holds no such string, -ENAMETOOLONG when VERSION does not fit.
 * Pure; any thread.
 */
int gfr_gluster_version_in(const char *blob, size_t len, char *version, size_t size);

/*
 * The running libgfrpc's version: gfr_gluster_version_in over the
 * read-only segments of the loaded object that holds rpc_transport_unref.
 * 0, -ENOENT when that object or the string is not found.  Any thread.
 */
int gfr_gluster_running_version(char *version, size_t size);

/*
 * 0 when the running GlusterFS is GFR_GLUSTERFS_VERSION, the one this
 * build's headers describe; otherwise -EPROTO (another version) or
 * -ENOENT (it could not be told), with why (size bytes) naming both.
 * Any thread.
 */
int gfr_gluster_version_check(char *why, size_t size);

#endif
