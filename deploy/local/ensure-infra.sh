#!/usr/bin/env bash
# Makes sure PostgreSQL (DATABASE_URL) and Redis (REDIS_URL) answer, for `npm run up` and CI.
# Local addresses: starts what is installed but stopped, installs what is missing (root + apt-get).
# Remote addresses: only checks and reports. Silent when everything already answers.
# A DATABASE_URL with `pgbouncer=true` names a transaction-mode pooler: PostgreSQL itself is then
# DATABASE_DIRECT_URL, and a local pooler that does not answer is started (PgBouncer, installed
# when missing; decision 0116). Also Go and Python for the worker SDKs (ensure-sdk-toolchains.sh).
# See docs/decisions/0004-local-stack.md.
set -euo pipefail

DATABASE_URL="${DATABASE_URL:-postgresql://postgres@127.0.0.1:5432/pipeline_orchestration}"
DATABASE_DIRECT_URL="${DATABASE_DIRECT_URL:-}"
REDIS_URL="${REDIS_URL:-redis://127.0.0.1:6379}"
WAIT_SECONDS="${INFRA_WAIT_SECONDS:-30}"
REPO_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"

say() { echo "ensure-infra: $*" >&2; }
die() { say "$*"; exit 1; }
have() { command -v "$1" >/dev/null 2>&1; }
is_root() { [[ "$(id -u)" == 0 ]]; }
with_timeout() { if have timeout; then timeout "$@"; else shift; "$@"; fi; }

# The Python and Go worker SDKs' toolchains (issue 30): installed when missing, never fatal here.
bash "$REPO_ROOT/deploy/local/ensure-sdk-toolchains.sh"

# parse_url URL DEFAULT_PORT -> sets U_USER U_PASS U_HOST U_PORT (handles user:pass@, [ipv6]:port, ?query)
parse_url() {
  local rest="${1#*://}" auth="" hostport
  rest="${rest%%/*}"; rest="${rest%%\?*}"
  if [[ "$rest" == *@* ]]; then auth="${rest%@*}"; hostport="${rest##*@}"; else hostport="$rest"; fi
  U_USER="${auth%%:*}"; U_PASS=""; [[ "$auth" == *:* ]] && U_PASS="${auth#*:}"
  if [[ "$hostport" == \[* ]]; then
    U_HOST="${hostport%%]*}"; U_HOST="${U_HOST#[}"; U_PORT="${hostport##*]}"; U_PORT="${U_PORT#:}"
  else
    U_HOST="${hostport%%:*}"; U_PORT=""; [[ "$hostport" == *:* ]] && U_PORT="${hostport##*:}"
  fi
  U_HOST="${U_HOST:-127.0.0.1}"; U_PORT="${U_PORT:-$2}"
}
is_local() { [[ "$1" == localhost || "$1" == 127.* || "$1" == ::1 ]]; }
tcp_probe() { with_timeout 3 bash -c ">/dev/tcp/$1/$2" >/dev/null 2>&1; }

POOLER=0
if [[ "$DATABASE_URL" =~ [?\&]pgbouncer=true(\&|$) ]]; then
  POOLER=1
  [[ -n "$DATABASE_DIRECT_URL" ]] \
    || die "DATABASE_URL names a pooler (pgbouncer=true): set DATABASE_DIRECT_URL to the PostgreSQL server itself (LISTEN and migrations need a session)"
  parse_url "$DATABASE_URL" 6432
  BOUNCER_HOST="$U_HOST" BOUNCER_PORT="$U_PORT"
fi
parse_url "${DATABASE_DIRECT_URL:-$DATABASE_URL}" 5432
PG_HOST="$U_HOST" PG_PORT="$U_PORT" PG_USER="${U_USER:-postgres}" PG_PASS="$U_PASS"
parse_url "$REDIS_URL" 6379
REDIS_HOST="$U_HOST" REDIS_PORT="$U_PORT"

pg_up() {
  if have pg_isready; then with_timeout 5 pg_isready -q -h "$PG_HOST" -p "$PG_PORT" -t 3 >/dev/null 2>&1
  else tcp_probe "$PG_HOST" "$PG_PORT"; fi
}
redis_up() {
  if have redis-cli && [[ "$REDIS_URL" != rediss://* ]]; then
    # NOAUTH/WRONGPASS still means a server is answering; LOADING means not yet.
    local reply; reply="$(with_timeout 5 redis-cli -h "$REDIS_HOST" -p "$REDIS_PORT" ping 2>&1 || true)"
    [[ "$reply" =~ ^(\(error\) )?(PONG|NOAUTH|WRONGPASS) ]]
  else tcp_probe "$REDIS_HOST" "$REDIS_PORT"; fi
}
wait_for() { # NAME CHECK_FN
  local i
  for ((i = 0; i < WAIT_SECONDS; i++)); do "$2" && return 0; sleep 1; done
  "$2"
}

# A server package counts as installed when its server binary is there (clients alone are not enough).
pg_bin_dir() { { ls -d /usr/lib/postgresql/*/bin 2>/dev/null || true; } | sort -V | tail -n 1; }
pg_installed() { [[ -n "$(pg_bin_dir)" ]] || have pg_ctl; }
redis_installed() { have redis-server; }

as_postgres() { # run a command as the postgres OS user when we are root
  if is_root && id postgres >/dev/null 2>&1; then runuser -u postgres -- "$@"; else "$@"; fi
}

start_pg() {
  if have pg_lsclusters && have pg_ctlcluster; then # Debian/Ubuntu postgresql-common
    local clusters ver name port status started=0
    clusters="$(pg_lsclusters -h 2>/dev/null || true)"
    if [[ -z "$clusters" ]] && is_root && have pg_createcluster; then
      ver="$(basename "$(dirname "$(pg_bin_dir)")")"
      say "no PostgreSQL cluster found: creating ${ver}/main on port ${PG_PORT}"
      pg_createcluster "$ver" main --port "$PG_PORT" >/dev/null
      clusters="$(pg_lsclusters -h)"
    fi
    # Prefer the cluster on the wanted port; with none there, start every stopped cluster.
    local only_port=""
    if awk -v p="$PG_PORT" '$3 == p { found = 1 } END { exit !found }' <<<"$clusters"; then only_port="$PG_PORT"
    else say "no PostgreSQL cluster is configured for port $PG_PORT: starting every stopped cluster"; fi
    while read -r ver name port status _; do
      [[ -z "${ver:-}" || "$status" == online* ]] && continue
      [[ -n "$only_port" && "$port" != "$only_port" ]] && continue
      say "starting PostgreSQL cluster ${ver}/${name} (port ${port})"
      if pg_ctlcluster --skip-systemctl-redirect "$ver" "$name" start; then started=1
      else
        say "could not start ${ver}/${name}"
        is_root || say "  try: sudo pg_ctlcluster --skip-systemctl-redirect $ver $name start"
      fi
    done <<<"$clusters"
    [[ "$started" == 1 ]] && return 0
    say "no stopped cluster could be started; clusters:"
    awk '{ printf "ensure-infra:   %s/%s port %s %s\n", $1, $2, $3, $4 }' <<<"$clusters" >&2
    return 1
  fi
  # Plain pg_ctl (no postgresql-common): a data directory of our own unless PGDATA says otherwise.
  local pg_ctl bin data log
  if have pg_ctl; then pg_ctl="$(command -v pg_ctl)"; else pg_ctl="$(pg_bin_dir)/pg_ctl"; fi
  bin="$(dirname "$pg_ctl")"
  if is_root; then data="${PGDATA:-/var/lib/postgresql/data}"; else data="${PGDATA:-$REPO_ROOT/.local/pgdata}"; fi
  log="$data/server.log"
  if [[ ! -f "$data/PG_VERSION" ]]; then
    say "initialising PostgreSQL data directory $data"
    mkdir -p "$data"; if is_root; then chown postgres: "$data"; chmod 700 "$data"; fi
    as_postgres "$bin/initdb" -D "$data" -U postgres --auth=trust >/dev/null
  fi
  say "starting PostgreSQL ($data, port $PG_PORT)"
  as_postgres "$pg_ctl" -D "$data" -l "$log" -o "-p $PG_PORT" start >/dev/null \
    || { say "pg_ctl start failed, see $log"; return 1; }
}

# Lets the postgres role connect over loopback TCP without a password (local development only).
ensure_pg_trust() {
  local out hba marker="# deploy/local/ensure-infra.sh: passwordless loopback for local development"
  [[ -z "$PG_PASS" ]] && have psql || return 0
  out="$(PGCONNECT_TIMEOUT=5 psql -w -h "$PG_HOST" -p "$PG_PORT" -U "$PG_USER" -d postgres \
    -Atc 'select 1' 2>&1)" && return 0
  grep -Eq 'password|pg_hba.conf' <<<"$out" || return 0 # not an authentication problem: migrate will report it
  if ! is_root; then
    say "PostgreSQL refuses ${PG_USER} without a password. Add these lines at the top of pg_hba.conf, then reload:"
    say "  host all all 127.0.0.1/32 trust"
    say "  host all all ::1/128 trust"
    return 0
  fi
  hba="$(as_postgres psql -p "$PG_PORT" -Atc 'SHOW hba_file' 2>/dev/null || true)"
  [[ -n "$hba" && -f "$hba" ]] || die "cannot find pg_hba.conf of port $PG_PORT (to allow passwordless loopback)"
  if ! grep -qF "$marker" "$hba"; then
    say "allowing passwordless loopback connections (trust for 127.0.0.1/32 and ::1/128) in $hba"
    local tmp; tmp="$(mktemp)"
    { echo "$marker"; echo "host all all 127.0.0.1/32 trust"; echo "host all all ::1/128 trust"; cat "$hba"; } >"$tmp"
    cat "$tmp" >"$hba"; rm -f "$tmp" # cat keeps the file's owner and mode
  fi
  as_postgres psql -p "$PG_PORT" -Atqc 'SELECT pg_reload_conf()' >/dev/null
  sleep 1
  PGCONNECT_TIMEOUT=5 psql -w -h "$PG_HOST" -p "$PG_PORT" -U "$PG_USER" -d postgres -Atc 'select 1' >/dev/null 2>&1 \
    || say "warning: ${PG_USER}@${PG_HOST}:${PG_PORT} still needs a password; check $hba"
}

start_redis() {
  local dir=/var/lib/redis logdir=/var/log/redis
  if ! is_root; then dir="$REPO_ROOT/.local/redis"; logdir="$dir"; fi
  mkdir -p "$dir" "$logdir"
  say "starting Redis on port $REDIS_PORT"
  redis-server --daemonize yes --bind 127.0.0.1 -::1 --port "$REDIS_PORT" --save "" --appendonly no \
    --dir "$dir" --logfile "$logdir/ci.log" >/dev/null \
    || { say "redis-server failed to start, see $logdir/ci.log"; return 1; }
}

# A local PgBouncer in transaction mode in front of PostgreSQL (DATABASE_DIRECT_URL), for `npm run up`
# with a pooler's DATABASE_URL. Its files live in .local/pgbouncer; it runs until stopped
# (`kill $(cat .local/pgbouncer/pgbouncer.pid)`).
start_pgbouncer() {
  bash "$REPO_ROOT/deploy/local/ensure-pgbouncer.sh"
  local dir="$REPO_ROOT/.local/pgbouncer" user="${PG_USER:-postgres}"
  mkdir -p "$dir"
  cat >"$dir/pgbouncer.ini" <<INI
[databases]
* = host=$PG_HOST port=$PG_PORT
[pgbouncer]
listen_addr = $BOUNCER_HOST
listen_port = $BOUNCER_PORT
unix_socket_dir =
auth_type = trust
auth_file = $dir/users.txt
pool_mode = transaction
default_pool_size = 20
max_client_conn = 1000
logfile = $dir/pgbouncer.log
pidfile = $dir/pgbouncer.pid
INI
  printf '"%s" "%s"\n' "$user" "$PG_PASS" >"$dir/users.txt"
  chmod 600 "$dir/users.txt"
  say "starting PgBouncer (transaction mode) on ${BOUNCER_HOST}:${BOUNCER_PORT} in front of ${PG_HOST}:${PG_PORT}"
  if is_root; then
    # PgBouncer refuses to run as root: it switches to postgres, which must own its files.
    chown -R postgres: "$dir"
    pgbouncer -d -u postgres "$dir/pgbouncer.ini"
  else
    pgbouncer -d "$dir/pgbouncer.ini"
  fi
}

# ---- main ----
pg_ok=0 redis_ok=0 bouncer_ok=1
pg_up && pg_ok=1
# With Sentinel or a cluster configured the services find Redis through those (decision 0123):
# nothing local to start or check on REDIS_URL.
if [[ -n "${REDIS_SENTINELS:-}${REDIS_CLUSTER_NODES:-}" ]]; then redis_ok=1; else redis_up && redis_ok=1; fi
if [[ $POOLER == 1 ]] && ! tcp_probe "$BOUNCER_HOST" "$BOUNCER_PORT"; then bouncer_ok=0; fi
if [[ "$pg_ok$redis_ok$bouncer_ok" == 111 ]]; then
  if is_local "$PG_HOST"; then ensure_pg_trust; fi
  exit 0
fi

for svc in pg redis; do # remote servers: check and report only
  if [[ $svc == pg ]]; then ok=$pg_ok host=$PG_HOST port=$PG_PORT label=PostgreSQL
  else ok=$redis_ok host=$REDIS_HOST port=$REDIS_PORT label=Redis; fi
  if [[ $ok == 1 ]] || is_local "$host"; then continue; fi
  say "waiting for remote $label at ${host}:${port}…"
  wait_for "$svc" "${svc}_up" || die "$label at ${host}:${port} does not answer (not local: not starting it)"
  eval "${svc}_ok=1"
done

missing=()
[[ $pg_ok == 0 ]] && is_local "$PG_HOST" && ! pg_installed && missing+=(postgresql)
[[ $redis_ok == 0 ]] && is_local "$REDIS_HOST" && ! redis_installed && missing+=(redis-server)
if ((${#missing[@]})); then
  if is_root && have apt-get; then
    say "installing ${missing[*]} (apt-get)"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq >/dev/null
    apt-get install -y -qq "${missing[@]}" >/dev/null
  else
    say "missing: ${missing[*]}. Install it, then run this again:"
    if have apt-get; then
      say "  sudo apt-get update && sudo DEBIAN_FRONTEND=noninteractive apt-get install -y ${missing[*]}"
    elif have brew; then
      say "  brew install postgresql@15 redis && brew services start postgresql@15 && brew services start redis"
    else
      say "  PostgreSQL 15+ on ${PG_HOST}:${PG_PORT} and Redis 7 on ${REDIS_HOST}:${REDIS_PORT}"
    fi
    exit 1
  fi
fi

if [[ $pg_ok == 0 ]]; then
  pg_up || start_pg || die "could not start PostgreSQL for ${PG_HOST}:${PG_PORT}"
  wait_for pg pg_up \
    || die "PostgreSQL at ${PG_HOST}:${PG_PORT} does not answer after ${WAIT_SECONDS}s (logs: /var/log/postgresql/)"
fi
if [[ $redis_ok == 0 ]]; then
  redis_up || start_redis || die "could not start Redis for ${REDIS_HOST}:${REDIS_PORT}"
  wait_for redis redis_up || die "Redis at ${REDIS_HOST}:${REDIS_PORT} still does not answer after ${WAIT_SECONDS}s"
fi
if is_local "$PG_HOST"; then ensure_pg_trust; fi
if [[ $bouncer_ok == 0 ]]; then
  if is_local "$BOUNCER_HOST"; then
    start_pgbouncer || die "could not start PgBouncer on ${BOUNCER_HOST}:${BOUNCER_PORT} (log: .local/pgbouncer/pgbouncer.log)"
  else
    say "waiting for the remote pooler at ${BOUNCER_HOST}:${BOUNCER_PORT}…"
  fi
  bouncer_up() { tcp_probe "$BOUNCER_HOST" "$BOUNCER_PORT"; }
  wait_for pgbouncer bouncer_up || die "the pooler at ${BOUNCER_HOST}:${BOUNCER_PORT} does not answer"
  say "PgBouncer ${BOUNCER_HOST}:${BOUNCER_PORT} is up"
fi
if [[ -n "${REDIS_SENTINELS:-}${REDIS_CLUSTER_NODES:-}" ]]; then
  say "PostgreSQL ${PG_HOST}:${PG_PORT} is up (Redis is left to Sentinel or the cluster)"
else
  say "PostgreSQL ${PG_HOST}:${PG_PORT} and Redis ${REDIS_HOST}:${REDIS_PORT} are up"
fi
