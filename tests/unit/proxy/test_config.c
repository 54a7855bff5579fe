/*
 * test_config.c - proxy/config: the option table every command parses, black-box through
 * proxy/config.h: each type (string, integer with range, size, duration, Go boolean,
 * repeatable list), the KWP_* environment twins and flags winning over them, the errors a
 * user sees on stderr, and --help on stdout.
 *
 * Each Test runs in its own process (Criterion), so setenv never leaks into another test;
 * the option names (test-*) have twins (KWP_TEST_*) no real environment sets.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include "proxy/config.h"
#include "proxy/proxy.h"

/* ---- fixture ------------------------------------------------------------------------- */

/* Where the options land. */
struct vals {
    const char *str;
    int64_t num;  /* range [-5, 100] */
    int64_t size; /* range [1, 8Mi] */
    int64_t dur;  /* ms; no range */
    bool flag;
    struct config_list list;
};

#define N_OPTS 6

static void opts_init(struct config_opt *o, struct vals *v)
{
    memset(v, 0, sizeof(*v));
    v->str = "default";
    v->num = 7;
    v->size = 1024;
    v->dur = 1000;
    o[0] = (struct config_opt){"test-str", CFG_STR, &v->str, 0, 0, "a string"};
    o[1] = (struct config_opt){"test-num", CFG_INT, &v->num, -5, 100, "a number"};
    o[2] = (struct config_opt){"test-size", CFG_SIZE, &v->size, 1, 8 << 20, "a size"};
    o[3] = (struct config_opt){"test-dur", CFG_DURATION, &v->dur, 0, 0, "a duration"};
    o[4] = (struct config_opt){"test-flag", CFG_BOOL, &v->flag, 0, 0, "a switch"};
    o[5] = (struct config_opt){"test-list", CFG_LIST, &v->list, 0, 0, "a list"};
}

/* What config_parse printed. */
struct out {
    char out[16384];
    char err[4096];
};

/* Reads what was written to <f> since it was created into <buf>. */
static void slurp(FILE *f, char *buf, size_t cap)
{
    size_t n;

    rewind(f);
    n = fread(buf, 1, cap - 1, f);
    buf[n] = '\0';
    fclose(f);
}

/* stdout and stderr redirected to temporary files while a call runs. */
struct capture {
    FILE *fo, *fe;
    int saved_out, saved_err;
};

static void capture_begin(struct capture *c)
{
    c->fo = tmpfile();
    c->fe = tmpfile();
    cr_assert(c->fo != NULL && c->fe != NULL);
    fflush(stdout);
    fflush(stderr);
    c->saved_out = dup(STDOUT_FILENO);
    c->saved_err = dup(STDERR_FILENO);
    cr_assert(c->saved_out >= 0 && c->saved_err >= 0);
    dup2(fileno(c->fo), STDOUT_FILENO);
    dup2(fileno(c->fe), STDERR_FILENO);
}

/* Restores stdout and stderr and copies what was written to them into <o>. */
static void capture_end(struct capture *c, struct out *o)
{
    fflush(stdout);
    fflush(stderr);
    dup2(c->saved_out, STDOUT_FILENO);
    dup2(c->saved_err, STDERR_FILENO);
    close(c->saved_out);
    close(c->saved_err);
    slurp(c->fo, o->out, sizeof(o->out));
    slurp(c->fe, o->err, sizeof(o->err));
}

/* Copies the NULL-terminated <args> into <argv> (capacity 32); returns their count. */
static int argv_of(const char *const *args, char **argv)
{
    int argc = 0;

    while (args[argc] != NULL) {
        cr_assert_lt(argc, 31);
        argv[argc] = (char *)args[argc];
        argc++;
    }
    argv[argc] = NULL;
    return argc;
}

/* Runs config_parse on the NULL-terminated <args> (args[0] is the command name) with the
 * fixture's options, capturing stdout and stderr into <o>. Returns config_parse's result. */
static int parse(struct vals *v, struct out *o, const char *const *args)
{
    struct config_opt opts[N_OPTS];
    char *argv[32];
    int argc = argv_of(args, argv);
    struct capture c;
    int rc;

    opts_init(opts, v);
    capture_begin(&c);
    rc = config_parse(opts, N_OPTS, argc, argv, "kwp test [flags]", "What the test command does.");
    capture_end(&c, o);
    return rc;
}

#define ARGV(...) ((const char *const[]){"test", __VA_ARGS__, NULL})

/* config_parse with one flag; asserts it fails with -EINVAL and <msg> on stderr. */
static void assert_rejected(const char *arg, const char *msg)
{
    struct vals v;
    struct out o;

    cr_assert_eq(parse(&v, &o, ARGV(arg)), -EINVAL, "%s accepted", arg);
    cr_assert(strstr(o.err, msg) != NULL, "%s: stderr \"%s\" lacks \"%s\"", arg, o.err, msg);
    config_list_free(&v.list);
}

/* ---- defaults, flags, environment ----------------------------------------------------- */

Test(config, no_flags_keep_the_defaults)
{
    struct vals v;
    struct out o;

    cr_assert_eq(parse(&v, &o, ((const char *const[]){"test", NULL})), 0);
    cr_assert_str_eq(v.str, "default");
    cr_assert_eq(v.num, 7);
    cr_assert_eq(v.size, 1024);
    cr_assert_eq(v.dur, 1000);
    cr_assert_not(v.flag);
    cr_assert_eq(v.list.len, 0);
    cr_assert_str_empty(o.out);
    cr_assert_str_empty(o.err);
}

Test(config, flag_values_with_equals_or_as_the_next_argument)
{
    struct vals v;
    struct out o;

    cr_assert_eq(parse(&v, &o,
                       ARGV("--test-str=a=b", "--test-num", "-5", "--test-size", "32Ki",
                            "--test-dur=250ms", "--test-flag")),
                 0, "%s", o.err);
    cr_assert_str_eq(v.str, "a=b"); /* split at the first '=' only */
    cr_assert_eq(v.num, -5);
    cr_assert_eq(v.size, 32 * 1024);
    cr_assert_eq(v.dur, 250);
    cr_assert(v.flag);
    cr_assert_str_empty(o.err);
}

Test(config, an_empty_value_is_a_value)
{
    struct vals v;
    struct out o;

    cr_assert_eq(parse(&v, &o, ARGV("--test-str=")), 0);
    cr_assert_str_eq(v.str, "");
    cr_assert_eq(parse(&v, &o, ARGV("--test-str", "")), 0);
    cr_assert_str_eq(v.str, "");
}

Test(config, the_last_flag_wins)
{
    struct vals v;
    struct out o;

    cr_assert_eq(
        parse(&v, &o, ARGV("--test-num=1", "--test-num=2", "--test-str", "x", "--test-str=y")), 0);
    cr_assert_eq(v.num, 2);
    cr_assert_str_eq(v.str, "y");
}

Test(config, every_flag_has_a_kwp_environment_twin)
{
    struct vals v;
    struct out o;

    setenv("KWP_TEST_STR", "from-env", 1);
    setenv("KWP_TEST_NUM", "42", 1);
    setenv("KWP_TEST_SIZE", "3Mi", 1);
    setenv("KWP_TEST_DUR", "5m", 1);
    setenv("KWP_TEST_FLAG", "true", 1);
    setenv("KWP_TEST_LIST", "a,b", 1);
    cr_assert_eq(parse(&v, &o, ((const char *const[]){"test", NULL})), 0, "%s", o.err);
    cr_assert_str_eq(v.str, "from-env");
    cr_assert_eq(v.num, 42);
    cr_assert_eq(v.size, 3 * 1024 * 1024);
    cr_assert_eq(v.dur, 5 * 60 * 1000);
    cr_assert(v.flag);
    cr_assert_eq(v.list.len, 2);
    cr_assert_str_eq(v.list.items[0], "a");
    cr_assert_str_eq(v.list.items[1], "b");
    config_list_free(&v.list);
}

Test(config, flags_win_over_the_environment)
{
    struct vals v;
    struct out o;

    setenv("KWP_TEST_STR", "from-env", 1);
    setenv("KWP_TEST_NUM", "42", 1);
    setenv("KWP_TEST_SIZE", "3Mi", 1);
    setenv("KWP_TEST_DUR", "5m", 1);
    setenv("KWP_TEST_FLAG", "true", 1);
    cr_assert_eq(parse(&v, &o,
                       ARGV("--test-str", "from-flag", "--test-num=1", "--test-size=2Ki",
                            "--test-dur", "10s", "--test-flag=false")),
                 0, "%s", o.err);
    cr_assert_str_eq(v.str, "from-flag");
    cr_assert_eq(v.num, 1);
    cr_assert_eq(v.size, 2048);
    cr_assert_eq(v.dur, 10000);
    cr_assert_not(v.flag);
}

Test(config, an_empty_environment_variable_is_ignored)
{
    struct vals v;
    struct out o;

    setenv("KWP_TEST_NUM", "", 1);
    setenv("KWP_TEST_STR", "", 1);
    cr_assert_eq(parse(&v, &o, ((const char *const[]){"test", NULL})), 0);
    cr_assert_eq(v.num, 7);
    cr_assert_str_eq(v.str, "default");
}

Test(config, a_bad_environment_value_is_an_error_naming_the_variable)
{
    struct vals v;
    struct out o;

    setenv("KWP_TEST_DUR", "soon", 1);
    /* even when a flag would replace it: the environment is read first */
    cr_assert_eq(parse(&v, &o, ARGV("--test-dur=1s")), -EINVAL);
    cr_assert(strstr(o.err, "KWP_TEST_DUR: invalid duration test-dur=soon") != NULL, "%s", o.err);
}

/* ---- integers ------------------------------------------------------------------------ */

Test(config, integers_are_decimal_and_checked_against_the_range)
{
    struct vals v;
    struct out o;

    cr_assert_eq(parse(&v, &o, ARGV("--test-num=100")), 0);
    cr_assert_eq(v.num, 100);
    assert_rejected("--test-num=101", "test: test-num=101 out of range [-5, 100]");
    assert_rejected("--test-num=-6", "out of range [-5, 100]");
    assert_rejected("--test-num=12x", "test: invalid integer test-num=12x");
    assert_rejected("--test-num=", "invalid integer test-num=");
    assert_rejected("--test-num=0x10", "invalid integer");
    assert_rejected("--test-num=1.5", "invalid integer");
    assert_rejected("--test-num=99999999999999999999", "invalid integer");
}

/* ---- sizes ----------------------------------------------------------------------------- */

Test(config, sizes_take_binary_suffixes)
{
    static const struct {
        const char *in;
        int64_t want;
    } cases[] = {
        {"4096", 4096},  {"32Ki", 32 << 10}, {"32K", 32 << 10}, {"3Mi", 3 << 20},
        {"3M", 3 << 20}, {"8Mi", 8 << 20},   {"1", 1},
    };

    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct vals v;
        struct out o;
        char arg[64];

        snprintf(arg, sizeof(arg), "--test-size=%s", cases[i].in);
        cr_assert_eq(parse(&v, &o, ARGV(arg)), 0, "%s: %s", arg, o.err);
        cr_assert_eq(v.size, cases[i].want, "%s gave %lld", arg, (long long)v.size);
    }
}

Test(config, gibibytes_parse_when_the_range_allows_them)
{
    struct vals v;
    struct out o;

    /* the fixture caps sizes at 8Mi: 1Gi parses (no "invalid size") but is out of range */
    assert_rejected("--test-size=1Gi", "test-size=1Gi out of range [1, 8388608]");
    cr_assert_eq(parse(&v, &o, ARGV("--test-size=1G")), -EINVAL);
    cr_assert(strstr(o.err, "out of range") != NULL, "%s", o.err);
}

Test(config, bad_sizes_are_rejected_with_a_hint)
{
    static const char *const bad[] = {"",
                                      "Ki",
                                      "-1",
                                      "3.5Mi",
                                      "3Ti",
                                      "3mi",
                                      "3ki",
                                      "3 Mi",
                                      "3KiB",
                                      "0x10",
                                      "9223372036854775807Ki",
                                      "99999999999999999999"};

    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        char arg[64];

        snprintf(arg, sizeof(arg), "--test-size=%s", bad[i]);
        assert_rejected(arg, "(use e.g. 4096, 64Ki, 8Mi)");
    }
    assert_rejected("--test-size=0", "test-size=0 out of range [1, 8388608]");
    assert_rejected("--test-size=9Mi", "out of range");
}

/* ---- durations ------------------------------------------------------------------------- */

Test(config, durations_in_go_syntax_and_bare_seconds)
{
    static const struct {
        const char *in;
        int64_t ms;
    } cases[] = {
        {"250ms", 250},   {"10s", 10000}, {"5m", 300000}, {"1h", 3600000},   {"1h30m", 5400000},
        {"1m30s", 90000}, {"1.5s", 1500}, {".5s", 500},   {"2s500ms", 2500}, {"0", 0},
        {"0s", 0},        {"3", 3000},    {"0.25", 250},  {"90", 90000},
    };

    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        int64_t ms = -1;
        struct vals v;
        struct out o;
        char arg[64];

        cr_assert_eq(config_parse_duration(cases[i].in, &ms), 0, "%s", cases[i].in);
        cr_assert_eq(ms, cases[i].ms, "%s gave %lld", cases[i].in, (long long)ms);
        snprintf(arg, sizeof(arg), "--test-dur=%s", cases[i].in);
        cr_assert_eq(parse(&v, &o, ARGV(arg)), 0, "%s: %s", arg, o.err);
        cr_assert_eq(v.dur, cases[i].ms, "%s", arg);
    }
}

Test(config, bad_durations_are_rejected)
{
    static const char *const bad[] = {
        "",    "s",      "ms",    "5x", "5S",  "10sec", "-1s",  "-5",    "5 s",
        " 5s", "1.2.3s", "5m-1s", "1d", "inf", "nan",   "-inf", "1e400", "9999999999999999999h"};

    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        int64_t ms = 12345;
        char arg[64];

        cr_assert_eq(config_parse_duration(bad[i], &ms), -EINVAL, "\"%s\" accepted as %lld", bad[i],
                     (long long)ms);
        cr_assert_eq(ms, 12345, "\"%s\" wrote the output", bad[i]);
        snprintf(arg, sizeof(arg), "--test-dur=%s", bad[i]);
        assert_rejected(arg, "(use e.g. 250ms, 3s, 5m)");
    }
    cr_assert_eq(config_parse_duration(NULL, &(int64_t){0}), -EINVAL);
}

/* ---- booleans -------------------------------------------------------------------------- */

Test(config, booleans_are_go_parsebool)
{
    static const char *const yes[] = {"1", "t", "T", "TRUE", "true", "True"};
    static const char *const no[] = {"0", "f", "F", "FALSE", "false", "False"};

    for (size_t i = 0; i < sizeof(yes) / sizeof(yes[0]); i++) {
        struct vals v;
        struct out o;
        char arg[64];

        snprintf(arg, sizeof(arg), "--test-flag=%s", yes[i]);
        cr_assert_eq(parse(&v, &o, ARGV(arg)), 0, "%s", arg);
        cr_assert(v.flag, "%s", arg);
        setenv("KWP_TEST_FLAG", "true", 1);
        snprintf(arg, sizeof(arg), "--test-flag=%s", no[i]);
        cr_assert_eq(parse(&v, &o, ARGV(arg)), 0, "%s", arg);
        cr_assert_not(v.flag, "%s", arg);
        setenv("KWP_TEST_FLAG", no[i], 1);
        cr_assert_eq(parse(&v, &o, ((const char *const[]){"test", NULL})), 0);
        cr_assert_not(v.flag, "KWP_TEST_FLAG=%s", no[i]);
        setenv("KWP_TEST_FLAG", yes[i], 1);
        cr_assert_eq(parse(&v, &o, ((const char *const[]){"test", NULL})), 0);
        cr_assert(v.flag, "KWP_TEST_FLAG=%s", yes[i]);
        unsetenv("KWP_TEST_FLAG");
    }
}

Test(config, other_boolean_spellings_are_rejected)
{
    static const char *const bad[] = {"", "yes", "no", "on", "off", "tRUE", "FaLsE", "2", "y"};

    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        char arg[64];
        char msg[64];

        snprintf(arg, sizeof(arg), "--test-flag=%s", bad[i]);
        snprintf(msg, sizeof(msg), "test: invalid boolean test-flag=%s\n", bad[i]);
        assert_rejected(arg, msg);
    }
}

Test(config, a_bare_boolean_flag_does_not_take_the_next_argument)
{
    struct vals v;
    struct out o;

    /* "--test-flag false" is the flag, then a stray argument (as Go's flag package has it) */
    cr_assert_eq(parse(&v, &o, ARGV("--test-flag", "false")), -EINVAL);
    cr_assert(strstr(o.err, "test: unexpected argument false (see --help)") != NULL, "%s", o.err);
    cr_assert_eq(parse(&v, &o, ARGV("--test-flag", "--test-num=3")), 0);
    cr_assert(v.flag);
    cr_assert_eq(v.num, 3);
}

/* ---- lists ----------------------------------------------------------------------------- */

Test(config, lists_repeat_split_on_commas_and_add_to_the_environment)
{
    struct vals v;
    struct out o;

    setenv("KWP_TEST_LIST", "e1,,e2", 1);
    cr_assert_eq(parse(&v, &o, ARGV("--test-list", "a,b", "--test-list=,c,", "--test-list=")), 0);
    cr_assert_eq(v.list.len, 5);
    cr_assert_str_eq(v.list.items[0], "e1");
    cr_assert_str_eq(v.list.items[1], "e2");
    cr_assert_str_eq(v.list.items[2], "a");
    cr_assert_str_eq(v.list.items[3], "b");
    cr_assert_str_eq(v.list.items[4], "c");
    config_list_free(&v.list);
    cr_assert_eq(v.list.len, 0);
    cr_assert_null(v.list.items);
    config_list_free(&v.list); /* twice is harmless */
}

/* ---- mistakes ----------------------------------------------------------------------------- */

Test(config, unknown_flags_and_stray_arguments_are_errors)
{
    assert_rejected("--nope", "test: unknown flag --nope (see --help)");
    assert_rejected("--nope=1", "test: unknown flag --nope (see --help)");
    /* names match whole: neither a prefix nor a longer name is the flag */
    assert_rejected("--test-nu=1", "unknown flag --test-nu ");
    assert_rejected("--test-numb=1", "unknown flag --test-numb ");
    assert_rejected("-test-num=1", "test: unexpected argument -test-num=1 (see --help)");
    assert_rejected("stray", "test: unexpected argument stray (see --help)");
    assert_rejected("--", "test: unknown flag -- (see --help)");
}

Test(config, a_flag_at_the_end_without_its_value_is_an_error)
{
    assert_rejected("--test-num", "test: flag --test-num needs a value\n");
    assert_rejected("--test-str", "flag --test-str needs a value");
    assert_rejected("--test-list", "flag --test-list needs a value");
}

/* ---- --help ----------------------------------------------------------------------------- */

Test(config, help_prints_every_flag_with_its_twin_and_returns_1)
{
    static const char *const want = "usage: kwp test [flags]\n"
                                    "\n"
                                    "What the test command does.\n"
                                    "\n"
                                    "flags (each has an environment twin):\n"
                                    "  --test-str STR\n      a string  [KWP_TEST_STR]\n"
                                    "  --test-num N\n      a number  [KWP_TEST_NUM]\n"
                                    "  --test-size BYTES\n      a size  [KWP_TEST_SIZE]\n"
                                    "  --test-dur DURATION\n      a duration  [KWP_TEST_DUR]\n"
                                    "  --test-flag[=BOOL]\n      a switch  [KWP_TEST_FLAG]\n"
                                    "  --test-list STR\n      a list  [KWP_TEST_LIST]\n";
    struct vals v;
    struct out o;

    cr_assert_eq(parse(&v, &o, ARGV("--help")), 1);
    cr_assert_str_eq(o.out, want);
    cr_assert_str_empty(o.err);
    cr_assert_eq(parse(&v, &o, ARGV("-h")), 1);
    cr_assert_str_eq(o.out, want);
    /* --help wins over what comes after it, and stops before a bad flag */
    cr_assert_eq(parse(&v, &o, ARGV("--test-num=3", "--help", "--nope")), 1);
    cr_assert_str_empty(o.err);
}

/* ---- the proxy's own flags (proxy_main parses them with this table) ----------------------- */

/* Runs proxy_main as `kwp proxy` on <args> (only flag errors and --help: it never serves
 * here), capturing its output into <o>. Returns its exit code. */
static int proxy_flags(struct out *o, const char *const *args)
{
    const struct proxy_cmd cmd = {.usage = "kwp proxy [flags]", .description = "The proxy."};
    char *argv[32];
    int argc = argv_of(args, argv);
    struct capture c;
    int rc;

    capture_begin(&c);
    rc = proxy_main(argc, argv, &cmd);
    capture_end(&c, o);
    return rc;
}

Test(config, proxy_shutdown_delay_is_a_duration_with_a_twin_default_5s)
{
    struct out o;

    cr_assert_eq(proxy_flags(&o, ARGV("--help")), 0);
    cr_assert(strstr(o.out, "  --shutdown-delay DURATION\n") != NULL, "help: %s", o.out);
    cr_assert(strstr(o.out, "(default 5s; kwp demo: 0)  [KWP_SHUTDOWN_DELAY]\n") != NULL,
              "help: %s", o.out);
    /* 0 is allowed (parsed before --help stops the parse) */
    cr_assert_eq(proxy_flags(&o, ARGV("--shutdown-delay", "0", "--help")), 0, "%s", o.err);
    cr_assert_eq(proxy_flags(&o, ARGV("--shutdown-delay=1500ms", "--help")), 0, "%s", o.err);
    cr_assert_eq(proxy_flags(&o, ARGV("--shutdown-delay=-1s")), 2);
    cr_assert(strstr(o.err, "invalid duration shutdown-delay=-1s") != NULL, "%s", o.err);
    cr_assert_eq(proxy_flags(&o, ARGV("--shutdown-delay=2h")), 2);
    cr_assert(strstr(o.err, "shutdown-delay") != NULL, "%s", o.err);
    cr_assert_eq(setenv("KWP_SHUTDOWN_DELAY", "soon", 1), 0);
    cr_assert_eq(proxy_flags(&o, ARGV("--help")), 2);
    cr_assert(strstr(o.err, "KWP_SHUTDOWN_DELAY") != NULL, "%s", o.err);
    cr_assert_eq(setenv("KWP_SHUTDOWN_DELAY", "0s", 1), 0);
    cr_assert_eq(proxy_flags(&o, ARGV("--help")), 0, "%s", o.err);
}
