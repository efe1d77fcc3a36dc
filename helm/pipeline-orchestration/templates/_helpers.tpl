{{/* Names and labels. */}}
{{- define "po.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "po.fullname" -}}
{{- if .Values.fullnameOverride -}}
{{- .Values.fullnameOverride | trunc 45 | trimSuffix "-" -}}
{{- else -}}
{{- $name := default .Chart.Name .Values.nameOverride -}}
{{- if contains $name .Release.Name -}}
{{- .Release.Name | trunc 45 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name $name | trunc 45 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{/* Name of one service's objects: (dict "root" $ "service" "api-gateway") */}}
{{- define "po.serviceName" -}}
{{- printf "%s-%s" (include "po.fullname" .root) .service | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "po.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
app.kubernetes.io/name: {{ include "po.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/part-of: pipeline-orchestration
{{- end -}}

{{/* Selector labels of one service: (dict "root" $ "service" NAME) */}}
{{- define "po.selectorLabels" -}}
app.kubernetes.io/name: {{ include "po.name" .root }}
app.kubernetes.io/instance: {{ .root.Release.Name }}
app.kubernetes.io/component: {{ .service }}
{{- end -}}

{{- define "po.image" -}}
{{- if .Values.image.digest -}}
{{- printf "%s@%s" .Values.image.repository .Values.image.digest -}}
{{- else -}}
{{- printf "%s:%s" .Values.image.repository (default .Chart.AppVersion .Values.image.tag) -}}
{{- end -}}
{{- end -}}

{{- define "po.serviceAccountName" -}}
{{- if .Values.serviceAccount.create -}}
{{- default (include "po.fullname" .) .Values.serviceAccount.name -}}
{{- else -}}
{{- default "default" .Values.serviceAccount.name -}}
{{- end -}}
{{- end -}}

{{/*
API versions that differ across the Kubernetes versions the chart supports (Chart.yaml kubeVersion,
decision 0091). A cluster's discovery lists group/version/kind, so helm install, upgrade and
`template --validate` pick what the API server serves. Offline (`helm template`) the list holds
group/versions only, so the Kubernetes version decides (--kube-version, else helm's own).
*/}}
{{- define "po.pdbApiVersion" -}}
{{- $api := .Capabilities.APIVersions -}}
{{- if $api.Has "policy/v1/PodDisruptionBudget" -}}policy/v1
{{- else if $api.Has "policy/v1beta1/PodDisruptionBudget" -}}policy/v1beta1
{{- else if semverCompare ">=1.21.0-0" .Capabilities.KubeVersion.Version -}}policy/v1
{{- else -}}policy/v1beta1
{{- end -}}
{{- end -}}

{{- define "po.hpaApiVersion" -}}
{{- $api := .Capabilities.APIVersions -}}
{{- if $api.Has "autoscaling/v2/HorizontalPodAutoscaler" -}}autoscaling/v2
{{- else if $api.Has "autoscaling/v2beta2/HorizontalPodAutoscaler" -}}autoscaling/v2beta2
{{- else if semverCompare ">=1.23.0-0" .Capabilities.KubeVersion.Version -}}autoscaling/v2
{{- else -}}autoscaling/v2beta2
{{- end -}}
{{- end -}}

{{/* PodDisruptionBudget unhealthyPodEvictionPolicy: policy/v1 only, on by default from 1.27 (beta). */}}
{{- define "po.pdbUnhealthyPodEviction" -}}
{{- if and (eq (include "po.pdbApiVersion" .) "policy/v1") (semverCompare ">=1.27.0-0" .Capabilities.KubeVersion.Version) -}}true{{- end -}}
{{- end -}}

{{/*
DATABASE_URL (from a Secret, or from parts with the password from a Secret: _database.tpl),
DATABASE_DIRECT_URL (when set) from an existing Secret, never values; then Redis (_redis.tpl).
*/}}
{{- define "po.secretEnv" -}}
{{ include "po.dbUrlEnv" . }}
{{- with include "po.dbDirectUrlEnv" . }}
{{ . }}
{{- end }}
{{ include "po.redisEnv" . }}
{{- end -}}

{{/*
Checks across values that values.schema.json cannot express. Included by every template that
depends on them, so `helm template` and `helm install` fail with one clear message.
*/}}
{{- define "po.validate" -}}
{{- $drainSeconds := add .Values.preStopSleepSeconds (div (int .Values.config.SHUTDOWN_TIMEOUT_MS) 1000) -}}
{{- if le (int .Values.terminationGracePeriodSeconds) (int $drainSeconds) -}}
{{- fail (printf "terminationGracePeriodSeconds (%d) must be longer than preStopSleepSeconds + SHUTDOWN_TIMEOUT_MS (%d s), or pods are killed mid-drain" (int .Values.terminationGracePeriodSeconds) (int $drainSeconds)) -}}
{{- end -}}
{{- if and .Values.config.WORKER_BROKER_HANDOUT (ne (toString (.Values.config.WORKER_BROKER_HANDOUT_ACK | default "")) "tenants-share-redis") -}}
{{- fail "config.WORKER_BROKER_HANDOUT is true: every application's workers would receive the shared Redis credential, with which any tenant can read and change every other tenant's queues and results. Set config.WORKER_BROKER_HANDOUT_ACK=tenants-share-redis to accept that, or leave the hand-out off" -}}
{{- end -}}
{{- if and .Values.config.WORKER_BROKER_HANDOUT (not .Values.workerBrokerSecret.name) -}}
{{- fail "config.WORKER_BROKER_HANDOUT is true: set workerBrokerSecret.name (the Secret holding WORKER_BROKER_CONNECTION_STRING)" -}}
{{- end -}}
{{- with .Values.database.caCert -}}
{{- if and .secretName .configMapName -}}
{{- fail "database.caCert: set secretName or configMapName, not both" -}}
{{- end -}}
{{- end -}}
{{- range $service, $s := .Values.services -}}
{{- if eq (int $s.port) (int $s.metricsPort) -}}
{{- fail (printf "services.%s: metricsPort must differ from port (GET /metrics is served on its own port only)" $service) -}}
{{- end -}}
{{- end -}}
{{- if and .Values.gatewayApi.enabled (not .Values.gatewayApi.parentRefs) -}}
{{- fail "gatewayApi.enabled: set gatewayApi.parentRefs (the Gateway the HTTPRoutes attach to)" -}}
{{- end -}}
{{- $wg := index .Values.services "worker-gateway" -}}
{{- $wgMax := ternary $wg.autoscaling.maxReplicas $wg.replicas $wg.autoscaling.enabled -}}
{{- if and (eq .Values.workerRouting.sticky "none") (gt (int $wgMax) 1) (or .Values.ingress.enabled .Values.gatewayApi.enabled) -}}
{{- fail "workerRouting.sticky is none with more than one worker-gateway replica: acks would reach the wrong replica (404). Use header-hash or cookie, or one replica" -}}
{{- end -}}
{{- $vt := int .Values.config.GATEWAY_VISIBILITY_TIMEOUT -}}
{{- if and (eq .Values.workerRouting.inCluster.sessionAffinity "ClientIP") (le (int (include "po.clientIPTimeoutSeconds" .)) $vt) -}}
{{- fail (printf "workerRouting.inCluster.clientIPTimeoutSeconds (%s) must be longer than config.GATEWAY_VISIBILITY_TIMEOUT (%d): an ack after the affinity lapsed may reach another worker-gateway pod" (include "po.clientIPTimeoutSeconds" .) $vt) -}}
{{- end -}}
{{- include "po.validateDatabase" . -}}
{{- include "po.validateRedis" . -}}
{{- include "po.validateKeda" . -}}
{{- end -}}

{{/*
kube-proxy's ClientIP affinity of the worker-gateway Service (decision 0129): the value, or by
default the larger of Kubernetes' own default (3 h) and three visibility timeouts, at most
Kubernetes' 1-day cap. It counts from the client IP's last new connection, not its last request.
*/}}
{{- define "po.clientIPTimeoutSeconds" -}}
{{- $set := .Values.workerRouting.inCluster.clientIPTimeoutSeconds -}}
{{- if kindIs "invalid" $set -}}
{{- min 86400 (max 10800 (mul 3 (int .Values.config.GATEWAY_VISIBILITY_TIMEOUT))) -}}
{{- else -}}
{{- int $set -}}
{{- end -}}
{{- end -}}

{{/* keda.scaledWorkers: names unique (they name the ScaledObjects), replicas in order. */}}
{{- define "po.validateKeda" -}}
{{- $keda := .Values.keda | default dict -}}
{{- if $keda.enabled -}}
{{- $seen := dict -}}
{{- range $w := $keda.scaledWorkers -}}
{{- if hasKey $seen $w.name -}}
{{- fail (printf "keda.scaledWorkers: the name %q appears twice (it names the ScaledObject)" $w.name) -}}
{{- end -}}
{{- $_ := set $seen $w.name true -}}
{{- if gt (int $w.minReplicas) (int $w.maxReplicas) -}}
{{- fail (printf "keda.scaledWorkers[%s]: minReplicas (%d) is above maxReplicas (%d)" $w.name (int $w.minReplicas) (int $w.maxReplicas)) -}}
{{- end -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{/*
The backlog of one StageNext queue for KEDA (decision 0129): messages waiting plus delivered and
not acknowledged, the work that needs a worker. Several services report each queue with the same
numbers from Redis, so each state takes the largest report, not the sum. (dict "root" $ "worker" ENTRY)
*/}}
{{- define "po.backlogQuery" -}}
{{- $keda := .root.Values.keda -}}
{{- $matchers := list (printf "queue=\"app_%d_%s_StageNext\"" (int .worker.applicationId) .worker.handler) "state=~\"waiting|active\"" -}}
{{- with $keda.prometheus.namespaceLabel -}}
{{- $matchers = append $matchers (printf "%s=\"%s\"" . $.root.Release.Namespace) -}}
{{- end -}}
sum(max by (state) (po_stagenext_queue_messages{ {{- join "," $matchers -}} }))
{{- end -}}

{{/* The header named by workerRouting.hashBy ($http_x_worker_session -> x-worker-session). */}}
{{- define "po.hashHeader" -}}
{{- .Values.workerRouting.hashBy | trimPrefix "$http_" | replace "_" "-" -}}
{{- end -}}

{{/* DATABASE_CA_FILE and its volume, when database.caCert names a Secret or a ConfigMap. */}}
{{- define "po.dbCaPath" -}}/etc/pipeline-orchestration/db-ca/ca.crt{{- end -}}

{{- define "po.dbCaEnv" -}}
{{- with .Values.database.caCert -}}
{{- if or .secretName .configMapName -}}
- name: DATABASE_CA_FILE
  value: {{ include "po.dbCaPath" . | quote }}
{{- end -}}
{{- end -}}
{{- end -}}

{{- define "po.dbCaMount" -}}
{{- with .Values.database.caCert -}}
{{- if or .secretName .configMapName -}}
- name: db-ca
  mountPath: {{ include "po.dbCaPath" . | dir }}
  readOnly: true
{{- end -}}
{{- end -}}
{{- end -}}

{{- define "po.dbCaVolume" -}}
{{- with .Values.database.caCert -}}
{{- if .secretName -}}
- name: db-ca
  secret:
    secretName: {{ .secretName }}
    items:
      - key: {{ .key }}
        path: ca.crt
{{- else if .configMapName -}}
- name: db-ca
  configMap:
    name: {{ .configMapName }}
    items:
      - key: {{ .key }}
        path: ca.crt
{{- end -}}
{{- end -}}
{{- end -}}

{{/*
Request bodies through ingress-nginx: no proxy limit and no spooling, so the service answers an
oversized body itself, from its Content-Length and before reading it, with a problem+json 413 (the
proxy's own 413 is an HTML page). deploy/local/nginx.mjs (BODY_RULE) mirrors it; decision 0085.
The same keys in ingress.annotations win (rendered there instead of here).
*/}}
{{- define "po.ingressBodyRule" -}}
{{- $rule := dict "nginx.ingress.kubernetes.io/proxy-body-size" "0" "nginx.ingress.kubernetes.io/proxy-request-buffering" "off" -}}
{{- range $key, $value := .Values.ingress.annotations | default dict }}{{ $_ := unset $rule $key }}{{ end -}}
{{- with $rule }}{{ toYaml . }}{{ end -}}
{{- end -}}

{{/*
The pod settings a service may set for itself (values.yaml "Pods", decision 0128), as JSON: each
key is services.<name>.<key> when that is set (not null), else the top-level value. A service's
value replaces the top-level one, lists and maps alike; nothing is merged. (dict "root" $ "service" NAME)
*/}}
{{- define "po.podExtras" -}}
{{- $s := index .root.Values.services .service -}}
{{- $out := dict -}}
{{- range $key := list "extraEnv" "envFrom" "extraVolumes" "extraVolumeMounts" "extraContainers" "initContainers" "priorityClassName" "podAnnotations" "podLabels" "nodeSelector" "tolerations" "affinity" "topologySpreadConstraints" "serviceAnnotations" -}}
{{- $value := index $.root.Values $key -}}
{{- if and (hasKey $s $key) (not (kindIs "invalid" (index $s $key))) -}}
{{- $value = index $s $key -}}
{{- end -}}
{{- if not (kindIs "invalid" $value) -}}
{{- $_ := set $out $key $value -}}
{{- end -}}
{{- end -}}
{{- toJson $out -}}
{{- end -}}
