{{- define "telastic.name" -}}{{ .Release.Name }}-telastic{{- end -}}

{{- define "telastic.labels" -}}
app.kubernetes.io/name: telastic
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end -}}

{{/* The Temporal connection, as the environment telastic reads (docs/cli.md, Connecting to Temporal). */}}
{{- define "telastic.connectionEnv" -}}
- name: TEMPORAL_ADDRESS
  value: {{ .Values.temporal.address | quote }}
- name: TEMPORAL_NAMESPACE
  value: {{ .Values.temporal.namespace | quote }}
{{- if .Values.temporal.tls.enabled }}
- name: TEMPORAL_TLS
  value: "true"
- name: TEMPORAL_TLS_CA
  value: /etc/telastic/tls/ca.crt
{{- if .Values.temporal.tls.serverName }}
- name: TEMPORAL_TLS_SERVER_NAME
  value: {{ .Values.temporal.tls.serverName | quote }}
{{- end }}
{{- end }}
{{- if .Values.temporal.encryptionKey.secretName }}
- name: TELASTIC_ENCRYPTION_KEY_FILE
  value: /etc/telastic/key/key
{{- end }}
{{- end -}}

{{- define "telastic.connectionArgs" -}}
{{- if .Values.temporal.apiKey.secretName }}
- --api-key-file
- /etc/telastic/api-key/apiKey
{{- end }}
{{- end -}}

{{- define "telastic.secretMounts" -}}
{{- if .Values.temporal.tls.enabled }}
- name: tls
  mountPath: /etc/telastic/tls
  readOnly: true
{{- end }}
{{- if .Values.temporal.apiKey.secretName }}
- name: api-key
  mountPath: /etc/telastic/api-key
  readOnly: true
{{- end }}
{{- if .Values.temporal.encryptionKey.secretName }}
- name: key
  mountPath: /etc/telastic/key
  readOnly: true
{{- end }}
{{- end -}}

{{- define "telastic.secretVolumes" -}}
{{- if .Values.temporal.tls.enabled }}
- name: tls
  secret:
    secretName: {{ required "temporal.tls.secretName is required with temporal.tls.enabled" .Values.temporal.tls.secretName }}
{{- end }}
{{- if .Values.temporal.apiKey.secretName }}
- name: api-key
  secret:
    secretName: {{ .Values.temporal.apiKey.secretName }}
{{- end }}
{{- if .Values.temporal.encryptionKey.secretName }}
- name: key
  secret:
    secretName: {{ .Values.temporal.encryptionKey.secretName }}
{{- end }}
{{- end -}}
