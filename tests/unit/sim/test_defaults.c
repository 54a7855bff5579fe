/*
 * test_defaults.c - sim/defaults: kube-apiserver's v1 defaulting of the workload kinds
 * (Deployment, ReplicaSet, ReplicationController, Job, Service, ServiceAccount,
 * DaemonSet, PodDisruptionBudget and the rbac kinds) in Go's member
 * order, and a Namespace's create strategy, as a create through objects_prepare_create
 * shows them.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cJSON.h>
#include <criterion/criterion.h>

#include "tests/unit/sim/objects_fixture.h"

/* ---- kube-apiserver's defaulting of the workload kinds ------------------------------------ */

/* The JSON sim/proto makes of `kubectl create deployment d1 --image=nginx` (test_proto). */
#define KUBECTL_DEPLOYMENT                                                                         \
    "{\"kind\":\"Deployment\",\"apiVersion\":\"apps/v1\",\"metadata\":{\"name\":\"d1\","           \
    "\"labels\":{\"app\":\"d1\"}},\"spec\":{\"replicas\":1,\"selector\":{\"matchLabels\":{"        \
    "\"app\":\"d1\"}},\"template\":{\"metadata\":{\"labels\":{\"app\":\"d1\"}},\"spec\":{"         \
    "\"containers\":[{\"name\":\"nginx\",\"image\":\"nginx\",\"resources\":{}}]}},"                \
    "\"strategy\":{}},\"status\":{}}"

#define DEFAULTED_POD_SPEC_TAIL                                                                    \
    "\"restartPolicy\":\"Always\",\"terminationGracePeriodSeconds\":30,\"dnsPolicy\":"             \
    "\"ClusterFirst\",\"securityContext\":{},\"schedulerName\":\"default-scheduler\""

#define DEFAULTED_CONTAINER_TAIL                                                                   \
    "\"terminationMessagePath\":\"/dev/termination-log\",\"terminationMessagePolicy\":\"File\""

Test(defaults, deployment_gets_kube_defaults_in_go_order)
{
    char *out;

    cr_assert_eq(create(KUBECTL_DEPLOYMENT, "deployments", "default", NULL, 7, &out, NULL, 0), 0);
    cr_assert_str_eq(
        out,
        "{\"kind\":\"Deployment\",\"apiVersion\":\"apps/v1\",\"metadata\":{\"name\":\"d1\","
        "\"namespace\":\"default\",\"uid\":\"u-1\",\"resourceVersion\":\"7\",\"generation\":1,"
        "\"creationTimestamp\":\"" CREATED "\",\"labels\":{\"app\":\"d1\"}},\"spec\":{"
        "\"replicas\":1,\"selector\":{\"matchLabels\":{\"app\":\"d1\"}},\"template\":{"
        "\"metadata\":{\"labels\":{\"app\":\"d1\"}},\"spec\":{\"containers\":[{\"name\":"
        "\"nginx\",\"image\":\"nginx\",\"resources\":{}," DEFAULTED_CONTAINER_TAIL ","
        "\"imagePullPolicy\":\"Always\"}]," DEFAULTED_POD_SPEC_TAIL "}},\"strategy\":{\"type\":"
        "\"RollingUpdate\",\"rollingUpdate\":{\"maxUnavailable\":\"25%\",\"maxSurge\":\"25%\"}},"
        "\"revisionHistoryLimit\":10,\"progressDeadlineSeconds\":600},\"status\":{}}");
    free(out);
}

Test(defaults, deployment_keeps_what_the_client_set)
{
    char *out;

    /* replicas and revisionHistoryLimit are pointers: 0 is a value; Recreate gets no
     * rollingUpdate; a status sent on create is kept (see defaults.h) */
    cr_assert_eq(create("{\"metadata\":{\"name\":\"d\"},\"status\":{\"readyReplicas\":2},"
                        "\"spec\":{\"replicas\":0,\"revisionHistoryLimit\":0,\"strategy\":{"
                        "\"type\":\"Recreate\"},\"template\":{\"spec\":{\"restartPolicy\":"
                        "\"OnFailure\",\"containers\":[{\"name\":\"c\",\"image\":\"x\","
                        "\"imagePullPolicy\":\"Never\"}]}}}}",
                        "deployments", "ns", NULL, 3, &out, NULL, 0),
                 0);
    cr_assert(strstr(out, "\"spec\":{\"replicas\":0,\"template\":{\"metadata\":{},\"spec\":{"
                          "\"containers\":[{\"name\":\"c\",\"image\":\"x\",\"resources\":{}"
                          "," DEFAULTED_CONTAINER_TAIL ",\"imagePullPolicy\":\"Never\"}],"
                          "\"restartPolicy\":\"OnFailure\",") != NULL,
              "%s", out);
    cr_assert(strstr(out,
                     "\"strategy\":{\"type\":\"Recreate\"},\"revisionHistoryLimit\":0,"
                     "\"progressDeadlineSeconds\":600},\"status\":{\"readyReplicas\":2}}") != NULL,
              "%s", out);
    free(out);
}

/* SetDefaults_Container's pull policy follows parsers.ParseImageName's tag. */
Test(defaults, image_pull_policy_follows_the_tag)
{
    static const struct {
        const char *image;
        const char *policy;
    } cases[] = {
        {"nginx", "Always"},
        {"nginx:latest", "Always"},
        {"nginx:1.27", "IfNotPresent"},
        {"localhost:5000/nginx", "Always"},
        {"localhost:5000/team/nginx:v1", "IfNotPresent"},
        {"nginx@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef",
         "IfNotPresent"},
        {"nginx:latest@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef",
         "Always"},
        {"Registry.Example.com/nginx", "Always"},
        {"Nginx", "IfNotPresent"}, /* does not parse: no tag */
        {"", "IfNotPresent"},
    };

    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        char json[512];
        cJSON *obj;
        const cJSON *c;

        snprintf(json, sizeof(json),
                 "{\"metadata\":{\"name\":\"d\"},\"spec\":{\"template\":{\"spec\":{"
                 "\"containers\":[{\"name\":\"c\",\"image\":\"%s\"}]}}}}",
                 cases[i].image);
        obj = parse(json);
        cr_assert_eq(
            objects_prepare_create(obj, "deployments", "ns", NULL, 1, "u", CREATED, NULL, 0), 0);
        c = cJSON_GetArrayItem(at(obj, "spec", "template", "spec", "containers", NULL), 0);
        cr_assert_str_eq(cJSON_GetObjectItem(c, "imagePullPolicy")->valuestring, cases[i].policy,
                         "%s", cases[i].image);
        cJSON_Delete(obj);
    }
}

/* What SetDefaults_PodSpec and the nested defaulters add inside a template. */
Test(defaults, pod_template_nested_defaults)
{
    cJSON *obj = parse(
        "{\"metadata\":{\"name\":\"r\"},\"spec\":{\"template\":{\"spec\":{"
        "\"initContainers\":[{\"name\":\"i\",\"image\":\"busybox:1.36\"}],"
        "\"containers\":[{\"name\":\"c\",\"image\":\"app:v2\",\"ports\":[{\"containerPort\":80},"
        "{\"containerPort\":53,\"protocol\":\"UDP\"}],\"env\":[{\"name\":\"N\",\"valueFrom\":{"
        "\"fieldRef\":{\"fieldPath\":\"metadata.name\"}}},{\"name\":\"C\",\"valueFrom\":{"
        "\"resourceFieldRef\":{\"resource\":\"limits.cpu\"}}}],\"livenessProbe\":{\"httpGet\":{"
        "\"port\":8080}},\"readinessProbe\":{\"tcpSocket\":{\"port\":80},\"periodSeconds\":5},"
        "\"lifecycle\":{\"preStop\":{\"httpGet\":{\"port\":80,\"path\":\"/stop\"}}}}],"
        "\"volumes\":[{\"name\":\"none\"},{\"name\":\"s\",\"secret\":{\"secretName\":\"x\"}},"
        "{\"name\":\"h\",\"hostPath\":{\"path\":\"/tmp\"}},{\"name\":\"p\",\"projected\":{"
        "\"sources\":[{\"serviceAccountToken\":{\"path\":\"t\"}},{\"downwardAPI\":{\"items\":[{"
        "\"path\":\"n\",\"fieldRef\":{\"fieldPath\":\"metadata.name\"}}]}}]}},{\"name\":\"e\","
        "\"ephemeral\":{\"volumeClaimTemplate\":{\"spec\":{\"accessModes\":[\"ReadWriteOnce\"]}}}},"
        "{\"name\":\"m\",\"configMap\":{\"name\":\"cm\",\"defaultMode\":256}}]}}}}");
    const cJSON *spec;
    const cJSON *c;
    const cJSON *v;

    cr_assert_eq(objects_prepare_create(obj, "replicasets", "ns", NULL, 1, "u", CREATED, NULL, 0),
                 0);
    spec = at(obj, "spec", "template", "spec", NULL);
    c = cJSON_GetArrayItem(at(spec, "containers", NULL), 0);
    cr_assert_str_eq(
        AT_STR(cJSON_GetArrayItem(at(spec, "initContainers", NULL), 0), "imagePullPolicy", NULL),
        "IfNotPresent");
    cr_assert_str_eq(AT_STR(cJSON_GetArrayItem(at(c, "ports", NULL), 0), "protocol", NULL), "TCP");
    cr_assert_str_eq(AT_STR(cJSON_GetArrayItem(at(c, "ports", NULL), 1), "protocol", NULL), "UDP");
    cr_assert_str_eq(AT_STR(cJSON_GetArrayItem(at(c, "env", NULL), 0), "valueFrom", "fieldRef",
                            "apiVersion", NULL),
                     "v1");
    cr_assert_str_eq(AT_STR(cJSON_GetArrayItem(at(c, "env", NULL), 1), "valueFrom",
                            "resourceFieldRef", "divisor", NULL),
                     "0");
    cr_assert_str_eq(AT_STR(c, "livenessProbe", "httpGet", "path", NULL), "/");
    cr_assert_str_eq(AT_STR(c, "livenessProbe", "httpGet", "scheme", NULL), "HTTP");
    cr_assert_eq(AT_NUM(c, "livenessProbe", "timeoutSeconds", NULL), 1);
    cr_assert_eq(AT_NUM(c, "livenessProbe", "periodSeconds", NULL), 10);
    cr_assert_eq(AT_NUM(c, "livenessProbe", "successThreshold", NULL), 1);
    cr_assert_eq(AT_NUM(c, "livenessProbe", "failureThreshold", NULL), 3);
    cr_assert_eq(AT_NUM(c, "readinessProbe", "periodSeconds", NULL), 5);
    cr_assert_str_eq(AT_STR(c, "lifecycle", "preStop", "httpGet", "path", NULL), "/stop");
    cr_assert_str_eq(AT_STR(c, "lifecycle", "preStop", "httpGet", "scheme", NULL), "HTTP");
    v = at(spec, "volumes", NULL);
    cr_assert(cJSON_IsObject(at(cJSON_GetArrayItem(v, 0), "emptyDir", NULL)));
    cr_assert_eq(AT_NUM(cJSON_GetArrayItem(v, 1), "secret", "defaultMode", NULL), 420);
    cr_assert(cJSON_IsString(at(cJSON_GetArrayItem(v, 2), "hostPath", "type", NULL)));
    cr_assert_str_eq(AT_STR(cJSON_GetArrayItem(v, 2), "hostPath", "type", NULL), "");
    cr_assert_eq(AT_NUM(cJSON_GetArrayItem(v, 3), "projected", "defaultMode", NULL), 420);
    cr_assert_eq(
        AT_NUM(cJSON_GetArrayItem(at(cJSON_GetArrayItem(v, 3), "projected", "sources", NULL), 0),
               "serviceAccountToken", "expirationSeconds", NULL),
        3600);
    cr_assert_str_eq(
        AT_STR(cJSON_GetArrayItem(
                   at(cJSON_GetArrayItem(at(cJSON_GetArrayItem(v, 3), "projected", "sources", NULL),
                                         1),
                      "downwardAPI", "items", NULL),
                   0),
               "fieldRef", "apiVersion", NULL),
        "v1");
    cr_assert_str_eq(AT_STR(cJSON_GetArrayItem(v, 4), "ephemeral", "volumeClaimTemplate", "spec",
                            "volumeMode", NULL),
                     "Filesystem");
    cr_assert_eq(AT_NUM(cJSON_GetArrayItem(v, 5), "configMap", "defaultMode", NULL), 256);
    /* a ReplicaSet: replicas 1, status {"replicas":0} */
    cr_assert_eq(AT_NUM(obj, "spec", "replicas", NULL), 1);
    cr_assert_eq(AT_NUM(obj, "status", "replicas", NULL), 0);
    cJSON_Delete(obj);
}

/* The JSON sim/proto makes of `kubectl create job j1 --image=busybox`. */
#define KUBECTL_JOB                                                                                \
    "{\"kind\":\"Job\",\"apiVersion\":\"batch/v1\",\"metadata\":{\"name\":\"j1\"},\"spec\":{"      \
    "\"template\":{\"metadata\":{},\"spec\":{\"containers\":[{\"name\":\"j1\",\"image\":"          \
    "\"busybox\",\"resources\":{}}],\"restartPolicy\":\"Never\"}}},\"status\":{}}"

Test(defaults, job_gets_defaults_selector_and_labels)
{
    char *out;

    cr_assert_eq(create(KUBECTL_JOB, "jobs", "default", NULL, 9, &out, NULL, 0), 0);
    cr_assert_str_eq(
        out,
        "{\"kind\":\"Job\",\"apiVersion\":\"batch/v1\",\"metadata\":{\"name\":\"j1\","
        "\"namespace\":\"default\",\"uid\":\"u-1\",\"resourceVersion\":\"9\",\"generation\":1,"
        "\"creationTimestamp\":\"" CREATED "\",\"labels\":{\"batch.kubernetes.io/controller-uid\":"
        "\"u-1\",\"batch.kubernetes.io/job-name\":\"j1\",\"controller-uid\":\"u-1\","
        "\"job-name\":\"j1\"}},\"spec\":{\"parallelism\":1,\"completions\":1,\"backoffLimit\":6,"
        "\"selector\":{\"matchLabels\":{\"batch.kubernetes.io/controller-uid\":\"u-1\"}},"
        "\"manualSelector\":false,\"template\":{\"metadata\":{\"labels\":{"
        "\"batch.kubernetes.io/controller-uid\":\"u-1\",\"batch.kubernetes.io/job-name\":"
        "\"j1\",\"controller-uid\":\"u-1\",\"job-name\":\"j1\"}},\"spec\":{\"containers\":[{"
        "\"name\":\"j1\",\"image\":\"busybox\",\"resources\":{}," DEFAULTED_CONTAINER_TAIL ","
        "\"imagePullPolicy\":\"Always\"}],\"restartPolicy\":\"Never\","
        "\"terminationGracePeriodSeconds\":30,\"dnsPolicy\":\"ClusterFirst\","
        "\"securityContext\":{},\"schedulerName\":\"default-scheduler\"}},\"completionMode\":"
        "\"NonIndexed\",\"suspend\":false,\"podReplacementPolicy\":\"TerminatingOrFailed\"},"
        "\"status\":{}}");
    free(out);
}

Test(defaults, job_defaults_respect_what_was_sent)
{
    cJSON *obj;

    /* completions alone: parallelism 1, completions kept; per-index backoff: MaxInt32; a
     * pod failure policy: Failed and pattern status True; own labels kept; a sent selector
     * (kube would refuse it without manualSelector) is kept and nothing is generated */
    obj = parse("{\"metadata\":{\"name\":\"j\",\"labels\":{\"team\":\"a\"}},\"spec\":{"
                "\"completions\":4,\"backoffLimitPerIndex\":1,\"completionMode\":\"Indexed\","
                "\"podFailurePolicy\":{\"rules\":[{\"action\":\"Ignore\",\"onPodConditions\":[{"
                "\"type\":\"DisruptionTarget\"}]}]},\"selector\":{\"matchLabels\":{\"x\":\"y\"}},"
                "\"template\":{\"metadata\":{\"labels\":{\"x\":\"y\"}},\"spec\":{"
                "\"restartPolicy\":\"Never\",\"containers\":[{\"name\":\"c\",\"image\":"
                "\"b\"}]}}}}");
    cr_assert_eq(objects_prepare_create(obj, "jobs", "ns", NULL, 1, "uid-9", CREATED, NULL, 0), 0);
    cr_assert_eq(AT_NUM(obj, "spec", "completions", NULL), 4);
    cr_assert_eq(AT_NUM(obj, "spec", "parallelism", NULL), 1);
    cr_assert_eq(AT_NUM(obj, "spec", "backoffLimit", NULL), 2147483647);
    cr_assert_str_eq(AT_STR(obj, "spec", "completionMode", NULL), "Indexed");
    cr_assert_str_eq(AT_STR(obj, "spec", "podReplacementPolicy", NULL), "Failed");
    cr_assert_str_eq(
        AT_STR(cJSON_GetArrayItem(
                   at(cJSON_GetArrayItem(at(obj, "spec", "podFailurePolicy", "rules", NULL), 0),
                      "onPodConditions", NULL),
                   0),
               "status", NULL),
        "True");
    cr_assert_eq(cJSON_GetArraySize(at(obj, "spec", "selector", "matchLabels", NULL)), 1);
    cr_assert_eq(cJSON_GetArraySize(at(obj, "spec", "template", "metadata", "labels", NULL)), 1);
    cr_assert_eq(cJSON_GetArraySize(at(obj, "metadata", "labels", NULL)), 1);
    cr_assert_str_eq(AT_STR(obj, "metadata", "labels", "team", NULL), "a");
    cJSON_Delete(obj);

    /* parallelism alone: no completions; manualSelector true: no generated selector */
    obj = parse("{\"metadata\":{\"name\":\"j\"},\"spec\":{\"parallelism\":3,\"manualSelector\":"
                "true,\"template\":{\"spec\":{\"containers\":[{\"name\":\"c\",\"image\":"
                "\"b\"}]}}}}");
    cr_assert_eq(objects_prepare_create(obj, "jobs", "ns", NULL, 1, "uid-9", CREATED, NULL, 0), 0);
    cr_assert_null(at(obj, "spec", "completions", NULL));
    cr_assert_null(at(obj, "spec", "selector", NULL));
    cr_assert_null(at(obj, "spec", "template", "metadata", "labels", NULL));
    cr_assert_null(at(obj, "metadata", "labels", NULL));
    cJSON_Delete(obj);
}

Test(defaults, replicationcontroller_selector_and_labels_from_the_template)
{
    char *out;

    cr_assert_eq(create("{\"metadata\":{\"name\":\"rc\"},\"spec\":{\"template\":{\"metadata\":{"
                        "\"labels\":{\"b\":\"2\",\"a\":\"1\"}},\"spec\":{\"containers\":[{"
                        "\"name\":\"c\",\"image\":\"x:1\"}]}}}}",
                        "replicationcontrollers", "ns", NULL, 2, &out, NULL, 0),
                 0);
    cr_assert(strstr(out, "\"labels\":{\"a\":\"1\",\"b\":\"2\"}},\"spec\":{\"replicas\":1,"
                          "\"selector\":{\"a\":\"1\",\"b\":\"2\"},\"template\":{\"metadata\":{"
                          "\"labels\":{\"a\":\"1\",\"b\":\"2\"}},") != NULL,
              "%s", out);
    cr_assert(strstr(out, "\"status\":{\"replicas\":0}}") != NULL, "%s", out);
    free(out);
}

Test(defaults, serviceaccount_secret_references_keep_only_the_name)
{
    char *out;

    cr_assert_eq(create("{\"metadata\":{\"name\":\"sa\"},\"secrets\":[{\"kind\":\"Secret\","
                        "\"name\":\"tok\",\"uid\":\"x\"},{\"namespace\":\"other\"}]}",
                        "serviceaccounts", "ns", NULL, 2, &out, NULL, 0),
                 0);
    cr_assert_str_eq(out, "{\"kind\":\"ServiceAccount\",\"apiVersion\":\"v1\",\"metadata\":{"
                          "\"name\":\"sa\",\"namespace\":\"ns\",\"uid\":\"u-1\","
                          "\"resourceVersion\":\"2\",\"creationTimestamp\":\"" CREATED "\"},"
                          "\"secrets\":[{\"name\":\"tok\"},{}]}");
    free(out);
}

Test(defaults, create_namespace_as_its_strategy_does)
{
    char *out;

    /* the body kubectl create namespace sends (tests/data/kubectl-create-namespace.pb) */
    cr_assert_eq(create("{\"kind\":\"Namespace\",\"apiVersion\":\"v1\",\"metadata\":{\"name\":"
                        "\"ns1\"},\"spec\":{},\"status\":{}}",
                        "namespaces", NULL, NULL, 3, &out, NULL, 0),
                 0);
    cr_assert_str_eq(out, "{\"kind\":\"Namespace\",\"apiVersion\":\"v1\",\"metadata\":{\"name\":"
                          "\"ns1\",\"uid\":\"u-1\",\"resourceVersion\":\"3\",\"creationTimestamp\":"
                          "\"" CREATED "\",\"labels\":{\"kubernetes.io/metadata.name\":\"ns1\"}},"
                          "\"spec\":{\"finalizers\":[\"kubernetes\"]},\"status\":{\"phase\":"
                          "\"Active\"}}");
    free(out);
    /* an existing kubernetes finalizer is not repeated, others are kept */
    cr_assert_eq(create("{\"metadata\":{\"name\":\"n\"},\"spec\":{\"finalizers\":[\"x\","
                        "\"kubernetes\"]}}",
                        "namespaces", NULL, NULL, 3, &out, NULL, 0),
                 0);
    cr_assert(strstr(out, "\"finalizers\":[\"x\",\"kubernetes\"]") != NULL, "%s", out);
    free(out);
}

Test(defaults, workload_without_spec_gets_one_and_generation_1)
{
    static const char *const workloads[][2] = {{"deployments", "Deployment"},
                                               {"replicasets", "ReplicaSet"},
                                               {"replicationcontrollers", "ReplicationController"},
                                               {"jobs", "Job"}};

    for (size_t i = 0; i < sizeof(workloads) / sizeof(workloads[0]); i++) {
        cJSON *obj = parse("{\"metadata\":{\"name\":\"w\",\"generation\":7}}");

        /* the strategies set generation 1 on create whatever was sent, spec or not */
        cr_assert_eq(
            objects_prepare_create(obj, workloads[i][0], "ns", NULL, 1, "u", CREATED, NULL, 0), 0,
            "%s", workloads[i][0]);
        cr_assert_str_eq(AT_STR(obj, "kind", NULL), workloads[i][1]);
        cr_assert(cJSON_IsObject(at(obj, "spec", NULL)), "%s", workloads[i][0]);
        cr_assert_eq(AT_NUM(obj, "metadata", "generation", NULL), 1, "%s", workloads[i][0]);
        cJSON_Delete(obj);
    }
}

/* apps/v1 SetDefaults_DaemonSet and the strategy's annotation; on the host network a container
 * port is also its host port (defaultHostNetworkPorts). */
Test(defaults, daemonset_gets_kube_defaults_in_go_order)
{
    char *out;

    cr_assert_eq(create("{\"apiVersion\":\"apps/v1\",\"kind\":\"DaemonSet\",\"metadata\":{"
                        "\"name\":\"ds\"},\"spec\":{\"selector\":{\"matchLabels\":{\"a\":\"b\"}},"
                        "\"template\":{\"metadata\":{\"labels\":{\"a\":\"b\"}},\"spec\":{"
                        "\"hostNetwork\":true,\"containers\":[{\"image\":\"kwp:dev\",\"name\":"
                        "\"kwp\",\"ports\":[{\"containerPort\":10262,\"name\":\"https\"}]}]}}}}",
                        "daemonsets", "kwp-system", NULL, 5, &out, NULL, 0),
                 0);
    cr_assert_str_eq(
        out,
        "{\"kind\":\"DaemonSet\",\"apiVersion\":\"apps/v1\",\"metadata\":{\"name\":\"ds\","
        "\"namespace\":\"kwp-system\",\"uid\":\"u-1\",\"resourceVersion\":\"5\",\"generation\":1,"
        "\"creationTimestamp\":\"" CREATED "\",\"annotations\":{"
        "\"deprecated.daemonset.template.generation\":\"1\"}},\"spec\":{\"selector\":{"
        "\"matchLabels\":{\"a\":\"b\"}},\"template\":{\"metadata\":{\"labels\":{\"a\":\"b\"}},"
        "\"spec\":{\"containers\":[{\"name\":\"kwp\",\"image\":\"kwp:dev\",\"ports\":[{\"name\":"
        "\"https\",\"hostPort\":10262,\"containerPort\":10262,\"protocol\":\"TCP\"}],"
        "\"resources\":{}," DEFAULTED_CONTAINER_TAIL ",\"imagePullPolicy\":\"IfNotPresent\"}],"
        "\"restartPolicy\":\"Always\",\"terminationGracePeriodSeconds\":30,\"dnsPolicy\":"
        "\"ClusterFirst\",\"hostNetwork\":true,\"securityContext\":{},\"schedulerName\":"
        "\"default-scheduler\"}},\"updateStrategy\":{\"type\":\"RollingUpdate\","
        "\"rollingUpdate\":{\"maxUnavailable\":1,\"maxSurge\":0}},\"revisionHistoryLimit\":10},"
        "\"status\":{\"currentNumberScheduled\":0,\"numberMisscheduled\":0,"
        "\"desiredNumberScheduled\":0,\"numberReady\":0}}");
    free(out);
}

Test(defaults, poddisruptionbudget_prints_its_status_counts)
{
    char *out;

    cr_assert_eq(create("{\"apiVersion\":\"policy/v1\",\"kind\":\"PodDisruptionBudget\","
                        "\"metadata\":{\"name\":\"p\"},\"spec\":{\"selector\":{\"matchLabels\":{"
                        "\"a\":\"b\"}},\"maxUnavailable\":1}}",
                        "poddisruptionbudgets", "ns", NULL, 4, &out, NULL, 0),
                 0);
    cr_assert(strstr(out, "\"generation\":1,") != NULL, "%s", out);
    cr_assert(strstr(out, "\"spec\":{\"selector\":{\"matchLabels\":{\"a\":\"b\"}},"
                          "\"maxUnavailable\":1},\"status\":{\"disruptionsAllowed\":0,"
                          "\"currentHealthy\":0,\"desiredHealthy\":0,\"expectedPods\":0}}") != NULL,
              "%s", out);
    free(out);
}

/* rbac/v1 SetDefaults_Subject; a (Cluster)Role has no spec, so no generation. */
Test(defaults, rbac_subjects_get_their_api_group_and_rules_print_null)
{
    char *out;

    cr_assert_eq(create("{\"apiVersion\":\"rbac.authorization.k8s.io/v1\",\"kind\":"
                        "\"ClusterRoleBinding\",\"metadata\":{\"name\":\"b\"},\"roleRef\":{"
                        "\"name\":\"r\",\"kind\":\"ClusterRole\",\"apiGroup\":"
                        "\"rbac.authorization.k8s.io\"},\"subjects\":[{\"kind\":"
                        "\"ServiceAccount\",\"name\":\"kwp\",\"namespace\":\"kwp-system\"},{"
                        "\"kind\":\"Group\",\"name\":\"devs\"},{\"kind\":\"User\",\"name\":\"u\","
                        "\"apiGroup\":\"x\"}]}",
                        "clusterrolebindings", NULL, NULL, 4, &out, NULL, 0),
                 0);
    cr_assert(strstr(out, "\"generation\"") == NULL, "%s", out);
    cr_assert(strstr(out,
                     "\"subjects\":[{\"kind\":\"ServiceAccount\",\"name\":\"kwp\","
                     "\"namespace\":\"kwp-system\"},{\"kind\":\"Group\",\"apiGroup\":"
                     "\"rbac.authorization.k8s.io\",\"name\":\"devs\"},{\"kind\":\"User\","
                     "\"apiGroup\":\"x\",\"name\":\"u\"}],\"roleRef\":{\"apiGroup\":"
                     "\"rbac.authorization.k8s.io\",\"kind\":\"ClusterRole\",\"name\":\"r\"}}") !=
                  NULL,
              "%s", out);
    free(out);
    cr_assert_eq(create("{\"apiVersion\":\"rbac.authorization.k8s.io/v1\",\"kind\":\"ClusterRole\","
                        "\"metadata\":{\"name\":\"r\"}}",
                        "clusterroles", NULL, NULL, 4, &out, NULL, 0),
                 0);
    cr_assert(strstr(out, "\"rules\":null}") != NULL, "%s", out);
    free(out);
    cr_assert_eq(create("{\"kind\":\"Role\",\"metadata\":{\"name\":\"r\"},\"rules\":[{"
                        "\"resources\":[\"pods\"],\"apiGroups\":[\"\"],\"verbs\":[\"get\"]}]}",
                        "roles", "ns", NULL, 4, &out, NULL, 0),
                 0);
    cr_assert(strstr(out, "\"rules\":[{\"verbs\":[\"get\"],\"apiGroups\":[\"\"],"
                          "\"resources\":[\"pods\"]}]}") != NULL,
              "%s", out);
    free(out);
}
