#!/usr/bin/env bash
# Starts a throw-away Kubernetes v1.20.2 control plane on this machine, everything on 127.0.0.1:
# etcd, kube-apiserver, kube-controller-manager, kube-scheduler (binaries from build.sh's cache)
# and a fake node (fake-node.mjs). Stop it with down.sh and the same work folder.
#   K8S_WORK   work folder (certificates, data, logs, pid files); required
#   ports      K8S_API_PORT 16443, K8S_ETCD_PORT 16379 (+1 for peers), controller-manager 16457,
#              scheduler 16459: none of the stack's (8080-8084, 9080-9084, 5432, 6379)
# Writes $K8S_WORK/kubeconfig and $K8S_WORK/cluster.json (for kube.mjs). ~10 s when cached.
set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
CACHE=${PO_K8S_CACHE:-$HOME/.cache/po-k8s}
BIN="$CACHE/bin"
W=${K8S_WORK:?set K8S_WORK to a work folder}
API_PORT=${K8S_API_PORT:-16443}
ETCD_PORT=${K8S_ETCD_PORT:-16379}
CM_PORT=${K8S_CM_PORT:-16457}
SCHED_PORT=${K8S_SCHED_PORT:-16459}
t0=$(date +%s)
log() { echo "[k8s-up +$(($(date +%s) - t0))s] $*"; }

for b in etcd kube-apiserver kube-controller-manager kube-scheduler kubectl; do
  [ -x "$BIN/$b" ] || { echo "k8s-up: $BIN/$b missing: run deploy/k8s-local/build.sh" >&2; exit 1; }
done
mkdir -p "$W"
for port in "$API_PORT" "$ETCD_PORT" $((ETCD_PORT + 1)) "$CM_PORT" "$SCHED_PORT"; do
  if (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then
    # Exit 3: this machine cannot start the control plane now (run.sh skips, loudly).
    echo "127.0.0.1:$port is already in use (another control plane? K8S_WORK=… deploy/k8s-local/down.sh)" | tee "$W/unavailable" >&2
    exit 3
  fi
done
mkdir -p "$W"/{pki,run,logs}
P="$W/pki" R="$W/run" L="$W/logs"

# --- certificates: a CA, the API server's serving certificate, an admin client, the SA key -----
if [ ! -f "$P/admin.crt" ]; then
  ossl() { openssl "$@" 2>/dev/null; }
  ossl req -x509 -newkey rsa:2048 -nodes -keyout "$P/ca.key" -out "$P/ca.crt" -days 7 -subj "/CN=po-k8s-local-ca"
  printf 'subjectAltName=IP:127.0.0.1,IP:10.0.0.1,DNS:localhost,DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc\nextendedKeyUsage=serverAuth\n' >"$P/server.ext"
  printf 'extendedKeyUsage=clientAuth\n' >"$P/client.ext"
  ossl req -newkey rsa:2048 -nodes -keyout "$P/apiserver.key" -out "$P/apiserver.csr" -subj "/CN=kube-apiserver"
  ossl x509 -req -in "$P/apiserver.csr" -CA "$P/ca.crt" -CAkey "$P/ca.key" -CAcreateserial -out "$P/apiserver.crt" -days 7 -extfile "$P/server.ext"
  # system:masters: the test acts as the cluster's administrator.
  ossl req -newkey rsa:2048 -nodes -keyout "$P/admin.key" -out "$P/admin.csr" -subj "/O=system:masters/CN=po-k8s-admin"
  ossl x509 -req -in "$P/admin.csr" -CA "$P/ca.crt" -CAkey "$P/ca.key" -CAcreateserial -out "$P/admin.crt" -days 7 -extfile "$P/client.ext"
  ossl genrsa -out "$P/sa.key" 2048
  ossl rsa -in "$P/sa.key" -pubout -out "$P/sa.pub"
fi
K="$W/kubeconfig"
cat >"$K" <<KUBECONFIG
apiVersion: v1
kind: Config
clusters: [{name: po-local, cluster: {server: "https://127.0.0.1:$API_PORT", certificate-authority: "$P/ca.crt"}}]
users: [{name: admin, user: {client-certificate: "$P/admin.crt", client-key: "$P/admin.key"}}]
contexts: [{name: po-local, context: {cluster: po-local, user: admin}}]
current-context: po-local
KUBECONFIG
printf '{"server":"https://127.0.0.1:%s","ca":"%s","cert":"%s","key":"%s"}\n' "$API_PORT" "$P/ca.crt" "$P/admin.crt" "$P/admin.key" >"$W/cluster.json"

# Each process in its own session (setsid), its pid saved: down.sh stops exactly these.
start() {
  local name=$1
  shift
  setsid "$@" >"$L/$name.log" 2>&1 </dev/null &
  echo $! >"$R/$name.pid"
}
kubectl() { "$BIN/kubectl" --kubeconfig "$K" "$@"; }

start etcd "$BIN/etcd" --name po-local --data-dir "$W/etcd" \
  --listen-client-urls "http://127.0.0.1:$ETCD_PORT" --advertise-client-urls "http://127.0.0.1:$ETCD_PORT" \
  --listen-peer-urls "http://127.0.0.1:$((ETCD_PORT + 1))" --initial-advertise-peer-urls "http://127.0.0.1:$((ETCD_PORT + 1))" \
  --initial-cluster "po-local=http://127.0.0.1:$((ETCD_PORT + 1))" \
  --quota-backend-bytes $((512 * 1024 * 1024))
start apiserver "$BIN/kube-apiserver" --etcd-servers="http://127.0.0.1:$ETCD_PORT" \
  --bind-address=127.0.0.1 --secure-port="$API_PORT" --insecure-port=0 --advertise-address=127.0.0.1 \
  --endpoint-reconciler-type=none --tls-cert-file="$P/apiserver.crt" --tls-private-key-file="$P/apiserver.key" \
  --client-ca-file="$P/ca.crt" --service-account-key-file="$P/sa.pub" --service-account-signing-key-file="$P/sa.key" \
  --service-account-issuer=https://kubernetes.default.svc --service-cluster-ip-range=10.0.0.0/24 \
  --authorization-mode=Node,RBAC --allow-privileged=true --profiling=false
for _ in $(seq 1 90); do kubectl get --raw /readyz >/dev/null 2>&1 && break; sleep 1; done
kubectl get --raw /readyz >/dev/null || { tail -20 "$L/apiserver.log" >&2; exit 1; }
log "apiserver ready on https://127.0.0.1:$API_PORT"

common=(--kubeconfig="$K" --authentication-kubeconfig="$K" --authorization-kubeconfig="$K"
  --leader-elect=false --port=0 --bind-address=127.0.0.1 --profiling=false)
start controller-manager "$BIN/kube-controller-manager" "${common[@]}" --secure-port="$CM_PORT" \
  --controllers='*,-nodeipam' --use-service-account-credentials=false \
  --service-account-private-key-file="$P/sa.key" --root-ca-file="$P/ca.crt" --service-cluster-ip-range=10.0.0.0/24 \
  --cluster-signing-cert-file="$P/ca.crt" --cluster-signing-key-file="$P/ca.key"
start scheduler "$BIN/kube-scheduler" "${common[@]}" --secure-port="$SCHED_PORT"
K8S_WORK="$W" start fake-node node "$HERE/fake-node.mjs"

# Ready when the namespace controller made the default ServiceAccount and the node is Ready.
for _ in $(seq 1 60); do
  if kubectl -n default get serviceaccount default >/dev/null 2>&1 &&
    [ "$(kubectl get node fake-node-1 -o jsonpath='{.status.conditions[?(@.type=="Ready")].status}' 2>/dev/null)" = True ]; then
    log "control plane up: export KUBECONFIG=$K PATH=$BIN:\$PATH"
    exit 0
  fi
  sleep 1
done
echo "k8s-up: the control plane did not become ready; logs in $L" >&2
tail -5 "$L"/*.log >&2
exit 1
