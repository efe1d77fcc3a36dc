{{/*
PostgreSQL: the direct URL, each service's pool, the connection budget and PgBouncer's names
(values.yaml "PostgreSQL connections and PgBouncer", decision 0114).
*/}}

{{/*
DATABASE_URL: from database.urlSecret, or built from database.host, port, name, user, params and
passwordSecret. Kubernetes expands $(PO_DATABASE_PASSWORD) in a value from a variable defined
before it; it cannot percent-encode, so the Secret must hold the password URL-encoded.
*/}}
{{- define "po.dbUrlEnv" -}}
{{- $d := .Values.database -}}
{{- if $d.host -}}
{{- $password := "" -}}
{{- with dig "passwordSecret" dict $d -}}
{{- if .name -}}
{{- $password = ":$(PO_DATABASE_PASSWORD)" -}}
- name: PO_DATABASE_PASSWORD
  valueFrom:
    secretKeyRef:
      name: {{ .name }}
      key: {{ .key }}
{{ end -}}
{{- end -}}
{{- $host := $d.host -}}
{{- if and (contains ":" $host) (not (hasPrefix "[" $host)) -}}{{- $host = printf "[%s]" $host -}}{{- end -}}
{{- $url := printf "postgresql://%s%s@%s:%d/%s" (urlquery $d.user) $password $host (int (default 5432 $d.port)) $d.name -}}
{{- with $d.params }}{{ $url = printf "%s?%s" $url . }}{{ end -}}
- name: DATABASE_URL
  value: {{ $url | quote }}
{{- else -}}
- name: DATABASE_URL
  valueFrom:
    secretKeyRef:
      name: {{ $d.urlSecret.name }}
      key: {{ $d.urlSecret.key }}
{{- end -}}
{{- end -}}

{{/* DATABASE_DIRECT_URL from database.directUrlSecret, when it names a Secret. */}}
{{- define "po.dbDirectUrlEnv" -}}
{{- with (dig "directUrlSecret" dict .Values.database) -}}
{{- if .name -}}
- name: DATABASE_DIRECT_URL
  valueFrom:
    secretKeyRef:
      name: {{ .name }}
      key: {{ .key }}
{{- end -}}
{{- end -}}
{{- end -}}

{{/* DATABASE_POOL_MAX of one service's pods: (dict "root" $ "service" NAME). null falls back to config. */}}
{{- define "po.poolMax" -}}
{{- $s := index .root.Values.services .service -}}
{{- int (default .root.Values.config.DATABASE_POOL_MAX $s.databasePoolMax) -}}
{{- end -}}

{{/*
The most connections this release opens, as JSON: `rollout` while every Deployment surges one pod
(and the migration Job counts as running), `steady` between rollouts, `clients` the services'
pools that end at the chart's PgBouncer instead. Per pod, a pool opens at most what the service's
own cap lets it use (each service's src/main.ts: pipeline-service BATCH_CONCURRENCY 2 + 4,
result-consumer batch concurrency + 2, scheduler-service (AHEAD_WAITING_PER_WORKER 2 + 1) ×
concurrency + 4); each gateway pod holds one LISTEN session besides, always on the server.
deploy/k8s-checks/budget.mjs recomputes this from the rendered objects and the services' source.
*/}}
{{- define "po.dbBudget" -}}
{{- $root := . -}}
{{- $c := .Values.config -}}
{{- $pgb := .Values.pgbouncer | default dict -}}
{{- $pooled := dig "enabled" false $pgb -}}
{{- $rollout := 0 -}}
{{- $steady := 0 -}}
{{- $clients := 0 -}}
{{- range $service, $s := .Values.services -}}
{{- $pool := int (include "po.poolMax" (dict "root" $root "service" $service)) -}}
{{- $uses := $pool -}}
{{- if eq $service "pipeline-service" -}}{{- $uses = min $pool 6 -}}{{- end -}}
{{- if eq $service "result-consumer" -}}{{- $uses = min $pool (add (int (default 1 $c.RESULT_CONSUMER_BATCH_CONCURRENCY)) 2) -}}{{- end -}}
{{- if eq $service "scheduler-service" -}}{{- $uses = min $pool (add (mul 3 (int (default 2 $c.SCHEDULER_CONCURRENCY))) 4) -}}{{- end -}}
{{- $session := ternary 1 0 (has $service (list "api-gateway" "worker-gateway")) -}}
{{- $pods := int (ternary $s.autoscaling.maxReplicas $s.replicas $s.autoscaling.enabled) -}}
{{- $surged := ternary 0 (add1 $pods) (eq $pods 0) -}}
{{- if $pooled -}}
{{- $rollout = add $rollout (mul $surged $session) -}}
{{- $steady = add $steady (mul $pods $session) -}}
{{- $clients = add $clients (mul $surged $uses) -}}
{{- else -}}
{{- $rollout = add $rollout (mul $surged (add $uses $session)) -}}
{{- $steady = add $steady (mul $pods (add $uses $session)) -}}
{{- end -}}
{{- end -}}
{{- if $pooled -}}
{{- $rollout = add $rollout (mul (add1 (int $pgb.replicas)) (int $pgb.poolSize)) -}}
{{- $steady = add $steady (mul (int $pgb.replicas) (int $pgb.poolSize)) -}}
{{- end -}}
{{- if .Values.migrations.enabled -}}
{{- $rollout = add $rollout 2 -}}
{{- end -}}
{{- dict "rollout" $rollout "steady" $steady "clients" $clients | toJson -}}
{{- end -}}

{{- define "po.pgbouncerName" -}}
{{- include "po.serviceName" (dict "root" . "service" "pgbouncer") -}}
{{- end -}}

{{- define "po.pgbouncerImage" -}}
{{- with .Values.pgbouncer.image -}}
{{- if .digest -}}{{ printf "%s@%s" .repository .digest }}{{- else -}}{{ printf "%s:%s" .repository .tag }}{{- end -}}
{{- end -}}
{{- end -}}

{{/* PgBouncer's own port in its pod; the Service maps pgbouncer.port to it. */}}
{{- define "po.pgbouncerPodPort" -}}6432{{- end -}}

{{/* Checks of the database values, part of po.validate. */}}
{{- define "po.validateDatabase" -}}
{{- $pgb := .Values.pgbouncer | default dict -}}
{{- if and .Values.database.host (dig "enabled" false $pgb) -}}
{{- fail "pgbouncer.enabled with database.host: the chart's PgBouncer reads the server and the login from full URLs in Secrets. Put them in database.urlSecret and database.directUrlSecret, or use your own pooler (its address in database.host, with params pgbouncer=true)" -}}
{{- end -}}
{{- if dig "enabled" false $pgb -}}
{{- if not (dig "directUrlSecret" "name" "" .Values.database) -}}
{{- fail "pgbouncer.enabled: set database.directUrlSecret.name (a Secret holding the PostgreSQL server's own URL): PgBouncer connects to PostgreSQL with it, and the LISTEN sessions and the migration Job bypass PgBouncer with it" -}}
{{- end -}}
{{- if or .Values.database.caCert.secretName .Values.database.caCert.configMapName -}}
{{- fail "pgbouncer.enabled with database.caCert: the services would demand TLS verified by that CA from the chart's PgBouncer, which serves no TLS to them. Use your own pooler (pgbouncer.enabled=false, its URL in database.urlSecret), or no database.caCert and sslmode in database.directUrlSecret's URL" -}}
{{- end -}}
{{- if not (or $pgb.image.tag $pgb.image.digest) -}}
{{- fail "pgbouncer.image: set tag or digest" -}}
{{- end -}}
{{- $budget := include "po.dbBudget" . | fromJson -}}
{{- if gt (int $budget.clients) (int $pgb.maxClientConnections) -}}
{{- fail (printf "pgbouncer.maxClientConnections (%d) is below what the services' pools may open to one PgBouncer pod during a rollout (%d): raise it or lower services.*.databasePoolMax" (int $pgb.maxClientConnections) (int $budget.clients)) -}}
{{- end -}}
{{- $statementMs := int (default 0 .Values.config.DATABASE_STATEMENT_TIMEOUT_MS) -}}
{{- if and (gt (int $pgb.queryTimeoutSeconds) 0) (gt $statementMs 0) (le (mul (int $pgb.queryTimeoutSeconds) 1000) $statementMs) -}}
{{- fail (printf "pgbouncer.queryTimeoutSeconds (%d s) must be longer than config.DATABASE_STATEMENT_TIMEOUT_MS (%d ms): PgBouncer's is the backstop, PostgreSQL's the timeout" (int $pgb.queryTimeoutSeconds) $statementMs) -}}
{{- end -}}
{{- $idleMs := int (default 0 .Values.config.DATABASE_IDLE_IN_TRANSACTION_TIMEOUT_MS) -}}
{{- if and (gt (int $pgb.idleTransactionTimeoutSeconds) 0) (gt $idleMs 0) (le (mul (int $pgb.idleTransactionTimeoutSeconds) 1000) $idleMs) -}}
{{- fail (printf "pgbouncer.idleTransactionTimeoutSeconds (%d s) must be longer than config.DATABASE_IDLE_IN_TRANSACTION_TIMEOUT_MS (%d ms): PgBouncer's is the backstop, PostgreSQL's the timeout" (int $pgb.idleTransactionTimeoutSeconds) $idleMs) -}}
{{- end -}}
{{- end -}}
{{- end -}}
