/* tlr_conf.h - settings from defaults, a YAML file, the environment and flags.
 *
 * A program declares its settings once, as a static table; each entry binds
 * a name (flag --name, file key name), an optional environment variable, a
 * type, a default and a help line to one field of the program's config
 * struct.  Everything else is generated from that table: parsing, the
 * --help text, and the JSON line that logs the effective settings.
 *
 *   typedef struct watcher_cfg {
 *       char       *config;
 *       int64_t     batch_idle_ms;
 *       char       *api_token;
 *       tlr_strlist zones;
 *   } watcher_cfg;
 *
 *   static const tlr_setting settings[] = {
 *       { .name = "config", .env = "TAILOR_CONFIG", .type = TLR_SET_CONFIG,
 *         .offset = offsetof(watcher_cfg, config), .help = "read settings from FILE" },
 *       { .name = "batch-idle", .env = "TAILOR_BATCH_IDLE", .type = TLR_SET_DURATION,
 *         .offset = offsetof(watcher_cfg, batch_idle_ms), .def = "1s",
 *         .help = "publish a batch after this long without a new pending pod",
 *         .min = 1, .max = 60000 },
 *       { .name = "api-token", .env = "TAILOR_API_TOKEN", .type = TLR_SET_SECRET,
 *         .offset = offsetof(watcher_cfg, api_token), .help = "bearer token" },
 *       { .name = "zones", .type = TLR_SET_LIST, .offset = offsetof(watcher_cfg, zones),
 *         .help = "zones to launch in" },
 *   };
 *
 * (Designated initializers: -Wextra rejects positional ones that leave out
 * the optional trailing fields.)
 *
 * Precedence, lowest first: defaults < file < environment < flags.  Every
 * source goes through the same text parser, so "1s" means the same thing
 * in a default, a YAML file, TAILOR_BATCH_IDLE and --batch-idle.
 *
 * The file is YAML (JSON, being YAML flow style, works too): one flat
 * mapping from setting name to a scalar; a LIST also takes a sequence.
 * Its path comes from --config FILE, or from the setting of type
 * TLR_SET_CONFIG if the table has one (which adds its environment
 * variable and default, and stores the path in the config struct).
 * Unknown keys are errors: a typo must not silently fall back to a default.
 *
 * Errors never crash and never print: they return a code and leave a
 * message naming the setting and the source in tlr_conf_result.err, e.g.
 *   --batch-idle: invalid duration "1x" (from flag)
 *   --workers: 99 out of range [1, 64] (from env TAILOR_WORKERS)
 *   /etc/tailor.yaml:4: unknown setting "batch-idel"
 * Secrets (TLR_SET_SECRET) are never shown: not in --help, not in the
 * JSON dump, not in error messages.
 */
#ifndef TLR_CONF_H
#define TLR_CONF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "tlr_buf.h"

/* The C type of the field each setting is bound to is given in brackets. */
typedef enum tlr_setting_type {
    TLR_SET_STR,      /* [char *] owned copy; NULL when unset */
    TLR_SET_INT,      /* [int] decimal; min/max bound it if either is non-zero */
    TLR_SET_BOOL,     /* [bool] true/false, yes/no, on/off, 1/0 (any case) */
    TLR_SET_DOUBLE,   /* [double] finite; min/max bound it if either is non-zero */
    TLR_SET_DURATION, /* [int64_t] milliseconds, Go syntax "1m30s", "500ms";
                         min/max in milliseconds */
    TLR_SET_LIST,     /* [tlr_strlist] comma-separated text (items trimmed,
                         empty items dropped) or a YAML sequence */
    TLR_SET_SECRET,   /* [char *] like STR, but its value is never shown */
    TLR_SET_ENUM,     /* [int] index into .choices (matched ignoring case) */
    TLR_SET_CONFIG,   /* [char *] path of the settings file (see above);
                         at most one per table, only from flag/env/default */
} tlr_setting_type;

/* The field type of TLR_SET_LIST. */
typedef struct tlr_strlist {
    char  **items;   /* owned; NULL-terminated once loaded, even when empty */
    size_t  n;
} tlr_strlist;

typedef struct tlr_setting {
    const char *name;      /* "batch-idle": flag --batch-idle, file key batch-idle */
    const char *env;       /* "TAILOR_BATCH_IDLE", or NULL for none */
    tlr_setting_type type;
    size_t offset;         /* offsetof(config struct, field) */
    const char *def;       /* default as text, parsed like any source;
                              NULL = zero (NULL string, empty list) */
    const char *help;      /* one sentence, no trailing period needed */
    long long min, max;    /* bounds for INT, DOUBLE, DURATION; both 0 = none */
    const char *const *choices; /* ENUM only: NULL-terminated names */
} tlr_setting;

#define TLR_CONF_ERRLEN 256

/* What tlr_conf_load found besides the settings.  Reset by every call. */
typedef struct tlr_conf_result {
    bool  help;            /* -h or --help: print tlr_conf_help(), exit 0 */
    bool  version;         /* --version: print the version, exit 0 */
    int   argc;            /* positional arguments (non-flags, and all after "--") */
    char **argv;           /* borrowed: points into the caller's argv, see below */
    const char *config_path; /* borrowed: the file that was read, or NULL */
    char  err[TLR_CONF_ERRLEN]; /* on failure: what went wrong, for the user */
} tlr_conf_result;

/* Fill cfg from table[0..n) and the four sources.
 *
 * table, argv, envp: borrowed.  envp is "NAME=value" strings ending in NULL
 * (main's third argument or `environ`); NULL means an empty environment.
 * An environment variable set to "" counts as unset.
 * cfg: borrowed; the fields the table names must be zero (or left by an
 * earlier tlr_conf_load) on entry: each load into a field frees what was
 * there.  Fields whose default is NULL are reset to zero.
 *
 * Flags: --name VALUE and --name=VALUE; a bool also takes --name and
 * --no-name (but not a separate VALUE argument).  A repeated flag: the last
 * one wins.  "--" ends the flags.  Flags and positionals may be mixed; on
 * success argv is permuted (like GNU getopt) so the positionals come last
 * in their original order, and res->argv = argv + argc - res->argc.
 *
 * Returns TLR_OK, also when help or version was asked for (then, whatever
 * else was on the command line, cfg is left untouched: check res->help and
 * res->version first).  Otherwise TLR_E_INVAL (unknown flag or key, missing
 * value), TLR_E_PARSE (bad value, malformed file), TLR_E_RANGE (out of
 * bounds), TLR_E_IO (file unreadable), TLR_E_TOOBIG (file over 1 MiB), with
 * res->err set and the table's strings and lists in cfg freed, as by
 * tlr_conf_free(); argv is then left as it was. */
int  tlr_conf_load(const tlr_setting *table, size_t n, void *cfg,
                   int argc, char **argv, const char *const *envp,
                   tlr_conf_result *res);

/* Write the generated help to out: a usage line, summary (borrowed, may be
 * NULL), then one aligned entry per setting and for the built-in flags
 * --config (unless the table has a TLR_SET_CONFIG setting), --help and
 * --version, with help text wrapped at 80 columns. */
void tlr_conf_help(const char *prog, const char *summary,
                   const tlr_setting *table, size_t n, FILE *out);

/* Free the strings and lists tlr_conf_load put in cfg and zero those
 * fields.  cfg itself belongs to the caller.  Safe to call twice. */
void tlr_conf_free(const tlr_setting *table, size_t n, void *cfg);

/* Append the effective settings to out as one JSON object keyed by setting
 * name: strings (null when unset), numbers, booleans, durations as Go text
 * ("1m30s"), lists as arrays, enums by name, secrets as "[redacted]" (null
 * when unset).  Returns TLR_OK or TLR_E_TOOBIG (out is then unchanged). */
int  tlr_conf_dump_json(const tlr_setting *table, size_t n, const void *cfg,
                        tlr_buf *out);

#endif
