#!/usr/bin/env bash
# test_deploy_manifests.sh - deploy/ renders, holds what README "Deploying" promises, and
# applies: `kubectl kustomize` of the base (deploy/), both overlays and the base with its
# optional components; render-only checks on what each one must carry (the restricted Pod
# Security fields, probes, rollout, RBAC, auth, upstream of the second tier); then kubectl
# 1.32 applies every render to `kwp sim` (port 0; the cert-manager and prometheus-operator kinds
# given to it with --resource) and reads every object back, and the Deployment's and the
# DaemonSet's own args start a real kwp proxy that answers /livez and /readyz over https (the
# Deployment's, on SIGTERM, fails /readyz at once and exits 0 within its grace period); with
# exactly the rendered ClusterRole's rules at an authenticating simulator, that kwp gets ready
# and forwards as its callers (impersonated user with uid, groups and an extra; a service
# account); and every kwp_* metric the Grafana dashboard queries is in a delegated /metrics.
#
# `kwp sim` serves no OpenAPI, so kubectl apply runs with --validate=false (with validation on
# it stops at "failed to download openapi"). kubectl apply creates with GET (404) then POST and
# updates with PATCH; the simulator treats a strategic merge patch as a JSON merge patch, so the
# update checked here changes a scalar (replicas) only.
#
# Environment: KWP_BIN (default build/kwp), KUBECTL (default /usr/bin/kubectl), KWP_SRC (the
# source tree, default the script's ../..), DEPLOY_DIR (default $KWP_SRC/deploy: point it at a
# changed copy to see the checks fail). Prints PASS/FAIL lines and ends with "N passed, N
# failed"; exits non-zero on any failure. Only processes this script started are signalled.
set -uo pipefail

KWP_BIN="${KWP_BIN:-build/kwp}"
KUBECTL="${KUBECTL:-/usr/bin/kubectl}"
KWP_SRC="${KWP_SRC:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}"
DEPLOY_DIR="${DEPLOY_DIR:-$KWP_SRC/deploy}"
PY=/usr/bin/python3 # Debian's, with python3-yaml (a dependency of python3-kubernetes)
TMP="$(mktemp -d "${TMPDIR:-/tmp}/kwp-deploy-XXXXXX")"

# ok, bad, verdict, need_exec, stop_pid, start_kwp, wait_ready, write_kubeconfig, kwp_finish
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
trap kwp_finish EXIT

need_exec kubectl "$KUBECTL"
need_exec "kwp binary" "$KWP_BIN"
need_exec python3 "$PY"
if ! "$PY" -c 'import yaml' 2>/dev/null; then
  bad "python3-yaml importable by $PY" "apt-get install python3-yaml"
  exit 1
fi

# ---- render ----------------------------------------------------------------------------------
# name:directory under DEPLOY_DIR
RENDERS=(base:. node-local:overlays/node-local second-tier:overlays/second-tier
  components:examples/base-with-components)
for r in "${RENDERS[@]}"; do
  name="${r%%:*}"
  dir="${r#*:}"
  "$KUBECTL" kustomize "$DEPLOY_DIR/$dir" >"$TMP/$name.yaml" 2>"$TMP/$name.err"
  rc=$?
  # YAML to one JSON array of the documents
  "$PY" -c 'import sys, yaml, json; json.dump([d for d in yaml.safe_load_all(sys.stdin) if d], sys.stdout)' \
    <"$TMP/$name.yaml" >"$TMP/$name.json" 2>>"$TMP/$name.err"
  n=$(jq length "$TMP/$name.json" 2>/dev/null || echo 0)
  verdict "kubectl kustomize deploy/$dir renders ($n objects)" \
    "$([ "$rc" -eq 0 ] && [ "$n" -gt 0 ] && echo 1)" "rc=$rc: $(head -c 600 "$TMP/$name.err")"
  [ "$rc" -eq 0 ] && [ "$n" -gt 0 ] || exit 1
done

# check NAME RENDER JQ: PASS when the jq program JQ, run on the render's JSON array, prints true.
check() {
  local name="$1" render="$2" prog="$3" got
  got="$(jq -r "$prog" "$TMP/$render.json" 2>&1)"
  verdict "$name" "$([ "$got" = true ] && echo 1)" "jq printed: $(printf '%s' "$got" | head -c 400)"
}

# jq helpers: the one object of a kind (and name), and a pod template's one container
JQ_DEFS='
def obj($k): [.[] | select(.kind == $k)] | if length == 1 then .[0] else error("\(length) \($k)s") end;
def ctr: .spec.template.spec.containers | if length == 1 then .[0] else error("containers") end;
def restricted:
  (.spec.template.spec.securityContext as $p | ctr.securityContext as $c |
   ($p.runAsNonRoot == true or $c.runAsNonRoot == true) and
   ($p.runAsUser == 65532 or $c.runAsUser == 65532) and
   ($p.seccompProfile.type == "RuntimeDefault" or $c.seccompProfile.type == "RuntimeDefault") and
   $c.allowPrivilegeEscalation == false and $c.readOnlyRootFilesystem == true and
   $c.capabilities.drop == ["ALL"] and ($c.capabilities.add // []) == []);
def arg($a): ctr.args | index($a) != null;
def argval($f): [ctr.args[] | select(startswith($f + "="))] | if length == 1 then .[0][($f | length) + 1:] else null end;
'

# ---- render-only checks: the base ------------------------------------------------------------
check "base: exactly Namespace, ServiceAccount, ClusterRole, ClusterRoleBinding, Service, Deployment, PodDisruptionBudget" base \
  '[.[].kind] | sort == ["ClusterRole","ClusterRoleBinding","Deployment","Namespace","PodDisruptionBudget","Service","ServiceAccount"]'
check "base: every namespaced object is in kwp-system" base \
  '[.[] | select(.kind | IN("Namespace","ClusterRole","ClusterRoleBinding") | not) | .metadata.namespace] | all(. == "kwp-system")'
check "base: Deployment has the restricted securityContext (runAsNonRoot, runAsUser 65532, seccomp RuntimeDefault, no privilege escalation, drop ALL, read-only root)" base \
  "$JQ_DEFS"'obj("Deployment") | restricted'
check "base: Deployment runs 2+ replicas spread across nodes" base \
  "$JQ_DEFS"'obj("Deployment") | .spec.replicas >= 2 and ([.spec.template.spec.topologySpreadConstraints[]? | select(.topologyKey == "kubernetes.io/hostname" and .whenUnsatisfiable == "DoNotSchedule")] | length == 1)'
check "base: rolling update maxUnavailable 0, maxSurge 1" base \
  "$JQ_DEFS"'obj("Deployment") | .spec.strategy.type == "RollingUpdate" and .spec.strategy.rollingUpdate.maxUnavailable == 0 and .spec.strategy.rollingUpdate.maxSurge == 1'
check "base: readiness on /readyz and liveness on /livez, over https" base \
  "$JQ_DEFS"'obj("Deployment") | ctr | .readinessProbe.httpGet.path == "/readyz" and .readinessProbe.httpGet.scheme == "HTTPS" and .livenessProbe.httpGet.path == "/livez" and .livenessProbe.httpGet.scheme == "HTTPS"'
check "base: cpu and memory requests and a memory limit" base \
  "$JQ_DEFS"'obj("Deployment") | ctr.resources | (.requests.cpu and .requests.memory and .limits.memory) != null'
check "base: kwp proxy with --auth=delegated and the serving certificate from Secret kwp-serving-cert" base \
  "$JQ_DEFS"'obj("Deployment") | (ctr.args[0] == "proxy") and arg("--auth=delegated") and
    (argval("--tls-cert-file") | startswith("/etc/kwp/tls/")) and (argval("--tls-key-file") | startswith("/etc/kwp/tls/")) and
    ([.spec.template.spec.volumes[] | select(.secret.secretName == "kwp-serving-cert") | .name] as $v |
     [ctr.volumeMounts[] | select(.name == $v[0] and .mountPath == "/etc/kwp/tls" and .readOnly == true)] | length == 1)'
check "base: image is the placeholder kwp:dev" base "$JQ_DEFS"'obj("Deployment") | ctr.image == "kwp:dev"'
# kwp exits within --shutdown-delay + 2.5 s (README "Rolling updates")
for r in base:Deployment node-local:DaemonSet second-tier:Deployment; do
  check "${r%%:*}: terminationGracePeriodSeconds above kwp's --shutdown-delay (default 5 s) + 2.5 s" "${r%%:*}" \
    "$JQ_DEFS"'obj("'"${r#*:}"'") | (argval("--shutdown-delay") // "5s") as $d |
      ($d | capture("^(?<n>[0-9]+)s$").n | tonumber) + 2.5 < .spec.template.spec.terminationGracePeriodSeconds'
done
check "base: scrape annotations name the https port" base \
  "$JQ_DEFS"'obj("Deployment") | .spec.template.metadata.annotations as $a |
    $a["prometheus.io/scrape"] == "true" and $a["prometheus.io/scheme"] == "https" and
    ($a["prometheus.io/port"] | tonumber) == (ctr.ports[] | select(.name == "https") | .containerPort)'
check "base: Service 443 -> the container's https port, selecting the Deployment's pods" base \
  "$JQ_DEFS"'obj("Service") as $s | obj("Deployment") as $d |
    ($s.spec.ports | length == 1 and .[0].port == 443 and .[0].targetPort == "https") and
    ($s.spec.selector | to_entries | all(. as $e | $d.spec.template.metadata.labels[$e.key] == $e.value))'
check "base: PodDisruptionBudget selects the Deployment's pods and leaves one up" base \
  "$JQ_DEFS"'obj("PodDisruptionBudget") as $p | obj("Deployment") as $d |
    ($p.spec.selector.matchLabels | to_entries | all(. as $e | $d.spec.template.metadata.labels[$e.key] == $e.value)) and
    ($p.spec.maxUnavailable == 1 or $p.spec.minAvailable == 1)'
# RBAC's matching (rbac/v1 evaluation_helpers.go): "*", the exact resource[/sub], or "*/sub"
JQ_RBAC='
def res_ok($res; $sub): . as $r | any($r[]; . == "*" or . == (if $sub == "" then $res else "\($res)/\($sub)" end) or ($sub != "" and . == "*/\($sub)"));
def grants($g; $res; $sub; $v): any(.[]; ((.apiGroups // []) | index($g) != null or index("*") != null) and ((.resources // []) | res_ok($res; $sub)) and (.verbs | index($v) != null or index("*") != null));
'
check "base: ClusterRole: create tokenreviews and subjectaccessreviews, impersonate users/groups/serviceaccounts/uids/any userextras/KEY" base \
  "$JQ_DEFS$JQ_RBAC"'obj("ClusterRole").rules |
    grants("authentication.k8s.io"; "tokenreviews"; ""; "create") and grants("authorization.k8s.io"; "subjectaccessreviews"; ""; "create") and
    grants(""; "users"; ""; "impersonate") and grants(""; "groups"; ""; "impersonate") and grants(""; "serviceaccounts"; ""; "impersonate") and
    grants("authentication.k8s.io"; "uids"; ""; "impersonate") and
    grants("authentication.k8s.io"; "userextras"; "authentication.kubernetes.io/pod-name"; "impersonate") and
    grants("authentication.k8s.io"; "userextras"; "scopes"; "impersonate") and
    (grants("apps"; "deployments"; ""; "watch") and grants("example.com"; "widgets"; ""; "list")) and
    (grants(""; "secrets"; ""; "create") | not) and (grants(""; "pods"; ""; "delete") | not) and
    (grants("apps"; "deployments"; ""; "impersonate") | not) and all(.[]; .verbs | index("*") == null)'
check "base: ClusterRoleBinding binds ServiceAccount kwp-system/kwp to that ClusterRole" base \
  "$JQ_DEFS"'obj("ClusterRoleBinding") as $b | obj("ClusterRole") as $r | obj("ServiceAccount") as $sa | obj("Deployment") as $d |
    $b.roleRef.name == $r.metadata.name and $b.subjects == [{"kind":"ServiceAccount","name":$sa.metadata.name,"namespace":"kwp-system"}] and
    $d.spec.template.spec.serviceAccountName == $sa.metadata.name'

# ---- render-only checks: the overlays ---------------------------------------------------------
check "node-local: a DaemonSet on the host network listening on 127.0.0.1 only, with --auth=delegated" node-local \
  "$JQ_DEFS"'obj("DaemonSet") | .spec.template.spec.hostNetwork == true and (argval("--listen") | startswith("127.0.0.1:")) and
    arg("--auth=delegated") and (arg("--auth=none") | not)'
check "node-local: probes go to the node's loopback over https" node-local \
  "$JQ_DEFS"'obj("DaemonSet") | ctr | [.readinessProbe.httpGet, .livenessProbe.httpGet] | all(.host == "127.0.0.1" and .scheme == "HTTPS")'
check "node-local: the restricted container securityContext, and no Deployment, Service or PDB" node-local \
  "$JQ_DEFS"'(obj("DaemonSet") | restricted) and ([.[].kind] | index("Deployment") == null and index("Service") == null and index("PodDisruptionBudget") == null)'
check "node-local: its own identity (ServiceAccount kwp-node/kwp-node bound to ClusterRole kwp-node)" node-local \
  "$JQ_DEFS"'obj("ClusterRoleBinding") as $b | obj("DaemonSet") as $d |
    $b.subjects == [{"kind":"ServiceAccount","name":"kwp-node","namespace":"kwp-node"}] and $b.roleRef.name == "kwp-node" and
    $d.spec.template.spec.serviceAccountName == "kwp-node"'
check "second-tier: upstream is the first tier's Service through a mounted kubeconfig" second-tier \
  "$JQ_DEFS"'obj("Deployment") as $d | ($d | argval("--kubeconfig")) as $kc | obj("ConfigMap") as $cm |
    ($kc | startswith("/etc/kwp/upstream/")) and
    ([$d.spec.template.spec.volumes[] | select(.configMap.name == $cm.metadata.name) | .name] as $v |
     [$d | ctr.volumeMounts[] | select(.name == $v[0] and .mountPath == "/etc/kwp/upstream")] | length == 1) and
    ($cm.data.kubeconfig | test("server: https://kwp\\.kwp-system\\.svc:443")) and
    ($cm.data.kubeconfig | test("tokenFile: /var/run/secrets/kubernetes.io/serviceaccount/token"))'
check "second-tier: own namespace and identity, restricted securityContext, --auth=delegated" second-tier \
  "$JQ_DEFS"'obj("ClusterRoleBinding") as $b | obj("Deployment") as $d |
    $b.subjects == [{"kind":"ServiceAccount","name":"kwp-tier2","namespace":"kwp-tier2"}] and
    $d.metadata.namespace == "kwp-tier2" and ($d | restricted) and ($d | arg("--auth=delegated"))'
check "components: ServiceMonitor scrapes the Service's https port; cert-manager Certificate writes kwp-serving-cert" components \
  "$JQ_DEFS"'obj("ServiceMonitor") as $m | obj("Service") as $s |
    ($m.spec.endpoints[0].port == ($s.spec.ports[0].name)) and $m.spec.endpoints[0].scheme == "https" and
    ($m.spec.selector.matchLabels | to_entries | all(. as $e | $s.metadata.labels[$e.key] == $e.value)) and
    ([.[] | select(.kind == "Certificate" and .spec.secretName == "kwp-serving-cert" and (.spec.dnsNames | index("kwp.kwp-system.svc")))] | length == 1)'

# kustomize's images: replaces the placeholder (an overlay in a scratch directory next to TMP)
mkdir -p "$TMP/img"
rel="$(realpath --relative-to="$TMP/img" "$DEPLOY_DIR/base")"
cat >"$TMP/img/kustomization.yaml" <<EOF
resources: [$rel]
images:
  - name: kwp
    newName: registry.example.com/kwp
    newTag: "1.2.3"
EOF
img="$("$KUBECTL" kustomize "$TMP/img" 2>&1 | grep -o 'image: .*')"
verdict "kustomize images: overrides the placeholder kwp:dev" \
  "$([ "$img" = "image: registry.example.com/kwp:1.2.3" ] && echo 1)" "got: $img"

# ---- apply every render to kwp sim, read every object back ------------------------------------
start_kwp sim sim --listen 127.0.0.1:0 --objects 0 --churn 0 \
  --resource cert-manager.io/v1/certificates --resource cert-manager.io/v1/issuers \
  --resource monitoring.coreos.com/v1/servicemonitors:namespaced:ServiceMonitor
SIM="$URL"
write_kubeconfig "$TMP/kubeconfig" "$SIM"
kc() {
  timeout 60 "$KUBECTL" --kubeconfig "$TMP/kubeconfig" --cache-dir "$TMP/cache" \
    --request-timeout=20s "$@"
}

# the sorted "Kind namespace/name" lines of a JSON array (render) or a List (kubectl get)
ids() { jq -r '(if type == "array" then . else .items end)[] | "\(.kind) \(.metadata.namespace // "")/\(.metadata.name)"' "$1" | sort; }

for r in base node-local second-tier components; do
  kc apply --validate=false -f "$TMP/$r.yaml" -v=6 >"$TMP/apply-$r.out" 2>"$TMP/apply-$r.log"
  rc=$?
  n_render=$(jq length "$TMP/$r.json")
  n_post=$(grep -c 'POST .* 201 Created' "$TMP/apply-$r.log")
  n_created=$(grep -c ' created$' "$TMP/apply-$r.out")
  # (objects the base already made are unchanged, or configured by a no-op patch: the PDB)
  n_unchanged=$(grep -c ' unchanged$\| configured$' "$TMP/apply-$r.out")
  # every create was a GET answering 404 first (kubectl apply's create path)
  n_404=$(grep -c 'GET .* 404 Not Found' "$TMP/apply-$r.log")
  verdict "kubectl apply deploy/$r to kwp sim: $n_created created (GET 404, then POST 201), $n_unchanged there already" \
    "$([ "$rc" -eq 0 ] && [ "$n_post" -eq "$n_created" ] && [ "$n_404" -ge "$n_created" ] &&
      [ $((n_created + n_unchanged)) -eq "$n_render" ] && [ "$n_created" -gt 0 ] && echo 1)" \
    "rc=$rc, $n_render objects, $n_post POST 201, $n_404 GET 404" "$(head -c 800 "$TMP/apply-$r.out")" \
    "$(grep -v 'round_trippers\|OpenAPI\|apply.go' "$TMP/apply-$r.log" | head -c 800)"

  kc get -f "$TMP/$r.yaml" -o json >"$TMP/get-$r.json" 2>"$TMP/get-$r.err"
  rc=$?
  want="$(ids "$TMP/$r.json")"
  got="$(ids "$TMP/get-$r.json" 2>/dev/null)"
  # kubectl apply keeps what it sent in the last-applied annotation, which the server stores
  no_annot=$(jq '[.items[] | select(.metadata.annotations["kubectl.kubernetes.io/last-applied-configuration"] == null)] | length' \
    "$TMP/get-$r.json" 2>/dev/null)
  verdict "kubectl get -f deploy/$r: every object back, same kind, namespace and name, with the last-applied annotation" \
    "$([ "$rc" -eq 0 ] && [ "$want" = "$got" ] && [ "$no_annot" = 0 ] && echo 1)" \
    "rc=$rc, $no_annot without the annotation, $(head -c 300 "$TMP/get-$r.err")" \
    "diff (render vs server): $(diff <(printf '%s\n' "$want") <(printf '%s\n' "$got") | head -n 10)"
done

# what the server holds is what was sent, with kube's defaults added
check_server() {
  local name="$1" prog="$2" got
  got="$(jq -r "$JQ_DEFS"'.items | '"$prog" "$TMP/get-base.json" 2>&1)"
  verdict "$name" "$([ "$got" = true ] && echo 1)" "jq printed: $(printf '%s' "$got" | head -c 400)"
}
check_server "sim holds the Deployment as sent (restricted securityContext, 2 replicas) plus kube's defaults" \
  'obj("Deployment") | restricted and .spec.replicas == 2 and .spec.revisionHistoryLimit == 5 and
   .spec.progressDeadlineSeconds == 600 and .metadata.generation == 1 and ctr.terminationMessagePath == "/dev/termination-log"'
check_server "sim holds the PodDisruptionBudget and the ClusterRoleBinding as kube-apiserver would" \
  'obj("PodDisruptionBudget").status == {"disruptionsAllowed":0,"currentHealthy":0,"desiredHealthy":0,"expectedPods":0} and
   (obj("ClusterRoleBinding").subjects[0] | .kind == "ServiceAccount" and (has("apiGroup") | not))'
got="$(jq -r '.items[] | select(.kind == "DaemonSet") | .spec.template.spec.containers[0].ports[0] | "\(.containerPort) \(.hostPort)"' "$TMP/get-node-local.json")"
verdict "sim holds the DaemonSet with kube's hostNetwork default hostPort = containerPort" \
  "$([ "$got" = "10262 10262" ] && echo 1)" "containerPort hostPort: $got"

# apply again: nothing changes (kubectl always sends a PodDisruptionBudget's selector, whose
# patch strategy is replace, and says "configured"; the write is a no-op: same resourceVersion)
rvs() { kc get -f "$TMP/base.yaml" -o json | jq -c '[.items[] | .metadata.resourceVersion]'; }
before="$(rvs)"
kc apply --validate=false -f "$TMP/base.yaml" >"$TMP/reapply.out" 2>"$TMP/reapply.err"
rc=$?
after="$(rvs)"
n=$(grep -c ' unchanged$' "$TMP/reapply.out")
pdb=$(grep -c '^poddisruptionbudget.policy/kwp configured$' "$TMP/reapply.out")
verdict "kubectl apply of the same base again: $n unchanged, the PDB's no-op patch, no resourceVersion moved" \
  "$([ "$rc" -eq 0 ] && [ $((n + pdb)) -eq "$(jq length "$TMP/base.json")" ] &&
    [ "$before" = "$after" ] && [ "$before" != "" ] && echo 1)" \
  "rc=$rc: $(head -c 600 "$TMP/reapply.out") $(head -c 300 "$TMP/reapply.err")" \
  "resourceVersions before $before, after $after"
sed 's/^  replicas: 2$/  replicas: 3/' "$TMP/base.yaml" >"$TMP/base3.yaml"
kc apply --validate=false -f "$TMP/base3.yaml" -v=6 >"$TMP/scale.out" 2>"$TMP/scale.log"
rc=$?
replicas="$(kc get deployment kwp -n kwp-system -o json 2>/dev/null | jq -c '[.spec.replicas, (.metadata.annotations["kubectl.kubernetes.io/last-applied-configuration"] | fromjson | .spec.replicas), .spec.template.spec.containers[0].image]')"
verdict "kubectl apply of replicas 3: PATCH, the server holds 3 in the object and the annotation, the rest kept" \
  "$([ "$rc" -eq 0 ] && grep -q 'deployment.apps/kwp configured' "$TMP/scale.out" &&
    grep -q 'PATCH .*deployments/kwp.* 200 OK' "$TMP/scale.log" && [ "$replicas" = '[3,3,"kwp:dev"]' ] && echo 1)" \
  "rc=$rc, server: $replicas, $(head -c 400 "$TMP/scale.out")"

# ---- the manifests' own args start kwp --------------------------------------------------------
# A serving certificate like the Secret's (EC P-256, SANs the Service name and 127.0.0.1).
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 2 -subj /CN=kwp \
  -addext "subjectAltName=DNS:kwp.kwp-system.svc,IP:127.0.0.1" \
  -keyout "$TMP/tls.key" -out "$TMP/tls.crt" >/dev/null 2>&1
# run_args NAME RENDER KIND UPSTREAM [ARGS...]: the container's args from the render, with
# --listen on port 0, the certificate paths in TMP, a --kubeconfig path replaced by
# $RUN_KUBECONFIG, --upstream UPSTREAM unless it is "" (no in-cluster service account here) and
# ARGS after them.
RUN_KUBECONFIG=""
run_args() {
  local name="$1" render="$2" kind="$3" upstream="$4" args=() a
  shift 4
  while IFS= read -r a; do
    case "$a" in
      --listen=*) a="--listen=127.0.0.1:0" ;;
      --tls-cert-file=*) a="--tls-cert-file=$TMP/tls.crt" ;;
      --tls-key-file=*) a="--tls-key-file=$TMP/tls.key" ;;
      --kubeconfig=*) a="--kubeconfig=$RUN_KUBECONFIG" ;;
    esac
    args+=("$a")
  done < <(jq -r --arg k "$kind" '.[] | select(.kind == $k) | .spec.template.spec.containers[0].args[]' "$TMP/$render.json")
  [ -z "$upstream" ] || args+=(--upstream "$upstream")
  start_kwp "$name" "${args[@]}" "$@"
  local livez
  wait_ready "$URL" 30 --cacert "$TMP/tls.crt"
  livez="$(curl -s -o /dev/null -w '%{http_code}' --max-time 5 --cacert "$TMP/tls.crt" "$URL/livez")"
  verdict "$name: the $render $kind's args (${args[*]:0:3} ...) serve https: /readyz $READY_CODE and /livez $livez without credentials" \
    "$([[ "$URL" == https://* ]] && [ "$READY_CODE" = 200 ] && [ "$livez" = 200 ] && echo 1)" \
    "url $URL" "$(tail -n 5 "$TMP/$name.log")"
}
run_args proxy-deployment base Deployment "$SIM"
# SIGTERM with the Deployment's --shutdown-delay: /readyz fails at once, exit 0 within the grace
grace="$(jq -r '.[] | select(.kind == "Deployment") | .spec.template.spec.terminationGracePeriodSeconds' "$TMP/base.json")"
pid="${KWP_PIDS[-1]}"
t0=$SECONDS
kill -TERM "$pid"
sleep 0.5
readyz="$(curl -s -o /dev/null -w '%{http_code}' --max-time 2 --cacert "$TMP/tls.crt" "$URL/readyz")"
for ((i = 0; i < grace * 10; i++)); do
  kill -0 "$pid" 2>/dev/null || break
  sleep 0.1
done
kill -KILL "$pid" 2>/dev/null
wait "$pid"
rc=$?
took=$((SECONDS - t0))
unset 'KWP_PIDS[-1]' 'KWP_NAMES[-1]' # stopped here
verdict "the Deployment's kwp on SIGTERM: /readyz $readyz at once, exit $rc after ${took}s (grace ${grace}s)" \
  "$([ "$readyz" = 503 ] && [ "$rc" -eq 0 ] && [ "$took" -lt "$grace" ] && echo 1)" \
  "$(tail -n 8 "$TMP/proxy-deployment.log")"
run_args proxy-daemonset node-local DaemonSet "$SIM"

# ---- the ClusterRole is all kwp needs ---------------------------------------------------------
# kwp with the Deployment's args delegates to a simulator that authenticates and authorizes as
# kube-apiserver does, kwp's identity holding exactly the rendered ClusterRole's rules: it must
# get ready (its lists and watches), review callers, and forward as them (impersonating the
# user, its uid, groups and extras, or a service account).
cat >"$TMP/tokens.csv" <<EOF
tok-kwp,kwp-proxy,uid-kwp
tok-tier2,kwp-tier2,uid-tier2
tok-alice,alice,uid-alice
EOF
{
  jq -r '.[] | select(.kind == "ClusterRole") | .rules | to_entries[] | .value as $r |
    "allow name=kwp-\(.key) users=kwp-proxy,kwp-tier2 verbs=\($r.verbs | join(","))" +
    (if $r.nonResourceURLs then " nonResourceURLs=\($r.nonResourceURLs | join(","))"
     else " apiGroups=\($r.apiGroups | map(if . == "" then "\"\"" else . end) | join(",")) resources=\($r.resources | join(","))" end)' \
    "$TMP/base.json"
  cat <<'EOF'
allow name=alice-as users=alice verbs=impersonate apiGroups="" resources=users,serviceaccounts resourceNames=bob,sa1
allow name=alice-as-extra users=alice verbs=impersonate apiGroups=authentication.k8s.io resources=uids,userextras/scopes
allow name=writers users=bob,system:serviceaccount:default:sa1 verbs=create,get apiGroups="" resources=configmaps
EOF
} >"$TMP/rules"
start_kwp sim-rbac sim --listen 127.0.0.1:0 --objects 5 --churn 0 \
  --token-auth-file "$TMP/tokens.csv" --authorization-rules "$TMP/rules"
SIM_RBAC="$URL"
# (the delay is checked above; 0 here so the finish need not wait it out)
run_args proxy-rbac base Deployment "$SIM_RBAC" --token tok-kwp --shutdown-delay=0s
PROXY_RBAC="$URL"
post_as() { # post_as NAME HEADERS...: alice POSTs configmap NAME through kwp; prints the code
  local name="$1"
  shift
  curl -s -o "$TMP/post-$name.json" -w '%{http_code}' --max-time 10 --cacert "$TMP/tls.crt" \
    -H 'Authorization: Bearer tok-alice' -H 'Content-Type: application/json' "$@" \
    --data "{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":{\"name\":\"$name\"}}" \
    "$PROXY_RBAC/api/v1/namespaces/default/configmaps"
}
code="$(post_as cm-bob -H 'Impersonate-User: bob' -H 'Impersonate-Uid: uid-bob' -H 'Impersonate-Extra-Scopes: x')"
verdict "through kwp, alice as bob (uid, extra scopes=x): forwarded with kwp's impersonation, $code" \
  "$([ "$code" = 201 ] && echo 1)" "$(head -c 400 "$TMP/post-cm-bob.json")" "$(tail -n 3 "$TMP/proxy-rbac.log")"
code="$(post_as cm-sa1 -H 'Impersonate-User: system:serviceaccount:default:sa1')"
verdict "through kwp, alice as service account default/sa1: forwarded with kwp's impersonation, $code" \
  "$([ "$code" = 201 ] && echo 1)" "$(head -c 400 "$TMP/post-cm-sa1.json")"
code="$(curl -s -o "$TMP/alice-pods.json" -w '%{http_code}' --max-time 10 --cacert "$TMP/tls.crt" \
  -H 'Authorization: Bearer tok-alice' "$PROXY_RBAC/api/v1/pods?resourceVersion=0")"
verdict "through kwp, alice's own LIST of pods (no rule for her): 403 from the cache's SubjectAccessReview" \
  "$([ "$code" = 403 ] && echo 1)" "$(head -c 300 "$TMP/alice-pods.json")"

# The second tier with its own args and the kubeconfig of its ConfigMap (paths rewritten: the
# first tier's URL for the Service's, the test certificate for its CA, a file for its token),
# its identity kwp-tier2 holding the same ClusterRole: ready through the first tier, and the
# same forwarded write through both tiers.
printf 'tok-tier2\n' >"$TMP/tier2.token"
jq -r '.[] | select(.kind == "ConfigMap") | .data.kubeconfig' "$TMP/second-tier.json" |
  sed -e "s#https://kwp.kwp-system.svc:443#$PROXY_RBAC#" \
    -e "s#certificate-authority: .*#certificate-authority: $TMP/tls.crt#" \
    -e "s#tokenFile: .*#tokenFile: $TMP/tier2.token#" >"$TMP/tier2.kubeconfig"
RUN_KUBECONFIG="$TMP/tier2.kubeconfig"
run_args proxy-tier2 second-tier Deployment "" --shutdown-delay=0s
PROXY_RBAC="$URL"
code="$(post_as cm-bob-2 -H 'Impersonate-User: bob' -H 'Impersonate-Uid: uid-bob' -H 'Impersonate-Extra-Scopes: x')"
verdict "through the second tier and the first, alice as bob (uid, extra): $code" \
  "$([ "$code" = 201 ] && echo 1)" "$(head -c 400 "$TMP/post-cm-bob-2.json")" "$(tail -n 3 "$TMP/proxy-tier2.log")"

# ---- the dashboard names only metrics kwp serves ----------------------------------------------
# A simulator that authenticates (bearer token = kubernetes-admin in system:masters) and a
# delegated proxy in front, so /metrics carries the auth families too.
start_kwp sim-auth sim --listen 127.0.0.1:0 --objects 5 --churn 0 --token tok-admin
SIM_AUTH="$URL"
start_kwp proxy-metrics proxy --listen 127.0.0.1:0 --upstream "$SIM_AUTH" --token tok-admin \
  --auth delegated --resources pods
wait_ready "$URL" 30
curl -s --max-time 10 -H 'Authorization: Bearer tok-admin' "$URL/metrics" >"$TMP/metrics.txt"
served="$(awk '/^# TYPE / {print $3}' "$TMP/metrics.txt" | sort -u)"
used="$(jq -r '.. | .expr? // empty' "$DEPLOY_DIR/dashboards/kwp.json" |
  grep -o '\(kwp\|process\)_[a-z_]*' | sed -E 's/_(bucket|count|sum)$//' | sort -u)"
missing="$(comm -23 <(printf '%s\n' "$used") <(printf '%s\n' "$served"))"
n_used=$(printf '%s\n' "$used" | grep -c .)
verdict "deploy/dashboards/kwp.json: all $n_used kwp_* and process_* metrics it queries are in /metrics" \
  "$([ -z "$missing" ] && [ "$n_used" -gt 10 ] && grep -q '^kwp_authorizations_total' "$TMP/metrics.txt" && echo 1)" \
  "missing: $(printf '%s' "$missing" | tr '\n' ' ')" "served: $(printf '%s' "$served" | tr '\n' ' ' | head -c 600)"
jq -e '.panels | length > 0 and all(.targets | length > 0)' "$DEPLOY_DIR/dashboards/kwp.json" >/dev/null
verdict "deploy/dashboards/kwp.json is a dashboard whose every panel has a query" "$([ $? -eq 0 ] && echo 1)"
