/*
 * test_apires.c - proxy/apires: the built-in kinds table (identity, scope, short names,
 * selectable fields), the BOOKMARK bodies (valid JSON objects once put after metadata, with
 * what Go prints for an empty object of the kind), lookups, `--resource` specs
 * (apires_parse_spec: built-ins, custom resources, scopes, rejects) and apires_new's naming.
 */
#include <ctype.h>
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cJSON.h>
#include <criterion/criterion.h>

#include "cache/resource.h"
#include "proxy/apires.h"
#include "proxy/log.h"

/* Every built-in kind: group, version, plural, kind, namespaced, short names. */
static const struct {
    const char *group, *version, *plural, *kind;
    bool namespaced;
    const char *short_names;
} builtins[] = {
    {"", "v1", "pods", "Pod", true, "po"},
    {"", "v1", "configmaps", "ConfigMap", true, "cm"},
    {"", "v1", "secrets", "Secret", true, ""},
    {"", "v1", "services", "Service", true, "svc"},
    {"", "v1", "namespaces", "Namespace", false, "ns"},
    {"", "v1", "nodes", "Node", false, "no"},
    {"", "v1", "events", "Event", true, "ev"},
    {"", "v1", "serviceaccounts", "ServiceAccount", true, "sa"},
    {"", "v1", "replicationcontrollers", "ReplicationController", true, "rc"},
    {"batch", "v1", "jobs", "Job", true, ""},
    {"certificates.k8s.io", "v1", "certificatesigningrequests", "CertificateSigningRequest", false,
     "csr"},
    {"apps", "v1", "deployments", "Deployment", true, "deploy"},
    {"apps", "v1", "replicasets", "ReplicaSet", true, "rs"},
    {"apps", "v1", "daemonsets", "DaemonSet", true, "ds"},
    {"policy", "v1", "poddisruptionbudgets", "PodDisruptionBudget", true, "pdb"},
    {"rbac.authorization.k8s.io", "v1", "clusterroles", "ClusterRole", false, ""},
    {"rbac.authorization.k8s.io", "v1", "clusterrolebindings", "ClusterRoleBinding", false, ""},
    {"rbac.authorization.k8s.io", "v1", "roles", "Role", true, ""},
    {"rbac.authorization.k8s.io", "v1", "rolebindings", "RoleBinding", true, ""},
};

#define N_BUILTINS (sizeof(builtins) / sizeof(builtins[0]))

/* The BOOKMARK object of <k>: kind, apiVersion, metadata with an rv, then its body. */
static cJSON *bookmark_object(const struct apires_kind *k)
{
    char buf[4096];
    int n = snprintf(buf, sizeof(buf),
                     "{\"kind\":\"%s\",\"apiVersion\":\"%s%s%s\",\"metadata\":{"
                     "\"resourceVersion\":\"12\"}%s}",
                     k->kind, k->group, k->group[0] ? "/" : "", k->version, k->bookmark_body);

    cr_assert(n > 0 && (size_t)n < sizeof(buf));
    return cJSON_Parse(buf);
}

/* ---- the table ----------------------------------------------------------------------- */

Test(apires, the_table_holds_exactly_the_builtin_kinds)
{
    size_t n = 0;
    const struct apires_kind *t = apires_builtin_table(&n);

    cr_assert_eq(n, N_BUILTINS);
    for (size_t i = 0; i < N_BUILTINS; i++) {
        const struct apires_kind *k =
            apires_builtin(builtins[i].group, builtins[i].version, builtins[i].plural);
        char list_kind[128];

        cr_assert_not_null(k, "%s/%s/%s", builtins[i].group, builtins[i].version,
                           builtins[i].plural);
        cr_assert(k >= t && k < t + n, "%s is not a table entry", builtins[i].plural);
        cr_assert_str_eq(k->kind, builtins[i].kind);
        snprintf(list_kind, sizeof(list_kind), "%sList", builtins[i].kind);
        cr_assert_str_eq(k->list_kind, list_kind);
        cr_assert_eq(k->namespaced, builtins[i].namespaced, "%s", k->plural);
        cr_assert(k->builtin, "%s", k->plural);
        cr_assert_str_eq(k->short_names, builtins[i].short_names, "%s", k->plural);
        /* the singular is the kind in lower case */
        cr_assert_eq(strlen(k->singular), strlen(k->kind), "%s", k->plural);
        for (size_t c = 0; k->kind[c] != '\0'; c++) {
            cr_assert_eq(k->singular[c], tolower((unsigned char)k->kind[c]), "%s", k->plural);
        }
    }
}

Test(apires, lookups_need_group_version_and_plural_to_match)
{
    cr_assert_null(apires_builtin("", "v1", "deployments")); /* wrong group */
    cr_assert_null(apires_builtin("apps", "v1beta1", "deployments"));
    cr_assert_null(apires_builtin("apps", "v1", "pods"));
    cr_assert_null(apires_builtin("", "v1", "Pods"));
    cr_assert_null(apires_builtin("", "v1", "pod")); /* singular */
    cr_assert_null(apires_builtin("", "v1", "po"));  /* short name */
    cr_assert_null(apires_builtin("", "v1", "widgets"));
    cr_assert_null(apires_builtin("", "", ""));
}

Test(apires, selectable_fields_are_terminated_and_known)
{
    size_t n = 0;
    const struct apires_kind *t = apires_builtin_table(&n);
    const struct apires_kind *pods = apires_builtin("", "v1", "pods");
    const struct apires_kind *secrets = apires_builtin("", "v1", "secrets");
    const struct apires_kind *jobs = apires_builtin("batch", "v1", "jobs");
    bool node_name = false;

    for (size_t i = 0; i < n; i++) {
        size_t f = 0;

        while (f < APIRES_MAX_FIELDS && t[i].fields[f] != NULL) {
            cr_assert_neq(t[i].fields[f][0], '\0', "%s field %zu", t[i].plural, f);
            f++;
        }
        cr_assert_lt(f, APIRES_MAX_FIELDS, "%s fields not NULL-terminated", t[i].plural);
    }
    for (size_t f = 0; pods->fields[f] != NULL; f++) {
        node_name = node_name || strcmp(pods->fields[f], "spec.nodeName") == 0;
    }
    cr_assert(node_name, "pods must select on spec.nodeName (kubelets do)");
    cr_assert_str_eq(secrets->fields[0], "type");
    cr_assert_null(secrets->fields[1]);
    /* batch's converter names the kind in its rejects; the core one does not */
    cr_assert_str_eq(jobs->field_reject_kind, "Job");
    cr_assert_null(pods->field_reject_kind);
}

/* ---- BOOKMARK bodies --------------------------------------------------------------------- */

Test(apires, every_bookmark_body_makes_a_valid_object)
{
    size_t n = 0;
    const struct apires_kind *t = apires_builtin_table(&n);

    for (size_t i = 0; i < n; i++) {
        cJSON *obj = bookmark_object(&t[i]);
        const cJSON *meta;

        cr_assert(t[i].bookmark_body[0] == '\0' || t[i].bookmark_body[0] == ',',
                  "%s body must start with ','", t[i].plural);
        cr_assert_not_null(obj, "%s bookmark body does not parse: %s", t[i].plural,
                           t[i].bookmark_body);
        meta = cJSON_GetObjectItemCaseSensitive(obj, "metadata");
        cr_assert_str_eq(cJSON_GetObjectItemCaseSensitive(meta, "resourceVersion")->valuestring,
                         "12");
        /* no member of the body repeats kind, apiVersion, metadata or another */
        for (const cJSON *c = obj->child; c != NULL; c = c->next) {
            for (const cJSON *d = c->next; d != NULL; d = d->next) {
                cr_assert_str_neq(c->string, d->string, "%s repeats %s", t[i].plural, c->string);
            }
        }
        cJSON_Delete(obj);
    }
}

Test(apires, bookmark_bodies_are_what_go_prints_for_an_empty_object)
{
    static const struct {
        const char *group, *plural, *body;
    } want[] = {
        {"", "pods", ",\"spec\":{\"containers\":null},\"status\":{}"},
        {"", "services", ",\"spec\":{},\"status\":{\"loadBalancer\":{}}"},
        {"", "configmaps", ""},
        {"", "secrets", ""},
        {"", "serviceaccounts", ""},
        {"", "namespaces", ",\"spec\":{},\"status\":{}"},
        {"", "replicationcontrollers", ",\"spec\":{},\"status\":{\"replicas\":0}"},
        {"apps", "deployments",
         ",\"spec\":{\"selector\":null,\"template\":{\"metadata\":{},\"spec\":{"
         "\"containers\":null}},\"strategy\":{}},\"status\":{}"},
        {"apps", "replicasets",
         ",\"spec\":{\"selector\":null,\"template\":{\"metadata\":{},\"spec\":{"
         "\"containers\":null}}},\"status\":{\"replicas\":0}"},
        {"batch", "jobs",
         ",\"spec\":{\"template\":{\"metadata\":{},\"spec\":{\"containers\":null}}},"
         "\"status\":{}"},
        {"apps", "daemonsets",
         ",\"spec\":{\"selector\":null,\"template\":{\"metadata\":{},\"spec\":{"
         "\"containers\":null}},\"updateStrategy\":{}},\"status\":{\"currentNumberScheduled\":0,"
         "\"numberMisscheduled\":0,\"desiredNumberScheduled\":0,\"numberReady\":0}"},
        {"policy", "poddisruptionbudgets",
         ",\"spec\":{},\"status\":{\"disruptionsAllowed\":0,\"currentHealthy\":0,"
         "\"desiredHealthy\":0,\"expectedPods\":0}"},
        {"rbac.authorization.k8s.io", "clusterroles", ",\"rules\":null"},
        {"rbac.authorization.k8s.io", "roles", ",\"rules\":null"},
        {"rbac.authorization.k8s.io", "clusterrolebindings",
         ",\"roleRef\":{\"apiGroup\":\"\",\"kind\":\"\",\"name\":\"\"}"},
        {"rbac.authorization.k8s.io", "rolebindings",
         ",\"roleRef\":{\"apiGroup\":\"\",\"kind\":\"\",\"name\":\"\"}"},
    };

    for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
        const struct apires_kind *k = apires_builtin(want[i].group, "v1", want[i].plural);

        cr_assert_not_null(k);
        cr_assert_str_eq(k->bookmark_body, want[i].body, "%s", want[i].plural);
    }
}

/* ---- --resource specs ------------------------------------------------------------------- */

Test(apires, a_spec_naming_a_builtin_gets_its_table_entry)
{
    static const char *const specs[] = {"v1/pods", "/v1/pods", "v1/pods:cluster",
                                        "v1/pods:namespaced"};
    struct apires_kind k;
    char *owned = (char *)"unset";

    for (size_t i = 0; i < sizeof(specs) / sizeof(specs[0]); i++) {
        cr_assert_eq(apires_parse_spec(specs[i], &k, &owned), 0, "%s", specs[i]);
        cr_assert_null(owned, "%s", specs[i]);
        cr_assert_str_eq(k.kind, "Pod");
        cr_assert(k.builtin);
        cr_assert(k.namespaced, "%s: a built-in keeps its own scope", specs[i]);
        cr_assert_eq(k.bookmark_body, apires_builtin("", "v1", "pods")->bookmark_body);
    }
    cr_assert_eq(apires_parse_spec("apps/v1/deployments", &k, &owned), 0);
    cr_assert_str_eq(k.kind, "Deployment");
    cr_assert_str_eq(k.group, "apps");
    cr_assert_eq(apires_parse_spec("v1/namespaces:namespaced", &k, &owned), 0);
    cr_assert_not(k.namespaced);
}

Test(apires, a_custom_resource_gets_kind_singular_and_list_kind_from_its_plural)
{
    static const struct {
        const char *spec, *group, *version, *plural, *singular, *kind, *list_kind;
        bool namespaced;
    } cases[] = {
        {"example.com/v1/widgets", "example.com", "v1", "widgets", "widget", "Widget", "WidgetList",
         true},
        {"example.com/v1alpha1/widgets:cluster", "example.com", "v1alpha1", "widgets", "widget",
         "Widget", "WidgetList", false},
        {"example.com/v1/widgets:namespaced", "example.com", "v1", "widgets", "widget", "Widget",
         "WidgetList", true},
        {"ops.example.com/v2/foo-bars", "ops.example.com", "v2", "foo-bars", "foo-bar", "FooBar",
         "FooBarList", true},
        {"x.io/v1/a.b.cs", "x.io", "v1", "a.b.cs", "a.b.c", "ABC", "ABCList", true},
        {"example.com/v1/data", "example.com", "v1", "data", "data", "Data", "DataList", true},
        {"example.com/v1/s", "example.com", "v1", "s", "s", "S", "SList", true},
        {"v1/widgets", "", "v1", "widgets", "widget", "Widget", "WidgetList", true},
        {"/v2/gadgets:cluster", "", "v2", "gadgets", "gadget", "Gadget", "GadgetList", false},
        /* a Kind given: the CRD's; singular its lower case */
        {"monitoring.coreos.com/v1/servicemonitors:namespaced:ServiceMonitor",
         "monitoring.coreos.com", "v1", "servicemonitors", "servicemonitor", "ServiceMonitor",
         "ServiceMonitorList", true},
        {"x.io/v1/ps:cluster:Policy2", "x.io", "v1", "ps", "policy2", "Policy2", "Policy2List",
         false},
        {"x.io/v1/s:cluster:ALongerKindThanThePlural", "x.io", "v1", "s",
         "alongerkindthantheplural", "ALongerKindThanThePlural", "ALongerKindThanThePluralList",
         false},
    };

    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct apires_kind k;
        char *owned = NULL;

        memset(&k, 0xa5, sizeof(k));
        cr_assert_eq(apires_parse_spec(cases[i].spec, &k, &owned), 0, "%s", cases[i].spec);
        cr_assert_not_null(owned, "%s", cases[i].spec);
        cr_assert_str_eq(k.group, cases[i].group, "%s", cases[i].spec);
        cr_assert_str_eq(k.version, cases[i].version, "%s", cases[i].spec);
        cr_assert_str_eq(k.plural, cases[i].plural, "%s", cases[i].spec);
        cr_assert_str_eq(k.singular, cases[i].singular, "%s", cases[i].spec);
        cr_assert_str_eq(k.kind, cases[i].kind, "%s", cases[i].spec);
        cr_assert_str_eq(k.list_kind, cases[i].list_kind, "%s", cases[i].spec);
        cr_assert_eq(k.namespaced, cases[i].namespaced, "%s", cases[i].spec);
        cr_assert_not(k.builtin, "%s", cases[i].spec);
        cr_assert_str_eq(k.short_names, "");
        cr_assert_str_eq(k.bookmark_body, "", "custom resources are unstructured: metadata only");
        cr_assert_null(k.fields[0]);
        cr_assert_null(k.field_reject_kind, "%s", cases[i].spec);
        free(owned);
    }
}

Test(apires, malformed_specs_are_rejected)
{
    static const char *const bad[] = {
        "pods",                    /* no version */
        "",                        /* nothing */
        "/",                       /* nothing */
        "v1/",                     /* no plural */
        "/v1/",                    /* no plural */
        "example.com//widgets",    /* no version */
        "example.com/v1/",         /* no plural */
        "v1/Pods",                 /* upper case */
        "Example.com/v1/widgets",  /* upper case group */
        "example.com/V1/widgets",  /* upper case version */
        "ex_ample.com/v1/widgets", /* '_' */
        "example.com/v1/wid gets", /* space */
        "example.com/v1/a/b",      /* a fourth segment */
        "example.com/v1/widgets:", /* empty scope */
        "example.com/v1/widgets:global", "example.com/v1/widgets:Cluster",
        "example.com/v1/widgets:clusterclusterclu", /* longer than any scope */
        "example.com/v1/widgets:namespaced:",       /* empty Kind */
        "example.com/v1/widgets:namespaced:widget", /* lower-case Kind */
        "example.com/v1/widgets:namespaced:Wid-get", "example.com/v1/widgets:namespaced:A:B",
        "example.com/v1/widgets:Widget", /* a Kind without the scope */
        "example.com/v1/"
        "widgets:cluster:Aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
        /* 64 */
        "example.com/v1/aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", /* 64 */
    };

    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        struct apires_kind k;
        char *owned = (char *)"unset";

        cr_assert_eq(apires_parse_spec(bad[i], &k, &owned), -EINVAL, "\"%s\" accepted", bad[i]);
        cr_assert_null(owned, "\"%s\" left an allocation", bad[i]);
    }
}

Test(apires, a_63_character_plural_is_the_longest)
{
    struct apires_kind k;
    char *owned = NULL;
    char spec[128];

    snprintf(spec, sizeof(spec), "example.com/v1/%.63s",
             "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb");
    cr_assert_eq(apires_parse_spec(spec, &k, &owned), 0, "%s", spec);
    cr_assert_eq(strlen(k.plural), 63);
    free(owned);
}

/* ---- apires_new ------------------------------------------------------------------------- */

Test(apires, new_names_the_cache_plural_dot_group_and_sets_the_api_version)
{
    struct ring_opts ring = {.min_cap = 4, .max_cap = 16, .fresh_ms = 0};
    struct apires_kind custom;
    char *owned = NULL;
    int64_t before = clock_mono_ms();
    struct apires *pods = apires_new(apires_builtin("", "v1", "pods"), NULL, &ring);
    struct apires *deps = apires_new(apires_builtin("apps", "v1", "deployments"), NULL, &ring);
    struct apires *cr;

    cr_assert_str_eq(pods->api_version, "v1");
    cr_assert_str_eq(resource_name(pods->res), "pods");
    cr_assert_eq(resource_user(pods->res), pods);
    cr_assert_str_eq(deps->api_version, "apps/v1");
    cr_assert_str_eq(resource_name(deps->res), "deployments.apps");
    cr_assert_str_eq(deps->kind.kind, "Deployment");
    cr_assert_geq(pods->created_ms, before);
    cr_assert_leq(pods->created_ms, clock_mono_ms());
    cr_assert_eq(atomic_load(&pods->ctr.lists), 0);

    /* a runtime-described kind: apires_new takes the spec's buffer and frees it */
    cr_assert_eq(apires_parse_spec("example.com/v1beta2/widgets:cluster", &custom, &owned), 0);
    cr_assert_not_null(owned);
    cr = apires_new(&custom, owned, &ring);
    cr_assert_str_eq(cr->api_version, "example.com/v1beta2");
    cr_assert_str_eq(resource_name(cr->res), "widgets.example.com");
    cr_assert_str_eq(cr->kind.kind, "Widget");
    cr_assert_not(cr->kind.namespaced);
    apires_free(cr);
    apires_free(deps);
    apires_free(pods);
    apires_free(NULL);
}
