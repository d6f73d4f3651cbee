/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The node's rdma.so options: a file (GFR_NODE_CONF, default
 * /etc/glusterfs/rdma.conf) of "key = value" lines with the keys of the
 * volfile options, which every GlusterFS process on the node reads when a
 * transport starts, glusterd-managed volumes included (glusterd accepts
 * no key outside its own table for `gluster volume set`).  A volfile
 * option wins over the file.  docs/options.md, "The node's file".
 */
#ifndef GFR_NODE_CONF_H
#define GFR_NODE_CONF_H

#include <stddef.h>

#include <glusterfs/glusterfs.h>
#include <glusterfs/xlator.h>

/* One file's settings.  Owned by the caller of gfr_node_conf_load, freed by
 * gfr_node_conf_free. */
struct gfr_node_conf;

/*
 * Reads path against the option table (a key may be any of an option's
 * names).  Blank lines and lines starting with '#' are skipped.  0 with
 * *out set, or with *out NULL when path does not exist (a node without
 * the file is normal); -errno with why (len bytes) naming the file, the
 * line and what is wrong: a line without '=', a key that is no option, an
 * option set twice, an unreadable file.  Values are checked later, by the
 * reader of each option (gfr_node_conf_value's line says where).  Any
 * thread; no shared state.
 */
int gfr_node_conf_load(const char *path, const volume_option_t *table,
                       struct gfr_node_conf **out, char *why, size_t len);

/* opt's value in the file, with its line number in *line, or NULL.  The
 * string lives as long as conf. */
const char *gfr_node_conf_value(const struct gfr_node_conf *conf, const volume_option_t *opt,
                                unsigned *line);

/* The file conf was read from. */
const char *gfr_node_conf_path(const struct gfr_node_conf *conf);

void gfr_node_conf_free(struct gfr_node_conf *conf);

#endif
