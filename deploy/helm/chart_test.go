package helm

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metavalidation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/yaml"

	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/lint"
	"helm.sh/helm/v3/pkg/lint/support"

	"github.com/glassbox-llm/glassbox/internal/dashboards"
)

// The value sets the test renders: the defaults, and sets that turn on
// every optional object with non-default ports and names.
var valueSets = map[string]string{
	"default": ``,
	"service-monitor, key, KEDA, router, Thanos sidecar": `
ports: {api: 9000, metrics: 9001, dcgm: 9500}
apiKey: {value: sekrit}
shutdownTimeoutSeconds: 120
preStopSleepSeconds: 10
sim: {hardware: h100, model: llama-3.1-70b, tensorParallelSize: 4, timeScale: 0.5}
engine: {maxNumSeqs: 128, maxModelLen: 16k, enablePrefixCaching: false}
monitoring:
  monitor: ServiceMonitor
  labels: {release: kube-prometheus-stack}
autoscaling:
  keda: {enabled: true}
  minReplicas: 0
  targetWaitingPerReplica: 8
router:
  enabled: true
  gateway: {name: inference-gateway, namespace: gateways}
prometheus:
  create: true
  externalLabels: {cluster: eu-1}
  thanos:
    sidecar: true
    objectStorageSecret: {name: thanos-objstore}
  alertmanagers: [{namespace: monitoring, name: alertmanager-operated, port: web}]
`,
	"real model, HPA, remote-write": `
model:
  ref: hf://Qwen/Qwen2.5-0.5B-Instruct-GGUF/qwen2.5-0.5b-instruct-q8_0.gguf
  cache: {existingClaim: model-cache}
  hfToken: {secretName: hf}
apiKey: {existingSecret: glassbox-key, secretKey: token}
resources: {requests: {cpu: "4", memory: 2Gi}, limits: {memory: 4Gi}}
autoscaling:
  hpa: {enabled: true}
  minReplicas: 2
prometheus:
  create: true
  remoteWrite: [{url: "http://thanos-receive.monitoring.svc:19291/api/v1/receive"}]
`,
	"nothing optional": `
monitoring: {monitor: "", prometheusRule: false, dashboards: false}
sim: {dcgm: false}
`,
}

// TestChartRendersUpstreamObjects renders every value set and checks each
// object and how they refer to each other.
func TestChartRendersUpstreamObjects(t *testing.T) {
	c := loadChart(t)
	if !chartutil.IsCompatibleRange(c.Metadata.KubeVersion, kubeVersion) {
		t.Fatalf("chart kubeVersion %q excludes %s", c.Metadata.KubeVersion, kubeVersion)
	}
	if err := c.Validate(); err != nil {
		t.Fatalf("Chart.yaml: %v", err)
	}
	for _, name := range sortedKeys(valueSets) {
		t.Run(name, func(t *testing.T) {
			m := mustRender(t, valueSets[name])
			t.Logf("rendered %v", m.names())
			checkEngine(t, m)
			checkMonitoring(t, m)
			checkAutoscaling(t, m)
			checkRouter(t, m)
			checkPrometheus(t, m)
			checkPromQL(t, m)
		})
	}
}

// TestChartPassesHelmLint runs 'helm lint' (Helm's lint package) for
// every value set: Chart.yaml, values against the schema, templates.
func TestChartPassesHelmLint(t *testing.T) {
	kv, err := chartutil.ParseKubeVersion(kubeVersion)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range sortedKeys(valueSets) {
		vals, err := chartutil.ReadValues([]byte(valueSets[name]))
		if err != nil {
			t.Fatal(err)
		}
		l := lint.AllWithKubeVersion(chartDir, vals, namespace, kv)
		for _, msg := range l.Messages {
			// An icon is the only recommendation (INFO) there is to ignore.
			if msg.Severity > support.InfoSev || !strings.Contains(msg.Error(), "icon is recommended") {
				t.Errorf("%s: helm lint: %s", name, msg)
			}
		}
	}
}

// TestChartRejectsBadValues: values the chart cannot honour fail the
// install, through values.schema.json or the templates' own checks.
func TestChartRejectsBadValues(t *testing.T) {
	for values, want := range map[string]string{
		`replicas: 3`:                  "additional properties 'replicas' not allowed",
		`monitoring: {intervall: 5s}`:  "additional properties 'intervall' not allowed",
		`ports: {api: "8000"}`:         "want integer",
		`monitoring: {monitor: Probe}`: "monitor",
		`autoscaling: {keda: {enabled: true}, hpa: {enabled: true}}`: "not both",
		`autoscaling: {hpa: {enabled: true}, minReplicas: 0}`:        "at least 1 replica",
		`{monitoring: {monitor: ""}, prometheus: {create: true}}`:    "set monitoring.monitor",
		`prometheus: {thanos: {objectStorageSecret: {name: s3}}}`:    "set prometheus.thanos.sidecar",
	} {
		_, _, err := render(t, values)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("values %s: error %v, want one mentioning %q", values, err, want)
		}
	}
}

// checkEngine: the Deployment runs glassbox as the values say, its probes,
// drain and Secret line up, and the Service selects its pods by named ports.
func checkEngine(t *testing.T, m *manifests) {
	t.Helper()
	d := named[appsv1.Deployment](t, m, "Deployment", "demo-glassbox")
	pod := &d.Spec.Template
	selects(t, "Deployment selector", d.Spec.Selector, pod.Labels)
	if errs := metavalidation.ValidateLabels(pod.Labels, field.NewPath("pod")); len(errs) > 0 {
		t.Errorf("pod labels: %v", errs.ToAggregate())
	}
	if pod.Labels["llm-d.ai/engine-type"] != "vllm" {
		t.Errorf("pods lack llm-d.ai/engine-type=vllm, which the endpoint picker reads")
	}
	autoscaled := m.value("autoscaling.keda.enabled") == true || m.value("autoscaling.hpa.enabled") == true
	if (d.Spec.Replicas == nil) != autoscaled {
		t.Errorf("replicas %v with autoscaling %v: the autoscaler alone must own the count", d.Spec.Replicas, autoscaled)
	}
	c := container(t, pod.Spec.Containers, "glassbox")
	if len(c.Args) == 0 || c.Args[0] != "serve" {
		t.Fatalf("args %q do not run serve", c.Args)
	}
	flags := argFlags(c.Args[1:])
	ports := containerPorts(c)
	dcgm := m.value("model.ref") == "" && m.value("sim.dcgm") == true
	want := map[string]string{
		"port": fmt.Sprint(m.int("ports.api")), "metrics-port": fmt.Sprint(m.int("ports.metrics")),
		"shutdown-timeout": fmt.Sprintf("%ds", m.int("shutdownTimeoutSeconds")),
	}
	if dcgm {
		want["sim-dcgm-port"] = fmt.Sprint(m.int("ports.dcgm"))
	}
	if ref, _ := m.value("model.ref").(string); ref != "" {
		want["model"] = ref
	}
	for f, v := range want {
		if flags[f] != v {
			t.Errorf("--%s=%q, want %q", f, flags[f], v)
		}
	}
	for _, f := range []string{"metrics-auth-file", "api-key"} {
		if _, ok := flags[f]; ok {
			t.Errorf("--%s is set: the metrics port must stay open for the picker, and the key belongs in a Secret", f)
		}
	}
	if _, ok := flags["sim-dcgm-port"]; ok != dcgm {
		t.Errorf("--sim-dcgm-port set %v, want %v", ok, dcgm)
	}
	for name, p := range map[string]int{"http": m.int("ports.api"), "metrics": m.int("ports.metrics"), "dcgm": m.int("ports.dcgm")} {
		if got, ok := ports[name]; ok != (name != "dcgm" || dcgm) || ok && int(got) != p {
			t.Errorf("container port %s = %d (present %v)", name, got, ok)
		}
	}
	grace := int64(m.int("shutdownTimeoutSeconds") + m.int("preStopSleepSeconds") + 5)
	if g := pod.Spec.TerminationGracePeriodSeconds; g == nil || *g != grace {
		t.Errorf("terminationGracePeriodSeconds %v, want --shutdown-timeout + preStop sleep + 5 = %d", g, grace)
	}
	if c.Lifecycle == nil || c.Lifecycle.PreStop == nil || c.Lifecycle.PreStop.Sleep == nil ||
		c.Lifecycle.PreStop.Sleep.Seconds != int64(m.int("preStopSleepSeconds")) {
		t.Errorf("preStop %+v: want a sleep of preStopSleepSeconds", c.Lifecycle)
	}
	for what, p := range map[string]*corev1.Probe{"startup": c.StartupProbe, "readiness": c.ReadinessProbe, "liveness": c.LivenessProbe} {
		if p == nil || p.HTTPGet == nil || p.HTTPGet.Path != "/health" || p.HTTPGet.Port.String() != "http" {
			t.Errorf("%s probe %+v: want GET /health on the http port", what, p)
		}
	}
	if c.Resources.Requests.Cpu().IsZero() || c.Resources.Requests.Memory().IsZero() {
		t.Errorf("resource requests %v: want CPU and memory", c.Resources.Requests)
	}
	checkAPIKey(t, m, c)

	svc := named[corev1.Service](t, m, "Service", "demo-glassbox")
	selects(t, "Service selector", &metav1.LabelSelector{MatchLabels: svc.Spec.Selector}, pod.Labels)
	for _, p := range svc.Spec.Ports {
		if _, ok := ports[p.TargetPort.String()]; !ok {
			t.Errorf("Service port %s targets %q, which the container does not name", p.Name, p.TargetPort.String())
		}
	}
}

// checkAPIKey: the key reaches the pods as $VLLM_API_KEY from a Secret that
// exists (or that the user names).
func checkAPIKey(t *testing.T, m *manifests, c *corev1.Container) {
	t.Helper()
	var ref *corev1.SecretKeySelector
	for _, e := range c.Env {
		if e.Name == "VLLM_API_KEY" && e.ValueFrom != nil {
			ref = e.ValueFrom.SecretKeyRef
		}
	}
	existing, _ := m.value("apiKey.existingSecret").(string)
	value, _ := m.value("apiKey.value").(string)
	switch {
	case existing == "" && value == "":
		if ref != nil {
			t.Errorf("VLLM_API_KEY set without a key")
		}
	case ref == nil:
		t.Errorf("no VLLM_API_KEY from a Secret")
	case existing != "":
		if ref.Name != existing || ref.Key != m.value("apiKey.secretKey") {
			t.Errorf("VLLM_API_KEY from %s/%s, want %s/%s", ref.Name, ref.Key, existing, m.value("apiKey.secretKey"))
		}
	default:
		s := named[corev1.Secret](t, m, "Secret", ref.Name)
		if s.StringData[ref.Key] != value {
			t.Errorf("Secret %s has no key %s holding the value", ref.Name, ref.Key)
		}
	}
}

// checkMonitoring: the monitor scrapes the pods' named ports with the jobs
// the rules select, the PrometheusRule is the generator's, and the
// dashboards ConfigMap holds the exported dashboards.
func checkMonitoring(t *testing.T, m *manifests) {
	t.Helper()
	d := named[appsv1.Deployment](t, m, "Deployment", "demo-glassbox")
	pod := &d.Spec.Template
	ports := containerPorts(container(t, pod.Spec.Containers, "glassbox"))
	kind, _ := m.value("monitoring.monitor").(string)
	var endpoints []struct {
		port        string
		interval    monitoringv1.Duration
		relabelings []monitoringv1.RelabelConfig
	}
	switch kind {
	case "PodMonitor":
		pm := named[monitoringv1.PodMonitor](t, m, "PodMonitor", "demo-glassbox")
		selects(t, "PodMonitor selector", &pm.Spec.Selector, pod.Labels)
		for _, e := range pm.Spec.PodMetricsEndpoints {
			if _, ok := ports[deref(e.Port)]; !ok {
				t.Errorf("PodMonitor scrapes port %q, which the pods do not name", deref(e.Port))
			}
			endpoints = append(endpoints, struct {
				port        string
				interval    monitoringv1.Duration
				relabelings []monitoringv1.RelabelConfig
			}{deref(e.Port), e.Interval, e.RelabelConfigs})
		}
		checkMonitorLabels(t, m, pm.Labels)
	case "ServiceMonitor":
		sm := named[monitoringv1.ServiceMonitor](t, m, "ServiceMonitor", "demo-glassbox")
		svc := named[corev1.Service](t, m, "Service", "demo-glassbox")
		selects(t, "ServiceMonitor selector", &sm.Spec.Selector, svc.Labels)
		for _, e := range sm.Spec.Endpoints {
			if !slices.ContainsFunc(svc.Spec.Ports, func(p corev1.ServicePort) bool { return p.Name == e.Port }) {
				t.Errorf("ServiceMonitor scrapes port %q, which the Service does not name", e.Port)
			}
			endpoints = append(endpoints, struct {
				port        string
				interval    monitoringv1.Duration
				relabelings []monitoringv1.RelabelConfig
			}{e.Port, e.Interval, e.RelabelConfigs})
		}
		checkMonitorLabels(t, m, sm.Labels)
	default:
		if len(m.get("PodMonitor"))+len(m.get("ServiceMonitor")) > 0 {
			t.Errorf("a monitor without monitoring.monitor")
		}
	}
	jobs := map[string]string{}
	for _, e := range endpoints {
		if e.interval != "5s" {
			t.Errorf("port %s scraped every %q, want 5s", e.port, e.interval)
		}
		jobs[e.port] = relabelled(e.relabelings, "job", "")
		if got := relabelled(e.relabelings, "instance", "__meta_kubernetes_pod_name"); got != "$1" {
			t.Errorf("port %s: instance is not the pod's name", e.port)
		}
		if got := relabelled(e.relabelings, "release", "__meta_kubernetes_pod_label_app_kubernetes_io_instance"); got != "$1" {
			t.Errorf("port %s: no release label, which the autoscalers select", e.port)
		}
	}
	if kind != "" {
		wantJobs := map[string]string{"metrics": dashboards.Default().Job}
		if _, ok := ports["dcgm"]; ok {
			wantJobs["dcgm"] = dashboards.Default().DCGMJob
		}
		if diff := cmp.Diff(wantJobs, jobs); diff != "" {
			t.Errorf("scraped ports and their jobs (-want +got):\n%s", diff)
		}
	}

	if m.value("monitoring.prometheusRule") == true {
		pr := named[monitoringv1.PrometheusRule](t, m, "PrometheusRule", "demo-glassbox")
		checkMonitorLabels(t, m, pr.Labels)
		gen, err := dashboards.RulesYAML(dashboards.Default())
		if err != nil {
			t.Fatal(err)
		}
		var want monitoringv1.PrometheusRuleSpec
		if err := yaml.UnmarshalStrict(gen, &want); err != nil {
			t.Fatalf("the generated rules do not decode as a PrometheusRule spec: %v", err)
		}
		if diff := cmp.Diff(want, pr.Spec); diff != "" {
			t.Errorf("PrometheusRule differs from the generator's rules (-want +got):\n%s", diff)
		}
	} else if len(m.get("PrometheusRule")) > 0 {
		t.Errorf("a PrometheusRule with monitoring.prometheusRule off")
	}

	var cms []*corev1.ConfigMap
	for _, o := range m.get("ConfigMap") {
		if cm := o.value.(*corev1.ConfigMap); cm.Labels["grafana_dashboard"] == "1" {
			cms = append(cms, cm)
		}
	}
	if m.value("monitoring.dashboards") != true {
		if len(cms) > 0 {
			t.Errorf("dashboards with monitoring.dashboards off")
		}
		return
	}
	if len(cms) != 1 {
		t.Fatalf("%d ConfigMaps labelled grafana_dashboard=1, want 1", len(cms))
	}
	files, err := dashboards.Files(dashboards.Default())
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{}
	for _, f := range files {
		if slices.Contains(dashboards.DashboardPaths(), f.Path) {
			want[filepath.Base(f.Path)] = string(f.Data)
		}
	}
	if diff := cmp.Diff(want, cms[0].Data); diff != "" {
		t.Errorf("dashboards ConfigMap differs from the exported dashboards (-want +got):\n%s", diff)
	}
}

// checkMonitorLabels: the labels a Prometheus' selector matches are on the
// object.
func checkMonitorLabels(t *testing.T, m *manifests, got map[string]string) {
	t.Helper()
	want, _ := m.value("monitoring.labels").(map[string]any)
	for k, v := range want {
		if got[k] != v {
			t.Errorf("monitoring label %s=%v missing from %v", k, v, got)
		}
	}
}

// relabelled returns the replacement of the relabeling that writes target
// (from source, or from nothing when source is ""), or "".
func relabelled(rs []monitoringv1.RelabelConfig, target, source string) string {
	for _, r := range rs {
		if r.TargetLabel != target || !strings.EqualFold(r.Action, "replace") {
			continue
		}
		var src []string
		for _, l := range r.SourceLabels {
			src = append(src, string(l))
		}
		if strings.Join(src, ";") != source {
			continue
		}
		if r.Replacement == nil {
			return "$1" // the default replacement
		}
		return *r.Replacement
	}
	return ""
}

func deref[T any](p *T) T {
	var zero T
	if p == nil {
		return zero
	}
	return *p
}

// selects fails unless sel matches the labels.
func selects(t *testing.T, what string, sel *metav1.LabelSelector, l map[string]string) {
	t.Helper()
	s, err := metav1.LabelSelectorAsSelector(sel)
	if err != nil {
		t.Errorf("%s: %v", what, err)
		return
	}
	if s.Empty() || !s.Matches(labels.Set(l)) {
		t.Errorf("%s %v does not select %v", what, s, l)
	}
}

func container(t *testing.T, cs []corev1.Container, name string) *corev1.Container {
	t.Helper()
	for i := range cs {
		if cs[i].Name == name {
			return &cs[i]
		}
	}
	t.Fatalf("no container %q", name)
	return nil
}

func containerPorts(c *corev1.Container) map[string]int32 {
	out := map[string]int32{}
	for _, p := range c.Ports {
		out[p.Name] = p.ContainerPort
	}
	return out
}

// argFlags reads --name=value arguments (a bare --name is "true").
func argFlags(args []string) map[string]string {
	out := map[string]string{}
	for _, a := range args {
		k, v, ok := strings.Cut(strings.TrimLeft(a, "-"), "=")
		if !ok {
			v = "true"
		}
		out[k] = v
	}
	return out
}

// readTestdata decodes a YAML file under testdata/.
func readTestdata(t *testing.T, name string, into any) {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.UnmarshalStrict(raw, into); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
}

func labelsSet(m map[string]string) labels.Set { return labels.Set(m) }
