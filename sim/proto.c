/*
 * proto.c - a table-driven, bounds-checked decoder for the Kubernetes protobuf envelope and
 * the core/v1, apps/v1 and batch/v1 messages kubectl POSTs (see proto.h).
 *
 * Each message is a table of fields in Go struct order (which is the JSON key order); the
 * decoder walks the wire once, keeps the latest value per field in a slot (maps and repeated
 * fields accumulate), then emits the slots in table order. Every read goes through struct
 * pbuf, which never moves past its end; lengths are checked against what remains before use.
 * Only known sub-messages are entered, so nesting is bounded by the schema, and by
 * PROTO_MAX_DEPTH as a guard. The same tables drive proto_order, which reorders JSON the
 * simulator changed (defaults, allocations) into the order Go would print.
 */
#include "sim/proto.h"

#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include <cJSON.h>

#include "cache/bug.h"
#include "cache/gotext.h"
#include "cache/sbuf.h"

#define PROTO_MAGIC "k8s\0"
#define PROTO_MAGIC_LEN 4
/* The widest message in the tables is PodSpec (41 fields). */
#define PMSG_MAX_FIELDS 48

/* protobuf wire types */
enum wire_type { WT_VARINT = 0, WT_I64 = 1, WT_LEN = 2, WT_SGROUP = 3, WT_EGROUP = 4, WT_I32 = 5 };

/* A read cursor over p[0..len); off never exceeds len. */
struct pbuf {
    const uint8_t *p;
    size_t len;
    size_t off;
};

/* Per-call state: where errors go and how many items the body has used. */
struct pctx {
    char *err;
    size_t err_len;
    size_t items;
};

enum pf_type {
    PF_STRING = 0,   /* string -> JSON string, UTF-8 repaired */
    PF_BOOL,         /* *bool -> true/false whenever present */
    PF_INT64,        /* int64 -> number */
    PF_TIME,         /* metav1.Time -> RFC 3339 string, zero time omitted */
    PF_MSG,          /* embedded message -> object */
    PF_RAWJSON,      /* FieldsV1 {1 raw bytes} -> the JSON value those bytes hold */
    PF_MAP_STRING,   /* map<string,string> -> object */
    PF_MAP_BYTES,    /* map<string,bytes> -> object of base64 strings */
    PF_REP_STRING,   /* repeated string -> array */
    PF_REP_MSG,      /* repeated message -> array of objects */
    PF_INT32,        /* int32 -> number (the varint's low 32 bits, as Go reads it) */
    PF_BOOL_OMIT,    /* bool with omitempty -> true, false left out */
    PF_INTORSTR,     /* intstr.IntOrString {1 type, 2 intVal, 3 strVal} -> number or string */
    PF_QUANTITY,     /* resource.Quantity {1 string} -> its string, "0" when empty */
    PF_MAP_QUANTITY, /* map<string,Quantity> -> object of strings */
    PF_REP_INT32,    /* repeated int32, packed or not -> array of numbers */
    PF_REP_INT64,    /* repeated int64, packed or not -> array of numbers */
    PF_INLINE,       /* embedded struct with `json:",inline"`: its members join the parent's */
};

/* Go prints the zero value: the field has no omitempty (e.g. OwnerReference.name). */
#define PF_KEEP_EMPTY 1u

struct pmsg;

struct pfield {
    uint32_t num;     /* protobuf field number */
    const char *json; /* JSON member name */
    enum pf_type type;
    const struct pmsg *msg; /* PF_MSG / PF_REP_MSG element type */
    unsigned flags;
};

struct pmsg {
    const char *name; /* for error messages */
    const struct pfield *fields;
    size_t n_fields;
};

#define PMSG(var, label, ...)                                                                      \
    static const struct pfield var##_fields[] = {__VA_ARGS__};                                     \
    static const struct pmsg var = {label, var##_fields,                                           \
                                    sizeof(var##_fields) / sizeof(var##_fields[0])}

/* ---- schema (field numbers from the generated.proto files; order = Go struct order) ---- */

/* k8s.io/apimachinery/pkg/runtime TypeMeta: note apiVersion=1, kind=2 (meta/v1's is swapped). */
PMSG(m_typemeta, "TypeMeta", {1, "apiVersion", PF_STRING, NULL, 0},
     {2, "kind", PF_STRING, NULL, 0});

PMSG(m_owner_ref, "OwnerReference", {5, "apiVersion", PF_STRING, NULL, PF_KEEP_EMPTY},
     {1, "kind", PF_STRING, NULL, PF_KEEP_EMPTY}, {3, "name", PF_STRING, NULL, PF_KEEP_EMPTY},
     {4, "uid", PF_STRING, NULL, PF_KEEP_EMPTY}, {6, "controller", PF_BOOL, NULL, 0},
     {7, "blockOwnerDeletion", PF_BOOL, NULL, 0});

PMSG(m_managed_fields, "ManagedFieldsEntry", {1, "manager", PF_STRING, NULL, 0},
     {2, "operation", PF_STRING, NULL, 0}, {3, "apiVersion", PF_STRING, NULL, 0},
     {4, "time", PF_TIME, NULL, 0}, {6, "fieldsType", PF_STRING, NULL, 0},
     {7, "fieldsV1", PF_RAWJSON, NULL, 0}, {8, "subresource", PF_STRING, NULL, 0});

PMSG(m_object_meta, "ObjectMeta", {1, "name", PF_STRING, NULL, 0},
     {2, "generateName", PF_STRING, NULL, 0}, {3, "namespace", PF_STRING, NULL, 0},
     {4, "selfLink", PF_STRING, NULL, 0}, {5, "uid", PF_STRING, NULL, 0},
     {6, "resourceVersion", PF_STRING, NULL, 0}, {7, "generation", PF_INT64, NULL, 0},
     {8, "creationTimestamp", PF_TIME, NULL, 0}, {9, "deletionTimestamp", PF_TIME, NULL, 0},
     {10, "deletionGracePeriodSeconds", PF_INT64, NULL, PF_KEEP_EMPTY},
     {11, "labels", PF_MAP_STRING, NULL, 0}, {12, "annotations", PF_MAP_STRING, NULL, 0},
     {13, "ownerReferences", PF_REP_MSG, &m_owner_ref, 0},
     {14, "finalizers", PF_REP_STRING, NULL, 0},
     {17, "managedFields", PF_REP_MSG, &m_managed_fields, 0});

PMSG(m_configmap, "ConfigMap", {1, "metadata", PF_MSG, &m_object_meta, 0},
     {4, "immutable", PF_BOOL, NULL, 0}, {2, "data", PF_MAP_STRING, NULL, 0},
     {3, "binaryData", PF_MAP_BYTES, NULL, 0});

PMSG(m_secret, "Secret", {1, "metadata", PF_MSG, &m_object_meta, 0},
     {5, "immutable", PF_BOOL, NULL, 0}, {2, "data", PF_MAP_BYTES, NULL, 0},
     {4, "stringData", PF_MAP_STRING, NULL, 0}, {3, "type", PF_STRING, NULL, 0});

PMSG(m_ns_spec, "NamespaceSpec", {1, "finalizers", PF_REP_STRING, NULL, 0});

PMSG(m_ns_condition, "NamespaceCondition", {1, "type", PF_STRING, NULL, PF_KEEP_EMPTY},
     {2, "status", PF_STRING, NULL, PF_KEEP_EMPTY}, {4, "lastTransitionTime", PF_TIME, NULL, 0},
     {5, "reason", PF_STRING, NULL, 0}, {6, "message", PF_STRING, NULL, 0});

PMSG(m_ns_status, "NamespaceStatus", {1, "phase", PF_STRING, NULL, 0},
     {2, "conditions", PF_REP_MSG, &m_ns_condition, 0});

PMSG(m_namespace, "Namespace", {1, "metadata", PF_MSG, &m_object_meta, 0},
     {2, "spec", PF_MSG, &m_ns_spec, 0}, {3, "status", PF_MSG, &m_ns_status, 0});

/* ---- workload kinds: core/v1 Service, ServiceAccount, ReplicationController, the pod
 * template they carry, apps/v1 Deployment and ReplicaSet, batch/v1 Job ------------------------
 *
 * Table order is the order of the messages' fields in generated.proto, which go-to-protobuf
 * writes in Go struct order. Flags follow the Go field: F_*K (PF_KEEP_EMPTY) for a pointer or
 * a field without omitempty, printed whenever it is on the wire; F_FLAG for a plain
 * `bool ...,omitempty` (false is left out); F_BOOL for *bool. A few alpha fields whose Go
 * tags are not settled are left out of the tables (SecurityContext.ulimits,
 * PodSpec.workloadRef): like any unknown field they are skipped. */
#define F_STR(n, j)                                                                                \
    {                                                                                              \
        n, j, PF_STRING, NULL, 0                                                                   \
    }
#define F_STRK(n, j)                                                                               \
    {                                                                                              \
        n, j, PF_STRING, NULL, PF_KEEP_EMPTY                                                       \
    }
#define F_I32(n, j)                                                                                \
    {                                                                                              \
        n, j, PF_INT32, NULL, 0                                                                    \
    }
#define F_I32K(n, j)                                                                               \
    {                                                                                              \
        n, j, PF_INT32, NULL, PF_KEEP_EMPTY                                                        \
    }
#define F_I64(n, j)                                                                                \
    {                                                                                              \
        n, j, PF_INT64, NULL, 0                                                                    \
    }
#define F_I64K(n, j)                                                                               \
    {                                                                                              \
        n, j, PF_INT64, NULL, PF_KEEP_EMPTY                                                        \
    }
#define F_BOOL(n, j)                                                                               \
    {                                                                                              \
        n, j, PF_BOOL, NULL, 0                                                                     \
    }
#define F_FLAG(n, j)                                                                               \
    {                                                                                              \
        n, j, PF_BOOL_OMIT, NULL, 0                                                                \
    }
#define F_TIME(n, j)                                                                               \
    {                                                                                              \
        n, j, PF_TIME, NULL, 0                                                                     \
    }
#define F_IOS(n, j)                                                                                \
    {                                                                                              \
        n, j, PF_INTORSTR, NULL, 0                                                                 \
    }
#define F_QTY(n, j)                                                                                \
    {                                                                                              \
        n, j, PF_QUANTITY, NULL, 0                                                                 \
    }
#define F_MAP(n, j)                                                                                \
    {                                                                                              \
        n, j, PF_MAP_STRING, NULL, 0                                                               \
    }
#define F_QMAP(n, j)                                                                               \
    {                                                                                              \
        n, j, PF_MAP_QUANTITY, NULL, 0                                                             \
    }
#define F_STRS(n, j)                                                                               \
    {                                                                                              \
        n, j, PF_REP_STRING, NULL, 0                                                               \
    }
#define F_I32S(n, j)                                                                               \
    {                                                                                              \
        n, j, PF_REP_INT32, NULL, 0                                                                \
    }
#define F_I64S(n, j)                                                                               \
    {                                                                                              \
        n, j, PF_REP_INT64, NULL, 0                                                                \
    }
#define F_MSG(n, j, m)                                                                             \
    {                                                                                              \
        n, j, PF_MSG, &m, 0                                                                        \
    }
#define F_MSGS(n, j, m)                                                                            \
    {                                                                                              \
        n, j, PF_REP_MSG, &m, 0                                                                    \
    }
#define F_INLINE(n, go, m)                                                                         \
    {                                                                                              \
        n, go, PF_INLINE, &m, 0                                                                    \
    }
/* A message sharing another's field table (EphemeralContainerCommon is Container's fields;
 * PodAntiAffinity is PodAffinity's). */
#define PMSG_ALIAS(var, label, of)                                                                 \
    static const struct pmsg var = {label, of##_fields,                                            \
                                    sizeof(of##_fields) / sizeof(of##_fields[0])}

/* meta/v1 */
PMSG(m_label_selector_req, "LabelSelectorRequirement", F_STRK(1, "key"), F_STRK(2, "operator"),
     F_STRS(3, "values"));
PMSG(m_label_selector, "LabelSelector", F_MAP(1, "matchLabels"),
     F_MSGS(2, "matchExpressions", m_label_selector_req));
PMSG(m_condition, "Condition", F_STRK(1, "type"), F_STRK(2, "status"),
     F_I64(3, "observedGeneration"), F_TIME(4, "lastTransitionTime"), F_STRK(5, "reason"),
     F_STRK(6, "message"));

/* core/v1: references and selectors */
PMSG(m_local_ref, "LocalObjectReference", F_STR(1, "name"));
PMSG(m_object_ref, "ObjectReference", F_STR(1, "kind"), F_STR(2, "namespace"), F_STR(3, "name"),
     F_STR(4, "uid"), F_STR(5, "apiVersion"), F_STR(6, "resourceVersion"), F_STR(7, "fieldPath"));
PMSG(m_typed_local_ref, "TypedLocalObjectReference", F_STRK(1, "apiGroup"), F_STRK(2, "kind"),
     F_STRK(3, "name"));
PMSG(m_typed_ref, "TypedObjectReference", F_STRK(1, "apiGroup"), F_STRK(2, "kind"),
     F_STRK(3, "name"), F_STRK(4, "namespace"));
PMSG(m_key_to_path, "KeyToPath", F_STRK(1, "key"), F_STRK(2, "path"), F_I32K(3, "mode"));
PMSG(m_field_selector, "ObjectFieldSelector", F_STR(1, "apiVersion"), F_STRK(2, "fieldPath"));
PMSG(m_resource_selector, "ResourceFieldSelector", F_STR(1, "containerName"), F_STRK(2, "resource"),
     F_QTY(3, "divisor"));
PMSG(m_cm_key_selector, "ConfigMapKeySelector", F_INLINE(1, "LocalObjectReference", m_local_ref),
     F_STRK(2, "key"), F_BOOL(3, "optional"));
PMSG(m_secret_key_selector, "SecretKeySelector", F_INLINE(1, "LocalObjectReference", m_local_ref),
     F_STRK(2, "key"), F_BOOL(3, "optional"));
PMSG(m_file_key_selector, "FileKeySelector", F_STRK(1, "volumeName"), F_STRK(2, "path"),
     F_STRK(3, "key"), F_BOOL(4, "optional"));

/* core/v1: containers */
PMSG(m_env_var_source, "EnvVarSource", F_MSG(1, "fieldRef", m_field_selector),
     F_MSG(2, "resourceFieldRef", m_resource_selector),
     F_MSG(3, "configMapKeyRef", m_cm_key_selector),
     F_MSG(4, "secretKeyRef", m_secret_key_selector), F_MSG(5, "fileKeyRef", m_file_key_selector));
PMSG(m_env_var, "EnvVar", F_STRK(1, "name"), F_STR(2, "value"),
     F_MSG(3, "valueFrom", m_env_var_source));
PMSG(m_cm_env_source, "ConfigMapEnvSource", F_INLINE(1, "LocalObjectReference", m_local_ref),
     F_BOOL(2, "optional"));
PMSG(m_secret_env_source, "SecretEnvSource", F_INLINE(1, "LocalObjectReference", m_local_ref),
     F_BOOL(2, "optional"));
PMSG(m_env_from, "EnvFromSource", F_STR(1, "prefix"), F_MSG(2, "configMapRef", m_cm_env_source),
     F_MSG(3, "secretRef", m_secret_env_source));
PMSG(m_container_port, "ContainerPort", F_STR(1, "name"), F_I32(2, "hostPort"),
     F_I32K(3, "containerPort"), F_STR(4, "protocol"), F_STR(5, "hostIP"));
PMSG(m_resource_claim, "ResourceClaim", F_STRK(1, "name"), F_STR(2, "request"));
PMSG(m_resources, "ResourceRequirements", F_QMAP(1, "limits"), F_QMAP(2, "requests"),
     F_MSGS(3, "claims", m_resource_claim));
PMSG(m_resize_policy, "ContainerResizePolicy", F_STRK(1, "resourceName"),
     F_STRK(2, "restartPolicy"));
PMSG(m_restart_rule_codes, "ContainerRestartRuleOnExitCodes", F_STR(1, "operator"),
     F_I32S(2, "values"));
PMSG(m_restart_rule, "ContainerRestartRule", F_STR(1, "action"),
     F_MSG(2, "exitCodes", m_restart_rule_codes));
PMSG(m_volume_mount, "VolumeMount", F_STRK(1, "name"), F_FLAG(2, "readOnly"),
     F_STRK(7, "recursiveReadOnly"), F_STRK(3, "mountPath"), F_STR(4, "subPath"),
     F_STRK(5, "mountPropagation"), F_STR(6, "subPathExpr"));
PMSG(m_volume_device, "VolumeDevice", F_STRK(1, "name"), F_STRK(2, "devicePath"));
PMSG(m_exec_action, "ExecAction", F_STRS(1, "command"));
PMSG(m_http_header, "HTTPHeader", F_STRK(1, "name"), F_STRK(2, "value"));
PMSG(m_http_get, "HTTPGetAction", F_STR(1, "path"), F_IOS(2, "port"), F_STR(3, "host"),
     F_STR(4, "scheme"), F_MSGS(5, "httpHeaders", m_http_header));
PMSG(m_tcp_socket, "TCPSocketAction", F_IOS(1, "port"), F_STR(2, "host"));
PMSG(m_grpc_action, "GRPCAction", F_I32K(1, "port"), F_STRK(2, "service"));
PMSG(m_sleep_action, "SleepAction", F_I64K(1, "seconds"));
PMSG(m_probe_handler, "ProbeHandler", F_MSG(1, "exec", m_exec_action),
     F_MSG(2, "httpGet", m_http_get), F_MSG(3, "tcpSocket", m_tcp_socket),
     F_MSG(4, "grpc", m_grpc_action));
PMSG(m_probe, "Probe", F_INLINE(1, "ProbeHandler", m_probe_handler),
     F_I32(2, "initialDelaySeconds"), F_I32(3, "timeoutSeconds"), F_I32(4, "periodSeconds"),
     F_I32(5, "successThreshold"), F_I32(6, "failureThreshold"),
     F_I64K(7, "terminationGracePeriodSeconds"));
PMSG(m_lifecycle_handler, "LifecycleHandler", F_MSG(1, "exec", m_exec_action),
     F_MSG(2, "httpGet", m_http_get), F_MSG(3, "tcpSocket", m_tcp_socket),
     F_MSG(4, "sleep", m_sleep_action));
PMSG(m_lifecycle, "Lifecycle", F_MSG(1, "postStart", m_lifecycle_handler),
     F_MSG(2, "preStop", m_lifecycle_handler), F_STRK(3, "stopSignal"));
PMSG(m_capabilities, "Capabilities", F_STRS(1, "add"), F_STRS(2, "drop"));
PMSG(m_selinux_options, "SELinuxOptions", F_STR(1, "user"), F_STR(2, "role"), F_STR(3, "type"),
     F_STR(4, "level"));
PMSG(m_windows_options, "WindowsSecurityContextOptions", F_STRK(1, "gmsaCredentialSpecName"),
     F_STRK(2, "gmsaCredentialSpec"), F_STRK(3, "runAsUserName"), F_BOOL(4, "hostProcess"));
PMSG(m_seccomp_profile, "SeccompProfile", F_STRK(1, "type"), F_STRK(2, "localhostProfile"));
PMSG(m_apparmor_profile, "AppArmorProfile", F_STRK(1, "type"), F_STRK(2, "localhostProfile"));
PMSG(m_security_context, "SecurityContext", F_MSG(1, "capabilities", m_capabilities),
     F_BOOL(2, "privileged"), F_MSG(3, "seLinuxOptions", m_selinux_options),
     F_MSG(10, "windowsOptions", m_windows_options), F_I64K(4, "runAsUser"),
     F_I64K(8, "runAsGroup"), F_BOOL(5, "runAsNonRoot"), F_BOOL(6, "readOnlyRootFilesystem"),
     F_BOOL(7, "allowPrivilegeEscalation"), F_STRK(9, "procMount"),
     F_MSG(11, "seccompProfile", m_seccomp_profile),
     F_MSG(12, "appArmorProfile", m_apparmor_profile));
PMSG(m_container, "Container", F_STRK(1, "name"), F_STR(2, "image"), F_STRS(3, "command"),
     F_STRS(4, "args"), F_STR(5, "workingDir"), F_MSGS(6, "ports", m_container_port),
     F_MSGS(19, "envFrom", m_env_from), F_MSGS(7, "env", m_env_var),
     F_MSG(8, "resources", m_resources), F_MSGS(23, "resizePolicy", m_resize_policy),
     F_STRK(24, "restartPolicy"), F_MSGS(25, "restartPolicyRules", m_restart_rule),
     F_MSGS(9, "volumeMounts", m_volume_mount), F_MSGS(21, "volumeDevices", m_volume_device),
     F_MSG(10, "livenessProbe", m_probe), F_MSG(11, "readinessProbe", m_probe),
     F_MSG(22, "startupProbe", m_probe), F_MSG(12, "lifecycle", m_lifecycle),
     F_STR(13, "terminationMessagePath"), F_STR(20, "terminationMessagePolicy"),
     F_STR(14, "imagePullPolicy"), F_MSG(15, "securityContext", m_security_context),
     F_FLAG(16, "stdin"), F_FLAG(17, "stdinOnce"), F_FLAG(18, "tty"));
PMSG_ALIAS(m_ephemeral_common, "EphemeralContainerCommon", m_container);
PMSG(m_ephemeral_container, "EphemeralContainer",
     F_INLINE(1, "EphemeralContainerCommon", m_ephemeral_common), F_STR(2, "targetContainerName"));

/* core/v1: volumes (every VolumeSource member, the deprecated in-tree plugins included) */
PMSG(m_host_path, "HostPathVolumeSource", F_STRK(1, "path"), F_STRK(2, "type"));
PMSG(m_empty_dir, "EmptyDirVolumeSource", F_STR(1, "medium"), F_QTY(2, "sizeLimit"));
PMSG(m_gce_pd, "GCEPersistentDiskVolumeSource", F_STRK(1, "pdName"), F_STR(2, "fsType"),
     F_I32(3, "partition"), F_FLAG(4, "readOnly"));
PMSG(m_aws_ebs, "AWSElasticBlockStoreVolumeSource", F_STRK(1, "volumeID"), F_STR(2, "fsType"),
     F_I32(3, "partition"), F_FLAG(4, "readOnly"));
PMSG(m_git_repo, "GitRepoVolumeSource", F_STRK(1, "repository"), F_STR(2, "revision"),
     F_STR(3, "directory"));
PMSG(m_secret_volume, "SecretVolumeSource", F_STR(1, "secretName"),
     F_MSGS(2, "items", m_key_to_path), F_I32K(3, "defaultMode"), F_BOOL(4, "optional"));
PMSG(m_nfs, "NFSVolumeSource", F_STRK(1, "server"), F_STRK(2, "path"), F_FLAG(3, "readOnly"));
PMSG(m_iscsi, "ISCSIVolumeSource", F_STRK(1, "targetPortal"), F_STRK(2, "iqn"), F_I32K(3, "lun"),
     F_STR(4, "iscsiInterface"), F_STR(5, "fsType"), F_FLAG(6, "readOnly"), F_STRS(7, "portals"),
     F_FLAG(8, "chapAuthDiscovery"), F_FLAG(11, "chapAuthSession"),
     F_MSG(10, "secretRef", m_local_ref), F_STRK(12, "initiatorName"));
PMSG(m_glusterfs, "GlusterfsVolumeSource", F_STRK(1, "endpoints"), F_STRK(2, "path"),
     F_FLAG(3, "readOnly"));
PMSG(m_pvc_source, "PersistentVolumeClaimVolumeSource", F_STRK(1, "claimName"),
     F_FLAG(2, "readOnly"));
PMSG(m_rbd, "RBDVolumeSource", F_STRS(1, "monitors"), F_STRK(2, "image"), F_STR(3, "fsType"),
     F_STR(4, "pool"), F_STR(5, "user"), F_STR(6, "keyring"), F_MSG(7, "secretRef", m_local_ref),
     F_FLAG(8, "readOnly"));
PMSG(m_flex_volume, "FlexVolumeSource", F_STRK(1, "driver"), F_STR(2, "fsType"),
     F_MSG(3, "secretRef", m_local_ref), F_FLAG(4, "readOnly"), F_MAP(5, "options"));
PMSG(m_cinder, "CinderVolumeSource", F_STRK(1, "volumeID"), F_STR(2, "fsType"),
     F_FLAG(3, "readOnly"), F_MSG(4, "secretRef", m_local_ref));
PMSG(m_cephfs, "CephFSVolumeSource", F_STRS(1, "monitors"), F_STR(2, "path"), F_STR(3, "user"),
     F_STR(4, "secretFile"), F_MSG(5, "secretRef", m_local_ref), F_FLAG(6, "readOnly"));
PMSG(m_flocker, "FlockerVolumeSource", F_STR(1, "datasetName"), F_STR(2, "datasetUUID"));
PMSG(m_downward_file, "DownwardAPIVolumeFile", F_STRK(1, "path"),
     F_MSG(2, "fieldRef", m_field_selector), F_MSG(3, "resourceFieldRef", m_resource_selector),
     F_I32K(4, "mode"));
PMSG(m_downward_volume, "DownwardAPIVolumeSource", F_MSGS(1, "items", m_downward_file),
     F_I32K(2, "defaultMode"));
PMSG(m_fc, "FCVolumeSource", F_STRS(1, "targetWWNs"), F_I32K(2, "lun"), F_STR(3, "fsType"),
     F_FLAG(4, "readOnly"), F_STRS(5, "wwids"));
PMSG(m_azure_file, "AzureFileVolumeSource", F_STRK(1, "secretName"), F_STRK(2, "shareName"),
     F_FLAG(3, "readOnly"));
PMSG(m_cm_volume, "ConfigMapVolumeSource", F_INLINE(1, "LocalObjectReference", m_local_ref),
     F_MSGS(2, "items", m_key_to_path), F_I32K(3, "defaultMode"), F_BOOL(4, "optional"));
PMSG(m_vsphere, "VsphereVirtualDiskVolumeSource", F_STRK(1, "volumePath"), F_STR(2, "fsType"),
     F_STR(3, "storagePolicyName"), F_STR(4, "storagePolicyID"));
PMSG(m_quobyte, "QuobyteVolumeSource", F_STRK(1, "registry"), F_STRK(2, "volume"),
     F_FLAG(3, "readOnly"), F_STR(4, "user"), F_STR(5, "group"), F_STR(6, "tenant"));
PMSG(m_azure_disk, "AzureDiskVolumeSource", F_STRK(1, "diskName"), F_STRK(2, "diskURI"),
     F_STRK(3, "cachingMode"), F_STRK(4, "fsType"), F_BOOL(5, "readOnly"), F_STRK(6, "kind"));
PMSG(m_photon, "PhotonPersistentDiskVolumeSource", F_STRK(1, "pdID"), F_STR(2, "fsType"));
PMSG(m_secret_projection, "SecretProjection", F_INLINE(1, "LocalObjectReference", m_local_ref),
     F_MSGS(2, "items", m_key_to_path), F_BOOL(4, "optional"));
PMSG(m_downward_projection, "DownwardAPIProjection", F_MSGS(1, "items", m_downward_file));
PMSG(m_cm_projection, "ConfigMapProjection", F_INLINE(1, "LocalObjectReference", m_local_ref),
     F_MSGS(2, "items", m_key_to_path), F_BOOL(4, "optional"));
PMSG(m_token_projection, "ServiceAccountTokenProjection", F_STR(1, "audience"),
     F_I64K(2, "expirationSeconds"), F_STRK(3, "path"));
PMSG(m_trust_bundle_projection, "ClusterTrustBundleProjection", F_STRK(1, "name"),
     F_STRK(2, "signerName"), F_MSG(3, "labelSelector", m_label_selector), F_BOOL(5, "optional"),
     F_STRK(4, "path"));
PMSG(m_pod_cert_projection, "PodCertificateProjection", F_STR(1, "signerName"), F_STR(2, "keyType"),
     F_I32K(3, "maxExpirationSeconds"), F_STR(4, "credentialBundlePath"), F_STR(5, "keyPath"),
     F_STR(6, "certificateChainPath"), F_MAP(7, "userAnnotations"));
PMSG(m_volume_projection, "VolumeProjection", F_MSG(1, "secret", m_secret_projection),
     F_MSG(2, "downwardAPI", m_downward_projection), F_MSG(3, "configMap", m_cm_projection),
     F_MSG(4, "serviceAccountToken", m_token_projection),
     F_MSG(5, "clusterTrustBundle", m_trust_bundle_projection),
     F_MSG(6, "podCertificate", m_pod_cert_projection));
PMSG(m_projected, "ProjectedVolumeSource", F_MSGS(1, "sources", m_volume_projection),
     F_I32K(2, "defaultMode"));
PMSG(m_portworx, "PortworxVolumeSource", F_STRK(1, "volumeID"), F_STR(2, "fsType"),
     F_FLAG(3, "readOnly"));
PMSG(m_scaleio, "ScaleIOVolumeSource", F_STRK(1, "gateway"), F_STRK(2, "system"),
     F_MSG(3, "secretRef", m_local_ref), F_FLAG(4, "sslEnabled"), F_STR(5, "protectionDomain"),
     F_STR(6, "storagePool"), F_STR(7, "storageMode"), F_STR(8, "volumeName"), F_STR(9, "fsType"),
     F_FLAG(10, "readOnly"));
PMSG(m_storageos, "StorageOSVolumeSource", F_STR(1, "volumeName"), F_STR(2, "volumeNamespace"),
     F_STR(3, "fsType"), F_FLAG(4, "readOnly"), F_MSG(5, "secretRef", m_local_ref));
PMSG(m_csi_volume, "CSIVolumeSource", F_STRK(1, "driver"), F_BOOL(2, "readOnly"),
     F_STRK(3, "fsType"), F_MAP(4, "volumeAttributes"),
     F_MSG(5, "nodePublishSecretRef", m_local_ref));
PMSG(m_volume_resources, "VolumeResourceRequirements", F_QMAP(1, "limits"), F_QMAP(2, "requests"));
PMSG(m_pvc_spec, "PersistentVolumeClaimSpec", F_STRS(1, "accessModes"),
     F_MSG(4, "selector", m_label_selector), F_MSG(2, "resources", m_volume_resources),
     F_STR(3, "volumeName"), F_STRK(5, "storageClassName"), F_STRK(6, "volumeMode"),
     F_MSG(7, "dataSource", m_typed_local_ref), F_MSG(8, "dataSourceRef", m_typed_ref),
     F_STRK(9, "volumeAttributesClassName"));
PMSG(m_pvc_template, "PersistentVolumeClaimTemplate", F_MSG(1, "metadata", m_object_meta),
     F_MSG(2, "spec", m_pvc_spec));
PMSG(m_ephemeral_volume, "EphemeralVolumeSource", F_MSG(1, "volumeClaimTemplate", m_pvc_template));
PMSG(m_image_volume, "ImageVolumeSource", F_STR(1, "reference"), F_STR(2, "pullPolicy"));
PMSG(m_volume_source, "VolumeSource", F_MSG(1, "hostPath", m_host_path),
     F_MSG(2, "emptyDir", m_empty_dir), F_MSG(3, "gcePersistentDisk", m_gce_pd),
     F_MSG(4, "awsElasticBlockStore", m_aws_ebs), F_MSG(5, "gitRepo", m_git_repo),
     F_MSG(6, "secret", m_secret_volume), F_MSG(7, "nfs", m_nfs), F_MSG(8, "iscsi", m_iscsi),
     F_MSG(9, "glusterfs", m_glusterfs), F_MSG(10, "persistentVolumeClaim", m_pvc_source),
     F_MSG(11, "rbd", m_rbd), F_MSG(12, "flexVolume", m_flex_volume), F_MSG(13, "cinder", m_cinder),
     F_MSG(14, "cephfs", m_cephfs), F_MSG(15, "flocker", m_flocker),
     F_MSG(16, "downwardAPI", m_downward_volume), F_MSG(17, "fc", m_fc),
     F_MSG(18, "azureFile", m_azure_file), F_MSG(19, "configMap", m_cm_volume),
     F_MSG(20, "vsphereVolume", m_vsphere), F_MSG(21, "quobyte", m_quobyte),
     F_MSG(22, "azureDisk", m_azure_disk), F_MSG(23, "photonPersistentDisk", m_photon),
     F_MSG(26, "projected", m_projected), F_MSG(24, "portworxVolume", m_portworx),
     F_MSG(25, "scaleIO", m_scaleio), F_MSG(27, "storageos", m_storageos),
     F_MSG(28, "csi", m_csi_volume), F_MSG(29, "ephemeral", m_ephemeral_volume),
     F_MSG(30, "image", m_image_volume));
PMSG(m_volume, "Volume", F_STRK(1, "name"), F_INLINE(2, "VolumeSource", m_volume_source));

/* core/v1: scheduling */
PMSG(m_node_selector_req, "NodeSelectorRequirement", F_STRK(1, "key"), F_STRK(2, "operator"),
     F_STRS(3, "values"));
PMSG(m_node_selector_term, "NodeSelectorTerm", F_MSGS(1, "matchExpressions", m_node_selector_req),
     F_MSGS(2, "matchFields", m_node_selector_req));
PMSG(m_node_selector, "NodeSelector", F_MSGS(1, "nodeSelectorTerms", m_node_selector_term));
PMSG(m_preferred_term, "PreferredSchedulingTerm", F_I32K(1, "weight"),
     F_MSG(2, "preference", m_node_selector_term));
PMSG(m_node_affinity, "NodeAffinity",
     F_MSG(1, "requiredDuringSchedulingIgnoredDuringExecution", m_node_selector),
     F_MSGS(2, "preferredDuringSchedulingIgnoredDuringExecution", m_preferred_term));
PMSG(m_pod_affinity_term, "PodAffinityTerm", F_MSG(1, "labelSelector", m_label_selector),
     F_STRS(2, "namespaces"), F_STRK(3, "topologyKey"),
     F_MSG(4, "namespaceSelector", m_label_selector), F_STRS(5, "matchLabelKeys"),
     F_STRS(6, "mismatchLabelKeys"));
PMSG(m_weighted_term, "WeightedPodAffinityTerm", F_I32K(1, "weight"),
     F_MSG(2, "podAffinityTerm", m_pod_affinity_term));
PMSG(m_pod_affinity, "PodAffinity",
     F_MSGS(1, "requiredDuringSchedulingIgnoredDuringExecution", m_pod_affinity_term),
     F_MSGS(2, "preferredDuringSchedulingIgnoredDuringExecution", m_weighted_term));
PMSG_ALIAS(m_pod_anti_affinity, "PodAntiAffinity", m_pod_affinity);
PMSG(m_affinity, "Affinity", F_MSG(1, "nodeAffinity", m_node_affinity),
     F_MSG(2, "podAffinity", m_pod_affinity), F_MSG(3, "podAntiAffinity", m_pod_anti_affinity));
PMSG(m_toleration, "Toleration", F_STR(1, "key"), F_STR(2, "operator"), F_STR(3, "value"),
     F_STR(4, "effect"), F_I64K(5, "tolerationSeconds"));
PMSG(m_host_alias, "HostAlias", F_STRK(1, "ip"), F_STRS(2, "hostnames"));
PMSG(m_dns_option, "PodDNSConfigOption", F_STR(1, "name"), F_STRK(2, "value"));
PMSG(m_dns_config, "PodDNSConfig", F_STRS(1, "nameservers"), F_STRS(2, "searches"),
     F_MSGS(3, "options", m_dns_option));
PMSG(m_readiness_gate, "PodReadinessGate", F_STRK(1, "conditionType"));
PMSG(m_spread_constraint, "TopologySpreadConstraint", F_I32K(1, "maxSkew"),
     F_STRK(2, "topologyKey"), F_STRK(3, "whenUnsatisfiable"),
     F_MSG(4, "labelSelector", m_label_selector), F_I32K(5, "minDomains"),
     F_STRK(6, "nodeAffinityPolicy"), F_STRK(7, "nodeTaintsPolicy"), F_STRS(8, "matchLabelKeys"));
PMSG(m_pod_os, "PodOS", F_STRK(1, "name"));
PMSG(m_scheduling_gate, "PodSchedulingGate", F_STRK(1, "name"));
PMSG(m_pod_resource_claim, "PodResourceClaim", F_STRK(1, "name"), F_STRK(3, "resourceClaimName"),
     F_STRK(4, "resourceClaimTemplateName"));
PMSG(m_sysctl, "Sysctl", F_STRK(1, "name"), F_STRK(2, "value"));
PMSG(m_pod_security_context, "PodSecurityContext", F_MSG(1, "seLinuxOptions", m_selinux_options),
     F_MSG(8, "windowsOptions", m_windows_options), F_I64K(2, "runAsUser"), F_I64K(6, "runAsGroup"),
     F_BOOL(3, "runAsNonRoot"), F_I64S(4, "supplementalGroups"),
     F_STRK(12, "supplementalGroupsPolicy"), F_I64K(5, "fsGroup"), F_MSGS(7, "sysctls", m_sysctl),
     F_STRK(9, "fsGroupChangePolicy"), F_MSG(10, "seccompProfile", m_seccomp_profile),
     F_MSG(11, "appArmorProfile", m_apparmor_profile), F_STRK(13, "seLinuxChangePolicy"));
PMSG(m_pod_spec, "PodSpec", F_MSGS(1, "volumes", m_volume),
     F_MSGS(20, "initContainers", m_container), F_MSGS(2, "containers", m_container),
     F_MSGS(34, "ephemeralContainers", m_ephemeral_container), F_STR(3, "restartPolicy"),
     F_I64K(4, "terminationGracePeriodSeconds"), F_I64K(5, "activeDeadlineSeconds"),
     F_STR(6, "dnsPolicy"), F_MAP(7, "nodeSelector"), F_STR(8, "serviceAccountName"),
     F_STR(9, "serviceAccount"), F_BOOL(21, "automountServiceAccountToken"), F_STR(10, "nodeName"),
     F_FLAG(11, "hostNetwork"), F_FLAG(12, "hostPID"), F_FLAG(13, "hostIPC"),
     F_BOOL(27, "shareProcessNamespace"), F_MSG(14, "securityContext", m_pod_security_context),
     F_MSGS(15, "imagePullSecrets", m_local_ref), F_STR(16, "hostname"), F_STR(17, "subdomain"),
     F_MSG(18, "affinity", m_affinity), F_STR(19, "schedulerName"),
     F_MSGS(22, "tolerations", m_toleration), F_MSGS(23, "hostAliases", m_host_alias),
     F_STR(24, "priorityClassName"), F_I32K(25, "priority"), F_MSG(26, "dnsConfig", m_dns_config),
     F_MSGS(28, "readinessGates", m_readiness_gate), F_STRK(29, "runtimeClassName"),
     F_BOOL(30, "enableServiceLinks"), F_STRK(31, "preemptionPolicy"), F_QMAP(32, "overhead"),
     F_MSGS(33, "topologySpreadConstraints", m_spread_constraint), F_BOOL(35, "setHostnameAsFQDN"),
     F_MSG(36, "os", m_pod_os), F_BOOL(37, "hostUsers"),
     F_MSGS(38, "schedulingGates", m_scheduling_gate),
     F_MSGS(39, "resourceClaims", m_pod_resource_claim), F_MSG(40, "resources", m_resources),
     F_STRK(41, "hostnameOverride"));
PMSG(m_pod_template, "PodTemplateSpec", F_MSG(1, "metadata", m_object_meta),
     F_MSG(2, "spec", m_pod_spec));

/* core/v1: Service, ServiceAccount, ReplicationController */
PMSG(m_service_port, "ServicePort", F_STR(1, "name"), F_STR(2, "protocol"),
     F_STRK(6, "appProtocol"), F_I32K(3, "port"), F_IOS(4, "targetPort"), F_I32(5, "nodePort"));
PMSG(m_client_ip_config, "ClientIPConfig", F_I32K(1, "timeoutSeconds"));
PMSG(m_session_affinity_config, "SessionAffinityConfig", F_MSG(1, "clientIP", m_client_ip_config));
PMSG(m_service_spec, "ServiceSpec", F_MSGS(1, "ports", m_service_port), F_MAP(2, "selector"),
     F_STR(3, "clusterIP"), F_STRS(18, "clusterIPs"), F_STR(4, "type"), F_STRS(5, "externalIPs"),
     F_STR(7, "sessionAffinity"), F_STR(8, "loadBalancerIP"), F_STRS(9, "loadBalancerSourceRanges"),
     F_STR(10, "externalName"), F_STR(11, "externalTrafficPolicy"),
     F_I32(12, "healthCheckNodePort"), F_FLAG(13, "publishNotReadyAddresses"),
     F_MSG(14, "sessionAffinityConfig", m_session_affinity_config), F_STRS(19, "ipFamilies"),
     F_STRK(17, "ipFamilyPolicy"), F_BOOL(20, "allocateLoadBalancerNodePorts"),
     F_STRK(21, "loadBalancerClass"), F_STRK(22, "internalTrafficPolicy"),
     F_STRK(23, "trafficDistribution"));
PMSG(m_port_status, "PortStatus", F_I32K(1, "port"), F_STRK(2, "protocol"), F_STRK(3, "error"));
PMSG(m_lb_ingress, "LoadBalancerIngress", F_STR(1, "ip"), F_STR(2, "hostname"), F_STRK(3, "ipMode"),
     F_MSGS(4, "ports", m_port_status));
PMSG(m_lb_status, "LoadBalancerStatus", F_MSGS(1, "ingress", m_lb_ingress));
PMSG(m_service_status, "ServiceStatus", F_MSG(1, "loadBalancer", m_lb_status),
     F_MSGS(2, "conditions", m_condition));
PMSG(m_service, "Service", F_MSG(1, "metadata", m_object_meta), F_MSG(2, "spec", m_service_spec),
     F_MSG(3, "status", m_service_status));
PMSG(m_service_account, "ServiceAccount", F_MSG(1, "metadata", m_object_meta),
     F_MSGS(2, "secrets", m_object_ref), F_MSGS(3, "imagePullSecrets", m_local_ref),
     F_BOOL(4, "automountServiceAccountToken"));
/* ReplicationControllerCondition and ReplicaSetCondition have the same fields. */
PMSG(m_replica_condition, "ReplicaSetCondition", F_STRK(1, "type"), F_STRK(2, "status"),
     F_TIME(3, "lastTransitionTime"), F_STR(4, "reason"), F_STR(5, "message"));
PMSG(m_rc_spec, "ReplicationControllerSpec", F_I32K(1, "replicas"), F_I32(4, "minReadySeconds"),
     F_MAP(2, "selector"), F_MSG(3, "template", m_pod_template));
PMSG(m_rc_status, "ReplicationControllerStatus", F_I32K(1, "replicas"),
     F_I32(2, "fullyLabeledReplicas"), F_I32(4, "readyReplicas"), F_I32(5, "availableReplicas"),
     F_I64(3, "observedGeneration"), F_MSGS(6, "conditions", m_replica_condition));
PMSG(m_rc, "ReplicationController", F_MSG(1, "metadata", m_object_meta),
     F_MSG(2, "spec", m_rc_spec), F_MSG(3, "status", m_rc_status));

/* apps/v1 */
PMSG(m_rolling_update, "RollingUpdateDeployment", F_IOS(1, "maxUnavailable"), F_IOS(2, "maxSurge"));
PMSG(m_deploy_strategy, "DeploymentStrategy", F_STR(1, "type"),
     F_MSG(2, "rollingUpdate", m_rolling_update));
PMSG(m_deploy_spec, "DeploymentSpec", F_I32K(1, "replicas"), F_MSG(2, "selector", m_label_selector),
     F_MSG(3, "template", m_pod_template), F_MSG(4, "strategy", m_deploy_strategy),
     F_I32(5, "minReadySeconds"), F_I32K(6, "revisionHistoryLimit"), F_FLAG(7, "paused"),
     F_I32K(9, "progressDeadlineSeconds"), F_STRK(10, "podReplacementPolicy"));
PMSG(m_deploy_condition, "DeploymentCondition", F_STRK(1, "type"), F_STRK(2, "status"),
     F_TIME(6, "lastUpdateTime"), F_TIME(7, "lastTransitionTime"), F_STR(4, "reason"),
     F_STR(5, "message"));
PMSG(m_deploy_status, "DeploymentStatus", F_I64(1, "observedGeneration"), F_I32(2, "replicas"),
     F_I32(3, "updatedReplicas"), F_I32(7, "readyReplicas"), F_I32(4, "availableReplicas"),
     F_I32(5, "unavailableReplicas"), F_I32K(9, "terminatingReplicas"),
     F_MSGS(6, "conditions", m_deploy_condition), F_I32K(8, "collisionCount"));
PMSG(m_deployment, "Deployment", F_MSG(1, "metadata", m_object_meta),
     F_MSG(2, "spec", m_deploy_spec), F_MSG(3, "status", m_deploy_status));
PMSG(m_rs_spec, "ReplicaSetSpec", F_I32K(1, "replicas"), F_I32(4, "minReadySeconds"),
     F_MSG(2, "selector", m_label_selector), F_MSG(3, "template", m_pod_template));
PMSG(m_rs_status, "ReplicaSetStatus", F_I32K(1, "replicas"), F_I32(2, "fullyLabeledReplicas"),
     F_I32(4, "readyReplicas"), F_I32(5, "availableReplicas"), F_I32K(7, "terminatingReplicas"),
     F_I64(3, "observedGeneration"), F_MSGS(6, "conditions", m_replica_condition));
PMSG(m_replicaset, "ReplicaSet", F_MSG(1, "metadata", m_object_meta), F_MSG(2, "spec", m_rs_spec),
     F_MSG(3, "status", m_rs_status));
PMSG(m_ds_rolling_update, "RollingUpdateDaemonSet", F_IOS(1, "maxUnavailable"),
     F_IOS(2, "maxSurge"));
PMSG(m_ds_strategy, "DaemonSetUpdateStrategy", F_STR(1, "type"),
     F_MSG(2, "rollingUpdate", m_ds_rolling_update));
PMSG(m_ds_spec, "DaemonSetSpec", F_MSG(1, "selector", m_label_selector),
     F_MSG(2, "template", m_pod_template), F_MSG(3, "updateStrategy", m_ds_strategy),
     F_I32(4, "minReadySeconds"), F_I32K(6, "revisionHistoryLimit"));
PMSG(m_ds_condition, "DaemonSetCondition", F_STRK(1, "type"), F_STRK(2, "status"),
     F_TIME(3, "lastTransitionTime"), F_STR(4, "reason"), F_STR(5, "message"));
PMSG(m_ds_status, "DaemonSetStatus", F_I32K(1, "currentNumberScheduled"),
     F_I32K(2, "numberMisscheduled"), F_I32K(3, "desiredNumberScheduled"), F_I32K(4, "numberReady"),
     F_I64(5, "observedGeneration"), F_I32(6, "updatedNumberScheduled"),
     F_I32(7, "numberAvailable"), F_I32(8, "numberUnavailable"), F_I32K(9, "collisionCount"),
     F_MSGS(10, "conditions", m_ds_condition));
PMSG(m_daemonset, "DaemonSet", F_MSG(1, "metadata", m_object_meta), F_MSG(2, "spec", m_ds_spec),
     F_MSG(3, "status", m_ds_status));

/* policy/v1 (PodDisruptionBudgetStatus.disruptedPods, a map of times, is not in the table: it is
 * skipped on the wire and kept where it falls in JSON) */
PMSG(m_pdb_spec, "PodDisruptionBudgetSpec", F_IOS(1, "minAvailable"),
     F_MSG(2, "selector", m_label_selector), F_IOS(3, "maxUnavailable"),
     F_STRK(4, "unhealthyPodEvictionPolicy"));
PMSG(m_pdb_status, "PodDisruptionBudgetStatus", F_I64(1, "observedGeneration"),
     F_I32K(3, "disruptionsAllowed"), F_I32K(4, "currentHealthy"), F_I32K(5, "desiredHealthy"),
     F_I32K(6, "expectedPods"), F_MSGS(7, "conditions", m_condition));
PMSG(m_pdb, "PodDisruptionBudget", F_MSG(1, "metadata", m_object_meta),
     F_MSG(2, "spec", m_pdb_spec), F_MSG(3, "status", m_pdb_status));

/* rbac.authorization.k8s.io/v1 */
PMSG(m_policy_rule, "PolicyRule", F_STRS(1, "verbs"), F_STRS(2, "apiGroups"),
     F_STRS(3, "resources"), F_STRS(4, "resourceNames"), F_STRS(5, "nonResourceURLs"));
PMSG(m_aggregation_rule, "AggregationRule", F_MSGS(1, "clusterRoleSelectors", m_label_selector));
PMSG(m_cluster_role, "ClusterRole", F_MSG(1, "metadata", m_object_meta),
     F_MSGS(2, "rules", m_policy_rule), F_MSG(3, "aggregationRule", m_aggregation_rule));
PMSG(m_role, "Role", F_MSG(1, "metadata", m_object_meta), F_MSGS(2, "rules", m_policy_rule));
PMSG(m_subject, "Subject", F_STRK(1, "kind"), F_STR(2, "apiGroup"), F_STRK(3, "name"),
     F_STR(4, "namespace"));
PMSG(m_role_ref, "RoleRef", F_STRK(1, "apiGroup"), F_STRK(2, "kind"), F_STRK(3, "name"));
PMSG(m_role_binding, "RoleBinding", F_MSG(1, "metadata", m_object_meta),
     F_MSGS(2, "subjects", m_subject), F_MSG(3, "roleRef", m_role_ref));

/* batch/v1 */
PMSG(m_job_condition, "JobCondition", F_STRK(1, "type"), F_STRK(2, "status"),
     F_TIME(3, "lastProbeTime"), F_TIME(4, "lastTransitionTime"), F_STR(5, "reason"),
     F_STR(6, "message"));
PMSG(m_pfp_exit_codes, "PodFailurePolicyOnExitCodesRequirement", F_STRK(1, "containerName"),
     F_STRK(2, "operator"), F_I32S(3, "values"));
PMSG(m_pfp_pattern, "PodFailurePolicyOnPodConditionsPattern", F_STRK(1, "type"),
     F_STRK(2, "status"));
PMSG(m_pfp_rule, "PodFailurePolicyRule", F_STRK(1, "action"),
     F_MSG(2, "onExitCodes", m_pfp_exit_codes), F_MSGS(3, "onPodConditions", m_pfp_pattern));
PMSG(m_pod_failure_policy, "PodFailurePolicy", F_MSGS(1, "rules", m_pfp_rule));
PMSG(m_success_rule, "SuccessPolicyRule", F_STRK(1, "succeededIndexes"),
     F_I32K(2, "succeededCount"));
PMSG(m_success_policy, "SuccessPolicy", F_MSGS(1, "rules", m_success_rule));
PMSG(m_job_spec, "JobSpec", F_I32K(1, "parallelism"), F_I32K(2, "completions"),
     F_I64K(3, "activeDeadlineSeconds"), F_MSG(11, "podFailurePolicy", m_pod_failure_policy),
     F_MSG(16, "successPolicy", m_success_policy), F_I32K(7, "backoffLimit"),
     F_I32K(12, "backoffLimitPerIndex"), F_I32K(13, "maxFailedIndexes"),
     F_MSG(4, "selector", m_label_selector), F_BOOL(5, "manualSelector"),
     F_MSG(6, "template", m_pod_template), F_I32K(8, "ttlSecondsAfterFinished"),
     F_STRK(9, "completionMode"), F_BOOL(10, "suspend"), F_STRK(14, "podReplacementPolicy"),
     F_STRK(15, "managedBy"));
PMSG(m_uncounted_pods, "UncountedTerminatedPods", F_STRS(1, "succeeded"), F_STRS(2, "failed"));
PMSG(m_job_status, "JobStatus", F_MSGS(1, "conditions", m_job_condition), F_TIME(2, "startTime"),
     F_TIME(3, "completionTime"), F_I32(4, "active"), F_I32(5, "succeeded"), F_I32(6, "failed"),
     F_I32K(11, "terminating"), F_STR(7, "completedIndexes"), F_STRK(10, "failedIndexes"),
     F_MSG(8, "uncountedTerminatedPods", m_uncounted_pods), F_I32K(9, "ready"));
PMSG(m_job, "Job", F_MSG(1, "metadata", m_object_meta), F_MSG(2, "spec", m_job_spec),
     F_MSG(3, "status", m_job_status));

static const struct {
    const char *api_version;
    const char *kind;
    const struct pmsg *msg;
} proto_kinds[] = {
    {"v1", "ConfigMap", &m_configmap},
    {"v1", "Secret", &m_secret},
    {"v1", "Namespace", &m_namespace},
    {"v1", "Service", &m_service},
    {"v1", "ServiceAccount", &m_service_account},
    {"v1", "ReplicationController", &m_rc},
    {"apps/v1", "Deployment", &m_deployment},
    {"apps/v1", "ReplicaSet", &m_replicaset},
    {"apps/v1", "DaemonSet", &m_daemonset},
    {"policy/v1", "PodDisruptionBudget", &m_pdb},
    {"rbac.authorization.k8s.io/v1", "ClusterRole", &m_cluster_role},
    {"rbac.authorization.k8s.io/v1", "ClusterRoleBinding", &m_role_binding},
    {"rbac.authorization.k8s.io/v1", "Role", &m_role},
    {"rbac.authorization.k8s.io/v1", "RoleBinding", &m_role_binding},
    {"batch/v1", "Job", &m_job},
};

/* ---- errors and allocation ----------------------------------------------------------- */

__attribute__((format(printf, 3, 4))) static int fail(struct pctx *c, int rc, const char *fmt, ...)
{
    va_list ap;

    if (c->err != NULL && c->err_len > 0) {
        va_start(ap, fmt);
        vsnprintf(c->err, c->err_len, fmt, ap);
        va_end(ap);
    }
    return rc;
}

/* cJSON allocates with malloc; like xmalloc, running out of memory is fatal (STYLE OOM). */
static cJSON *cj(cJSON *item)
{
    if (item == NULL) {
        fputs("proto: out of memory building a cJSON tree\n", stderr);
        abort();
    }
    return item;
}

/* ---- wire primitives ------------------------------------------------------------------- */

static int rd_varint(struct pbuf *b, uint64_t *v)
{
    uint64_t x = 0;

    for (unsigned shift = 0; shift < 64; shift += 7) {
        if (b->off >= b->len) {
            return -EPROTO;
        }
        uint8_t byte = b->p[b->off++];
        /* The tenth byte may only carry the top bit of a 64-bit value. */
        if (shift == 63 && byte > 1) {
            return -EPROTO;
        }
        x |= (uint64_t)(byte & 0x7f) << shift;
        if ((byte & 0x80) == 0) {
            *v = x;
            return 0;
        }
    }
    return -EPROTO;
}

/* Reads a length prefix and lends the span that follows; the span is inside the buffer. */
static int rd_bytes(struct pbuf *b, const uint8_t **data, size_t *n)
{
    uint64_t l;

    if (rd_varint(b, &l) != 0 || l > b->len - b->off) {
        return -EPROTO;
    }
    *data = b->p + b->off;
    *n = (size_t)l;
    b->off += (size_t)l;
    return 0;
}

static int rd_tag(struct pbuf *b, uint32_t *num, unsigned *wt)
{
    uint64_t t;

    if (rd_varint(b, &t) != 0 || t > UINT32_MAX || (t >> 3) == 0) {
        return -EPROTO;
    }
    *num = (uint32_t)(t >> 3);
    *wt = (unsigned)(t & 7);
    return 0;
}

static int skip_field(struct pbuf *b, unsigned wt)
{
    uint64_t v;
    const uint8_t *d;
    size_t n;

    switch (wt) {
    case WT_VARINT:
        return rd_varint(b, &v);
    case WT_I64:
        n = 8;
        break;
    case WT_I32:
        n = 4;
        break;
    case WT_LEN:
        return rd_bytes(b, &d, &n);
    default:
        /* Groups are deprecated and never produced by Kubernetes; 6 and 7 do not exist. */
        return -EPROTO;
    }
    if (n > b->len - b->off) {
        return -EPROTO;
    }
    b->off += n;
    return 0;
}

/* ---- value conversion ------------------------------------------------------------------ */

/* A cJSON string from wire bytes: NUL is refused, each invalid byte becomes U+FFFD. */
static int make_string(struct pctx *c, const uint8_t *s, size_t n, const char *what, cJSON **out)
{
    char *buf;
    size_t o = 0;

    if (memchr(s, 0, n) != NULL) {
        return fail(c, -EPROTO, "%s: NUL byte in a string field is not supported", what);
    }
    buf = xmalloc(n * 3 + 1); /* worst case: every byte invalid -> 3-byte U+FFFD */
    for (size_t i = 0; i < n;) {
        uint32_t r;
        size_t k = gotext_decode_rune((const char *)s + i, n - i, &r);

        /* a valid rune re-encodes to its own bytes, an invalid byte to U+FFFD */
        o += gotext_encode_rune(r, buf + o);
        i += k;
    }
    buf[o] = '\0';
    *out = cj(cJSON_CreateString(buf));
    free(buf);
    return 0;
}

char *proto_base64_new(const void *data, size_t len)
{
    struct sbuf sb = {0};

    gotext_base64_encode(&sb, GOTEXT_BASE64_STD, data, len);
    return sbuf_take(&sb);
}

static cJSON *make_base64(const uint8_t *s, size_t n)
{
    char *b64 = proto_base64_new(s, n);
    cJSON *item = cj(cJSON_CreateString(b64));

    free(b64);
    return item;
}

/* metav1.Time {1 int64 seconds, 2 int32 nanos}. Sets *out to NULL for the zero time. */
static int make_time(struct pctx *c, const uint8_t *d, size_t n, const char *what, cJSON **out)
{
    /* 0001-01-01T00:00:00Z and 9999-12-31T23:59:59Z, the range RFC 3339 can print. */
    const int64_t min_s = -62135596800LL;
    const int64_t max_s = 253402300799LL;
    struct pbuf b = {d, n, 0};
    int64_t secs = 0;
    int64_t nanos = 0;
    uint32_t num;
    unsigned wt;
    uint64_t v;
    struct tm tm;
    time_t t;
    char buf[80]; /* room for any int the compiler imagines in struct tm */

    while (b.off < b.len) {
        if (rd_tag(&b, &num, &wt) != 0) {
            return fail(c, -EPROTO, "%s: malformed Time", what);
        }
        if ((num == 1 || num == 2) && wt == WT_VARINT) {
            if (rd_varint(&b, &v) != 0) {
                return fail(c, -EPROTO, "%s: truncated Time", what);
            }
            if (num == 1) {
                secs = (int64_t)v;
            } else {
                nanos = (int32_t)(uint32_t)v;
            }
        } else if (skip_field(&b, wt) != 0) {
            return fail(c, -EPROTO, "%s: malformed Time", what);
        }
    }
    *out = NULL;
    /* apimachinery decodes {0,0} as the zero time, which JSON prints as null: omit it. */
    if (secs == 0 && nanos == 0) {
        return 0;
    }
    if (secs < min_s || secs > max_s) {
        return fail(c, -EPROTO, "%s: time %lld is outside years 1..9999", what, (long long)secs);
    }
    t = (time_t)secs;
    if (gmtime_r(&t, &tm) == NULL) {
        return fail(c, -EPROTO, "%s: unrepresentable time", what);
    }
    snprintf(buf, sizeof(buf), "%04d-%02d-%02dT%02d:%02d:%02dZ", tm.tm_year + 1900, tm.tm_mon + 1,
             tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec);
    *out = cj(cJSON_CreateString(buf));
    return 0;
}

/* FieldsV1 {1 bytes raw}: raw is a JSON document, embedded as a value. */
static int make_rawjson(struct pctx *c, const uint8_t *d, size_t n, const char *what, cJSON **out)
{
    struct pbuf b = {d, n, 0};
    const uint8_t *raw = NULL;
    size_t raw_len = 0;
    uint32_t num;
    unsigned wt;

    while (b.off < b.len) {
        if (rd_tag(&b, &num, &wt) != 0) {
            return fail(c, -EPROTO, "%s: malformed FieldsV1", what);
        }
        if (num == 1 && wt == WT_LEN) {
            if (rd_bytes(&b, &raw, &raw_len) != 0) {
                return fail(c, -EPROTO, "%s: truncated FieldsV1", what);
            }
        } else if (skip_field(&b, wt) != 0) {
            return fail(c, -EPROTO, "%s: malformed FieldsV1", what);
        }
    }
    *out = NULL;
    if (raw == NULL || raw_len == 0) {
        return 0;
    }
    /* cJSON stops at raw_len (ParseWithLength); require_null_terminated=0 since the span
     * is not NUL-terminated, so check the end ourselves. */
    const char *end = NULL;
    cJSON *v = cJSON_ParseWithLengthOpts((const char *)raw, raw_len, &end, 0);
    if (v == NULL || end == NULL || (size_t)(end - (const char *)raw) != raw_len) {
        cJSON_Delete(v);
        return fail(c, -EPROTO, "%s: fieldsV1 is not a JSON document", what);
    }
    *out = v;
    return 0;
}

/* resource.ParseQuantity's syntax: [+-], digits with an optional fraction (at least one digit),
 * then nothing, a decimal SI suffix (n u m k M G T P E), a binary one (Ki Mi Gi Ti Pi Ei) or a
 * decimal exponent e|E[+-]digits. */
static bool quantity_ok(const char *q)
{
    static const char *const suffixes[] = {"",  "n", "u",  "m",  "k",  "M",  "G",  "T",
                                           "P", "E", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei"};
    size_t digits = 0;

    if (*q == '+' || *q == '-') {
        q++;
    }
    for (; *q >= '0' && *q <= '9'; q++) {
        digits++;
    }
    if (*q == '.') {
        for (q++; *q >= '0' && *q <= '9'; q++) {
            digits++;
        }
    }
    if (digits == 0) {
        return false;
    }
    for (size_t i = 0; i < sizeof(suffixes) / sizeof(suffixes[0]); i++) {
        if (strcmp(q, suffixes[i]) == 0) {
            return true;
        }
    }
    if (*q != 'e' && *q != 'E') {
        return false;
    }
    q++;
    if (*q == '+' || *q == '-') {
        q++;
    }
    if (*q == '\0') {
        return false;
    }
    for (; *q != '\0'; q++) {
        if (*q < '0' || *q > '9') {
            return false;
        }
    }
    return true;
}

/* resource.Quantity {1 string}: the string (kept as the client spelled it; kube-apiserver
 * prints its canonical form), "0" when the message has none, 400 when ParseQuantity would
 * refuse it. */
static int make_quantity(struct pctx *c, const uint8_t *d, size_t n, const char *what, cJSON **out)
{
    struct pbuf b = {d, n, 0};
    const uint8_t *str = NULL;
    size_t str_len = 0;
    uint32_t num;
    unsigned wt;
    int rc;

    *out = NULL;
    while (b.off < b.len) {
        if (rd_tag(&b, &num, &wt) != 0) {
            return fail(c, -EPROTO, "%s: malformed Quantity", what);
        }
        if (num == 1 && wt == WT_LEN) {
            rc = rd_bytes(&b, &str, &str_len);
        } else {
            rc = skip_field(&b, wt);
        }
        if (rc != 0) {
            return fail(c, -EPROTO, "%s: malformed Quantity", what);
        }
    }
    if (str == NULL) {
        *out = cj(cJSON_CreateString("0"));
        return 0;
    }
    rc = make_string(c, str, str_len, what, out);
    if (rc != 0) {
        return rc;
    }
    if (!quantity_ok((*out)->valuestring)) {
        rc = fail(c, -EPROTO,
                  "%s: quantities must match the regular expression "
                  "'^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'",
                  what);
        cJSON_Delete(*out);
        *out = NULL;
    }
    return rc;
}

/* intstr.IntOrString {1 int64 type, 2 int32 intVal, 3 string strVal}: Go prints intVal for
 * type 0 and strVal for type 1, and cannot print any other type. */
static int make_intorstr(struct pctx *c, const uint8_t *d, size_t n, const char *what, cJSON **out)
{
    struct pbuf b = {d, n, 0};
    const uint8_t *str = (const uint8_t *)"";
    size_t str_len = 0;
    uint64_t type = 0;
    uint64_t ival = 0;
    uint32_t num;
    unsigned wt;
    int rc;

    *out = NULL;
    while (b.off < b.len) {
        if (rd_tag(&b, &num, &wt) != 0) {
            return fail(c, -EPROTO, "%s: malformed IntOrString", what);
        }
        if ((num == 1 || num == 2) && wt == WT_VARINT) {
            rc = rd_varint(&b, num == 1 ? &type : &ival);
        } else if (num == 3 && wt == WT_LEN) {
            rc = rd_bytes(&b, &str, &str_len);
        } else {
            rc = skip_field(&b, wt);
        }
        if (rc != 0) {
            return fail(c, -EPROTO, "%s: malformed IntOrString", what);
        }
    }
    if (type == 0) {
        *out = cj(cJSON_CreateNumber((double)(int32_t)(uint32_t)ival));
        return 0;
    }
    if (type == 1) {
        return make_string(c, str, str_len, what, out);
    }
    return fail(c, -EPROTO, "%s: IntOrString type %lld is neither 0 (int) nor 1 (string)", what,
                (long long)(int64_t)type);
}

/* Adds one element of a repeated int32/int64 field to <arr>. */
static int rep_int_add(struct pctx *c, const struct pfield *f, cJSON *arr, uint64_t v)
{
    double x = f->type == PF_REP_INT32 ? (double)(int32_t)(uint32_t)v : (double)(int64_t)v;

    if (++c->items > PROTO_MAX_ITEMS) {
        return fail(c, -EPROTO, "more than %u map entries and list elements", PROTO_MAX_ITEMS);
    }
    cJSON_AddItemToArray(arr, cj(cJSON_CreateNumber(x)));
    return 0;
}

/* A repeated integer occurrence: one varint, or (packed) a length-delimited run of them;
 * Go's decoder takes either. */
static int decode_rep_int(struct pctx *c, struct pbuf *b, unsigned wt, const struct pmsg *m,
                          const struct pfield *f, cJSON **slot)
{
    struct pbuf packed;
    const uint8_t *d;
    size_t n;
    uint64_t v;
    int rc;

    if (wt != WT_VARINT && wt != WT_LEN) {
        return fail(c, -EPROTO, "%s.%s: wire type %u does not match the schema", m->name, f->json,
                    wt);
    }
    if (*slot == NULL) {
        *slot = cj(cJSON_CreateArray());
    }
    if (wt == WT_VARINT) {
        if (rd_varint(b, &v) != 0) {
            return fail(c, -EPROTO, "%s.%s: truncated field", m->name, f->json);
        }
        return rep_int_add(c, f, *slot, v);
    }
    if (rd_bytes(b, &d, &n) != 0) {
        return fail(c, -EPROTO, "%s.%s: truncated field", m->name, f->json);
    }
    packed = (struct pbuf){d, n, 0};
    while (packed.off < packed.len) {
        if (rd_varint(&packed, &v) != 0) {
            return fail(c, -EPROTO, "%s.%s: truncated packed element", m->name, f->json);
        }
        rc = rep_int_add(c, f, *slot, v);
        if (rc != 0) {
            return rc;
        }
    }
    return 0;
}

/* ---- messages ---------------------------------------------------------------------------- */

static int decode_msg(struct pctx *c, const uint8_t *data, size_t len, const struct pmsg *m,
                      int depth, cJSON **out);

/* Sets key=val in a map object, replacing an earlier value (Go map semantics). */
static void map_set(cJSON *map, const char *key, cJSON *val)
{
    cJSON *old = cJSON_GetObjectItemCaseSensitive(map, key);

    if (old != NULL) {
        /* (ReplaceItemViaPointer would leave val without its key.) */
        cJSON_ReplaceItemInObjectCaseSensitive(map, key, val);
    } else {
        cJSON_AddItemToObject(map, key, val);
    }
}

/* One map entry message {1 key string, 2 value string|bytes}; absent parts are "". */
static int decode_map_entry(struct pctx *c, const uint8_t *d, size_t n, const struct pmsg *m,
                            const struct pfield *f, cJSON *map)
{
    struct pbuf b = {d, n, 0};
    const uint8_t *key = (const uint8_t *)"";
    size_t key_len = 0;
    const uint8_t *val = (const uint8_t *)"";
    size_t val_len = 0;
    cJSON *k = NULL;
    cJSON *v = NULL;
    uint32_t num;
    unsigned wt;
    int rc;

    while (b.off < b.len) {
        if (rd_tag(&b, &num, &wt) != 0) {
            return fail(c, -EPROTO, "%s.%s: malformed map entry", m->name, f->json);
        }
        if ((num == 1 || num == 2) && wt == WT_LEN) {
            rc = num == 1 ? rd_bytes(&b, &key, &key_len) : rd_bytes(&b, &val, &val_len);
        } else {
            rc = skip_field(&b, wt);
        }
        if (rc != 0) {
            return fail(c, -EPROTO, "%s.%s: truncated map entry", m->name, f->json);
        }
    }
    rc = make_string(c, key, key_len, f->json, &k);
    if (rc != 0) {
        return rc;
    }
    if (f->type == PF_MAP_BYTES) {
        v = make_base64(val, val_len);
    } else if (f->type == PF_MAP_QUANTITY) {
        rc = make_quantity(c, val, val_len, f->json, &v);
        if (rc != 0) {
            cJSON_Delete(k);
            return rc;
        }
    } else {
        rc = make_string(c, val, val_len, f->json, &v);
        if (rc != 0) {
            cJSON_Delete(k);
            return rc;
        }
    }
    map_set(map, k->valuestring, v);
    cJSON_Delete(k);
    return 0;
}

/* Decodes one field occurrence of wire type <wt> into <slot> (replacing or appending). */
static int decode_field(struct pctx *c, struct pbuf *b, unsigned wt, const struct pmsg *m,
                        const struct pfield *f, int depth, cJSON **slot)
{
    bool varint =
        f->type == PF_BOOL || f->type == PF_INT64 || f->type == PF_INT32 || f->type == PF_BOOL_OMIT;
    bool is_map = f->type == PF_MAP_STRING || f->type == PF_MAP_BYTES || f->type == PF_MAP_QUANTITY;
    bool is_list = f->type == PF_REP_STRING || f->type == PF_REP_MSG;
    const uint8_t *d = NULL;
    size_t n = 0;
    uint64_t v = 0;
    cJSON *item = NULL;
    int rc;

    if (f->type == PF_REP_INT32 || f->type == PF_REP_INT64) {
        return decode_rep_int(c, b, wt, m, f, slot);
    }
    if (wt != (varint ? WT_VARINT : WT_LEN)) {
        return fail(c, -EPROTO, "%s.%s: wire type %u does not match the schema", m->name, f->json,
                    wt);
    }
    rc = varint ? rd_varint(b, &v) : rd_bytes(b, &d, &n);
    if (rc != 0) {
        return fail(c, -EPROTO, "%s.%s: truncated field", m->name, f->json);
    }
    if (is_map || is_list) {
        if (++c->items > PROTO_MAX_ITEMS) {
            return fail(c, -EPROTO, "more than %u map entries and list elements", PROTO_MAX_ITEMS);
        }
        if (*slot == NULL) {
            *slot = cj(is_map ? cJSON_CreateObject() : cJSON_CreateArray());
        }
    }

    switch (f->type) {
    case PF_STRING:
        rc = make_string(c, d, n, f->json, &item);
        if (rc == 0 && n == 0 && !(f->flags & PF_KEEP_EMPTY)) {
            cJSON_Delete(item);
            item = NULL;
        }
        break;
    case PF_BOOL:
        item = cj(cJSON_CreateBool(v != 0));
        break;
    case PF_INT64:
        if (v != 0 || (f->flags & PF_KEEP_EMPTY)) {
            item = cj(cJSON_CreateNumber((double)(int64_t)v));
        }
        break;
    case PF_TIME:
        rc = make_time(c, d, n, f->json, &item);
        break;
    case PF_RAWJSON:
        rc = make_rawjson(c, d, n, f->json, &item);
        break;
    case PF_MSG:
        rc = decode_msg(c, d, n, f->msg, depth + 1, &item);
        break;
    case PF_MAP_STRING:
    case PF_MAP_BYTES:
    case PF_MAP_QUANTITY:
        return decode_map_entry(c, d, n, m, f, *slot);
    case PF_REP_STRING:
        rc = make_string(c, d, n, f->json, &item);
        if (rc == 0) {
            cJSON_AddItemToArray(*slot, item);
        }
        return rc;
    case PF_REP_MSG:
        rc = decode_msg(c, d, n, f->msg, depth + 1, &item);
        if (rc == 0) {
            cJSON_AddItemToArray(*slot, item);
        }
        return rc;
    case PF_INT32:
        if ((int32_t)(uint32_t)v != 0 || (f->flags & PF_KEEP_EMPTY)) {
            item = cj(cJSON_CreateNumber((double)(int32_t)(uint32_t)v));
        }
        break;
    case PF_BOOL_OMIT:
        if (v != 0) {
            item = cj(cJSON_CreateTrue());
        }
        break;
    case PF_INTORSTR:
        rc = make_intorstr(c, d, n, f->json, &item);
        break;
    case PF_QUANTITY:
        rc = make_quantity(c, d, n, f->json, &item);
        break;
    case PF_INLINE:
        rc = decode_msg(c, d, n, f->msg, depth + 1, &item);
        break;
    case PF_REP_INT32:
    case PF_REP_INT64:
        BUG_ON(1); /* handled by decode_rep_int above */
        break;
    }
    if (rc != 0) {
        return rc;
    }
    /* A scalar or message seen again replaces the earlier one: last one wins. (protobuf
     * would merge a repeated embedded message; Kubernetes encoders never repeat one.) */
    cJSON_Delete(*slot);
    *slot = item;
    return 0;
}

static int decode_msg(struct pctx *c, const uint8_t *data, size_t len, const struct pmsg *m,
                      int depth, cJSON **out)
{
    struct pbuf b = {data, len, 0};
    cJSON *slot[PMSG_MAX_FIELDS] = {NULL};
    cJSON *obj = NULL;
    uint32_t num;
    unsigned wt;
    int rc = 0;

    BUG_ON(m->n_fields > PMSG_MAX_FIELDS);
    *out = NULL;
    if (depth > PROTO_MAX_DEPTH) {
        return fail(c, -EPROTO, "%s: nested deeper than %d messages", m->name, PROTO_MAX_DEPTH);
    }
    while (b.off < b.len) {
        size_t i;

        if (rd_tag(&b, &num, &wt) != 0) {
            rc = fail(c, -EPROTO, "%s: malformed field tag", m->name);
            goto out;
        }
        for (i = 0; i < m->n_fields && m->fields[i].num != num; i++) {
        }
        if (i == m->n_fields) {
            if (skip_field(&b, wt) != 0) {
                rc = fail(c, -EPROTO, "%s: malformed unknown field %u", m->name, num);
                goto out;
            }
            continue;
        }
        rc = decode_field(c, &b, wt, m, &m->fields[i], depth, &slot[i]);
        if (rc != 0) {
            goto out;
        }
    }
    obj = cj(cJSON_CreateObject());
    for (size_t i = 0; i < m->n_fields; i++) {
        if (slot[i] != NULL && m->fields[i].type == PF_INLINE) {
            /* Go's `json:",inline"`: the embedded struct's members, in place */
            while (slot[i]->child != NULL) {
                cJSON *item = cJSON_DetachItemViaPointer(slot[i], slot[i]->child);
                cJSON_AddItemToObject(obj, item->string, item);
            }
            cJSON_Delete(slot[i]);
            slot[i] = NULL;
        } else if (slot[i] != NULL) {
            cJSON_AddItemToObject(obj, m->fields[i].json, slot[i]);
            slot[i] = NULL;
        }
    }
    *out = obj;
out:
    for (size_t i = 0; i < PMSG_MAX_FIELDS; i++) {
        cJSON_Delete(slot[i]);
    }
    return rc;
}

/* ---- envelope -------------------------------------------------------------------------- */

bool proto_is_content_type(const char *content_type)
{
    size_t n = strlen(PROTO_CONTENT_TYPE);

    if (content_type == NULL) {
        return false;
    }
    while (*content_type == ' ' || *content_type == '\t') {
        content_type++;
    }
    if (strncasecmp(content_type, PROTO_CONTENT_TYPE, n) != 0) {
        return false;
    }
    content_type += n;
    while (*content_type == ' ' || *content_type == '\t') {
        content_type++;
    }
    return *content_type == '\0' || *content_type == ';';
}

/* The string value of member <key> of a decoded object, "" when absent. */
static const char *member_str(const cJSON *obj, const char *key)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);

    return cJSON_IsString(v) ? v->valuestring : "";
}

int proto_decode(const void *body, size_t len, cJSON **out, char *err, size_t err_len)
{
    struct pctx c = {err, err_len, 0};
    struct pbuf b = {body, len, 0};
    const uint8_t *tm = NULL;
    size_t tm_len = 0;
    const uint8_t *raw = NULL;
    size_t raw_len = 0;
    const uint8_t *enc = NULL;
    size_t enc_len = 0;
    const uint8_t *ctype = NULL;
    size_t ctype_len = 0;
    const struct pmsg *m = NULL;
    cJSON *type_meta = NULL;
    cJSON *obj = NULL;
    cJSON *root = NULL;
    const char *api_version;
    const char *kind;
    uint32_t num;
    unsigned wt;
    int rc = -EPROTO;

    *out = NULL;
    if (err != NULL && err_len > 0) {
        err[0] = '\0';
    }
    if (len > PROTO_MAX_BODY) {
        return fail(&c, -EPROTO, "protobuf body of %zu bytes exceeds %u", len, PROTO_MAX_BODY);
    }
    if (len < PROTO_MAGIC_LEN || memcmp(body, PROTO_MAGIC, PROTO_MAGIC_LEN) != 0) {
        return fail(&c, -EPROTO, "protobuf body does not start with the k8s magic");
    }
    b.off = PROTO_MAGIC_LEN;

    /* runtime.Unknown: keep the last occurrence of each field, skip unknown ones. */
    while (b.off < b.len) {
        const uint8_t **dp = NULL;
        size_t *np = NULL;

        if (rd_tag(&b, &num, &wt) != 0) {
            return fail(&c, -EPROTO, "Unknown: malformed field tag");
        }
        switch (num) {
        case 1:
            dp = &tm;
            np = &tm_len;
            break;
        case 2:
            dp = &raw;
            np = &raw_len;
            break;
        case 3:
            dp = &enc;
            np = &enc_len;
            break;
        case 4:
            dp = &ctype;
            np = &ctype_len;
            break;
        default:
            break;
        }
        if (dp == NULL) {
            if (skip_field(&b, wt) != 0) {
                return fail(&c, -EPROTO, "Unknown: malformed unknown field %u", num);
            }
            continue;
        }
        if (wt != WT_LEN || rd_bytes(&b, dp, np) != 0) {
            return fail(&c, -EPROTO, "Unknown: malformed field %u", num);
        }
    }

    if (enc_len > 0) {
        return fail(&c, -ENOTSUP, "protobuf contentEncoding \"%.*s\" is not supported",
                    (int)(enc_len > 64 ? 64 : enc_len), (const char *)enc);
    }
    if (ctype_len > 0 && !(ctype_len == strlen(PROTO_CONTENT_TYPE) &&
                           memcmp(ctype, PROTO_CONTENT_TYPE, ctype_len) == 0)) {
        return fail(&c, -ENOTSUP, "protobuf contentType \"%.*s\" is not supported",
                    (int)(ctype_len > 64 ? 64 : ctype_len), (const char *)ctype);
    }
    rc = decode_msg(&c, tm, tm_len, &m_typemeta, 1, &type_meta);
    if (rc != 0) {
        goto out;
    }
    api_version = member_str(type_meta, "apiVersion");
    kind = member_str(type_meta, "kind");
    for (size_t i = 0; i < sizeof(proto_kinds) / sizeof(proto_kinds[0]); i++) {
        if (strcmp(proto_kinds[i].api_version, api_version) == 0 &&
            strcmp(proto_kinds[i].kind, kind) == 0) {
            m = proto_kinds[i].msg;
        }
    }
    if (m == NULL) {
        rc = fail(&c, -ENOTSUP, "no protobuf decoder for apiVersion \"%.64s\" kind \"%.64s\"",
                  api_version, kind);
        goto out;
    }
    rc = decode_msg(&c, raw, raw_len, m, 1, &obj);
    if (rc != 0) {
        goto out;
    }
    root = cj(cJSON_CreateObject());
    cJSON_AddItemToObject(root, "kind", cj(cJSON_CreateString(kind)));
    cJSON_AddItemToObject(root, "apiVersion", cj(cJSON_CreateString(api_version)));
    while (obj->child != NULL) {
        cJSON *item = cJSON_DetachItemViaPointer(obj, obj->child);
        cJSON_AddItemToObject(root, item->string, item);
    }
    *out = root;
    rc = 0;
out:
    cJSON_Delete(type_meta);
    cJSON_Delete(obj);
    return rc;
}

/* ---- Go's member order -------------------------------------------------------------------- */

/* Schema recursion is bounded by the tables; this only guards against a mistake in them. */
#define ORDER_MAX_DEPTH (2 * PROTO_MAX_DEPTH)

static const struct pmsg *kind_msg(const char *api_version, const char *kind)
{
    for (size_t i = 0; i < sizeof(proto_kinds) / sizeof(proto_kinds[0]); i++) {
        if (strcmp(proto_kinds[i].api_version, api_version) == 0 &&
            strcmp(proto_kinds[i].kind, kind) == 0) {
            return proto_kinds[i].msg;
        }
    }
    return NULL;
}

static int cmp_member_key(const void *a, const void *b)
{
    const cJSON *x = *(const cJSON *const *)a;
    const cJSON *y = *(const cJSON *const *)b;

    return strcmp(x->string, y->string);
}

/* Go's encoding/json prints a map's keys sorted bytewise (strcmp compares unsigned bytes). */
static void sort_map(cJSON *map)
{
    size_t n = 0;
    size_t i = 0;
    cJSON **items;

    for (const cJSON *e = map->child; e != NULL; e = e->next) {
        n++;
    }
    if (n < 2) {
        return;
    }
    items = xmalloc(n * sizeof(*items));
    while (map->child != NULL) {
        items[i++] = cJSON_DetachItemViaPointer(map, map->child);
    }
    qsort(items, n, sizeof(*items), cmp_member_key);
    for (i = 0; i < n; i++) {
        cJSON_AddItemToArray(map, items[i]); /* keeps item->string */
    }
    free(items);
}

static void order_msg(cJSON *obj, const struct pmsg *m, int depth);

/* Recurses into one member according to its field type. */
static void order_value(cJSON *item, const struct pfield *f, int depth)
{
    cJSON *e;

    switch (f->type) {
    case PF_MSG:
        if (cJSON_IsObject(item)) {
            order_msg(item, f->msg, depth + 1);
        }
        break;
    case PF_REP_MSG:
        cJSON_ArrayForEach(e, item)
        {
            if (cJSON_IsObject(e)) {
                order_msg(e, f->msg, depth + 1);
            }
        }
        break;
    case PF_MAP_STRING:
    case PF_MAP_BYTES:
    case PF_MAP_QUANTITY:
        if (cJSON_IsObject(item)) {
            sort_map(item);
        }
        break;
    default:
        break;
    }
}

/* Moves the members <m> knows from <obj> to <tmp>, in table order (inline structs' members in
 * their place), ordering each one's own members. */
static void take_fields(cJSON *obj, cJSON *tmp, const struct pmsg *m, int depth)
{
    for (size_t i = 0; i < m->n_fields; i++) {
        const struct pfield *f = &m->fields[i];
        cJSON *item;

        if (f->type == PF_INLINE) {
            if (depth < ORDER_MAX_DEPTH) {
                take_fields(obj, tmp, f->msg, depth + 1);
            }
            continue;
        }
        item = cJSON_DetachItemFromObjectCaseSensitive(obj, f->json);
        if (item != NULL) {
            order_value(item, f, depth);
            cJSON_AddItemToArray(tmp, item); /* keeps item->string */
        }
    }
}

/* Known members in Go struct order, then the ones the schema lacks, in their order. */
static void order_msg(cJSON *obj, const struct pmsg *m, int depth)
{
    cJSON *tmp;

    if (depth > ORDER_MAX_DEPTH) {
        return;
    }
    tmp = cj(cJSON_CreateArray());
    take_fields(obj, tmp, m, depth);
    while (obj->child != NULL) {
        cJSON_AddItemToArray(tmp, cJSON_DetachItemViaPointer(obj, obj->child));
    }
    while (tmp->child != NULL) {
        cJSON_AddItemToArray(obj, cJSON_DetachItemViaPointer(tmp, tmp->child));
    }
    cJSON_Delete(tmp);
}

bool proto_order(cJSON *obj)
{
    const cJSON *api_version = cJSON_GetObjectItemCaseSensitive(obj, "apiVersion");
    const cJSON *kind = cJSON_GetObjectItemCaseSensitive(obj, "kind");
    const struct pmsg *m;
    cJSON *item;

    if (!cJSON_IsObject(obj) || !cJSON_IsString(api_version) || !cJSON_IsString(kind)) {
        return false;
    }
    m = kind_msg(api_version->valuestring, kind->valuestring);
    if (m == NULL) {
        return false;
    }
    order_msg(obj, m, 1);
    /* TypeMeta first: kind, apiVersion */
    item = cJSON_DetachItemFromObjectCaseSensitive(obj, "apiVersion");
    cJSON_InsertItemInArray(obj, 0, item);
    item = cJSON_DetachItemFromObjectCaseSensitive(obj, "kind");
    cJSON_InsertItemInArray(obj, 0, item);
    return true;
}
