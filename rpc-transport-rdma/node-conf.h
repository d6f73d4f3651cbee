/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The node's rdma.so options: a file (GFR_NODE_CONF, default
 * /etc/glusterfs/rdma.conf) of "key = value" lines with the keys of the
 * volfile options, which every GlusterFS process on the node reads when a
 * transport starts, glusterd-managed volumes included (glusterd accepts
 * no key outside its own table for `gluster volume set`).  Lines after a
 * "[volume NAME]" header apply to that volume's transports only, over the
 * node's lines before the first header.  A volfile option wins over the
 * file.  docs/options.md, "The node's file".
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
 * option set twice in a section, a header other than "[volume NAME]"
 * (NAME of letters, digits, '-' and '_'), a volume's second section, an
 * unreadable file.  Values, and which options a section may set, are
 * checked later by the reader of each option (gfr_node_conf_value's line
 * says where).  Any thread; no shared state.
 */
int gfr_node_conf_load(const char *path, const volume_option_t *table,
                       struct gfr_node_conf **out, char *why, size_t len);

/* opt's value for volume's transports (NULL: for a transport of no known
 * volume): its section's when it sets opt, otherwise the node's; with its
 * line number in *line; or NULL when the file sets neither.  The string
 * lives as long as conf. */
const char *gfr_node_conf_value(const struct gfr_node_conf *conf, const char *volume,
                                const volume_option_t *opt, unsigned *line);

/* The volume of section i (0, 1, ... in the file's order), or NULL past
 * the last. */
const char *gfr_node_conf_volume(const struct gfr_node_conf *conf, size_t i);

/* The line of volume's section header, or 0 when it has none (conf NULL:
 * no file). */
unsigned gfr_node_conf_section_line(const struct gfr_node_conf *conf, const char *volume);

/* The volume a GlusterFS translator named xlator_name serves, by glusterd's
 * names for the translators that own transports (VOL-client-N, VOL-ta-N,
 * VOL-snapd-client, VOL-server): 0 with volume (len bytes) filled,
 * -ENOENT for another name (glusterd's own "management", a hand-written
 * volfile's), -ENAMETOOLONG. */
int gfr_node_conf_volume_of(const char *xlator_name, char *volume, size_t len);

/* The file conf was read from. */
const char *gfr_node_conf_path(const struct gfr_node_conf *conf);

void gfr_node_conf_free(struct gfr_node_conf *conf);

#endif
