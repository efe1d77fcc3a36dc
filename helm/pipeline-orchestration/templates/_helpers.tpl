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

{{/* DATABASE_URL and REDIS_URL from existing Secrets; never values. */}}
{{- define "po.secretEnv" -}}
- name: DATABASE_URL
  valueFrom:
    secretKeyRef:
      name: {{ .Values.database.urlSecret.name }}
      key: {{ .Values.database.urlSecret.key }}
- name: REDIS_URL
  valueFrom:
    secretKeyRef:
      name: {{ .Values.redis.urlSecret.name }}
      key: {{ .Values.redis.urlSecret.key }}
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
{{- if and .Values.config.WORKER_BROKER_HANDOUT (not .Values.workerBrokerSecret.name) -}}
{{- fail "config.WORKER_BROKER_HANDOUT is true: set workerBrokerSecret.name (the Secret holding WORKER_BROKER_CONNECTION_STRING)" -}}
{{- end -}}
{{- if and .Values.gatewayApi.enabled (not .Values.gatewayApi.parentRefs) -}}
{{- fail "gatewayApi.enabled: set gatewayApi.parentRefs (the Gateway the HTTPRoutes attach to)" -}}
{{- end -}}
{{- $wg := index .Values.services "worker-gateway" -}}
{{- $wgMax := ternary $wg.autoscaling.maxReplicas $wg.replicas $wg.autoscaling.enabled -}}
{{- if and (eq .Values.workerRouting.sticky "none") (gt (int $wgMax) 1) (or .Values.ingress.enabled .Values.gatewayApi.enabled) -}}
{{- fail "workerRouting.sticky is none with more than one worker-gateway replica: acks would reach the wrong replica (404). Use header-hash or cookie, or one replica" -}}
{{- end -}}
{{- end -}}

{{/* The header named by workerRouting.hashBy ($http_x_worker_session -> x-worker-session). */}}
{{- define "po.hashHeader" -}}
{{- .Values.workerRouting.hashBy | trimPrefix "$http_" | replace "_" "-" -}}
{{- end -}}
