{{/* The chart's name. */}}
{{- define "sandboxer.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* The release's objects' name: <release>-sandboxer, or the release name when it says sandboxer already. */}}
{{- define "sandboxer.fullname" -}}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- $name := default .Chart.Name .Values.nameOverride }}
{{- if contains $name .Release.Name }}
{{- .Release.Name | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" }}
{{- end }}
{{- end }}
{{- end }}

{{- define "sandboxer.selectorLabels" -}}
app.kubernetes.io/name: {{ include "sandboxer.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{- define "sandboxer.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{ include "sandboxer.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/component: serve
{{- end }}

{{- define "sandboxer.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "sandboxer.fullname" .) .Values.serviceAccount.name }}
{{- else }}
{{- default "default" .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{/* The namespace sandboxes go in: where the Role is. */}}
{{- define "sandboxer.sandboxNamespace" -}}
{{- default .Release.Namespace .Values.rbac.namespace }}
{{- end }}

{{/* Cluster-scoped objects carry the release's namespace in their name. */}}
{{- define "sandboxer.clusterName" -}}
{{- printf "%s-%s" .Release.Namespace (include "sandboxer.fullname" .) | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "sandboxer.configMapName" -}}
{{- default (printf "%s-config" (include "sandboxer.fullname" .)) .Values.config.existingConfigMap }}
{{- end }}

{{- define "sandboxer.apiTokenSecret" -}}
{{- default (printf "%s-api-token" (include "sandboxer.fullname" .)) .Values.apiToken.existingSecret }}
{{- end }}

{{- define "sandboxer.backendSecret" -}}
{{- default (printf "%s-state" (include "sandboxer.fullname" .)) .Values.state.backendURL.existingSecret }}
{{- end }}

{{- define "sandboxer.stateKeySecret" -}}
{{- default (printf "%s-state" (include "sandboxer.fullname" .)) .Values.state.key.existingSecret }}
{{- end }}

{{- define "sandboxer.image" -}}
{{- printf "%s:%s" .Values.image.repository (default .Chart.AppVersion .Values.image.tag) }}
{{- end }}

{{/* The configuration directory's files (name: contents): config.files, else the chart's default. */}}
{{- define "sandboxer.configFiles" -}}
{{- if .Values.config.files }}
{{- toJson .Values.config.files }}
{{- else if .Values.config.existingConfigMap }}
{{- fail "config.existingConfigMap needs config.files to name the keys to mount from it" }}
{{- else }}
{{- toJson (dict "main.sbx.hcl" (.Files.Get "files/main.sbx.hcl")) }}
{{- end }}
{{- end }}
