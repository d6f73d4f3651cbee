/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The node's rdma.so options file (node-conf.h).  Small and read once per
 * transport start: a line at a time into a list of (section, option,
 * value, line), section 0 being the node's own lines.
 */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "node-conf.h"

struct setting {
    size_t section;
    const volume_option_t *opt;
    char *value;
    unsigned line;
};

struct section {
    char *volume; /* NULL for the node's own, section 0 */
    unsigned line;
};

struct gfr_node_conf {
    char *path;
    struct setting *settings;
    size_t count;
    struct section *sections;
    size_t nsections;
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
    grown[conf->count].section = conf->nsections - 1;
    grown[conf->count].opt = opt;
    grown[conf->count].line = line;
    conf->count++;
    return 0;
}

static int
add_section(struct gfr_node_conf *conf, const char *volume, unsigned line)
{
    struct section *grown = realloc(conf->sections, (conf->nsections + 1) * sizeof(*grown));

    if (!grown)
        return -ENOMEM;
    conf->sections = grown;
    grown[conf->nsections].volume = NULL;
    if (volume && !(grown[conf->nsections].volume = strdup(volume)))
        return -ENOMEM;
    grown[conf->nsections].line = line;
    conf->nsections++;
    return 0;
}

/* The section of volume, or 0 (the node's) when it has none. */
static size_t
section_of(const struct gfr_node_conf *conf, const char *volume)
{
    for (size_t i = 1; volume && conf && i < conf->nsections; i++)
        if (strcmp(conf->sections[i].volume, volume) == 0)
            return i;
    return 0;
}

/* opt's setting in section, or NULL. */
static const struct setting *
setting_in(const struct gfr_node_conf *conf, size_t section, const volume_option_t *opt)
{
    for (size_t i = 0; conf && i < conf->count; i++)
        if (conf->settings[i].section == section && conf->settings[i].opt == opt)
            return &conf->settings[i];
    return NULL;
}

/* A name glusterd accepts for a volume: letters, digits, '-' and '_'. */
static int
is_volume_name(const char *name)
{
    if (!*name)
        return 0;
    for (; *name; name++)
        if (!isalnum((unsigned char)*name) && *name != '-' && *name != '_')
            return 0;
    return 1;
}

/* "[volume NAME]" (text trimmed, starting with '['): opens its section. */
static int
parse_header(struct gfr_node_conf *conf, char *text, unsigned line, char *why, size_t len)
{
    size_t n = strlen(text);
    char *word, *name;
    size_t earlier;

    if (text[n - 1] == ']') {
        text[n - 1] = '\0';
        word = trim(text + 1);
        name = word + strcspn(word, " \t");
        if (*name)
            *name++ = '\0';
        name = trim(name);
        if (strcmp(word, "volume") == 0 && is_volume_name(name)) {
            earlier = section_of(conf, name);
            if (earlier) {
                snprintf(why, len, "%s line %u: [volume %s] again (first on line %u)",
                         conf->path, line, name, conf->sections[earlier].line);
                return -EINVAL;
            }
            if (add_section(conf, name, line) != 0) {
                snprintf(why, len, "%s: no memory", conf->path);
                return -ENOMEM;
            }
            return 0;
        }
    }
    snprintf(why, len,
             "%s line %u: a section header is '[volume NAME]', NAME a volume's name "
             "(letters, digits, '-' and '_')",
             conf->path, line);
    return -EINVAL;
}

/* One line of the file: 0, or -EINVAL/-ENOMEM with why filled. */
static int
parse_line(struct gfr_node_conf *conf, const volume_option_t *table, char *text,
           unsigned line, char *why, size_t len)
{
    char *eq, *key, *value;
    const volume_option_t *opt;
    const struct setting *earlier;

    text = trim(text);
    if (!*text || *text == '#')
        return 0;
    if (*text == '[')
        return parse_header(conf, text, line, why, len);
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
    earlier = setting_in(conf, conf->nsections - 1, opt);
    if (earlier) {
        snprintf(why, len, "%s line %u: %s is set again (first on line %u)", conf->path,
                 line, key, earlier->line);
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
    if (!conf || !(conf->path = strdup(path)) || add_section(conf, NULL, 0) != 0) {
        snprintf(why, len, "%s: no memory", path);
        gfr_node_conf_free(conf);
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
gfr_node_conf_value(const struct gfr_node_conf *conf, const char *volume,
                    const volume_option_t *opt, unsigned *line)
{
    const struct setting *s = setting_in(conf, section_of(conf, volume), opt);

    if (!s)
        s = setting_in(conf, 0, opt);
    if (!s)
        return NULL;
    if (line)
        *line = s->line;
    return s->value;
}

const char *
gfr_node_conf_volume(const struct gfr_node_conf *conf, size_t i)
{
    return conf && i + 1 < conf->nsections ? conf->sections[i + 1].volume : NULL;
}

unsigned
gfr_node_conf_section_line(const struct gfr_node_conf *conf, const char *volume)
{
    size_t section = section_of(conf, volume);

    return section ? conf->sections[section].line : 0;
}

/* The volume of name when it ends in suffix, which ends in '-' for a
 * numbered one (VOL-client-N): 0 with volume filled, -ENOENT otherwise. */
static int
strip_suffix(const char *name, const char *suffix, char *volume, size_t len)
{
    size_t n = strlen(name), tail = strlen(suffix);
    const char *digits = name + n;

    if (suffix[tail - 1] == '-') {
        while (digits > name && isdigit((unsigned char)digits[-1]))
            digits--;
        if (digits == name + n)
            return -ENOENT;
    }
    if ((size_t)(digits - name) <= tail || strncmp(digits - tail, suffix, tail) != 0)
        return -ENOENT;
    if ((size_t)(digits - tail - name) >= len)
        return -ENAMETOOLONG;
    snprintf(volume, len, "%.*s", (int)(digits - tail - name), name);
    return 0;
}

int
gfr_node_conf_volume_of(const char *xlator_name, char *volume, size_t len)
{
    /* glusterd's volgen: VOL-client-N (FUSE, gfapi, the self-heal, quota
     * and rebalance daemons), VOL-ta-N (the thin arbiter), VOL-snapd-client
     * and VOL-server (the brick) */
    static const char *const suffixes[] = {"-client-", "-ta-", "-snapd-client", "-server"};
    int err = -ENOENT;

    for (size_t i = 0; xlator_name && err == -ENOENT && i < sizeof(suffixes) / sizeof(*suffixes);
         i++)
        err = strip_suffix(xlator_name, suffixes[i], volume, len);
    return err;
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
    for (size_t i = 0; i < conf->nsections; i++)
        free(conf->sections[i].volume);
    free(conf->sections);
    free(conf->path);
    free(conf);
}
