{{/*
The release's base name: the release name, or "vcsat" inside it when the release name lacks it,
so that release "vcsat" gives the objects deploy/ (kustomize) names: vcsat-scheduler, ...
*/}}
{{- define "vcsat.fullname" -}}
{{- if .Values.fullnameOverride -}}
{{- .Values.fullnameOverride | trunc 50 | trimSuffix "-" -}}
{{- else if contains .Chart.Name .Release.Name -}}
{{- .Release.Name | trunc 50 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name .Chart.Name | trunc 50 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{/* The labels of every object; ctx is the root context, component scheduler or controller. */}}
{{- define "vcsat.labels" -}}
app.kubernetes.io/part-of: vcsat
app.kubernetes.io/instance: {{ .ctx.Release.Name }}
app.kubernetes.io/managed-by: {{ .ctx.Release.Service }}
app.kubernetes.io/version: {{ .ctx.Chart.AppVersion | quote }}
helm.sh/chart: {{ printf "%s-%s" .ctx.Chart.Name .ctx.Chart.Version | replace "+" "_" }}
{{- with .component }}
app.kubernetes.io/component: {{ . }}
{{- end }}
{{- end -}}

{{/* What a component's Deployment, PodDisruptionBudget and Service select its pods by. */}}
{{- define "vcsat.selectorLabels" -}}
app.kubernetes.io/name: {{ include "vcsat.fullname" .ctx }}-{{ .component }}
app.kubernetes.io/instance: {{ .ctx.Release.Name }}
{{- end -}}

{{/* The labels of a component's own objects: its name, then the labels of every object. */}}
{{- define "vcsat.componentLabels" -}}
app.kubernetes.io/name: {{ include "vcsat.fullname" .ctx }}-{{ .component }}
{{ include "vcsat.labels" . }}
{{- end -}}

{{- define "vcsat.image" -}}
{{- printf "%s:%s" .Values.image.repository (.Values.image.tag | default .Chart.AppVersion | toString) -}}
{{- end -}}

{{/*
The flags both components share: leader election on the component's own Lease, metrics, logs.
Refuses leader election periods the commands would refuse, at render time.
*/}}
{{- define "vcsat.daemonArgs" -}}
{{- $le := .ctx.Values.leaderElection -}}
{{- if $le.enabled }}
{{- if not (and (gt (float64 $le.renewDeadline) (float64 $le.retryPeriod)) (gt (float64 $le.leaseDuration) (float64 $le.renewDeadline)) (gt (float64 $le.retryPeriod) 0.0)) }}
{{- fail (printf "leaderElection: need 0 < retryPeriod < renewDeadline < leaseDuration, got %v, %v, %v" $le.retryPeriod $le.renewDeadline $le.leaseDuration) }}
{{- end }}
- --leader-elect
- --lease-namespace=$(POD_NAMESPACE)
- --lease-name={{ include "vcsat.fullname" .ctx }}-{{ .component }}
- --lease-duration={{ $le.leaseDuration }}
- --renew-deadline={{ $le.renewDeadline }}
- --retry-period={{ $le.retryPeriod }}
{{- else }}
- --no-leader-elect
{{- end }}
- --metrics-port={{ .ctx.Values.metricsPort }}
- --log-format={{ .ctx.Values.log.format }}
- --log-level={{ .ctx.Values.log.level }}
{{- end -}}

{{/* The pod of a component: the parts the scheduler and the controller share around the container. */}}
{{- define "vcsat.podSpec" -}}
{{- $values := index .ctx.Values .component -}}
serviceAccountName: {{ include "vcsat.fullname" .ctx }}-{{ .component }}
# vcsat must not be scheduled by itself: it is placed by the default scheduler.
schedulerName: default-scheduler
{{- with .ctx.Values.priorityClassName }}
priorityClassName: {{ . }}
{{- end }}
# Long enough for the leader to finish its cycle, release the Lease and hand over.
terminationGracePeriodSeconds: 30
{{- with .ctx.Values.imagePullSecrets }}
imagePullSecrets:
  {{- toYaml . | nindent 2 }}
{{- end }}
securityContext:
  runAsNonRoot: true
  runAsUser: 65532
  runAsGroup: 65532
  seccompProfile:
    type: RuntimeDefault
affinity:
{{- if $values.affinity }}
  {{- toYaml $values.affinity | nindent 2 }}
{{- else }}
  podAntiAffinity:
    # Replicas on different nodes, so one node's loss never takes both.
    preferredDuringSchedulingIgnoredDuringExecution:
      - weight: 100
        podAffinityTerm:
          topologyKey: kubernetes.io/hostname
          labelSelector:
            matchLabels:
              {{- include "vcsat.selectorLabels" . | nindent 14 }}
{{- end }}
{{- with $values.nodeSelector }}
nodeSelector:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with $values.tolerations }}
tolerations:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- end -}}

{{/* The container settings both components share (env, probes, security, /tmp). */}}
{{- define "vcsat.containerCommon" -}}
image: {{ include "vcsat.image" .ctx }}
imagePullPolicy: {{ .ctx.Values.image.pullPolicy }}
env:
  - name: POD_NAME
    valueFrom:
      fieldRef:
        fieldPath: metadata.name
  - name: POD_NAMESPACE
    valueFrom:
      fieldRef:
        fieldPath: metadata.namespace
  - name: HOME
    value: /tmp
  - name: PYTHONUNBUFFERED
    value: "1"
  - name: PYTHONDONTWRITEBYTECODE
    value: "1"
ports:
  - name: metrics
    containerPort: {{ .ctx.Values.metricsPort }}
    protocol: TCP
livenessProbe:
  httpGet:
    path: /healthz
    port: metrics
  initialDelaySeconds: 15
  periodSeconds: 10
  timeoutSeconds: 5
  failureThreshold: 3
readinessProbe:
  httpGet:
    path: /readyz
    port: metrics
  periodSeconds: 5
  timeoutSeconds: 5
  failureThreshold: 3
resources:
  {{- toYaml (index .ctx.Values .component).resources | nindent 2 }}
securityContext:
  allowPrivilegeEscalation: false
  readOnlyRootFilesystem: true
  capabilities:
    drop: [ALL]
{{- end -}}

{{/* A component's PodDisruptionBudget and metrics Service. */}}
{{- define "vcsat.pdbAndService" -}}
{{- $values := index .ctx.Values .component -}}
{{- if $values.podDisruptionBudget.enabled }}
---
# Voluntary disruptions (node drains) take at most one replica at a time.
apiVersion: policy/v1
kind: PodDisruptionBudget
metadata:
  name: {{ include "vcsat.fullname" .ctx }}-{{ .component }}
  namespace: {{ .ctx.Release.Namespace }}
  labels:
    {{- include "vcsat.componentLabels" . | nindent 4 }}
spec:
  minAvailable: {{ $values.podDisruptionBudget.minAvailable }}
  selector:
    matchLabels:
      {{- include "vcsat.selectorLabels" . | nindent 6 }}
{{- end }}
---
# For Prometheus to scrape /metrics of every replica.
apiVersion: v1
kind: Service
metadata:
  name: {{ include "vcsat.fullname" .ctx }}-{{ .component }}-metrics
  namespace: {{ .ctx.Release.Namespace }}
  labels:
    {{- include "vcsat.componentLabels" . | nindent 4 }}
spec:
  selector:
    {{- include "vcsat.selectorLabels" . | nindent 4 }}
  ports:
    - name: metrics
      port: {{ .ctx.Values.metricsPort }}
      targetPort: metrics
      protocol: TCP
{{- end -}}
