/*
 * printers.c - kube-apiserver 1.34's Table printers (see printers.h).
 *
 * Each printer mirrors its Go function in pkg/printers/internalversion/printers.go, reading
 * the v1 JSON through small accessors that answer the zero value for anything absent or of
 * the wrong type (what Go's decoder leaves in a struct). Column descriptions are the Go
 * strings the apiserver embeds (metav1.ObjectMeta{}.SwaggerDoc()["name"], ...), kept here
 * unescaped and JSON-encoded once, with gotext_json_quote, into each printer's column array.
 *
 * Cells are written as Go encodes []interface{}: strings quoted HTML-safe ("<none>" is
 * "\u003cnone\u003e" on the wire), int64 cells as bare numbers.
 */
#include "proxy/printers.h"

#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cJSON.h>

#include "cache/bug.h"
#include "cache/gotext.h"
#include "cache/sbuf.h"

/* ---- output ---------------------------------------------------------------------------- */

/* Appends <s> as a Go-encoded JSON string. */
static void pb_quote(struct sbuf *b, const char *s)
{
    gotext_json_quote(b, s, strlen(s));
}

/* The cells of one row: "cells":[ then one value per cell_* call; printers_cells_new
 * closes the array and appends <conditions> (printPod's, for finished pods). */
struct row {
    struct sbuf b;
    int n;
    const char *conditions; /* ,"conditions":[...] or NULL */
};

static void cell_sep(struct row *r)
{
    sbuf_str(&r->b, r->n++ > 0 ? "," : "\"cells\":[");
}

static void cell_str(struct row *r, const char *s)
{
    cell_sep(r);
    pb_quote(&r->b, s);
}

static void cell_int(struct row *r, long long v)
{
    char num[24];

    cell_sep(r);
    snprintf(num, sizeof(num), "%lld", v);
    sbuf_str(&r->b, num);
}

/* ---- time ------------------------------------------------------------------------------- */

#define NS_PER_S 1000000000LL
#define GO_ZERO_UNIX (-62135596800LL) /* 0001-01-01T00:00:00Z, Go's zero time.Time */

/* A metav1.Time/MicroTime: unix seconds and nanoseconds; !set is Go's zero time. */
struct ktime {
    int64_t sec;
    int64_t nsec;
    bool set;
};

/* days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's algorithm). */
static int64_t days_from_civil(int64_t y, int m, int d)
{
    int64_t era, yoe, doy, doe;

    y -= m <= 2;
    era = (y >= 0 ? y : y - 399) / 400;
    yoe = y - era * 400;
    doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
    doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    return era * 146097 + doe - 719468;
}

/* The inverse: year, month, day of <z> days since 1970-01-01. */
static void civil_from_days(int64_t z, int64_t *y, int *m, int *d)
{
    int64_t era, doe, yoe, doy, mp;

    z += 719468;
    era = (z >= 0 ? z : z - 146096) / 146097;
    doe = z - era * 146097;
    yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
    doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    mp = (5 * doy + 2) / 153;
    *d = (int)(doy - (153 * mp + 2) / 5 + 1);
    *m = (int)(mp < 10 ? mp + 3 : mp - 9);
    *y = yoe + era * 400 + (*m <= 2);
}

static bool digits(const char *s, int n, int *out)
{
    int v = 0;

    for (int i = 0; i < n; i++) {
        if (s[i] < '0' || s[i] > '9') {
            return false;
        }
        v = v * 10 + (s[i] - '0');
    }
    *out = v;
    return true;
}

static int days_in_month(int y, int m)
{
    static const int dim[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    bool leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;

    return m == 2 && leap ? 29 : dim[m - 1];
}

/*
 * Go's time.Parse(time.RFC3339, s), which metav1.Time's UnmarshalJSON runs: fixed fields,
 * an optional fraction after the seconds, then "Z" or a +hh:mm / -hh:mm offset.
 */
static bool parse_rfc3339(const char *s, struct ktime *t)
{
    int y, mo, d, h, mi, se, oh = 0, om = 0;
    int64_t frac = 0, scale = NS_PER_S;
    size_t i = 19, n = strlen(s);

    if (n < 20 || s[4] != '-' || s[7] != '-' || s[10] != 'T' || s[13] != ':' || s[16] != ':' ||
        !digits(s, 4, &y) || !digits(s + 5, 2, &mo) || !digits(s + 8, 2, &d) ||
        !digits(s + 11, 2, &h) || !digits(s + 14, 2, &mi) || !digits(s + 17, 2, &se) || mo < 1 ||
        mo > 12 || d < 1 || d > days_in_month(y, mo) || h > 23 || mi > 59 || se > 59) {
        return false;
    }
    if (s[i] == '.' || s[i] == ',') {
        size_t start = ++i;
        for (; i < n && s[i] >= '0' && s[i] <= '9'; i++) {
            if (scale > 1) {
                scale /= 10;
                frac += (s[i] - '0') * scale;
            }
        }
        if (i == start) {
            return false;
        }
    }
    if (i + 1 == n && s[i] == 'Z') {
        /* UTC */
    } else if (i + 6 == n && (s[i] == '+' || s[i] == '-') && s[i + 3] == ':' &&
               digits(s + i + 1, 2, &oh) && digits(s + i + 4, 2, &om) && oh < 24 && om < 60) {
        if (s[i] == '-') {
            oh = -oh;
            om = -om;
        }
    } else {
        return false;
    }
    t->sec = days_from_civil(y, mo, d) * 86400 + h * 3600 + mi * 60 + se - oh * 3600 - om * 60;
    t->nsec = frac;
    t->set = !(t->sec == GO_ZERO_UNIX && t->nsec == 0);
    return true;
}

/* A metav1.Time from JSON: null, absent or unparsable read as the zero time. */
static struct ktime jtime(const cJSON *v)
{
    struct ktime t = {0, 0, false};

    if (!cJSON_IsString(v) || !parse_rfc3339(v->valuestring, &t)) {
        t.set = false;
    }
    return t;
}

static struct ktime ktime_of_ns(int64_t ns)
{
    struct ktime t = {ns / NS_PER_S, ns % NS_PER_S, true};

    if (t.nsec < 0) {
        t.sec--;
        t.nsec += NS_PER_S;
    }
    return t;
}

/* a.Sub(b) as a time.Duration in ns, saturated at the int64 bounds as Go saturates it. */
static int64_t ktime_sub(struct ktime a, struct ktime b)
{
    const int64_t lim = INT64_MAX / NS_PER_S - 1;
    int64_t ds = a.sec - b.sec;

    if (ds > lim) {
        return INT64_MAX;
    }
    if (ds < -lim) {
        return INT64_MIN;
    }
    return ds * NS_PER_S + (a.nsec - b.nsec);
}

/* "<a><ua>", then "<b><ub>" unless b is 0: the two-unit forms HumanDuration prints. */
static void two_units(char *out, size_t cap, long long a, const char *ua, long long b,
                      const char *ub)
{
    if (b == 0) {
        snprintf(out, cap, "%lld%s", a, ua);
    } else {
        snprintf(out, cap, "%lld%s%lld%s", a, ua, b, ub);
    }
}

/* k8s.io/apimachinery/pkg/util/duration.HumanDuration. */
static void human_duration(int64_t d, char *out, size_t cap)
{
    const int64_t min_ns = 60 * NS_PER_S, hour_ns = 60 * min_ns;
    long long seconds = d / NS_PER_S, minutes = d / min_ns, hours = d / hour_ns;
    long long days = hours / 24, years = days / 365;

    if (seconds < -1) {
        snprintf(out, cap, "<invalid>");
    } else if (seconds < 0) {
        snprintf(out, cap, "0s");
    } else if (seconds < 120) {
        two_units(out, cap, seconds, "s", 0, "");
    } else if (minutes < 10) {
        two_units(out, cap, minutes, "m", seconds % 60, "s");
    } else if (minutes < 180) {
        two_units(out, cap, minutes, "m", 0, "");
    } else if (hours < 8) {
        two_units(out, cap, hours, "h", minutes % 60, "m");
    } else if (hours < 48) {
        two_units(out, cap, hours, "h", 0, "");
    } else if (hours < 24 * 8) {
        two_units(out, cap, days, "d", hours % 24, "h");
    } else if (hours < 24 * 365 * 2) {
        two_units(out, cap, days, "d", 0, "");
    } else if (hours < 24 * 365 * 8) {
        two_units(out, cap, years, "y", days % 365, "d");
    } else {
        two_units(out, cap, years, "y", 0, "");
    }
}

/* printers.go translateTimestampSince (and translateMicroTimestampSince). */
static void since(struct ktime t, struct ktime now, char *out, size_t cap)
{
    if (!t.set) {
        snprintf(out, cap, "<unknown>");
    } else {
        human_duration(ktime_sub(now, t), out, cap);
    }
}

/* ---- JSON accessors: Go's zero value for anything absent or mistyped --------------------- */

static const cJSON *jobj(const cJSON *o, const char *key)
{
    return cJSON_GetObjectItemCaseSensitive(o, key);
}

static const char *jstr(const cJSON *o, const char *key)
{
    const cJSON *v = jobj(o, key);
    return cJSON_IsString(v) ? v->valuestring : "";
}

/* An int32 field, or <def> when null, absent or not a number (*int32 fields that v1
 * defaulting fills in). Out-of-range numbers, which Go's decoder would refuse, clamp. */
static long long jint_or(const cJSON *o, const char *key, long long def)
{
    const cJSON *v = jobj(o, key);

    if (!cJSON_IsNumber(v)) {
        return def;
    }
    if (v->valuedouble >= 2147483647.0) {
        return 2147483647LL;
    }
    return v->valuedouble <= -2147483648.0 ? -2147483648LL : (long long)v->valuedouble;
}

static long long jint(const cJSON *o, const char *key)
{
    return jint_or(o, key, 0);
}

static bool jtrue(const cJSON *o, const char *key)
{
    return cJSON_IsTrue(jobj(o, key));
}

static bool jset(const cJSON *o, const char *key)
{
    const cJSON *v = jobj(o, key);
    return v != NULL && !cJSON_IsNull(v);
}

/* len() of a JSON map or slice (null and absent are empty). */
static int jlen(const cJSON *o, const char *key)
{
    const cJSON *v = jobj(o, key);
    return cJSON_IsObject(v) || cJSON_IsArray(v) ? cJSON_GetArraySize(v) : 0;
}

/* <v> when it is an object (an array), else NULL: what cJSON_ArrayForEach may walk. */
static const cJSON *obj_or_null(const cJSON *v)
{
    return cJSON_IsObject(v) ? v : NULL;
}

static const cJSON *arr_or_null(const cJSON *v)
{
    return cJSON_IsArray(v) ? v : NULL;
}

static const cJSON *meta_of(const cJSON *obj)
{
    return jobj(obj, "metadata");
}

/* The NAME and AGE cells (metadata.name, translateTimestampSince(creationTimestamp)). */
static void cell_name(struct row *r, const cJSON *obj)
{
    cell_str(r, jstr(meta_of(obj), "name"));
}

static void cell_age(struct row *r, const cJSON *obj, struct ktime now)
{
    char age[32];

    since(jtime(jobj(meta_of(obj), "creationTimestamp")), now, age, sizeof(age));
    cell_str(r, age);
}

/* ---- string lists: sorted, joined -------------------------------------------------------- */

/* A list of heap strings, sorted and joined as Go's sort.Strings + strings.Join do. */
struct strlist {
    char **v;
    size_t n;
    size_t cap;
};

static void sl_add(struct strlist *l, char *s)
{
    if (l->n == l->cap) {
        l->cap = l->cap ? l->cap * 2 : 8;
        l->v = xrealloc(l->v, l->cap * sizeof(*l->v));
    }
    l->v[l->n++] = s;
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static void sl_sort(struct strlist *l)
{
    if (l->n > 1) {
        qsort(l->v, l->n, sizeof(*l->v), cmp_str);
    }
}

/* Drops adjacent duplicates of a sorted list (sets.String). */
static void sl_uniq(struct strlist *l)
{
    size_t w = 0;

    for (size_t i = 0; i < l->n; i++) {
        if (w > 0 && strcmp(l->v[w - 1], l->v[i]) == 0) {
            free(l->v[i]);
            continue;
        }
        l->v[w++] = l->v[i];
    }
    l->n = w;
}

static void sl_join(const struct strlist *l, const char *sep, struct sbuf *out)
{
    for (size_t i = 0; i < l->n; i++) {
        if (i > 0) {
            sbuf_str(out, sep);
        }
        sbuf_str(out, l->v[i]);
    }
    if (!out->p) {
        sbuf_put(out, "", 0);
    }
}

static void sl_free(struct strlist *l)
{
    for (size_t i = 0; i < l->n; i++) {
        free(l->v[i]);
    }
    free(l->v);
    memset(l, 0, sizeof(*l));
}

static char *concat3(const char *a, const char *b, const char *c)
{
    size_t la = strlen(a), lb = strlen(b), lc = strlen(c);
    char *s = xmalloc(la + lb + lc + 1);

    memcpy(s, a, la);
    memcpy(s + la, b, lb);
    memcpy(s + la + lb, c, lc + 1);
    return s;
}

/* labels.FormatLabels: the map as sorted "k=v" joined with ",", or "<none>". */
static void format_labels(const cJSON *map, struct sbuf *out)
{
    struct strlist l = {0};
    const cJSON *e;

    cJSON_ArrayForEach(e, obj_or_null(map))
    {
        sl_add(&l, concat3(e->string, "=", cJSON_IsString(e) ? e->valuestring : ""));
    }
    sl_sort(&l);
    sl_join(&l, ",", out);
    if (l.n == 0) {
        out->len = 0;
        sbuf_str(out, "<none>");
    }
    sl_free(&l);
}

/* One requirement of a label selector, rendered as labels.Requirement.String. */
struct req {
    const char *key;
    char *text;
};

/* labels.Requirement.String for a LabelSelectorRequirement; -EINVAL when NewRequirement
 * would refuse it (unknown operator, values where none belong or none where some must). */
static int requirement_text(const cJSON *expr, struct req *out)
{
    const char *key = jstr(expr, "key"), *op = jstr(expr, "operator");
    const cJSON *vals = jobj(expr, "values"), *v;
    struct strlist l = {0};
    struct sbuf b = {0};
    bool set_op = strcmp(op, "In") == 0 || strcmp(op, "NotIn") == 0;

    if (!set_op && strcmp(op, "Exists") != 0 && strcmp(op, "DoesNotExist") != 0) {
        return -EINVAL;
    }
    cJSON_ArrayForEach(v, arr_or_null(vals))
    {
        sl_add(&l, xstrdup(cJSON_IsString(v) ? v->valuestring : ""));
    }
    if (set_op != (l.n > 0)) {
        sl_free(&l);
        return -EINVAL;
    }
    if (strcmp(op, "DoesNotExist") == 0) {
        sbuf_str(&b, "!");
    }
    sbuf_str(&b, key);
    if (set_op) {
        sbuf_str(&b, op[0] == 'I' ? " in (" : " notin (");
        sl_sort(&l); /* safeSort: values print sorted */
        sl_join(&l, ",", &b);
        sbuf_str(&b, ")");
    }
    sl_free(&l);
    out->key = key;
    out->text = b.p;
    return 0;
}

/*
 * metav1.LabelSelectorAsSelector(sel).String(): "" for a nil or empty selector, else the
 * requirements (matchLabels as key=value, then matchExpressions) sorted by key, stably, and
 * joined with ",". Returns 0, or -EINVAL when the conversion fails.
 */
static int selector_string(const cJSON *sel, struct sbuf *out)
{
    const cJSON *ml = jobj(sel, "matchLabels"), *me = jobj(sel, "matchExpressions"), *e;
    struct req *reqs;
    size_t n = 0, cap = (size_t)jlen(sel, "matchLabels") + (size_t)jlen(sel, "matchExpressions");
    int rc = 0;

    sbuf_put(out, "", 0);
    if (cap == 0) {
        return 0;
    }
    reqs = xcalloc(cap, sizeof(*reqs));
    cJSON_ArrayForEach(e, obj_or_null(ml))
    {
        reqs[n].key = e->string;
        reqs[n++].text = concat3(e->string, "=", cJSON_IsString(e) ? e->valuestring : "");
    }
    cJSON_ArrayForEach(e, arr_or_null(me))
    {
        if (rc == 0) {
            rc = requirement_text(e, &reqs[n]);
            n += rc == 0;
        }
    }
    for (size_t i = 1; i < n; i++) { /* sort.Sort(ByKey): insertion sort at these sizes */
        for (size_t j = i; j > 0 && strcmp(reqs[j].key, reqs[j - 1].key) < 0; j--) {
            struct req t = reqs[j];
            reqs[j] = reqs[j - 1];
            reqs[j - 1] = t;
        }
    }
    for (size_t i = 0; i < n; i++) {
        if (rc == 0) {
            sbuf_str(out, i > 0 ? "," : "");
            sbuf_str(out, reqs[i].text);
        }
        free(reqs[i].text);
    }
    free(reqs);
    return rc;
}

/* metav1.FormatLabelSelector: "<error>" when it does not convert, "<none>" when empty. */
static void format_label_selector(const cJSON *sel, struct sbuf *out)
{
    if (selector_string(sel, out) != 0) {
        out->len = 0;
        sbuf_str(out, "<error>");
    } else if (out->len == 0) {
        sbuf_str(out, "<none>");
    }
}

/* layoutContainerCells: names and images of <containers> joined with ",". */
static void container_cells(struct row *r, const cJSON *containers)
{
    struct sbuf names = {0}, images = {0};
    const cJSON *c;
    bool first = true;

    sbuf_put(&names, "", 0);
    sbuf_put(&images, "", 0);
    cJSON_ArrayForEach(c, arr_or_null(containers))
    {
        sbuf_str(&names, first ? "" : ",");
        sbuf_str(&images, first ? "" : ",");
        sbuf_str(&names, jstr(c, "name"));
        sbuf_str(&images, jstr(c, "image"));
        first = false;
    }
    cell_str(r, names.p);
    cell_str(r, images.p);
    free(names.p);
    free(images.p);
}

/* The containers of a pod template (spec.template.spec.containers). */
static const cJSON *template_containers(const cJSON *spec)
{
    return jobj(jobj(jobj(spec, "template"), "spec"), "containers");
}

/* The wide cells of ReplicaSets and Jobs: containers, images, FormatLabelSelector. */
static void workload_wide_cells(struct row *r, const cJSON *spec)
{
    struct sbuf b = {0};

    container_cells(r, template_containers(spec));
    format_label_selector(jobj(spec, "selector"), &b);
    cell_str(r, b.p);
    free(b.p);
}

/* ---- the printers ------------------------------------------------------------------------ */

static bool condition_true(const cJSON *conds, const char *type)
{
    const cJSON *c;

    cJSON_ArrayForEach(c, conds)
    {
        if (strcmp(jstr(c, "type"), type) == 0 && strcmp(jstr(c, "status"), "True") == 0) {
            return true;
        }
    }
    return false;
}

/* podutil.IsRestartableInitContainer of the spec entry named <name> (last one wins, as the
 * map printPod builds). */
static bool restartable_init(const cJSON *init_specs, const char *name)
{
    const cJSON *c;
    bool r = false;

    cJSON_ArrayForEach(c, init_specs)
    {
        if (strcmp(jstr(c, "name"), name) == 0) {
            r = strcmp(jstr(c, "restartPolicy"), "Always") == 0;
        }
    }
    return r;
}

/* Keeps the later of *t and the container's lastState.terminated.finishedAt. */
static void last_restart(const cJSON *cs, struct ktime *t)
{
    const cJSON *term = jobj(jobj(cs, "lastState"), "terminated");
    struct ktime ft = jtime(jobj(term, "finishedAt"));

    if (cJSON_IsObject(term) && ft.set && (!t->set || ktime_sub(ft, *t) > 0)) {
        *t = ft;
    }
}

/* printPod (1.33+: restartable init containers, SchedulingGated), with its Completed
 * row conditions for finished pods. */
static void print_pod(struct row *r, const cJSON *pod, struct ktime now)
{
    const cJSON *meta = meta_of(pod), *spec = jobj(pod, "spec");
    const cJSON *status = jobj(pod, "status"), *conds = jobj(status, "conditions");
    const cJSON *init_specs = jobj(spec, "initContainers"), *c;
    const char *phase = jstr(status, "phase"), *reason = phase, *ip;
    char reason_buf[320], buf[96], ago[32];
    int total = cJSON_GetArraySize(jobj(spec, "containers")), ready_n = 0, i = 0;
    long long restarts = 0, r_restarts = 0;
    bool initializing = false;
    struct ktime last = {0, 0, false}, r_last = {0, 0, false};

    if (jstr(status, "reason")[0]) {
        reason = jstr(status, "reason");
    }
    cJSON_ArrayForEach(c, conds)
    {
        if (strcmp(jstr(c, "type"), "PodScheduled") == 0 &&
            strcmp(jstr(c, "reason"), "SchedulingGated") == 0) {
            reason = "SchedulingGated";
        }
    }
    cJSON_ArrayForEach(c, init_specs)
    {
        total += strcmp(jstr(c, "restartPolicy"), "Always") == 0;
    }
    cJSON_ArrayForEach(c, jobj(status, "initContainerStatuses"))
    {
        const cJSON *state = jobj(c, "state"), *term = jobj(state, "terminated");
        const cJSON *wait = jobj(state, "waiting");
        bool restartable = restartable_init(init_specs, jstr(c, "name"));
        restarts += jint(c, "restartCount");
        last_restart(c, &last);
        if (restartable) {
            r_restarts += jint(c, "restartCount");
            last_restart(c, &r_last);
        }
        if (cJSON_IsObject(term) && jint(term, "exitCode") == 0) {
            i++;
            continue;
        }
        if (restartable && jtrue(c, "started")) {
            ready_n += jtrue(c, "ready");
            i++;
            continue;
        }
        if (cJSON_IsObject(term) && !jstr(term, "reason")[0] && jint(term, "signal") != 0) {
            snprintf(reason_buf, sizeof(reason_buf), "Init:Signal:%lld", jint(term, "signal"));
        } else if (cJSON_IsObject(term) && !jstr(term, "reason")[0]) {
            snprintf(reason_buf, sizeof(reason_buf), "Init:ExitCode:%lld", jint(term, "exitCode"));
        } else if (cJSON_IsObject(term)) {
            snprintf(reason_buf, sizeof(reason_buf), "Init:%s", jstr(term, "reason"));
        } else if (cJSON_IsObject(wait) && jstr(wait, "reason")[0] &&
                   strcmp(jstr(wait, "reason"), "PodInitializing") != 0) {
            snprintf(reason_buf, sizeof(reason_buf), "Init:%s", jstr(wait, "reason"));
        } else {
            snprintf(reason_buf, sizeof(reason_buf), "Init:%d/%d", i,
                     cJSON_GetArraySize(init_specs));
        }
        reason = reason_buf;
        initializing = true;
        break;
    }
    if (!initializing || condition_true(conds, "Initialized")) {
        const cJSON *statuses = jobj(status, "containerStatuses");
        bool running = false;
        restarts = r_restarts;
        last = r_last;
        for (int k = cJSON_GetArraySize(statuses) - 1; k >= 0; k--) {
            const cJSON *cs = cJSON_GetArrayItem(statuses, k);
            const cJSON *state = jobj(cs, "state"), *term = jobj(state, "terminated");
            const cJSON *wait = jobj(state, "waiting");
            restarts += jint(cs, "restartCount");
            last_restart(cs, &last);
            if (cJSON_IsObject(wait) && jstr(wait, "reason")[0]) {
                reason = jstr(wait, "reason");
            } else if (cJSON_IsObject(term) && jstr(term, "reason")[0]) {
                reason = jstr(term, "reason");
            } else if (cJSON_IsObject(term) && jint(term, "signal") != 0) {
                snprintf(reason_buf, sizeof(reason_buf), "Signal:%lld", jint(term, "signal"));
                reason = reason_buf;
            } else if (cJSON_IsObject(term)) {
                snprintf(reason_buf, sizeof(reason_buf), "ExitCode:%lld", jint(term, "exitCode"));
                reason = reason_buf;
            } else if (jtrue(cs, "ready") && cJSON_IsObject(jobj(state, "running"))) {
                running = true;
                ready_n++;
            }
        }
        if (strcmp(reason, "Completed") == 0 && running) {
            reason = condition_true(conds, "Ready") ? "Running" : "NotReady";
        }
    }
    if (jset(meta, "deletionTimestamp") && strcmp(jstr(status, "reason"), "NodeLost") == 0) {
        reason = "Unknown";
    } else if (jset(meta, "deletionTimestamp") && strcmp(phase, "Failed") != 0 &&
               strcmp(phase, "Succeeded") != 0) {
        reason = "Terminating";
    }
    cell_name(r, pod);
    snprintf(buf, sizeof(buf), "%d/%d", ready_n, total);
    cell_str(r, buf);
    cell_str(r, reason);
    if (restarts != 0 && last.set) {
        since(last, now, ago, sizeof(ago));
        snprintf(buf, sizeof(buf), "%lld (%s ago)", restarts, ago);
    } else {
        snprintf(buf, sizeof(buf), "%lld", restarts);
    }
    cell_str(r, buf);
    cell_age(r, pod, now);
    /* v1 -> internal conversion: a podIP differing from podIPs[0] wins */
    ip = jstr(status, "podIP")[0] ? jstr(status, "podIP")
                                  : jstr(cJSON_GetArrayItem(jobj(status, "podIPs"), 0), "ip");
    cell_str(r, ip[0] ? ip : "<none>");
    cell_str(r, jstr(spec, "nodeName")[0] ? jstr(spec, "nodeName") : "<none>");
    cell_str(r,
             jstr(status, "nominatedNodeName")[0] ? jstr(status, "nominatedNodeName") : "<none>");
    if (jlen(spec, "readinessGates") > 0) {
        int n_true = 0;
        cJSON_ArrayForEach(c, jobj(spec, "readinessGates"))
        {
            const cJSON *pc;
            cJSON_ArrayForEach(pc, conds)
            {
                if (strcmp(jstr(pc, "type"), jstr(c, "conditionType")) == 0) {
                    n_true += strcmp(jstr(pc, "status"), "True") == 0;
                    break;
                }
            }
        }
        snprintf(buf, sizeof(buf), "%d/%d", n_true, jlen(spec, "readinessGates"));
        cell_str(r, buf);
    } else {
        cell_str(r, "<none>");
    }
    if (strcmp(phase, "Succeeded") == 0) {
        r->conditions = ",\"conditions\":[{\"type\":\"Completed\",\"status\":\"True\","
                        "\"reason\":\"Succeeded\",\"message\":\"The pod has completed "
                        "successfully.\"}]";
    } else if (strcmp(phase, "Failed") == 0) {
        r->conditions = ",\"conditions\":[{\"type\":\"Completed\",\"status\":\"True\","
                        "\"reason\":\"Failed\",\"message\":\"The pod failed.\"}]";
    }
}

/* printConfigMap: Data counts data and binaryData keys. */
static void print_configmap(struct row *r, const cJSON *obj, struct ktime now)
{

    cell_name(r, obj);
    cell_int(r, jlen(obj, "data") + jlen(obj, "binaryData"));
    cell_age(r, obj, now);
}

/* printSecret; SetDefaults_Secret types an untyped secret Opaque. */
static void print_secret(struct row *r, const cJSON *obj, struct ktime now)
{

    cell_name(r, obj);
    cell_str(r, jstr(obj, "type")[0] ? jstr(obj, "type") : "Opaque");
    cell_int(r, jlen(obj, "data"));
    cell_age(r, obj, now);
}

/* printServiceAccount: the number of secrets. */
static void print_serviceaccount(struct row *r, const cJSON *obj, struct ktime now)
{

    cell_name(r, obj);
    cell_int(r, jlen(obj, "secrets"));
    cell_age(r, obj, now);
}

/* printNamespace; SetDefaults_NamespaceStatus makes an empty phase Active. */
static void print_namespace(struct row *r, const cJSON *obj, struct ktime now)
{
    const char *phase = jstr(jobj(obj, "status"), "phase");

    cell_name(r, obj);
    cell_str(r, phase[0] ? phase : "Active");
    cell_age(r, obj, now);
}

/* getServiceExternalIP with wide=true (the apiserver prints wide: no 16-byte clipping). */
static void service_external_ip(const cJSON *spec, const cJSON *status, const char *type,
                                struct sbuf *out)
{
    struct strlist ext = {0}, lb = {0};
    const cJSON *e;

    cJSON_ArrayForEach(e, jobj(spec, "externalIPs"))
    {
        sl_add(&ext, xstrdup(cJSON_IsString(e) ? e->valuestring : ""));
    }
    cJSON_ArrayForEach(e, jobj(jobj(status, "loadBalancer"), "ingress"))
    {
        const char *v = jstr(e, "ip")[0] ? jstr(e, "ip") : jstr(e, "hostname");
        if (v[0]) {
            sl_add(&lb, xstrdup(v));
        }
    }
    sl_sort(&lb);
    sl_uniq(&lb);
    sbuf_put(out, "", 0);
    if (strcmp(type, "ClusterIP") == 0 || strcmp(type, "NodePort") == 0) {
        sl_join(&ext, ",", out);
        if (ext.n == 0) {
            sbuf_str(out, "<none>");
        }
    } else if (strcmp(type, "LoadBalancer") == 0) {
        sl_join(&lb, ",", out);
        if (ext.n > 0) {
            sbuf_str(out, lb.n > 0 ? "," : "");
            sl_join(&ext, ",", out);
        } else if (lb.n == 0) {
            sbuf_str(out, "<pending>");
        }
    } else if (strcmp(type, "ExternalName") == 0) {
        sbuf_str(out, jstr(spec, "externalName"));
    } else {
        sbuf_str(out, "<unknown>");
    }
    sl_free(&ext);
    sl_free(&lb);
}

/* printService; SetDefaults_Service: type ClusterIP, port protocol TCP. */
static void print_service(struct row *r, const cJSON *obj, struct ktime now)
{
    const cJSON *spec = jobj(obj, "spec"), *p;
    const char *type = jstr(spec, "type")[0] ? jstr(spec, "type") : "ClusterIP";
    const cJSON *ip0 = cJSON_GetArrayItem(jobj(spec, "clusterIPs"), 0);
    struct sbuf b = {0};
    char port[96];
    bool first = true;

    cell_name(r, obj);
    cell_str(r, type);
    cell_str(r, cJSON_IsString(ip0) ? ip0->valuestring : "<none>");
    service_external_ip(spec, jobj(obj, "status"), type, &b);
    cell_str(r, b.p);
    b.len = 0;
    cJSON_ArrayForEach(p, jobj(spec, "ports"))
    {
        const char *proto = jstr(p, "protocol")[0] ? jstr(p, "protocol") : "TCP";
        if (jint(p, "nodePort") > 0) {
            snprintf(port, sizeof(port), "%lld:%lld/", jint(p, "port"), jint(p, "nodePort"));
        } else {
            snprintf(port, sizeof(port), "%lld/", jint(p, "port"));
        }
        sbuf_str(&b, first ? "" : ",");
        sbuf_str(&b, port);
        sbuf_str(&b, proto);
        first = false;
    }
    cell_str(r, first ? "<none>" : b.p);
    cell_age(r, obj, now);
    b.len = 0;
    format_labels(jobj(spec, "selector"), &b);
    cell_str(r, b.p);
    free(b.p);
}

/* findNodeRoles: node-role.kubernetes.io/<role> keys and kubernetes.io/role values. */
static void node_roles(const cJSON *labels, struct sbuf *out)
{
    static const char prefix[] = "node-role.kubernetes.io/";
    struct strlist l = {0};
    const cJSON *e;

    cJSON_ArrayForEach(e, obj_or_null(labels))
    {
        const char *v = cJSON_IsString(e) ? e->valuestring : "";
        if (strncmp(e->string, prefix, sizeof(prefix) - 1) == 0 && e->string[sizeof(prefix) - 1]) {
            sl_add(&l, xstrdup(e->string + sizeof(prefix) - 1));
        } else if (strcmp(e->string, "kubernetes.io/role") == 0 && v[0]) {
            sl_add(&l, xstrdup(v));
        }
    }
    sl_sort(&l);
    sl_uniq(&l);
    sbuf_put(out, "", 0);
    sl_join(&l, ",", out);
    if (l.n == 0) {
        sbuf_str(out, "<none>");
    }
    sl_free(&l);
}

/* The first status.addresses entry of <type>, or "<none>". */
static const char *node_address(const cJSON *status, const char *type)
{
    const cJSON *a;

    cJSON_ArrayForEach(a, jobj(status, "addresses"))
    {
        if (strcmp(jstr(a, "type"), type) == 0) {
            return jstr(a, "address");
        }
    }
    return "<none>";
}

static const char *or_unknown(const char *s)
{
    return s[0] ? s : "<unknown>";
}

/* printNode: Ready or NotReady from the last Ready condition, SchedulingDisabled, roles. */
static void print_node(struct row *r, const cJSON *obj, struct ktime now)
{
    const cJSON *status = jobj(obj, "status"), *info = jobj(status, "nodeInfo");
    const cJSON *c, *ready = NULL;
    struct sbuf b = {0};

    cJSON_ArrayForEach(c, jobj(status, "conditions"))
    {
        if (strcmp(jstr(c, "type"), "Ready") == 0) {
            ready = c; /* conditionMap: the last one of a type wins */
        }
    }
    if (!ready) {
        sbuf_str(&b, "Unknown");
    } else {
        sbuf_str(&b, strcmp(jstr(ready, "status"), "True") == 0 ? "Ready" : "NotReady");
    }
    if (jtrue(jobj(obj, "spec"), "unschedulable")) {
        sbuf_str(&b, ",SchedulingDisabled");
    }
    cell_name(r, obj);
    cell_str(r, b.p);
    b.len = 0;
    node_roles(jobj(meta_of(obj), "labels"), &b);
    cell_str(r, b.p);
    cell_age(r, obj, now);
    cell_str(r, jstr(info, "kubeletVersion"));
    cell_str(r, node_address(status, "InternalIP"));
    cell_str(r, node_address(status, "ExternalIP"));
    cell_str(r, or_unknown(jstr(info, "osImage")));
    cell_str(r, or_unknown(jstr(info, "kernelVersion")));
    cell_str(r, or_unknown(jstr(info, "containerRuntimeVersion")));
    free(b.p);
}

/* strings.TrimSpace of <s> into a heap string. */
static char *trim_space_dup(const char *s)
{
    size_t off = 0;
    size_t n = gotext_trim_space(s, strlen(s), &off);

    return xstrndup(s + off, n);
}

/* printEvent, wide: Series and singleton events (count 0 prints 1), the source falls back
 * to reportingComponent / reportingInstance. */
static void print_event(struct row *r, const cJSON *obj, struct ktime now)
{
    const cJSON *src = jobj(obj, "source"), *inv = jobj(obj, "involvedObject");
    const cJSON *series = jobj(obj, "series");
    const char *comp =
        jstr(src, "component")[0] ? jstr(src, "component") : jstr(obj, "reportingComponent");
    const char *inst = jstr(src, "host")[0] ? jstr(src, "host") : jstr(obj, "reportingInstance");
    struct ktime first_t = jtime(jobj(obj, "firstTimestamp"));
    struct ktime last_t = jtime(jobj(obj, "lastTimestamp"));
    char first[32], last[32];
    long long count = jint(obj, "count");
    struct sbuf b = {0};
    char *msg;

    since(first_t.set ? first_t : jtime(jobj(obj, "eventTime")), now, first, sizeof(first));
    if (last_t.set) {
        since(last_t, now, last, sizeof(last));
    } else {
        snprintf(last, sizeof(last), "%s", first);
    }
    if (cJSON_IsObject(series)) {
        since(jtime(jobj(series, "lastObservedTime")), now, last, sizeof(last));
        count = jint(series, "count");
    } else if (count == 0) {
        count = 1;
    }
    /* strings.ToLower(kind), for the ASCII kinds Kubernetes has */
    for (const char *k = jstr(inv, "kind"); *k; k++) {
        char ch = *k >= 'A' && *k <= 'Z' ? (char)(*k - 'A' + 'a') : *k;
        sbuf_put(&b, &ch, 1);
    }
    if (jstr(inv, "name")[0]) {
        sbuf_str(&b, "/");
        sbuf_str(&b, jstr(inv, "name"));
    }
    sbuf_put(&b, "", 0);
    cell_str(r, last);
    cell_str(r, jstr(obj, "type"));
    cell_str(r, jstr(obj, "reason"));
    cell_str(r, b.p);
    cell_str(r, jstr(inv, "fieldPath"));
    b.len = 0;
    sbuf_str(&b, comp);
    if (inst[0]) {
        sbuf_str(&b, ", ");
        sbuf_str(&b, inst);
    }
    cell_str(r, b.p);
    msg = trim_space_dup(jstr(obj, "message"));
    cell_str(r, msg);
    free(msg);
    cell_str(r, first);
    cell_int(r, count);
    cell_name(r, obj);
    free(b.p);
}

/* printReplicationController; SetDefaults_ReplicationController: replicas 1, an empty
 * selector takes the template's labels. */
static void print_replicationcontroller(struct row *r, const cJSON *obj, struct ktime now)
{
    const cJSON *spec = jobj(obj, "spec"), *status = jobj(obj, "status");
    const cJSON *tmpl = jobj(spec, "template"), *sel = jobj(spec, "selector");
    struct sbuf b = {0};

    if (cJSON_GetArraySize(obj_or_null(sel)) == 0 &&
        cJSON_IsObject(jobj(meta_of(tmpl), "labels"))) {
        sel = jobj(meta_of(tmpl), "labels");
    }
    cell_name(r, obj);
    cell_int(r, jint_or(spec, "replicas", 1));
    cell_int(r, jint(status, "replicas"));
    cell_int(r, jint(status, "readyReplicas"));
    cell_age(r, obj, now);
    container_cells(r, jobj(jobj(tmpl, "spec"), "containers"));
    format_labels(sel, &b);
    cell_str(r, b.p);
    free(b.p);
}

/* printReplicaSet; SetDefaults_ReplicaSet: replicas 1. */
static void print_replicaset(struct row *r, const cJSON *obj, struct ktime now)
{
    const cJSON *spec = jobj(obj, "spec"), *status = jobj(obj, "status");

    cell_name(r, obj);
    cell_int(r, jint_or(spec, "replicas", 1));
    cell_int(r, jint(status, "replicas"));
    cell_int(r, jint(status, "readyReplicas"));
    cell_age(r, obj, now);
    workload_wide_cells(r, spec);
}

/* printDeployment: READY is ready/desired (replicas default 1); the selector prints as
 * LabelSelectorAsSelector renders it ("" when empty, "<invalid>" when it fails). */
static void print_deployment(struct row *r, const cJSON *obj, struct ktime now)
{
    const cJSON *spec = jobj(obj, "spec"), *status = jobj(obj, "status");
    struct sbuf b = {0};
    char ready[48];

    snprintf(ready, sizeof(ready), "%lld/%lld", jint(status, "readyReplicas"),
             jint_or(spec, "replicas", 1));
    cell_name(r, obj);
    cell_str(r, ready);
    cell_int(r, jint(status, "updatedReplicas"));
    cell_int(r, jint(status, "availableReplicas"));
    cell_age(r, obj, now);
    container_cells(r, template_containers(spec));
    if (selector_string(jobj(spec, "selector"), &b) != 0) {
        b.len = 0;
        sbuf_str(&b, "<invalid>");
    }
    cell_str(r, b.p);
    free(b.p);
}

/* hasJobCondition: the first condition of <type> decides. */
static bool job_condition(const cJSON *conds, const char *type)
{
    const cJSON *c;

    cJSON_ArrayForEach(c, conds)
    {
        if (strcmp(jstr(c, "type"), type) == 0) {
            return strcmp(jstr(c, "status"), "True") == 0;
        }
    }
    return false;
}

/* printJob: STATUS from the conditions, COMPLETIONS, DURATION (start to completion, or to
 * now while running). */
static void print_job(struct row *r, const cJSON *obj, struct ktime now)
{
    const cJSON *spec = jobj(obj, "spec"), *status = jobj(obj, "status");
    const cJSON *conds = jobj(status, "conditions");
    struct ktime start = jtime(jobj(status, "startTime"));
    struct ktime done = jtime(jobj(status, "completionTime"));
    long long ok = jint(status, "succeeded"), par = jint(spec, "parallelism");
    const char *st = "Running";
    char completions[64], duration[32] = "";

    if (jset(spec, "completions")) {
        snprintf(completions, sizeof(completions), "%lld/%lld", ok, jint(spec, "completions"));
    } else if (par > 1) {
        snprintf(completions, sizeof(completions), "%lld/1 of %lld", ok, par);
    } else {
        snprintf(completions, sizeof(completions), "%lld/1", ok);
    }
    if (jset(status, "startTime")) { /* a set but zero time prints as a duration too */
        human_duration(ktime_sub(jset(status, "completionTime") ? done : now, start), duration,
                       sizeof(duration));
    }
    if (job_condition(conds, "Complete")) {
        st = "Complete";
    } else if (job_condition(conds, "Failed")) {
        st = "Failed";
    } else if (jset(meta_of(obj), "deletionTimestamp")) {
        st = "Terminating";
    } else if (job_condition(conds, "Suspended")) {
        st = "Suspended";
    } else if (job_condition(conds, "FailureTarget")) {
        st = "FailureTarget";
    }
    cell_name(r, obj);
    cell_str(r, st);
    cell_str(r, completions);
    cell_str(r, duration);
    cell_age(r, obj, now);
    workload_wide_cells(r, spec);
}

/* printCertificateSigningRequest: CONDITION as extractCSRStatus builds it. */
static void print_csr(struct row *r, const cJSON *obj, struct ktime now)
{
    const cJSON *spec = jobj(obj, "spec"), *status = jobj(obj, "status"), *c;
    bool approved = false, denied = false, failed = false;
    char dur[32] = "<none>", cond[64];

    cJSON_ArrayForEach(c, jobj(status, "conditions"))
    {
        approved |= strcmp(jstr(c, "type"), "Approved") == 0;
        denied |= strcmp(jstr(c, "type"), "Denied") == 0;
        failed |= strcmp(jstr(c, "type"), "Failed") == 0;
    }
    snprintf(cond, sizeof(cond), "%s%s%s",
             denied     ? "Denied"
             : approved ? "Approved"
                        : "Pending",
             failed ? ",Failed" : "", jstr(status, "certificate")[0] ? ",Issued" : "");
    if (jset(spec, "expirationSeconds")) {
        human_duration(jint(spec, "expirationSeconds") * NS_PER_S, dur, sizeof(dur));
    }
    cell_name(r, obj);
    cell_age(r, obj, now);
    cell_str(r, jstr(spec, "signerName")[0] ? jstr(spec, "signerName") : "<none>");
    cell_str(r, jstr(spec, "username"));
    cell_str(r, dur);
    cell_str(r, cond);
}

/* rest.defaultTableConvertor: the name and metav1.Time.UTC().Format(time.RFC3339). */
static void print_default(struct row *r, const cJSON *obj, struct ktime now)
{
    struct ktime t = jtime(jobj(meta_of(obj), "creationTimestamp"));
    int64_t sec = t.set ? t.sec : GO_ZERO_UNIX, days = sec / 86400, rem = sec % 86400, y;
    int m, d;
    char ts[48];

    (void)now;
    if (rem < 0) {
        rem += 86400;
        days--;
    }
    civil_from_days(days, &y, &m, &d);
    snprintf(ts, sizeof(ts), "%04lld-%02d-%02dT%02d:%02d:%02dZ", (long long)y, m, d,
             (int)(rem / 3600), (int)(rem / 60 % 60), (int)(rem % 60));
    cell_name(r, obj);
    cell_str(r, ts);
}

/*
 * apiextensions' tableconvertor with a CRD's default columns (serveDefaultColumnsIfEmpty:
 * Age, type date, JSONPath .metadata.creationTimestamp). cellForJSONValue: a missing or
 * non-string value is nil, "" is the zero time ("<unknown>"), an unparsable one "<invalid>".
 */
static void print_custom(struct row *r, const cJSON *obj, struct ktime now)
{
    const cJSON *v = jobj(meta_of(obj), "creationTimestamp");
    struct ktime t = {0, 0, false};
    char age[32];

    cell_name(r, obj);
    if (!cJSON_IsString(v)) {
        cell_sep(r);
        sbuf_str(&r->b, "null");
        return;
    }
    if (v->valuestring[0] && !parse_rfc3339(v->valuestring, &t)) {
        cell_str(r, "<invalid>");
        return;
    }
    since(t, now, age, sizeof(age));
    cell_str(r, age);
}

/* ---- column definitions ------------------------------------------------------------------ */

struct col {
    const char *name;
    const char *type;
    const char *format;
    const char *desc; /* the Go string, unescaped */
    int priority;
};

/* clang-format off */
/* metav1.ObjectMeta{}.SwaggerDoc()["name"] and ["creationTimestamp"] */
#define DESC_NAME                                                                                  \
    "Name must be unique within a namespace. Is required when creating resources, although "      \
    "some resources may allow a client to request the generation of an appropriate name "         \
    "automatically. Name is primarily intended for creation idempotence and configuration "       \
    "definition. Cannot be updated. More info: "                                                  \
    "https://kubernetes.io/docs/concepts/overview/working-with-objects/names#names"
#define DESC_CREATED                                                                               \
    "CreationTimestamp is a timestamp representing the server time when this object was "         \
    "created. It is not guaranteed to be set in happens-before order across separate "            \
    "operations. Clients may not set this value. It is represented in RFC3339 form and is in "    \
    "UTC.\n\nPopulated by the system. Read-only. Null for lists. More info: "                     \
    "https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#metadata"
#define DESC_CONTAINERS "Names of each container in the template."
#define DESC_IMAGES "Images referenced by each container in the template."
#define COL_NAME {"Name", "string", "name", DESC_NAME, 0}
#define COL_AGE {"Age", "string", "", DESC_CREATED, 0}
#define COL_CONTAINERS {"Containers", "string", "", DESC_CONTAINERS, 1}
#define COL_IMAGES {"Images", "string", "", DESC_IMAGES, 1}
#define SELECTOR_DOC_LINK \
    "https://kubernetes.io/docs/concepts/overview/working-with-objects/labels/#label-selectors"
#define NODE_ADDRESSES_DOC                                                                         \
    "List of addresses reachable to the node. Queried from cloud provider, if available. More "   \
    "info: https://kubernetes.io/docs/reference/node/node-status/#addresses Note: This field is " \
    "declared as mergeable, but the merge key is not sufficiently unique, which can cause data "  \
    "corruption when it is merged. Callers should instead use a full-replacement patch. See "     \
    "https://pr.k8s.io/79391 for an example. Consumers should assume that addresses can change "  \
    "during the lifetime of a Node. However, there are some exceptions where this may not be "    \
    "possible, such as Pods that inherit a Node's address in its own status or consumers of the " \
    "downward API (status.hostIP)."

static const struct col pod_cols[] = {
    COL_NAME,
    {"Ready", "string", "", "The aggregate readiness state of this pod for accepting traffic.", 0},
    {"Status", "string", "", "The aggregate status of the containers in this pod.", 0},
    {"Restarts", "string", "",
     "The number of times the containers in this pod have been restarted and when the last "
     "container in this pod has restarted.",
     0},
    COL_AGE,
    {"IP", "string", "",
     "podIP address allocated to the pod. Routable at least within the cluster. Empty if not yet "
     "allocated.",
     1},
    {"Node", "string", "",
     "NodeName indicates in which node this pod is scheduled. If empty, this pod is a candidate "
     "for scheduling by the scheduler defined in schedulerName. Once this field is set, the "
     "kubelet for this node becomes responsible for the lifecycle of this pod. This field should "
     "not be used to express a desire for the pod to be scheduled on a specific node. "
     "https://kubernetes.io/docs/concepts/scheduling-eviction/assign-pod-node/#nodename",
     1},
    {"Nominated Node", "string", "",
     "nominatedNodeName is set only when this pod preempts other pods on the node, but it cannot "
     "be scheduled right away as preemption victims receive their graceful termination periods. "
     "This field does not guarantee that the pod will be scheduled on this node. Scheduler may "
     "decide to place the pod elsewhere if other nodes become available sooner. Scheduler may "
     "also decide to give the resources on this node to a higher priority pod that is created "
     "after preemption. As a result, this field may be different than PodSpec.nodeName when the "
     "pod is scheduled.",
     1},
    {"Readiness Gates", "string", "",
     "If specified, all readiness gates will be evaluated for pod readiness. A pod is ready when "
     "all its containers are ready AND all conditions specified in the readiness gates have "
     "status equal to \"True\" More info: "
     "https://git.k8s.io/enhancements/keps/sig-network/580-pod-readiness-gates",
     1},
};

static const struct col configmap_cols[] = {
    COL_NAME,
    {"Data", "string", "",
     "Data contains the configuration data. Each key must consist of alphanumeric characters, "
     "'-', '_' or '.'. Values with non-UTF-8 byte sequences must use the BinaryData field. The "
     "keys stored in Data must not overlap with the keys in the BinaryData field, this is "
     "enforced during validation process.",
     0},
    COL_AGE,
};

static const struct col secret_cols[] = {
    COL_NAME,
    {"Type", "string", "",
     "Used to facilitate programmatic handling of secret data. More info: "
     "https://kubernetes.io/docs/concepts/configuration/secret/#secret-types",
     0},
    {"Data", "string", "",
     "Data contains the secret data. Each key must consist of alphanumeric characters, '-', '_' "
     "or '.'. The serialized form of the secret data is a base64 encoded string, representing "
     "the arbitrary (possibly non-string) data value here. Described in "
     "https://tools.ietf.org/html/rfc4648#section-4",
     0},
    COL_AGE,
};

static const struct col serviceaccount_cols[] = {
    COL_NAME,
    {"Secrets", "string", "",
     "Secrets is a list of the secrets in the same namespace that pods running using this "
     "ServiceAccount are allowed to use. Pods are only limited to this list if this service "
     "account has a \"kubernetes.io/enforce-mountable-secrets\" annotation set to \"true\". The "
     "\"kubernetes.io/enforce-mountable-secrets\" annotation is deprecated since v1.32. Prefer "
     "separate namespaces to isolate access to mounted secrets. This field should not be used "
     "to find auto-generated service account token secrets for use outside of pods. Instead, "
     "tokens can be requested directly using the TokenRequest API, or service account token "
     "secrets can be manually created. More info: "
     "https://kubernetes.io/docs/concepts/configuration/secret",
     0},
    COL_AGE,
};

static const struct col namespace_cols[] = {
    COL_NAME,
    {"Status", "string", "", "The status of the namespace", 0},
    COL_AGE,
};

static const struct col service_cols[] = {
    COL_NAME,
    {"Type", "string", "",
     "type determines how the Service is exposed. Defaults to ClusterIP. Valid options are "
     "ExternalName, ClusterIP, NodePort, and LoadBalancer. \"ClusterIP\" allocates a "
     "cluster-internal IP address for load-balancing to endpoints. Endpoints are determined by "
     "the selector or if that is not specified, by manual construction of an Endpoints object or "
     "EndpointSlice objects. If clusterIP is \"None\", no virtual IP is allocated and the "
     "endpoints are published as a set of endpoints rather than a virtual IP. \"NodePort\" "
     "builds on ClusterIP and allocates a port on every node which routes to the same endpoints "
     "as the clusterIP. \"LoadBalancer\" builds on NodePort and creates an external "
     "load-balancer (if supported in the current cloud) which routes to the same endpoints as "
     "the clusterIP. \"ExternalName\" aliases this service to the specified externalName. "
     "Several other fields do not apply to ExternalName services. More info: "
     "https://kubernetes.io/docs/concepts/services-networking/service/"
     "#publishing-services-service-types",
     0},
    {"Cluster-IP", "string", "",
     "clusterIP is the IP address of the service and is usually assigned randomly. If an "
     "address is specified manually, is in-range (as per system configuration), and is not in "
     "use, it will be allocated to the service; otherwise creation of the service will fail. "
     "This field may not be changed through updates unless the type field is also being changed "
     "to ExternalName (which requires this field to be blank) or the type field is being changed "
     "from ExternalName (in which case this field may optionally be specified, as describe "
     "above).  Valid values are \"None\", empty string (\"\"), or a valid IP address. Setting "
     "this to \"None\" makes a \"headless service\" (no virtual IP), which is useful when direct "
     "endpoint connections are preferred and proxying is not required.  Only applies to types "
     "ClusterIP, NodePort, and LoadBalancer. If this field is specified when creating a Service "
     "of type ExternalName, creation will fail. This field will be wiped when updating a "
     "Service to type ExternalName. More info: "
     "https://kubernetes.io/docs/concepts/services-networking/service/"
     "#virtual-ips-and-service-proxies",
     0},
    {"External-IP", "string", "",
     "externalIPs is a list of IP addresses for which nodes in the cluster will also accept "
     "traffic for this service.  These IPs are not managed by Kubernetes.  The user is "
     "responsible for ensuring that traffic arrives at a node with this IP.  A common example "
     "is external load-balancers that are not part of the Kubernetes system.",
     0},
    {"Port(s)", "string", "",
     "The list of ports that are exposed by this service. More info: "
     "https://kubernetes.io/docs/concepts/services-networking/service/"
     "#virtual-ips-and-service-proxies",
     0},
    COL_AGE,
    {"Selector", "string", "",
     "Route service traffic to pods with label keys and values matching this selector. If empty "
     "or not present, the service is assumed to have an external process managing its "
     "endpoints, which Kubernetes will not modify. Only applies to types ClusterIP, NodePort, "
     "and LoadBalancer. Ignored if type is ExternalName. More info: "
     "https://kubernetes.io/docs/concepts/services-networking/service/",
     1},
};

static const struct col node_cols[] = {
    COL_NAME,
    {"Status", "string", "", "The status of the node", 0},
    {"Roles", "string", "", "The roles of the node", 0},
    COL_AGE,
    {"Version", "string", "", "Kubelet Version reported by the node.", 0},
    {"Internal-IP", "string", "", NODE_ADDRESSES_DOC, 1},
    {"External-IP", "string", "", NODE_ADDRESSES_DOC, 1},
    {"OS-Image", "string", "",
     "OS Image reported by the node from /etc/os-release (e.g. Debian GNU/Linux 7 (wheezy)).", 1},
    {"Kernel-Version", "string", "",
     "Kernel Version reported by the node from 'uname -r' (e.g. 3.16.0-0.bpo.4-amd64).", 1},
    {"Container-Runtime", "string", "",
     "ContainerRuntime Version reported by the node through runtime remote API (e.g. "
     "containerd://1.4.2).",
     1},
};

static const struct col event_cols[] = {
    {"Last Seen", "string", "",
     "The time at which the most recent occurrence of this event was recorded.", 0},
    {"Type", "string", "",
     "Type of this event (Normal, Warning), new types could be added in the future", 0},
    {"Reason", "string", "",
     "This should be a short, machine understandable string that gives the reason for the "
     "transition into the object's current status.",
     0},
    {"Object", "string", "", "The object that this event is about.", 0},
    {"Subobject", "string", "",
     "If referring to a piece of an object instead of an entire object, this string should "
     "contain a valid JSON/Go field access statement, such as "
     "desiredState.manifest.containers[2]. For example, if the object reference is to a "
     "container within a pod, this would take on a value like: \"spec.containers{name}\" (where "
     "\"name\" refers to the name of the container that triggered the event) or if no container "
     "name is specified \"spec.containers[2]\" (container with index 2 in this pod). This syntax "
     "is chosen only to have some well-defined way of referencing a part of an object.",
     1},
    {"Source", "string", "",
     "The component reporting this event. Should be a short machine understandable string.", 1},
    {"Message", "string", "", "A human-readable description of the status of this operation.", 0},
    {"First Seen", "string", "",
     "The time at which the event was first recorded. (Time of server receipt is in TypeMeta.)",
     1},
    {"Count", "string", "", "The number of times this event has occurred.", 1},
    {"Name", "string", "name", DESC_NAME, 1},
};

static const struct col replicationcontroller_cols[] = {
    COL_NAME,
    {"Desired", "integer", "",
     "Replicas is the number of desired replicas. This is a pointer to distinguish between "
     "explicit zero and unspecified. Defaults to 1. More info: "
     "https://kubernetes.io/docs/concepts/workloads/controllers/replicationcontroller"
     "#what-is-a-replicationcontroller",
     0},
    {"Current", "integer", "",
     "Replicas is the most recently observed number of replicas. More info: "
     "https://kubernetes.io/docs/concepts/workloads/controllers/replicationcontroller"
     "#what-is-a-replicationcontroller",
     0},
    {"Ready", "integer", "", "The number of ready replicas for this replication controller.", 0},
    COL_AGE,
    COL_CONTAINERS,
    COL_IMAGES,
    {"Selector", "string", "",
     "Selector is a label query over pods that should match the Replicas count. If Selector is "
     "empty, it is defaulted to the labels present on the Pod template. Label keys and values "
     "that must match in order to be controlled by this replication controller, if empty "
     "defaulted to labels on Pod template. More info: " SELECTOR_DOC_LINK,
     1},
};

/* extensions/v1beta1 ReplicaSet docs (1.33+ wording: non-terminating pods) */
static const struct col replicaset_cols[] = {
    COL_NAME,
    {"Desired", "integer", "",
     "Replicas is the number of desired pods. This is a pointer to distinguish between explicit "
     "zero and unspecified. Defaults to 1. More info: "
     "https://kubernetes.io/docs/concepts/workloads/controllers/replicaset",
     0},
    {"Current", "integer", "",
     "Replicas is the most recently observed number of non-terminating pods. More info: "
     "https://kubernetes.io/docs/concepts/workloads/controllers/replicaset",
     0},
    {"Ready", "integer", "",
     "The number of non-terminating pods targeted by this ReplicaSet with a Ready Condition.", 0},
    COL_AGE,
    COL_CONTAINERS,
    COL_IMAGES,
    {"Selector", "string", "",
     "Selector is a label query over pods that should match the replica count. If the selector "
     "is empty, it is defaulted to the labels present on the pod template. Label keys and "
     "values that must match in order to be controlled by this replica set. More info: "
     SELECTOR_DOC_LINK,
     1},
};

static const struct col deployment_cols[] = {
    COL_NAME,
    {"Ready", "string", "", "Number of the pod with ready state", 0},
    {"Up-to-date", "string", "",
     "Total number of non-terminating pods targeted by this deployment that have the desired "
     "template spec.",
     0},
    {"Available", "string", "",
     "Total number of available non-terminating pods (ready for at least minReadySeconds) "
     "targeted by this deployment.",
     0},
    COL_AGE,
    COL_CONTAINERS,
    COL_IMAGES,
    {"Selector", "string", "",
     "Label selector for pods. Existing ReplicaSets whose pods are selected by this will be the "
     "ones affected by this deployment.",
     1},
};

static const struct col job_cols[] = {
    COL_NAME,
    {"Status", "string", "", "Status of the job.", 0},
    {"Completions", "string", "",
     "The number of pods which reached phase Succeeded. The value increases monotonically for a "
     "given spec. However, it may decrease in reaction to scale down of elastic indexed jobs.",
     0},
    {"Duration", "string", "", "Time required to complete the job.", 0},
    COL_AGE,
    COL_CONTAINERS,
    COL_IMAGES,
    {"Selector", "string", "",
     "A label query over pods that should match the pod count. Normally, the system sets this "
     "field for you. More info: " SELECTOR_DOC_LINK,
     1},
};

/* certificates/v1beta1 docs */
static const struct col csr_cols[] = {
    COL_NAME,
    COL_AGE,
    {"SignerName", "string", "",
     "Requested signer for the request. It is a qualified name in the form: "
     "`scope-hostname.io/name`. If empty, it will be defaulted:\n 1. If it's a kubelet client "
     "certificate, it is assigned\n    \"kubernetes.io/kube-apiserver-client-kubelet\".\n 2. If "
     "it's a kubelet serving certificate, it is assigned\n    \"kubernetes.io/kubelet-serving\".\n"
     " 3. Otherwise, it is assigned \"kubernetes.io/legacy-unknown\".\nDistribution of trust for "
     "signers happens out of band. You can select on this field using `spec.signerName`.",
     0},
    {"Requestor", "string", "", "Base64-encoded PKCS#10 CSR data", 0},
    {"RequestedDuration", "string", "",
     "expirationSeconds is the requested duration of validity of the issued certificate. The "
     "certificate signer may issue a certificate with a different validity duration so a client "
     "must check the delta between the notBefore and and notAfter fields in the issued "
     "certificate to determine the actual duration.\n\nThe v1.22+ in-tree implementations of the "
     "well-known Kubernetes signers will honor this field as long as the requested duration is "
     "not greater than the maximum duration they will honor per the --cluster-signing-duration "
     "CLI flag to the Kubernetes controller manager.\n\nCertificate signers may not honor this "
     "field for various reasons:\n\n  1. Old signer that is unaware of the field (such as the "
     "in-tree\n     implementations prior to v1.22)\n  2. Signer whose configured maximum is "
     "shorter than the requested duration\n  3. Signer whose configured minimum is longer than "
     "the requested duration\n\nThe minimum valid value for expirationSeconds is 600, i.e. 10 "
     "minutes.",
     0},
    {"Condition", "string", "", "Conditions applied to the request, such as approval or denial.",
     0},
};

static const struct col default_cols[] = {
    COL_NAME,
    {"Created At", "date", "", DESC_CREATED, 0},
};

static const struct col custom_cols[] = {
    COL_NAME,
    {"Age", "date", "", DESC_CREATED, 0},
};
/* clang-format on */

/* ---- the table ---------------------------------------------------------------------------- */

typedef void print_fn(struct row *r, const cJSON *obj, struct ktime now);

struct printer {
    const char *group;
    const char *resource;
    const struct col *cols;
    size_t n_cols;
    print_fn *print;
    char *columns; /* the JSON array, built once by build_columns */
};

#define PRINTER(g, res, cols, fn)                                                                  \
    {                                                                                              \
        g, res, cols, sizeof(cols) / sizeof(cols[0]), fn, NULL                                     \
    }

static struct printer printers[] = {
    PRINTER("", "pods", pod_cols, print_pod),
    PRINTER("", "configmaps", configmap_cols, print_configmap),
    PRINTER("", "secrets", secret_cols, print_secret),
    PRINTER("", "services", service_cols, print_service),
    PRINTER("", "namespaces", namespace_cols, print_namespace),
    PRINTER("", "nodes", node_cols, print_node),
    PRINTER("", "events", event_cols, print_event),
    PRINTER("", "serviceaccounts", serviceaccount_cols, print_serviceaccount),
    PRINTER("", "replicationcontrollers", replicationcontroller_cols, print_replicationcontroller),
    PRINTER("batch", "jobs", job_cols, print_job),
    PRINTER("certificates.k8s.io", "certificatesigningrequests", csr_cols, print_csr),
    PRINTER("apps", "deployments", deployment_cols, print_deployment),
    PRINTER("apps", "replicasets", replicaset_cols, print_replicaset),
};

static struct printer default_printer = PRINTER("", "", default_cols, print_default);
static struct printer custom_printer = PRINTER("", "", custom_cols, print_custom);

#define N_PRINTERS (sizeof(printers) / sizeof(printers[0]))

static pthread_once_t columns_once = PTHREAD_ONCE_INIT;

/* Go's encoding of []TableColumnDefinition (name, type, format, description, priority). */
static void build_one(struct printer *p)
{
    struct sbuf b = {0};
    char prio[16];

    sbuf_str(&b, "[");
    for (size_t i = 0; i < p->n_cols; i++) {
        const struct col *c = &p->cols[i];
        sbuf_str(&b, i > 0 ? ",{\"name\":" : "{\"name\":");
        pb_quote(&b, c->name);
        sbuf_str(&b, ",\"type\":");
        pb_quote(&b, c->type);
        sbuf_str(&b, ",\"format\":");
        pb_quote(&b, c->format);
        sbuf_str(&b, ",\"description\":");
        pb_quote(&b, c->desc);
        snprintf(prio, sizeof(prio), ",\"priority\":%d}", c->priority);
        sbuf_str(&b, prio);
    }
    sbuf_str(&b, "]");
    p->columns = b.p; /* kept for the process lifetime */
}

static void build_columns(void)
{
    for (size_t i = 0; i < N_PRINTERS; i++) {
        build_one(&printers[i]);
    }
    build_one(&default_printer);
    build_one(&custom_printer);
}

const struct printer *printers_find(const char *group, const char *resource)
{
    for (size_t i = 0; i < N_PRINTERS; i++) {
        if (strcmp(printers[i].group, group) == 0 && strcmp(printers[i].resource, resource) == 0) {
            return &printers[i];
        }
    }
    return NULL;
}

const struct printer *printers_default(void)
{
    return &default_printer;
}

const struct printer *printers_custom(void)
{
    return &custom_printer;
}

const char *printers_columns(const struct printer *p)
{
    BUG_ON(pthread_once(&columns_once, build_columns) != 0);
    return p->columns;
}

char *printers_cells_new(const struct printer *p, const cJSON *obj, int64_t now_ns, size_t *len)
{
    struct row r = {0};

    p->print(&r, obj, ktime_of_ns(now_ns));
    sbuf_str(&r.b, r.n == 0 ? "\"cells\":[]" : "]");
    if (r.conditions) {
        sbuf_str(&r.b, r.conditions);
    }
    *len = r.b.len;
    return r.b.p;
}
