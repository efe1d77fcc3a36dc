{{/*
Redis: one node by URL, a primary found through Sentinel, or a cluster (values.yaml "PostgreSQL
and Redis", deploy/README.md "Redis topologies in the chart"). Secrets only by reference; the
topology and the timeouts as plain env, read by libs/config/src/redis.ts.
*/}}

{{- define "po.redisTopology" -}}
{{- $r := .Values.redis -}}
{{- if dig "sentinel" "hosts" list $r -}}sentinel
{{- else if dig "cluster" "nodes" list $r -}}cluster
{{- else -}}single
{{- end -}}
{{- end -}}

{{- define "po.redisCaPath" -}}/etc/pipeline-orchestration/redis-ca/ca.crt{{- end -}}

{{- define "po.redisCaSet" -}}
{{- with dig "tls" "caCert" dict .Values.redis -}}
{{- if or .secretName .configMapName -}}true{{- end -}}
{{- end -}}
{{- end -}}

{{/* Where Redis is and how to log in to it; every service and the test Pod. */}}
{{- define "po.redisEnv" -}}
{{- $r := .Values.redis -}}
{{- $topology := include "po.redisTopology" . -}}
{{- if eq $topology "sentinel" -}}
- name: REDIS_SENTINELS
  value: {{ join "," $r.sentinel.hosts | quote }}
- name: REDIS_SENTINEL_MASTER
  value: {{ $r.sentinel.masterName | quote }}
{{- with dig "passwordSecret" dict $r.sentinel }}
{{- if .name }}
- name: REDIS_SENTINEL_PASSWORD
  valueFrom:
    secretKeyRef:
      name: {{ .name }}
      key: {{ .key }}
{{- end }}
{{- end }}
{{- else if eq $topology "cluster" -}}
- name: REDIS_CLUSTER_NODES
  value: {{ join "," $r.cluster.nodes | quote }}
{{- else if $r.host -}}
{{- $host := $r.host -}}
{{- if and (contains ":" $host) (not (hasPrefix "[" $host)) -}}{{- $host = printf "[%s]" $host -}}{{- end -}}
{{- $scheme := ternary "rediss" "redis" (or (dig "tls" "enabled" false $r) (eq (include "po.redisCaSet" .) "true")) -}}
{{- /* No credentials in it: REDIS_USERNAME and REDIS_PASSWORD (redis.passwordSecret) carry them. */ -}}
- name: REDIS_URL
  value: {{ printf "%s://%s:%d/%d" $scheme $host (int (default 6379 $r.port)) (int (default 0 $r.db)) | quote }}
{{- else -}}
- name: REDIS_URL
  valueFrom:
    secretKeyRef:
      name: {{ $r.urlSecret.name }}
      key: {{ $r.urlSecret.key }}
{{- end }}
{{- with $r.username }}
- name: REDIS_USERNAME
  value: {{ . | quote }}
{{- end }}
{{- with dig "passwordSecret" dict $r }}
{{- if .name }}
- name: REDIS_PASSWORD
  valueFrom:
    secretKeyRef:
      name: {{ .name }}
      key: {{ .key }}
{{- end }}
{{- end }}
{{- if or (dig "tls" "enabled" false $r) (include "po.redisCaSet" .) }}
- name: REDIS_TLS
  value: "true"
{{- end }}
{{- if include "po.redisCaSet" . }}
- name: REDIS_TLS_CA_FILE
  value: {{ include "po.redisCaPath" . | quote }}
{{- end }}
- name: REDIS_COMMAND_TIMEOUT_MS
  value: {{ int (dig "commandTimeoutMs" 5000 $r) | toString | quote }}
- name: REDIS_MIN_REPLICAS_ACK
  value: {{ int (dig "minReplicasAck" 0 $r) | toString | quote }}
- name: REDIS_REPLICA_ACK_TIMEOUT_MS
  value: {{ int (dig "replicaAckTimeoutMs" 1000 $r) | toString | quote }}
{{- end -}}

{{- define "po.redisCaMount" -}}
{{- if include "po.redisCaSet" . -}}
- name: redis-ca
  mountPath: {{ include "po.redisCaPath" . | dir }}
  readOnly: true
{{- end -}}
{{- end -}}

{{- define "po.redisCaVolume" -}}
{{- with dig "tls" "caCert" dict .Values.redis -}}
{{- if .secretName -}}
- name: redis-ca
  secret:
    secretName: {{ .secretName }}
    items:
      - key: {{ .key }}
        path: ca.crt
{{- else if .configMapName -}}
- name: redis-ca
  configMap:
    name: {{ .configMapName }}
    items:
      - key: {{ .key }}
        path: ca.crt
{{- end -}}
{{- end -}}
{{- end -}}

{{/* Checks of the Redis values the schema cannot make, part of po.validate. */}}
{{- define "po.validateRedis" -}}
{{- with dig "tls" "caCert" dict .Values.redis -}}
{{- if and .secretName .configMapName -}}
{{- fail "redis.tls.caCert: set secretName or configMapName, not both" -}}
{{- end -}}
{{- end -}}
{{- end -}}
