/*
 * proto.h - decodes the Kubernetes protobuf request bodies kubectl sends on create.
 *
 * kubectl 1.32 POSTs typed objects as Content-Type application/vnd.kubernetes.protobuf
 * (`kubectl create configmap|secret generic|namespace|deployment|service ...|serviceaccount|
 * job`; captured in tests/data/kubectl-create-*). The body is the 4-byte magic "k8s\0"
 * followed by a runtime.Unknown
 *   { 1 typeMeta {1 apiVersion, 2 kind}, 2 raw bytes, 3 contentEncoding, 4 contentType }
 * whose raw bytes are the object's own message. proto_decode() turns the kinds the simulator
 * serves and kubectl creates (list at proto_decode) into the cJSON tree kube-apiserver would
 * accept as JSON; any other kind is -ENOTSUP so the caller can answer 415, as it does for any
 * body it cannot read. proto_order() puts a JSON object of those kinds in Go's member order.
 *
 * Field numbers and field order are those of k8s.io/api core/v1, apps/v1, batch/v1 and
 * k8s.io/apimachinery meta/v1, runtime, intstr and resource generated.proto (go-to-protobuf
 * writes fields in Go struct order). Every read is bounded by the input length; lengths,
 * nesting and the number of map/list entries are capped (PROTO_MAX_*). Pure functions; any
 * thread; no locks.
 */
#ifndef KWP_SIM_PROTO_H
#define KWP_SIM_PROTO_H

#include <stdbool.h>
#include <stddef.h>

#include <cJSON.h>

#define PROTO_CONTENT_TYPE "application/vnd.kubernetes.protobuf"

/* kube-apiserver's own request body limit (3 MiB); larger bodies are -EPROTO. */
#define PROTO_MAX_BODY (3u * 1024u * 1024u)
/* Message nesting below the envelope. The schema needs 11: a Deployment's pod template volume
 * (object, spec, template, pod spec, volume, its inline source), an ephemeral volume's claim
 * template spec, its label selector and a match expression. */
#define PROTO_MAX_DEPTH 12
/* Map entries plus repeated elements in one body (keeps the tree and duplicate-key checks
 * bounded: each insert scans its map). */
#define PROTO_MAX_ITEMS 8192

/*
 * True when <content_type> (a Content-Type header value, may be NULL) names the Kubernetes
 * protobuf encoding: "application/vnd.kubernetes.protobuf", case-insensitive, with or without
 * parameters after ';'.
 */
bool proto_is_content_type(const char *content_type);

/*
 * Decodes one protobuf request body body[0..len) into a new cJSON object in the JSON form of
 * the same object: "kind" and "apiVersion" from the envelope first, then the fields in Go
 * struct order. Go's omitempty rules are kept (empty strings, zero generation and absent
 * fields are left out; embedded messages present on the wire are emitted, even empty, as
 * "spec":{}); a zero metav1.Time is left out (Go prints null); times are RFC 3339 UTC with
 * seconds precision; bytes fields (Secret data, ConfigMap binaryData) are standard base64;
 * invalid UTF-8 in strings becomes U+FFFD as Go's encoding/json does; map keys keep wire
 * order (kubectl sends them sorted) and a repeated key keeps its last value. Unknown fields
 * are skipped, as Go's decoder does. int64 values become cJSON doubles (exact up to 2^53).
 *
 * Supported kinds: v1 ConfigMap, Secret, Namespace, Service, ServiceAccount,
 * ReplicationController; apps/v1 Deployment, ReplicaSet; batch/v1 Job, with every message
 * they embed (ObjectMeta, LabelSelector, PodTemplateSpec down to volumes, probes and
 * affinity). Embedded `json:",inline"` structs (LocalObjectReference in key selectors,
 * ProbeHandler in Probe, VolumeSource in Volume) print their members in place;
 * IntOrString prints as a number or a string; a Quantity keeps the client's spelling (the
 * apiserver prints its canonical form) after the check ParseQuantity makes; repeated
 * integers are read packed or not. A field the tables lack (an alpha field such as
 * SecurityContext.ulimits, or one newer than them) is skipped like any unknown field. A
 * field absent from the wire is absent from the JSON, where Go prints the zero value of the
 * few fields without omitempty (Kubernetes encoders write every non-pointer scalar and
 * struct, so this differs only for nil lists and pointers such as a missing containers list
 * or Deployment selector, which validation would refuse).
 *
 * On success sets *out to the new tree, which the caller owns (cJSON_Delete), and returns 0.
 * On error *out is NULL, <err> (err_len bytes, may be 0) holds a one-line reason, and it
 * returns:
 *   -ENOTSUP  a well-formed envelope of a kind, version, contentEncoding or contentType this
 *             decoder does not handle (answer 415 UnsupportedMediaType);
 *   -EPROTO   malformed input: no "k8s\0" magic, truncated varint or length, bad wire type,
 *             a string holding a NUL byte (cJSON cannot carry it), a time outside years
 *             1..9999, invalid fieldsV1 JSON, or a PROTO_MAX_* limit exceeded (answer 400).
 * Any thread.
 */
int proto_decode(const void *body, size_t len, cJSON **out, char *err, size_t err_len);

/*
 * Reorders the members of <obj>, an object of a kind proto_decode() supports in JSON form
 * (its "kind" and "apiVersion" members name it), the way kube-apiserver prints it: kind,
 * apiVersion, then every message's fields in Go struct order, recursively (members the
 * schema does not know keep their order after the known ones), and the keys of Go maps
 * (labels, selectors, data, resource lists, ...) sorted bytewise as encoding/json sorts them.
 * Relinks members, never copies or changes values. Returns false, leaving <obj> untouched,
 * when it is not an object or its kind has no table. Any thread.
 */
bool proto_order(cJSON *obj);

/*
 * Encodes data[0..len) as standard padded base64, the JSON form Go gives a []byte (Secret
 * data, ConfigMap binaryData). Returns a new NUL-terminated string the caller frees with
 * free(); aborts on OOM. Any thread.
 */
char *proto_base64_new(const void *data, size_t len);

#endif
