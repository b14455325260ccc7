{{/*
The release's base name, short enough for the longest suffix
("-prometheus") to stay within Kubernetes' 63 characters.
*/}}
{{- define "glassbox.fullname" -}}
{{- if contains .Chart.Name .Release.Name -}}
{{- .Release.Name | trunc 52 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name .Chart.Name | trunc 52 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{- define "glassbox.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 }}
app.kubernetes.io/name: {{ .Chart.Name }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end -}}

{{/* The engine pods: the Deployment, Service, monitors, pool and autoscalers select these. */}}
{{- define "glassbox.selectorLabels" -}}
app.kubernetes.io/name: {{ .Chart.Name }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/component: engine
{{- end -}}

{{/* The endpoint picker's pods. */}}
{{- define "glassbox.routerSelectorLabels" -}}
app.kubernetes.io/name: {{ .Chart.Name }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/component: router
{{- end -}}

{{- define "glassbox.image" -}}
{{ .Values.image.repository }}:{{ .Values.image.tag | default .Chart.AppVersion }}
{{- end -}}

{{/* "true" when the pods serve the simulated dcgm-exporter. */}}
{{- define "glassbox.dcgm" -}}
{{- if and (not .Values.model.ref) .Values.sim.dcgm -}}true{{- end -}}
{{- end -}}

{{/* The Secret holding the API key, or "" without one. */}}
{{- define "glassbox.apiKeySecret" -}}
{{- if .Values.apiKey.existingSecret -}}
{{- .Values.apiKey.existingSecret -}}
{{- else if .Values.apiKey.value -}}
{{- include "glassbox.fullname" . }}-api-key
{{- end -}}
{{- end -}}

{{/*
Relabelings of a scrape endpoint (argument: a dict with root and job): the
job the generated rules select, the pod's name as instance (so that a pod's
engine and DCGM series join, and a dashboard's $instance is a pod), and the
release, which the autoscalers' queries select.
*/}}
{{- define "glassbox.relabelings" -}}
- action: replace
  targetLabel: job
  replacement: {{ .job }}
- action: replace
  sourceLabels: [__meta_kubernetes_pod_name]
  targetLabel: instance
- action: replace
  sourceLabels: [__meta_kubernetes_pod_label_app_kubernetes_io_instance]
  targetLabel: release
{{- end -}}

{{/*
The fleet's queue: requests waiting on this release's pods, the series the
KEDA trigger reads and the HPA's adapter serves per pod.
*/}}
{{- define "glassbox.waitingQuery" -}}
sum(vllm:num_requests_waiting{job="glassbox", namespace="{{ .Release.Namespace }}", release="{{ .Release.Name }}"})
{{- end -}}

{{- define "glassbox.validate" -}}
{{- if and .Values.autoscaling.keda.enabled .Values.autoscaling.hpa.enabled -}}
{{- fail "autoscaling: enable KEDA or the HPA, not both (KEDA creates an HPA of its own)" -}}
{{- end -}}
{{- if and .Values.autoscaling.hpa.enabled (lt (int .Values.autoscaling.minReplicas) 1) -}}
{{- fail "autoscaling.minReplicas: an HPA keeps at least 1 replica (KEDA can scale to 0)" -}}
{{- end -}}
{{- if not (has .Values.monitoring.monitor (list "PodMonitor" "ServiceMonitor" "")) -}}
{{- fail (printf "monitoring.monitor: %q is not PodMonitor, ServiceMonitor or empty" .Values.monitoring.monitor) -}}
{{- end -}}
{{- if and .Values.prometheus.create (not .Values.monitoring.monitor) -}}
{{- fail "prometheus.create: the Prometheus selects the chart's monitor; set monitoring.monitor" -}}
{{- end -}}
{{- if and .Values.prometheus.thanos.objectStorageSecret.name (not .Values.prometheus.thanos.sidecar) -}}
{{- fail "prometheus.thanos.objectStorageSecret: the sidecar uploads blocks; set prometheus.thanos.sidecar" -}}
{{- end -}}
{{- end -}}
