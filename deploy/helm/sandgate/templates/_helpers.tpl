{{/* Names: "<release>-sandgate", or the release name when it already contains "sandgate". */}}
{{- define "sandgate.fullname" -}}
{{- if contains .Chart.Name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name .Chart.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{- define "sandgate.selectorLabels" -}}
app.kubernetes.io/name: {{ .Chart.Name }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/component: executor
{{- end -}}

{{- define "sandgate.labels" -}}
{{ include "sandgate.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
{{- end -}}

{{- define "sandgate.serviceAccountName" -}}
{{- if .Values.serviceAccount.create -}}
{{- default (include "sandgate.fullname" .) .Values.serviceAccount.name -}}
{{- else -}}
{{- required "serviceAccount.name is required when serviceAccount.create is false" .Values.serviceAccount.name -}}
{{- end -}}
{{- end -}}

{{- define "sandgate.sandboxNamespace" -}}
{{- default .Release.Namespace .Values.sandbox.namespace -}}
{{- end -}}

{{- define "sandgate.apiTokenSecret" -}}
{{- default (printf "%s-api-token" (include "sandgate.fullname" .)) .Values.api.existingSecret -}}
{{- end -}}

{{- define "sandgate.secretKeySecret" -}}
{{- default (printf "%s-secret-key" (include "sandgate.fullname" .)) .Values.secretKey.existingSecret -}}
{{- end -}}

{{/*
Checks across values that the schema cannot express; each failure names the
values to change, and nothing is rendered.
*/}}
{{- define "sandgate.validate" -}}
{{- if and (gt (int .Values.replicaCount) 1) (not .Values.database.existingSecret) -}}
{{- fail "replicaCount > 1 needs database.existingSecret (a shared PostgreSQL): each replica would have its own SQLite store" -}}
{{- end -}}
{{- if and .Values.gate.enabled (not .Values.gate.controlplaneURL) -}}
{{- fail "gate.enabled needs gate.controlplaneURL: the address at which the gates reach this executor" -}}
{{- end -}}
{{- if and (ne (int .Values.gate.port) 0) (eq (int .Values.gate.port) (int .Values.api.port)) -}}
{{- fail "gate.port must differ from api.port" -}}
{{- end -}}
{{- if and .Values.kubernetesAPI.host (not .Values.kubernetesAPI.port) -}}
{{- fail "kubernetesAPI.host needs kubernetesAPI.port" -}}
{{- end -}}
{{- end -}}

{{/* SANDBOX_* variables of the values set (null leaves the executor's default). */}}
{{- define "sandgate.hardeningEnv" -}}
{{- $names := dict "pidsLimit" "SANDBOX_PIDS_LIMIT" "cpuMillis" "SANDBOX_CPU_MILLIS" "memoryBytes" "SANDBOX_MEMORY_BYTES" "ephemeralStorageBytes" "SANDBOX_EPHEMERAL_STORAGE_BYTES" "capDrop" "SANDBOX_CAP_DROP" "readOnlyRootfs" "SANDBOX_READONLY_ROOTFS" "runAsUser" "SANDBOX_RUN_AS_USER" -}}
{{- range $key := keys $names | sortAlpha }}
{{- $v := index $ $key }}
{{- if not (kindIs "invalid" $v) }}
- name: {{ index $names $key }}
  value: {{ if kindIs "float64" $v }}{{ int64 $v | toString | quote }}{{ else }}{{ toString $v | quote }}{{ end }}
{{- end }}
{{- end }}
{{- end -}}
