{{/* The chart's name. */}}
{{- define "ripcord.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* The release's object name prefix. */}}
{{- define "ripcord.fullname" -}}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" }}
{{- else if contains (include "ripcord.name" .) .Release.Name }}
{{- .Release.Name | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name (include "ripcord.name" .) | trunc 63 | trimSuffix "-" }}
{{- end }}
{{- end }}

{{/* The agent's object names. */}}
{{- define "ripcord.agentName" -}}
{{- printf "%s-agent" (include "ripcord.fullname" .) | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "ripcord.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
{{ include "ripcord.selectorLabels" . }}
{{- end }}

{{- define "ripcord.selectorLabels" -}}
app.kubernetes.io/name: {{ include "ripcord.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/component: server
{{- end }}

{{- define "ripcord.agentLabels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
{{ include "ripcord.agentSelectorLabels" . }}
{{- end }}

{{- define "ripcord.agentSelectorLabels" -}}
app.kubernetes.io/name: {{ include "ripcord.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/component: agent
{{- end }}

{{- define "ripcord.image" -}}
{{ printf "%s:%s" .Values.image.repository (default .Chart.AppVersion .Values.image.tag) }}
{{- end }}

{{- define "ripcord.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "ripcord.fullname" .) .Values.serviceAccount.name }}
{{- else }}
{{- default "default" .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{/* The Secret holding the server's secret settings. */}}
{{- define "ripcord.secretName" -}}
{{- default (include "ripcord.fullname" .) .Values.secrets.existingSecret }}
{{- end }}

{{/* Whether the App's private key is mounted. */}}
{{- define "ripcord.hasPrivateKey" -}}
{{- if or .Values.secrets.existingSecret .Values.secrets.githubPrivateKey }}true{{ end }}
{{- end }}

{{/*
The cluster tokens of secrets.clusters (NAME=TOKEN, comma-separated; a NAME
listed again adds a token, for a rotation) as YAML: NAME → its tokens, one
per line, the content of its token file.
*/}}
{{- define "ripcord.clusterTokens" -}}
{{- $out := dict }}
{{- range splitList "," .Values.secrets.clusters }}
{{- $entry := trim . }}
{{- if $entry }}
{{- $kv := splitn "=" 2 $entry }}
{{- $name := trim $kv._0 }}
{{- $token := trim (default "" $kv._1) }}
{{- if or (not $name) (not $token) }}
{{- fail (printf "secrets.clusters: %q is not NAME=TOKEN" $entry) }}
{{- end }}
{{- if hasPrefix "@" $token }}
{{- fail (printf "secrets.clusters: %q names a file; give the token itself, or the tokens in secrets.clusterTokensSecret" $entry) }}
{{- end }}
{{- $_ := set $out $name (append (default (list) (get $out $name)) $token) }}
{{- end }}
{{- end }}
{{- range $name, $tokens := $out }}
{{- $_ := set $out $name (printf "%s\n" (join "\n" $tokens)) }}
{{- end }}
{{- toYaml $out }}
{{- end }}

{{/*
The clusters whose tokens the server reads from files (JSON list): the keys
of secrets.clusterTokensSecret, or the names in secrets.clusters.
*/}}
{{- define "ripcord.clusterNames" -}}
{{- if .Values.secrets.clusterTokensSecret }}
{{- toJson .Values.secrets.clusterNames }}
{{- else }}
{{- keys (include "ripcord.clusterTokens" . | fromYaml) | sortAlpha | toJson }}
{{- end }}
{{- end }}

{{/* The Secret holding one token file per cluster. */}}
{{- define "ripcord.clusterTokensSecretName" -}}
{{- default (printf "%s-clusters" (include "ripcord.fullname" .) | trunc 63 | trimSuffix "-") .Values.secrets.clusterTokensSecret }}
{{- end }}

{{/*
Checks the values that would make a broken release, so rendering fails with
a message naming the value instead of a pod that crash-loops.
*/}}
{{- define "ripcord.validate" -}}
{{- $engine := .Values.database.engine }}
{{- if not (has $engine (list "sqlite" "postgres")) }}
{{- fail (printf "database.engine: %q is not sqlite or postgres" $engine) }}
{{- end }}
{{- if and (eq $engine "sqlite") (gt (int .Values.replicaCount) 1) }}
{{- fail (printf "replicaCount: %d replicas cannot share one SQLite file; set replicaCount 1 or database.engine postgres" (int .Values.replicaCount)) }}
{{- end }}
{{- if and (eq $engine "postgres") (not .Values.database.postgresURL) (not .Values.secrets.existingSecret) }}
{{- fail "database.postgresURL: required with database.engine postgres (or secrets.existingSecret with the key database-url)" }}
{{- end }}
{{- if and .Values.database.postgresURL (not (regexMatch "^postgres(ql)?://" .Values.database.postgresURL)) }}
{{- fail "database.postgresURL: expected postgres://USER:PASS@HOST:PORT/DB" }}
{{- end }}
{{- if and .Values.secrets.clusterTokensSecret (not .Values.secrets.clusterNames) }}
{{- fail "secrets.clusterNames: required with secrets.clusterTokensSecret (the cluster names, its keys)" }}
{{- end }}
{{- range include "ripcord.clusterNames" . | fromJsonArray }}
{{- if not (regexMatch "^[-._a-zA-Z0-9]+$" .) }}
{{- fail (printf "secrets.clusters: cluster name %q must be letters, digits, '-', '_' or '.' (it names a Secret key and a file)" .) }}
{{- end }}
{{- end }}
{{- if .Values.agent.enabled }}
{{- if not .Values.agent.cluster }}
{{- fail "agent.cluster: required when agent.enabled (this cluster's name in the server's clusters setting)" }}
{{- end }}
{{- if and (not .Values.agent.token) (not .Values.agent.existingSecret) }}
{{- fail "agent.token: required when agent.enabled (or agent.existingSecret with the key cluster-token)" }}
{{- end }}
{{- if not (has .Values.agent.rollouts (list "auto" "on" "off")) }}
{{- fail (printf "agent.rollouts: %q is not auto, on or off" .Values.agent.rollouts) }}
{{- end }}
{{- end }}
{{- end }}
