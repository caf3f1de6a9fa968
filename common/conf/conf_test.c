/* conf_test.c - tests for tlr_conf: precedence, every type, errors, help, dump.
 *
 * Most cases are rows of one table: a YAML file (written to a temp file),
 * command-line flags and environment, and either the expected JSON dump of
 * the effective settings or the expected error code and message.  "@FILE"
 * in any of them stands for the temp file's path.  Run under the Sanitize
 * build, every row also checks that nothing leaks on success or failure.
 */
#include <ctype.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "tlr_alloc.h"
#include "tlr_buf.h"
#include "tlr_conf.h"
#include "tlr_err.h"

typedef struct tcfg {
    char       *config;
    char       *name;
    int         workers;
    bool        verbose;
    double      ratio;
    int64_t     idle_ms;
    tlr_strlist zones;
    char       *token;
    int         level;
} tcfg;

static const char *const levels[] = { "debug", "info", "warn", "error", NULL };

static const tlr_setting settings[] = {
    { .name = "config", .env = "T_CONFIG", .type = TLR_SET_CONFIG,
      .offset = offsetof(tcfg, config), .help = "read settings from FILE" },
    { .name = "name", .env = "T_NAME", .type = TLR_SET_STR,
      .offset = offsetof(tcfg, name), .def = "default-name",
      .help = "the name of this instance" },
    { .name = "workers", .env = "T_WORKERS", .type = TLR_SET_INT,
      .offset = offsetof(tcfg, workers), .def = "4", .help = "worker threads",
      .min = 1, .max = 64 },
    { .name = "verbose", .env = "T_VERBOSE", .type = TLR_SET_BOOL,
      .offset = offsetof(tcfg, verbose), .def = "false", .help = "log more" },
    { .name = "ratio", .env = "T_RATIO", .type = TLR_SET_DOUBLE,
      .offset = offsetof(tcfg, ratio), .def = "0.5",
      .help = "fraction of nodes to consider", .min = 0, .max = 1 },
    { .name = "batch-idle", .env = "T_BATCH_IDLE", .type = TLR_SET_DURATION,
      .offset = offsetof(tcfg, idle_ms), .def = "1s",
      .help = "publish a batch of pending pods after this long without a new "
              "pending pod arriving; a longer wait gives bigger batches and better "
              "packing at the cost of latency",
      .min = 1, .max = 10000 },
    { .name = "zones", .env = "T_ZONES", .type = TLR_SET_LIST,
      .offset = offsetof(tcfg, zones), .def = "a,b",
      .help = "availability zones to launch in" },
    { .name = "api-token", .env = "T_API_TOKEN", .type = TLR_SET_SECRET,
      .offset = offsetof(tcfg, token), .def = "s3cr3t-default",
      .help = "bearer token for the API server" },
    { .name = "log-level", .env = "T_LOG_LEVEL", .type = TLR_SET_ENUM,
      .offset = offsetof(tcfg, level), .def = "info", .help = "lowest level logged",
      .choices = levels },
};
#define NSETTINGS (sizeof(settings) / sizeof(settings[0]))

#define DEFAULT_DUMP                                                          \
    "{\"config\":null,\"name\":\"default-name\",\"workers\":4,"                \
    "\"verbose\":false,\"ratio\":0.5,\"batch-idle\":\"1s\","                  \
    "\"zones\":[\"a\",\"b\"],\"api-token\":\"[redacted]\",\"log-level\":\"info\"}"

/* DEFAULT_DUMP with one "key":value replaced, to keep rows short. */
typedef struct load_case {
    const char *label;
    const char *file;         /* YAML written to @FILE, or NULL */
    const char *args[8];      /* after argv[0]; NULL-terminated */
    const char *env[4];       /* NULL-terminated */
    int         want_rc;
    const char *want;         /* rc == 0: "key":value expected in the dump
                                 (NULL = DEFAULT_DUMP exactly);
                                 rc != 0: expected res.err */
} load_case;

static const load_case load_cases[] = {
    /* precedence: default < file < env < flag */
    { "defaults only", NULL, { NULL }, { NULL }, 0, NULL },
    { "file over default", "workers: 8\n", { "--config", "@FILE" }, { NULL }, 0,
      "\"workers\":8" },
    { "env over file", "workers: 8\n", { "--config", "@FILE" }, { "T_WORKERS=16" }, 0,
      "\"workers\":16" },
    { "flag over env", "workers: 8\n", { "--config", "@FILE", "--workers", "32" },
      { "T_WORKERS=16" }, 0, "\"workers\":32" },
    { "string through all four", "name: from-file\n", { "--name=from-flag" },
      { "T_CONFIG=@FILE", "T_NAME=from-env" }, 0, "\"name\":\"from-flag\"" },
    { "string env over file", "name: from-file\n", { NULL },
      { "T_CONFIG=@FILE", "T_NAME=from-env" }, 0, "\"name\":\"from-env\"" },
    { "config path via env", "name: from-file\n", { NULL }, { "T_CONFIG=@FILE" }, 0,
      "\"config\":\"@FILE\",\"name\":\"from-file\"" },
    { "config flag beats env", "name: from-file\n", { "--config=@FILE" },
      { "T_CONFIG=/nonexistent/x.yaml" }, 0, "\"name\":\"from-file\"" },
    { "empty env is unset", NULL, { NULL }, { "T_WORKERS=", "T_NAME=" }, 0, NULL },
    { "last flag wins", NULL, { "--name", "a", "--name", "b" }, { NULL }, 0,
      "\"name\":\"b\"" },
    { "json file", "{\"workers\": 9, \"zones\": [\"j\"], \"verbose\": true}",
      { "--config", "@FILE" }, { NULL }, 0,
      "\"workers\":9,\"verbose\":true" },
    { "file null keeps default", "name: ~\nworkers:\n", { "--config", "@FILE" },
      { NULL }, 0, "\"name\":\"default-name\",\"workers\":4," },
    { "empty file", "# nothing here\n", { "--config", "@FILE" }, { NULL }, 0,
      "\"name\":\"default-name\"" },

    /* bool forms */
    { "bool bare", NULL, { "--verbose" }, { NULL }, 0, "\"verbose\":true" },
    { "bool =false over env", NULL, { "--verbose=false" }, { "T_VERBOSE=true" }, 0,
      "\"verbose\":false" },
    { "bool --no- over env", NULL, { "--no-verbose" }, { "T_VERBOSE=1" }, 0,
      "\"verbose\":false" },
    { "bool =yes", NULL, { "--verbose=YES" }, { NULL }, 0, "\"verbose\":true" },
    { "bool env on", NULL, { NULL }, { "T_VERBOSE=on" }, 0, "\"verbose\":true" },
    { "bool file", "verbose: true\n", { "--config", "@FILE" }, { NULL }, 0,
      "\"verbose\":true" },
    { "bool bare does not eat next arg", NULL, { "--verbose", "false" }, { NULL }, 0,
      "\"verbose\":true" },
    { "bool bad", NULL, { "--verbose=maybe" }, { NULL }, TLR_E_PARSE,
      "--verbose: invalid boolean \"maybe\" (want true or false) (from flag)" },
    { "--no- with value", NULL, { "--no-verbose=true" }, { NULL }, TLR_E_INVAL,
      "--no-verbose takes no value" },
    { "--no- on non-bool", NULL, { "--no-workers" }, { NULL }, TLR_E_INVAL,
      "unknown flag --no-workers" },

    /* int */
    { "int flag", NULL, { "--workers", "7" }, { NULL }, 0, "\"workers\":7" },
    { "int below min", NULL, { "--workers", "0" }, { NULL }, TLR_E_RANGE,
      "--workers: 0 out of range [1, 64] (from flag)" },
    { "int above max from env", NULL, { NULL }, { "T_WORKERS=65" }, TLR_E_RANGE,
      "--workers: 65 out of range [1, 64] (from env T_WORKERS)" },
    { "int not a number", NULL, { "--workers=4x" }, { NULL }, TLR_E_PARSE,
      "--workers: invalid integer \"4x\" (from flag)" },
    { "int overflow", NULL, { "--workers=99999999999999999999" }, { NULL },
      TLR_E_RANGE, "--workers: 99999999999999999999 out of range (from flag)" },
    { "int empty", NULL, { "--workers=" }, { NULL }, TLR_E_PARSE,
      "--workers: invalid integer \"\" (from flag)" },
    { "int from file, bad", "name: x\nworkers: lots\n", { "--config", "@FILE" },
      { NULL }, TLR_E_PARSE, "--workers: invalid integer \"lots\" (from file @FILE:2)" },

    /* double */
    { "double", NULL, { "--ratio=0.25" }, { NULL }, 0, "\"ratio\":0.25" },
    { "double above max", NULL, { "--ratio=1.5" }, { NULL }, TLR_E_RANGE,
      "--ratio: 1.5 out of range [0, 1] (from flag)" },
    { "double nan", NULL, { "--ratio=nan" }, { NULL }, TLR_E_PARSE,
      "--ratio: invalid number \"nan\" (from flag)" },

    /* duration */
    { "duration ms", NULL, { "--batch-idle=500ms" }, { NULL }, 0,
      "\"batch-idle\":\"500ms\"" },
    { "duration env", NULL, { NULL }, { "T_BATCH_IDLE=2s" }, 0,
      "\"batch-idle\":\"2s\"" },
    { "duration bad", NULL, { "--batch-idle", "1x" }, { NULL }, TLR_E_PARSE,
      "--batch-idle: invalid duration \"1x\" (from flag)" },
    { "duration no unit", NULL, { "--batch-idle", "5" }, { NULL }, TLR_E_PARSE,
      "--batch-idle: invalid duration \"5\" (from flag)" },
    { "duration above max", NULL, { "--batch-idle", "1m" }, { NULL }, TLR_E_RANGE,
      "--batch-idle: 1m out of range [1ms, 10s] (from flag)" },
    { "duration bad in file", "\n\nbatch-idle: soon\n", { "--config", "@FILE" },
      { NULL }, TLR_E_PARSE,
      "--batch-idle: invalid duration \"soon\" (from file @FILE:3)" },

    /* list */
    { "list flag trimmed", NULL, { "--zones", " x, y ,,z," }, { NULL }, 0,
      "\"zones\":[\"x\",\"y\",\"z\"]" },
    { "list empty", NULL, { "--zones=" }, { NULL }, 0, "\"zones\":[]" },
    { "list yaml sequence", "zones:\n  - p\n  - q, r\n", { "--config", "@FILE" },
      { NULL }, 0, "\"zones\":[\"p\",\"q, r\"]" },
    { "list yaml flow", "zones: [p, q]\n", { "--config", "@FILE" }, { NULL }, 0,
      "\"zones\":[\"p\",\"q\"]" },
    { "list yaml scalar", "zones: p,q\n", { "--config", "@FILE" }, { NULL }, 0,
      "\"zones\":[\"p\",\"q\"]" },
    { "list env over file", "zones: [p]\n", { "--config", "@FILE" }, { "T_ZONES=e1,e2" },
      0, "\"zones\":[\"e1\",\"e2\"]" },
    { "list of mappings", "zones:\n  - a: 1\n", { "--config", "@FILE" }, { NULL },
      TLR_E_PARSE, "--zones: list items must be plain values (from file @FILE:2)" },
    { "sequence for a scalar", "workers: [1, 2]\n", { "--config", "@FILE" }, { NULL },
      TLR_E_PARSE, "--workers: want a single value, not a list (from file @FILE:1)" },
    { "mapping for a scalar", "name:\n  first: a\n", { "--config", "@FILE" }, { NULL },
      TLR_E_PARSE, "--name: want a value, not a mapping (from file @FILE:2)" },

    /* enum */
    { "enum any case", NULL, { "--log-level", "WARN" }, { NULL }, 0,
      "\"log-level\":\"warn\"" },
    { "enum bad", NULL, { "--log-level", "loud" }, { NULL }, TLR_E_PARSE,
      "--log-level: invalid value \"loud\" (want debug|info|warn|error) (from flag)" },

    /* secret: set, but never shown */
    { "secret from flag", NULL, { "--api-token", "hunter2" }, { NULL }, 0,
      "\"api-token\":\"[redacted]\"" },

    /* command-line errors */
    { "unknown flag", NULL, { "--bogus=1" }, { NULL }, TLR_E_INVAL,
      "unknown flag --bogus" },
    { "unknown short flag", NULL, { "-x" }, { NULL }, TLR_E_INVAL, "unknown flag -x" },
    { "missing value", NULL, { "--workers" }, { NULL }, TLR_E_INVAL,
      "--workers: missing value (from flag)" },
    { "first error reported", NULL, { "--bogus", "--workers" }, { NULL }, TLR_E_INVAL,
      "unknown flag --bogus" },

    /* file errors */
    { "unknown file key", "workers: 2\nbogus: 1\n", { "--config", "@FILE" }, { NULL },
      TLR_E_INVAL, "@FILE:2: unknown setting \"bogus\"" },
    { "malformed yaml", "workers: 2\nname: a\n  bad: indent\n", { "--config", "@FILE" },
      { NULL }, TLR_E_PARSE,
      "@FILE:3:6: mapping values are not allowed in this context" },
    { "malformed json", "{\"workers\": 2,\n \"name\": \"a\"\n", { "--config", "@FILE" },
      { NULL }, TLR_E_PARSE,
      "@FILE:3:1: did not find expected ',' or '}' (while parsing a flow mapping)" },
    { "unclosed flow sequence", "name: leaked?\nzones: [a\n",
      { "--config", "@FILE" }, { NULL }, TLR_E_PARSE,
      "@FILE:3:1: did not find expected ',' or ']' (while parsing a flow sequence)" },
    { "error after strings loaded frees them", "name: x\nzones: [a, b]\nworkers: 0\n",
      { "--config", "@FILE", "--api-token", "t" }, { NULL }, TLR_E_RANGE,
      "--workers: 0 out of range [1, 64] (from file @FILE:3)" },
    { "file not a mapping", "- a\n- b\n", { "--config", "@FILE" }, { NULL }, TLR_E_PARSE,
      "@FILE:1: want a mapping of setting names to values" },
    { "duplicate key", "name: a\nname: b\n", { "--config", "@FILE" }, { NULL },
      TLR_E_INVAL, "@FILE:2: \"name\" is set twice" },
    { "config key in file", "config: /etc/x\n", { "--config", "@FILE" }, { NULL },
      TLR_E_INVAL, "@FILE:1: \"config\" can only be set by flag or environment" },
    { "two documents", "name: a\n---\nname: b\n", { "--config", "@FILE" }, { NULL },
      TLR_E_PARSE, "@FILE:3: only one YAML document is allowed" },
    { "missing file", NULL, { "--config", "/nonexistent/tailor.yaml" }, { NULL },
      TLR_E_IO, "config file \"/nonexistent/tailor.yaml\": No such file or directory "
      "(from flag)" },
    { "missing file from env", NULL, { NULL }, { "T_CONFIG=/nonexistent/t.yaml" },
      TLR_E_IO, "config file \"/nonexistent/t.yaml\": No such file or directory "
      "(from env T_CONFIG)" },
    { "config is a directory", NULL, { "--config=/tmp" }, { NULL }, TLR_E_IO,
      "config file \"/tmp\": Is a directory (from flag)" },
    { "nul byte in value", "name: \"a\\0b\"\n", { "--config", "@FILE" }, { NULL },
      TLR_E_PARSE, "--name: value contains a NUL byte (from file @FILE:1)" },
};

/* s with every "@FILE" replaced by path; owned by the caller. */
static char *subst(const char *s, const char *path)
{
    tlr_buf b;
    tlr_buf_init(&b, 1 << 20);
    const char *at;
    while ((at = strstr(s, "@FILE"))) {
        tlr_buf_add(&b, s, (size_t)(at - s));
        tlr_buf_adds(&b, path);
        s = at + 5;
    }
    tlr_buf_adds(&b, s);
    return tlr_buf_take(&b);
}

/* Write text to a new temp file; its path is copied into path[64]. */
static void write_temp(const char *text, char *path)
{
    strcpy(path, "/tmp/tlr_conf_test_XXXXXX");
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    size_t len = strlen(text);
    assert_int_equal(write(fd, text, len), (ssize_t)len);
    close(fd);
}

static void expect_str(const char *label, const char *got, const char *want)
{
    if (strcmp(got, want)) {
        print_message("[%s]\n  got  %s\n  want %s\n", label, got, want);
        fail();
    }
}

static void expect_contains(const char *label, const char *hay, const char *needle)
{
    if (!strstr(hay, needle)) {
        print_message("[%s]\n  want it to contain: %s\n  got: %s\n", label, needle, hay);
        fail();
    }
}

static char *dump(const tcfg *c)
{
    tlr_buf b;
    tlr_buf_init(&b, 1 << 16);
    assert_int_equal(tlr_conf_dump_json(settings, NSETTINGS, c, &b), TLR_OK);
    return tlr_buf_take(&b);
}

static void test_load_table(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof(load_cases) / sizeof(load_cases[0]); i++) {
        const load_case *lc = &load_cases[i];
        char path[64] = "@FILE";
        char *owned[16];
        size_t nowned = 0;
        char *argv[10] = { "prog" };
        const char *envp[5] = { NULL };
        int argc = 1;

        if (lc->file)
            write_temp(lc->file, path);
        for (size_t j = 0; lc->args[j]; j++)
            argv[argc++] = owned[nowned++] = subst(lc->args[j], path);
        for (size_t j = 0; lc->env[j]; j++)
            envp[j] = owned[nowned++] = subst(lc->env[j], path);

        tcfg c = { 0 };
        tlr_conf_result res;
        int rc = tlr_conf_load(settings, NSETTINGS, &c, argc, argv, envp, &res);
        if (rc != lc->want_rc) {
            print_message("[%s]\n  got  rc %s (%s)\n  want rc %s\n", lc->label,
                          tlr_errname(rc), res.err, tlr_errname(lc->want_rc));
            fail();
        }
        char *want = subst(lc->want ? lc->want : DEFAULT_DUMP, path);
        if (rc == TLR_OK) {
            char *got = dump(&c);
            if (lc->want)
                expect_contains(lc->label, got, want);
            else
                expect_str(lc->label, got, want);
            assert_false(res.help);
            assert_false(res.version);
            free(got);
        } else {
            expect_str(lc->label, res.err, want);
            /* A failed load leaves nothing allocated in cfg. */
            assert_null(c.name);
            assert_null(c.token);
            assert_null(c.config);
            assert_null(c.zones.items);
            assert_null(res.config_path);
        }
        free(want);
        tlr_conf_free(settings, NSETTINGS, &c);
        for (size_t j = 0; j < nowned; j++)
            free(owned[j]);
        if (lc->file)
            unlink(path);
    }
}

/* The fields themselves, not only their JSON, for one load of every type. */
static void test_field_values(void **state)
{
    (void)state;
    char path[64];
    write_temp("name: n\nratio: 0.75\nzones: [z1, z2, z3]\n", path);
    char *argv[] = { "prog", "--config", path, "--workers=12", "--verbose",
                     "--batch-idle", "2s500ms", "--api-token", "tok", "--log-level=error",
                     NULL };
    const char *envp[] = { "T_NAME=from-env", "OTHER=1", NULL };
    tcfg c = { 0 };
    tlr_conf_result res;
    assert_int_equal(tlr_conf_load(settings, NSETTINGS, &c, 10, argv, envp, &res), TLR_OK);
    assert_string_equal(c.config, path);
    assert_string_equal(res.config_path, path);
    assert_string_equal(c.name, "from-env");   /* env beats file */
    assert_int_equal(c.workers, 12);
    assert_true(c.verbose);
    assert_true(c.ratio == 0.75);
    assert_int_equal(c.idle_ms, 2500);
    assert_int_equal(c.zones.n, 3);
    assert_string_equal(c.zones.items[0], "z1");
    assert_string_equal(c.zones.items[2], "z3");
    assert_null(c.zones.items[3]);
    assert_string_equal(c.token, "tok");
    assert_int_equal(c.level, 3);
    assert_int_equal(res.argc, 0);

    /* Loading again into the same struct replaces every value without leaks. */
    char *argv2[] = { "prog", NULL };
    assert_int_equal(tlr_conf_load(settings, NSETTINGS, &c, 1, argv2, NULL, &res), TLR_OK);
    assert_null(c.config);
    assert_null(res.config_path);
    assert_string_equal(c.name, "default-name");
    assert_string_equal(c.token, "s3cr3t-default");
    assert_int_equal(c.zones.n, 2);
    assert_int_equal(c.level, 1);

    tlr_conf_free(settings, NSETTINGS, &c);
    assert_null(c.name);
    assert_null(c.zones.items);
    assert_int_equal(c.zones.n, 0);
    tlr_conf_free(settings, NSETTINGS, &c);   /* twice is fine */
    unlink(path);
}

static void test_positionals(void **state)
{
    (void)state;
    typedef struct {
        const char *label;
        const char *args[8];
        const char *want_pos;    /* positionals joined by spaces */
        const char *want_argv;   /* whole argv after permutation */
        int want_workers;
        bool want_verbose;
    } pos_case;
    static const pos_case cases[] = {
        { "none", { "--workers", "5" }, "", "prog --workers 5", 5, false },
        { "mixed", { "a", "--workers", "5", "b", "-", "--verbose" }, "a b -",
          "prog --workers 5 --verbose a b -", 5, true },
        { "after --", { "x", "--", "--verbose", "--workers" }, "x --verbose --workers",
          "prog -- x --verbose --workers", 4, false },
        { "value that looks like a flag", { "--name", "--verbose", "y" }, "y",
          "prog --name --verbose y", 4, false },
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        const pos_case *pc = &cases[i];
        char *argv[10] = { "prog" };
        int argc = 1;
        for (size_t j = 0; pc->args[j]; j++)
            argv[argc++] = (char *)pc->args[j];
        tcfg c = { 0 };
        tlr_conf_result res;
        assert_int_equal(tlr_conf_load(settings, NSETTINGS, &c, argc, argv, NULL, &res),
                         TLR_OK);
        char pos[128] = "", all[128] = "";
        for (int j = 0; j < res.argc; j++)
            snprintf(pos + strlen(pos), sizeof(pos) - strlen(pos), "%s%s", j ? " " : "",
                     res.argv[j]);
        for (int j = 0; j < argc; j++)
            snprintf(all + strlen(all), sizeof(all) - strlen(all), "%s%s", j ? " " : "",
                     argv[j]);
        expect_str(pc->label, pos, pc->want_pos);
        expect_str(pc->label, all, pc->want_argv);
        assert_int_equal(c.workers, pc->want_workers);
        assert_int_equal(c.verbose, pc->want_verbose);
        tlr_conf_free(settings, NSETTINGS, &c);
    }
}

static void test_help_version_flags(void **state)
{
    (void)state;
    typedef struct {
        const char *label;
        const char *args[4];
        bool help, version;
    } hv_case;
    static const hv_case cases[] = {
        { "--help", { "--help" }, true, false },
        { "-h", { "-h" }, true, false },
        { "--version", { "--version" }, false, true },
        { "help wins over a bad flag", { "--bogus", "--help" }, true, false },
        { "a value is not a flag", { "--name", "--help" }, false, false },
        { "help wins over a bad value", { "--workers=0", "-h" }, true, false },
        { "help after -- is positional", { "--", "--help" }, false, false },
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        const hv_case *hc = &cases[i];
        char *argv[6] = { "prog" };
        int argc = 1;
        for (size_t j = 0; hc->args[j]; j++)
            argv[argc++] = (char *)hc->args[j];
        tcfg c = { 0 };
        tlr_conf_result res;
        int rc = tlr_conf_load(settings, NSETTINGS, &c, argc, argv, NULL, &res);
        if (rc != TLR_OK || res.help != hc->help || res.version != hc->version) {
            print_message("[%s]\n  got  rc=%d help=%d version=%d err=%s\n"
                          "  want rc=0 help=%d version=%d\n", hc->label, rc, res.help,
                          res.version, res.err, hc->help, hc->version);
            fail();
        }
        if (hc->help || hc->version)
            assert_null(c.name);   /* cfg untouched */
        tlr_conf_free(settings, NSETTINGS, &c);
    }
}

static char *help_text(const tlr_setting *table, size_t n)
{
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    assert_non_null(f);
    tlr_conf_help("watcher", "Watches the cluster and batches pending pods.", table, n, f);
    fclose(f);
    /* A copy: gcc 12 -O3 mistakes the stream's buffer for the local
     * variable whose address open_memstream took (-Wdangling-pointer). */
    char *copy = strdup(text);
    free(text);
    return copy;
}

static void test_help_output(void **state)
{
    (void)state;
    char *h = help_text(settings, NSETTINGS);
    static const char *const want[] = {
        "Usage: watcher [OPTIONS]",
        "Watches the cluster and batches pending pods.",
        "--config FILE", "--name STRING", "--workers INT", "--[no-]verbose",
        "--ratio NUMBER", "--batch-idle DURATION", "--zones LIST", "--api-token STRING",
        "--log-level debug|info|warn|error", "-h, --help", "--version",
        "env T_CONFIG", "env T_NAME", "env T_WORKERS", "env T_VERBOSE", "env T_RATIO",
        "env T_BATCH_IDLE", "env T_ZONES", "env T_API_TOKEN", "env T_LOG_LEVEL",
        "default default-name", "default 4)", "default false", "default 0.5",
        "default 1s", "default a,b", "default info",
        "(env T_API_TOKEN, default: none shown)",
    };
    /* Wrapping may break a line anywhere between words: compare with each
     * run of spaces and newlines folded into one space. */
    char *flat = tlr_strdup(h);
    size_t k = 0;
    for (const char *p = h; *p; p++)
        if (!(isspace((unsigned char)*p) && k && flat[k - 1] == ' '))
            flat[k++] = isspace((unsigned char)*p) ? ' ' : *p;
    flat[k] = '\0';
    for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++)
        expect_contains("help", flat, want[i]);
    free(flat);
    if (strstr(h, "s3cr3t-default")) {
        print_message("help shows the secret default:\n%s\n", h);
        fail();
    }
    /* Every line fits in 80 columns, and the long help text was wrapped onto
     * continuation lines aligned with the other help texts. */
    size_t col = strstr(strstr(h, "--name STRING"), "the name") -
                 strstr(h, "  --name STRING");
    int continuation = 0;
    for (const char *line = h; *line;) {
        size_t len = strcspn(line, "\n");
        if (len > 80) {
            print_message("line longer than 80 columns:\n%.*s\n", (int)len, line);
            fail();
        }
        if (len > col && strspn(line, " ") == col)
            continuation++;
        line += len + (line[len] == '\n');
    }
    assert_true(continuation >= 2);
    free(h);

    /* Without a CONFIG setting the built-in --config is listed instead. */
    h = help_text(settings + 1, 2);
    expect_contains("builtin config", h, "--config FILE");
    expect_contains("builtin config", h, "read settings from FILE (YAML or JSON)");
    expect_contains("builtin config", h, "--workers INT");
    free(h);
}

static void test_secret_never_shown(void **state)
{
    (void)state;
    char path[64];
    write_temp("api-token: file-secret\n", path);
    const char *const runs[][4] = {
        { "--api-token", "flag-secret", NULL },
        { "--config", path, NULL },
    };
    const char *const secrets[] = { "flag-secret", "file-secret" };
    for (size_t i = 0; i < 2; i++) {
        char *argv[4] = { "prog", (char *)runs[i][0], (char *)runs[i][1], NULL };
        tcfg c = { 0 };
        tlr_conf_result res;
        assert_int_equal(tlr_conf_load(settings, NSETTINGS, &c, 3, argv, NULL, &res),
                         TLR_OK);
        assert_string_equal(c.token, secrets[i]);
        char *d = dump(&c);
        expect_contains("dump", d, "\"api-token\":\"[redacted]\"");
        if (strstr(d, secrets[i]) || strstr(d, "s3cr3t")) {
            print_message("dump shows a secret: %s\n", d);
            fail();
        }
        free(d);
        tlr_conf_free(settings, NSETTINGS, &c);
    }
    /* Unset is shown as null, so an operator can tell a missing token. */
    static const tlr_setting only_secret[] = {
        { .name = "api-token", .type = TLR_SET_SECRET, .offset = offsetof(tcfg, token),
          .help = "token" },
    };
    tcfg c = { 0 };
    tlr_buf b;
    tlr_buf_init(&b, 256);
    assert_int_equal(tlr_conf_dump_json(only_secret, 1, &c, &b), TLR_OK);
    expect_str("unset secret", tlr_buf_str(&b), "{\"api-token\":null}");
    tlr_buf_free(&b);
    unlink(path);
}

static void test_builtin_config_flag(void **state)
{
    (void)state;
    /* A table without a CONFIG setting still reads --config FILE. */
    char path[64];
    write_temp("workers: 3\n", path);
    const tlr_setting *table = settings + 2;   /* workers .. log-level */
    size_t n = NSETTINGS - 2;
    char *argv[] = { "prog", "--config", path, NULL };
    tcfg c = { 0 };
    tlr_conf_result res;
    assert_int_equal(tlr_conf_load(table, n, &c, 3, argv, NULL, &res), TLR_OK);
    assert_int_equal(c.workers, 3);
    assert_string_equal(res.config_path, path);
    tlr_conf_free(table, n, &c);

    /* ... but its "config" key is not a setting in the file. */
    unlink(path);
    write_temp("config: x\n", path);
    char *argv2[] = { "prog", "--config", path, NULL };
    assert_int_equal(tlr_conf_load(table, n, &c, 3, argv2, NULL, &res), TLR_E_INVAL);
    expect_contains("builtin config key", res.err, "unknown setting \"config\"");
    unlink(path);
}

static void test_dump_json(void **state)
{
    (void)state;
    tcfg c = { 0 };
    c.name = tlr_strdup("q\"uote\n");
    c.workers = -3;
    c.ratio = 0.1;
    c.idle_ms = 3723004;
    c.level = 7;   /* outside the choices: shown as a number, not a crash */
    tlr_buf b;
    tlr_buf_init(&b, 1 << 12);
    tlr_buf_adds(&b, "x=");
    assert_int_equal(tlr_conf_dump_json(settings, NSETTINGS, &c, &b), TLR_OK);
    expect_str("dump", tlr_buf_str(&b),
               "x={\"config\":null,\"name\":\"q\\\"uote\\n\",\"workers\":-3,"
               "\"verbose\":false,\"ratio\":0.1,\"batch-idle\":\"1h2m3.004s\","
               "\"zones\":[],\"api-token\":null,\"log-level\":7}");
    tlr_buf_free(&b);

    /* Past the ceiling: TOOBIG and the buffer is as it was. */
    tlr_buf_init(&b, 20);
    tlr_buf_adds(&b, "keep");
    assert_int_equal(tlr_conf_dump_json(settings, NSETTINGS, &c, &b), TLR_E_TOOBIG);
    expect_str("dump toobig", tlr_buf_str(&b), "keep");
    tlr_buf_free(&b);
    free(c.name);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_load_table),
        cmocka_unit_test(test_field_values),
        cmocka_unit_test(test_positionals),
        cmocka_unit_test(test_help_version_flags),
        cmocka_unit_test(test_help_output),
        cmocka_unit_test(test_secret_never_shown),
        cmocka_unit_test(test_builtin_config_flag),
        cmocka_unit_test(test_dump_json),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
