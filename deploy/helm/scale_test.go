package helm

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	inferencev1 "sigs.k8s.io/gateway-api-inference-extension/api/v1"
	eppconfig "sigs.k8s.io/gateway-api-inference-extension/apix/config/v1alpha1"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"
	adapter "sigs.k8s.io/prometheus-adapter/pkg/config"
	"sigs.k8s.io/yaml"

	"github.com/glassbox-llm/glassbox/internal/dashboards"
	"github.com/glassbox-llm/glassbox/internal/reftest"
)

// kedaPrometheusMetadata are the trigger metadata keys of KEDA v2.20.2's
// Prometheus scaler (pkg/scalers/prometheus_scaler.go, its keda:"name=..."
// tags); the CRD types the metadata as a free map, so the test checks the
// keys here.
var kedaPrometheusMetadata = []string{"serverAddress", "query", "queryParameters", "threshold", "activationThreshold",
	"namespace", "customHeaders", "ignoreNullValues", "unsafeSsl", "awsRegion", "timeout", "identityOwner"}

// checkAutoscaling: the ScaledObject is valid against KEDA's CRD and
// scales the Deployment on the queue; the HPA reads the metric that
// deploy/prometheus-adapter serves.
func checkAutoscaling(t *testing.T, m *manifests) {
	t.Helper()
	target := fmt.Sprint(m.value("autoscaling.targetWaitingPerReplica"))
	sos := m.get("ScaledObject")
	if (len(sos) == 1) != (m.value("autoscaling.keda.enabled") == true) || len(sos) > 1 {
		t.Fatalf("%d ScaledObjects with autoscaling.keda.enabled %v", len(sos), m.value("autoscaling.keda.enabled"))
	}
	if len(sos) == 1 {
		s, err := crd("keda-v2.20.2-scaledobjects.yaml", "v1alpha1")
		if err != nil {
			t.Fatal(err)
		}
		if err := validateAgainst(s, sos[0].raw); err != nil {
			t.Errorf("ScaledObject against KEDA's CRD: %v", err)
		}
		var so struct {
			Spec struct {
				ScaleTargetRef                   struct{ APIVersion, Kind, Name string } `json:"scaleTargetRef"`
				MinReplicaCount, MaxReplicaCount int
				Triggers                         []struct {
					Type, MetricType string
					Metadata         map[string]string
				}
			}
		}
		if err := yaml.Unmarshal(sos[0].raw, &so); err != nil {
			t.Fatal(err)
		}
		if r := so.Spec.ScaleTargetRef; r.Kind != "Deployment" || r.Name != "demo-glassbox" {
			t.Errorf("ScaledObject scales %+v, want the Deployment demo-glassbox", r)
		}
		if so.Spec.MinReplicaCount != m.int("autoscaling.minReplicas") || so.Spec.MaxReplicaCount != m.int("autoscaling.maxReplicas") {
			t.Errorf("replica range %d..%d", so.Spec.MinReplicaCount, so.Spec.MaxReplicaCount)
		}
		if len(so.Spec.Triggers) != 1 || so.Spec.Triggers[0].Type != "prometheus" || so.Spec.Triggers[0].MetricType != "AverageValue" {
			t.Fatalf("triggers %+v: want one prometheus trigger, AverageValue", so.Spec.Triggers)
		}
		md := so.Spec.Triggers[0].Metadata
		for k := range md {
			if !slices.Contains(kedaPrometheusMetadata, k) {
				t.Errorf("trigger metadata %q is not a key of KEDA's Prometheus scaler", k)
			}
		}
		if md["threshold"] != target || !strings.Contains(md["query"], "vllm:num_requests_waiting{") {
			t.Errorf("trigger %v: want threshold %s on vllm:num_requests_waiting", md, target)
		}
	}

	hpas := m.get("HorizontalPodAutoscaler")
	if (len(hpas) == 1) != (m.value("autoscaling.hpa.enabled") == true) || len(hpas) > 1 {
		t.Fatalf("%d HPAs with autoscaling.hpa.enabled %v", len(hpas), m.value("autoscaling.hpa.enabled"))
	}
	if len(hpas) == 1 {
		h := hpas[0].value.(*autoscalingv2.HorizontalPodAutoscaler)
		if r := h.Spec.ScaleTargetRef; r.Kind != "Deployment" || r.Name != "demo-glassbox" {
			t.Errorf("HPA scales %+v", r)
		}
		name := adapterMetric(t)
		if len(h.Spec.Metrics) != 1 || h.Spec.Metrics[0].Pods == nil || h.Spec.Metrics[0].Pods.Metric.Name != name ||
			h.Spec.Metrics[0].Pods.Target.AverageValue == nil || h.Spec.Metrics[0].Pods.Target.AverageValue.String() != target {
			t.Errorf("HPA metrics %+v: want the Pods metric %s averaging %s", h.Spec.Metrics, name, target)
		}
	}
}

// adapterRules decodes deploy/prometheus-adapter/values.yaml's rules into
// prometheus-adapter's own config type.
func adapterRules(t *testing.T) []adapter.DiscoveryRule {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("..", "prometheus-adapter", "values.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var v struct {
		Prometheus struct {
			URL  string `json:"url"`
			Port int    `json:"port"`
		} `json:"prometheus"`
		Rules struct {
			Default bool                    `json:"default"`
			Custom  []adapter.DiscoveryRule `json:"custom"`
		} `json:"rules"`
	}
	if err := yaml.UnmarshalStrict(raw, &v); err != nil {
		t.Fatalf("prometheus-adapter values: %v", err)
	}
	return v.Rules.Custom
}

// adapterMetric is the custom metric name the adapter's rule serves.
func adapterMetric(t *testing.T) string {
	t.Helper()
	rules := adapterRules(t)
	if len(rules) != 1 || rules[0].Name.As == "" || rules[0].Resources.Overrides["pod"].Resource != "pod" {
		t.Fatalf("adapter rules %+v: want one rule mapping the pod label to pods", rules)
	}
	return rules[0].Name.As
}

// eppFacts is testdata/llm-d-router-v0.10.0.yaml.
type eppFacts struct {
	ConfigAPIVersion string              `json:"configAPIVersion"`
	Flags            []string            `json:"flags"`
	Plugins          map[string][]string `json:"plugins"`
	EngineLabel      string              `json:"engineLabel"`
	Ports            map[string]int32    `json:"ports"`
}

// checkRouter: the InferencePool selects the pods on their API port and
// names the picker's Service; the picker's config decodes as an
// EndpointPickerConfig, uses only plugins and parameters v0.10.0 has, reads
// the metrics port; its flags, ports, RBAC and HTTPRoute line up.
func checkRouter(t *testing.T, m *manifests) {
	t.Helper()
	pools := m.get("InferencePool")
	if (len(pools) == 1) != (m.value("router.enabled") == true) {
		t.Fatalf("%d InferencePools with router.enabled %v", len(pools), m.value("router.enabled"))
	}
	if len(pools) == 0 {
		return
	}
	var facts eppFacts
	readTestdata(t, "llm-d-router-v0.10.0.yaml", &facts)
	pool := pools[0].value.(*inferencev1.InferencePool)
	d := named[appsv1.Deployment](t, m, "Deployment", "demo-glassbox")
	podLabels := d.Spec.Template.Labels
	poolSel := map[string]string{}
	for k, v := range pool.Spec.Selector.MatchLabels {
		poolSel[string(k)] = string(v)
	}
	selects(t, "InferencePool selector", &metav1.LabelSelector{MatchLabels: poolSel}, podLabels)
	if len(pool.Spec.TargetPorts) != 1 || int(pool.Spec.TargetPorts[0].Number) != m.int("ports.api") {
		t.Errorf("pool target ports %+v, want the API port %d", pool.Spec.TargetPorts, m.int("ports.api"))
	}
	ref := pool.Spec.EndpointPickerRef
	svc := named[corev1.Service](t, m, "Service", string(ref.Name))
	if ref.Port == nil || !slices.ContainsFunc(svc.Spec.Ports, func(p corev1.ServicePort) bool {
		return p.Port == int32(ref.Port.Number) && deref(p.AppProtocol) == "kubernetes.io/h2c"
	}) {
		t.Errorf("pool's picker port %+v is not an h2c port of Service %s", ref.Port, svc.Name)
	}
	if ref.FailureMode != inferencev1.EndpointPickerFailureMode(fmt.Sprint(m.value("router.failureMode"))) {
		t.Errorf("failure mode %q", ref.FailureMode)
	}

	epp := named[appsv1.Deployment](t, m, "Deployment", svc.Name)
	selects(t, "picker Service selector", &metav1.LabelSelector{MatchLabels: svc.Spec.Selector}, epp.Spec.Template.Labels)
	if s, _ := metav1.LabelSelectorAsSelector(d.Spec.Selector); s.Matches(labelsSet(epp.Spec.Template.Labels)) {
		t.Errorf("the engine Deployment's selector also selects the picker's pods")
	}
	pc := container(t, epp.Spec.Template.Spec.Containers, "epp")
	flags := argFlags(pc.Args)
	for f := range flags {
		if !slices.Contains(facts.Flags, f) {
			t.Errorf("picker flag --%s is not one of llm-d-router v0.10.0's", f)
		}
	}
	if flags["pool-name"] != pool.Name || flags["pool-namespace"] != namespace || flags["pool-group"] != "inference.networking.k8s.io" {
		t.Errorf("picker flags %v do not name the pool %s/%s", flags, namespace, pool.Name)
	}
	for name, p := range map[string]int32{"grpc": facts.Ports["grpc"], "grpc-health": facts.Ports["grpcHealth"], "metrics": facts.Ports["metrics"]} {
		if containerPorts(pc)[name] != p {
			t.Errorf("picker port %s = %d, want %d", name, containerPorts(pc)[name], p)
		}
	}
	sa := epp.Spec.Template.Spec.ServiceAccountName
	named[corev1.ServiceAccount](t, m, "ServiceAccount", sa)
	checkRBAC(t, m, sa, map[string][]string{"": {"pods"}, "inference.networking.k8s.io": {"inferencepools"}})

	// The config file: mounted from the ConfigMap, decoded strictly.
	cfgPath := flags["config-file"]
	var cmName string
	for _, vm := range pc.VolumeMounts {
		if strings.HasPrefix(cfgPath, vm.MountPath+"/") {
			for _, v := range epp.Spec.Template.Spec.Volumes {
				if v.Name == vm.Name && v.ConfigMap != nil {
					cmName = v.ConfigMap.Name
				}
			}
		}
	}
	cm := named[corev1.ConfigMap](t, m, "ConfigMap", cmName)
	raw, ok := cm.Data[filepath.Base(cfgPath)]
	if !ok {
		t.Fatalf("ConfigMap %s has no %s", cmName, filepath.Base(cfgPath))
	}
	checkPickerConfig(t, facts, []byte(raw), containerPorts(container(t, d.Spec.Template.Spec.Containers, "glassbox"))["metrics"])
	if podLabels[facts.EngineLabel] != "vllm" {
		t.Errorf("pods lack %s=vllm", facts.EngineLabel)
	}

	routes := m.get("HTTPRoute")
	gw, _ := m.value("router.gateway.name").(string)
	if (len(routes) == 1) != (gw != "") {
		t.Fatalf("%d HTTPRoutes with router.gateway.name %q", len(routes), gw)
	}
	if gw != "" {
		r := routes[0].value.(*gatewayv1.HTTPRoute)
		if len(r.Spec.ParentRefs) != 1 || string(r.Spec.ParentRefs[0].Name) != gw {
			t.Errorf("HTTPRoute parents %+v, want Gateway %s", r.Spec.ParentRefs, gw)
		}
		if len(r.Spec.Rules) != 1 || len(r.Spec.Rules[0].BackendRefs) != 1 {
			t.Fatalf("HTTPRoute rules %+v", r.Spec.Rules)
		}
		b := r.Spec.Rules[0].BackendRefs[0]
		if deref(b.Group) != "inference.networking.k8s.io" || deref(b.Kind) != "InferencePool" || string(b.Name) != pool.Name {
			t.Errorf("HTTPRoute backend %+v, want the InferencePool %s", b.BackendObjectReference, pool.Name)
		}
	}
}

// checkPickerConfig decodes the picker's configuration into the Inference
// Extension's EndpointPickerConfig (unknown fields fail) and checks its
// plugins against v0.10.0's.
func checkPickerConfig(t *testing.T, facts eppFacts, raw []byte, metricsPort int32) {
	t.Helper()
	var cfg eppconfig.EndpointPickerConfig
	if err := yaml.UnmarshalStrict(raw, &cfg); err != nil {
		t.Fatalf("picker config: %v\n%s", err, raw)
	}
	if cfg.APIVersion != facts.ConfigAPIVersion || cfg.Kind != "EndpointPickerConfig" {
		t.Errorf("picker config is %s %s", cfg.APIVersion, cfg.Kind)
	}
	names := map[string]string{} // plugin name → type
	for _, p := range cfg.Plugins {
		name := p.Name
		if name == "" {
			name = p.Type
		}
		if _, dup := names[name]; dup {
			t.Errorf("two plugins named %q", name)
		}
		names[name] = p.Type
		allowed, ok := facts.Plugins[p.Type]
		if !ok {
			t.Errorf("plugin type %q is not one llm-d-router v0.10.0 has (per testdata)", p.Type)
			continue
		}
		var params map[string]any
		if len(p.Parameters) > 0 {
			if err := json.Unmarshal(p.Parameters, &params); err != nil {
				t.Errorf("plugin %s parameters: %v", name, err)
			}
		}
		for k := range params {
			if !slices.Contains(allowed, k) {
				t.Errorf("plugin %s: parameter %q is not one of %v", p.Type, k, allowed)
			}
		}
		if p.Type == "metrics-data-source" && fmt.Sprint(params["port"]) != strconv.Itoa(int(metricsPort)) {
			t.Errorf("metrics-data-source reads port %v, want the pods' metrics port %d", params["port"], metricsPort)
		}
		if p.Type == "core-metrics-extractor" && params["defaultEngine"] != nil && params["defaultEngine"] != "vllm" {
			t.Errorf("core-metrics-extractor's engine is %v, want vllm", params["defaultEngine"])
		}
	}
	refs := func(where, ref, wantType string) {
		if typ, ok := names[ref]; !ok || wantType != "" && typ != wantType {
			t.Errorf("%s refers to plugin %q, which is not configured (as %s)", where, ref, wantType)
		}
	}
	for _, prof := range cfg.SchedulingProfiles {
		for _, p := range prof.Plugins {
			refs("profile "+prof.Name, p.PluginRef, "")
		}
	}
	if cfg.DataLayer == nil || len(cfg.DataLayer.Sources) == 0 {
		t.Fatal("picker config has no data layer source")
	}
	for _, s := range cfg.DataLayer.Sources {
		refs("data layer source", s.PluginRef, "metrics-data-source")
		for _, e := range s.Extractors {
			refs("data layer extractor", e.PluginRef, "core-metrics-extractor")
		}
	}
}

// checkRBAC: a RoleBinding gives the ServiceAccount a Role that can
// get, list and watch each resource.
func checkRBAC(t *testing.T, m *manifests, sa string, need map[string][]string) {
	t.Helper()
	for _, o := range m.get("RoleBinding") {
		rb := o.value.(*rbacv1.RoleBinding)
		if !slices.ContainsFunc(rb.Subjects, func(s rbacv1.Subject) bool { return s.Kind == "ServiceAccount" && s.Name == sa }) {
			continue
		}
		role := named[rbacv1.Role](t, m, "Role", rb.RoleRef.Name)
		for group, resources := range need {
			for _, res := range resources {
				if !slices.ContainsFunc(role.Rules, func(r rbacv1.PolicyRule) bool {
					return slices.Contains(r.APIGroups, group) && slices.Contains(r.Resources, res) &&
						slices.Contains(r.Verbs, "list") && slices.Contains(r.Verbs, "watch")
				}) {
					t.Errorf("Role %s does not let %s list and watch %s.%s", role.Name, sa, res, group)
				}
			}
		}
		return
	}
	t.Errorf("no RoleBinding for ServiceAccount %s", sa)
}

// checkPrometheus: the fleet's own Prometheus selects the chart's monitor
// and rules, and ships to Thanos or remote-write as asked.
func checkPrometheus(t *testing.T, m *manifests) {
	t.Helper()
	ps := m.get("Prometheus")
	if (len(ps) == 1) != (m.value("prometheus.create") == true) {
		t.Fatalf("%d Prometheus objects with prometheus.create %v", len(ps), m.value("prometheus.create"))
	}
	if len(ps) == 0 {
		return
	}
	p := ps[0].value.(*monitoringv1.Prometheus)
	for _, kind := range []string{"PodMonitor", "ServiceMonitor", "PrometheusRule"} {
		for _, o := range m.get(kind) {
			var meta struct {
				Metadata metav1.ObjectMeta `json:"metadata"`
			}
			_ = yaml.Unmarshal(o.raw, &meta)
			sel := p.Spec.PodMonitorSelector
			switch kind {
			case "ServiceMonitor":
				sel = p.Spec.ServiceMonitorSelector
			case "PrometheusRule":
				sel = p.Spec.RuleSelector
			}
			selects(t, "Prometheus' "+kind+" selector", sel, meta.Metadata.Labels)
		}
	}
	named[corev1.ServiceAccount](t, m, "ServiceAccount", p.Spec.ServiceAccountName)
	checkRBAC(t, m, p.Spec.ServiceAccountName, map[string][]string{"": {"pods", "services", "endpoints"}})
	if string(p.Spec.ScrapeInterval) != "5s" {
		t.Errorf("Prometheus scrapes every %q", p.Spec.ScrapeInterval)
	}
	secret, _ := m.value("prometheus.thanos.objectStorageSecret.name").(string)
	switch {
	case m.value("prometheus.thanos.sidecar") != true:
		if p.Spec.Thanos != nil {
			t.Errorf("a Thanos sidecar without prometheus.thanos.sidecar")
		}
	case p.Spec.Thanos == nil:
		t.Errorf("no Thanos sidecar")
	case secret != "" && (p.Spec.Thanos.ObjectStorageConfig == nil || p.Spec.Thanos.ObjectStorageConfig.Name != secret):
		t.Errorf("Thanos object storage %+v, want Secret %s", p.Spec.Thanos.ObjectStorageConfig, secret)
	}
	rw, _ := m.value("prometheus.remoteWrite").([]any)
	if len(p.Spec.RemoteWrite) != len(rw) {
		t.Errorf("%d remote-write targets, want %d", len(p.Spec.RemoteWrite), len(rw))
	}
	if c, _ := m.value("prometheus.externalLabels.cluster").(string); c != "" && p.Spec.ExternalLabels["cluster"] != c {
		t.Errorf("external labels %v, want cluster=%s", p.Spec.ExternalLabels, c)
	}
}

// checkPromQL runs promtool over every PromQL the chart carries: the
// PrometheusRule's rules (promtool check rules, then the generated unit
// tests against them), the KEDA trigger's query and the adapter's query.
func checkPromQL(t *testing.T, m *manifests) {
	t.Helper()
	promtool := reftest.Tool(t, "promtool")
	dir := t.TempDir()
	write := func(name string, data []byte) {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	var checks [][]string
	if prs := m.get("PrometheusRule"); len(prs) == 1 {
		rules, err := yaml.Marshal(prs[0].value.(*monitoringv1.PrometheusRule).Spec)
		if err != nil {
			t.Fatal(err)
		}
		tests, err := dashboards.RuleTestsYAML(dashboards.Default(), "../"+dashboards.RulesPath)
		if err != nil {
			t.Fatal(err)
		}
		write(dashboards.RulesPath, rules)
		write(dashboards.RuleTestsPath, tests)
		checks = append(checks, []string{"check", "rules", dashboards.RulesPath}, []string{"test", "rules", dashboards.RuleTestsPath})
	}
	// The autoscalers' queries, as records of a rule file promtool parses.
	type rec struct {
		Record string `json:"record"`
		Expr   string `json:"expr"`
	}
	var recs []rec
	for _, o := range m.get("ScaledObject") {
		var so struct {
			Spec struct {
				Triggers []struct{ Metadata map[string]string }
			}
		}
		_ = yaml.Unmarshal(o.raw, &so)
		for _, tr := range so.Spec.Triggers {
			recs = append(recs, rec{"glassbox:keda_trigger", tr.Metadata["query"]})
		}
	}
	for _, r := range adapterRules(t) {
		q := strings.NewReplacer("<<.GroupBy>>", "namespace, pod", "<<.Series>>", "vllm:num_requests_waiting",
			"<<.LabelMatchers>>", `namespace="llm", pod=~"demo-glassbox-.*"`).Replace(r.MetricsQuery)
		recs = append(recs, rec{"glassbox:adapter_series", r.SeriesQuery}, rec{"glassbox:adapter_metric", q})
	}
	queries, err := yaml.Marshal(map[string]any{"groups": []any{map[string]any{"name": "autoscaling", "rules": recs}}})
	if err != nil {
		t.Fatal(err)
	}
	write("autoscaling.yml", queries)
	checks = append(checks, []string{"check", "rules", "autoscaling.yml"})
	for _, args := range checks {
		cmd := exec.Command(promtool, args...)
		cmd.Dir = dir
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		if err := cmd.Run(); err != nil {
			t.Errorf("promtool %s: %v\n%s", strings.Join(args, " "), err, out.String())
		}
	}
}
