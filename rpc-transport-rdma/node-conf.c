/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The node's rdma.so options file (node-conf.h).  Small and read once per
 * transport start: a line at a time into a list of (option, value, line).
 */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "node-conf.h"

struct setting {
    const volume_option_t *opt;
    char *value;
    unsigned line;
};

struct gfr_node_conf {
    char *path;
    struct setting *settings;
    size_t count;
};

/* The option one of whose names is key, or NULL. */
static const volume_option_t *
option_named(const volume_option_t *table, const char *key)
{
    for (const volume_option_t *opt = table; opt->key[0]; opt++)
        for (int k = 0; k < ZR_VOLUME_MAX_NUM_KEY && opt->key[k]; k++)
            if (strcmp(opt->key[k], key) == 0)
                return opt;
    return NULL;
}

/* s without leading and trailing white space (in place). */
static char *
trim(char *s)
{
    char *end;

    while (isspace((unsigned char)*s))
        s++;
    end = s + strlen(s);
    while (end > s && isspace((unsigned char)end[-1]))
        *--end = '\0';
    return s;
}

static int
add_setting(struct gfr_node_conf *conf, const volume_option_t *opt, const char *value,
            unsigned line)
{
    struct setting *grown = realloc(conf->settings, (conf->count + 1) * sizeof(*grown));

    if (!grown)
        return -ENOMEM;
    conf->settings = grown;
    grown[conf->count].value = strdup(value);
    if (!grown[conf->count].value)
        return -ENOMEM;
    grown[conf->count].opt = opt;
    grown[conf->count].line = line;
    conf->count++;
    return 0;
}

/* One line of the file: 0, or -EINVAL/-ENOMEM with why filled. */
static int
parse_line(struct gfr_node_conf *conf, const volume_option_t *table, char *text,
           unsigned line, char *why, size_t len)
{
    char *eq, *key, *value;
    const volume_option_t *opt;
    unsigned earlier;

    text = trim(text);
    if (!*text || *text == '#')
        return 0;
    eq = strchr(text, '=');
    if (!eq) {
        snprintf(why, len, "%s line %u: '%s' is not 'key = value'", conf->path, line, text);
        return -EINVAL;
    }
    *eq = '\0';
    key = trim(text);
    value = trim(eq + 1);
    opt = option_named(table, key);
    if (!opt) {
        snprintf(why, len,
                 "%s line %u: '%s' is no option of rdma.so (the keys are the volfile "
                 "options', e.g. transport.rdma.poll-mode: docs/options.md, "
                 "glusterfs-rdma(7))",
                 conf->path, line, key);
        return -EINVAL;
    }
    if (!*value) {
        snprintf(why, len, "%s line %u: %s has no value", conf->path, line, key);
        return -EINVAL;
    }
    if (gfr_node_conf_value(conf, opt, &earlier)) {
        snprintf(why, len, "%s line %u: %s is set again (first on line %u)", conf->path,
                 line, key, earlier);
        return -EINVAL;
    }
    if (add_setting(conf, opt, value, line) != 0) {
        snprintf(why, len, "%s: no memory", conf->path);
        return -ENOMEM;
    }
    return 0;
}

int
gfr_node_conf_load(const char *path, const volume_option_t *table,
                   struct gfr_node_conf **out, char *why, size_t len)
{
    struct gfr_node_conf *conf;
    char *text = NULL;
    size_t cap = 0;
    unsigned line = 0;
    int err = 0;
    FILE *f;

    *out = NULL;
    f = fopen(path, "re");
    if (!f && errno == ENOENT)
        return 0;
    if (!f) {
        err = -errno;
        snprintf(why, len, "%s cannot be read: %s", path, strerror(-err));
        return err;
    }
    conf = calloc(1, sizeof(*conf));
    if (!conf || !(conf->path = strdup(path))) {
        snprintf(why, len, "%s: no memory", path);
        free(conf);
        fclose(f);
        return -ENOMEM;
    }
    errno = 0;
    while (!err && getline(&text, &cap, f) >= 0)
        err = parse_line(conf, table, text, ++line, why, len);
    if (!err && ferror(f)) {
        err = errno ? -errno : -EIO;
        snprintf(why, len, "%s cannot be read: %s", path, strerror(-err));
    }
    free(text);
    fclose(f);
    if (err) {
        gfr_node_conf_free(conf);
        return err;
    }
    *out = conf;
    return 0;
}

const char *
gfr_node_conf_value(const struct gfr_node_conf *conf, const volume_option_t *opt,
                    unsigned *line)
{
    for (size_t i = 0; conf && i < conf->count; i++) {
        if (conf->settings[i].opt == opt) {
            if (line)
                *line = conf->settings[i].line;
            return conf->settings[i].value;
        }
    }
    return NULL;
}

const char *
gfr_node_conf_path(const struct gfr_node_conf *conf)
{
    return conf->path;
}

void
gfr_node_conf_free(struct gfr_node_conf *conf)
{
    if (!conf)
        return;
    for (size_t i = 0; i < conf->count; i++)
        free(conf->settings[i].value);
    free(conf->settings);
    free(conf->path);
    free(conf);
}
