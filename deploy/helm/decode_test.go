package helm

import (
	"fmt"
	"strings"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metavalidation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	inferencev1 "sigs.k8s.io/gateway-api-inference-extension/api/v1"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"
	"sigs.k8s.io/yaml"
)

// kinds maps apiVersion/kind to the upstream Go type a manifest must decode
// into with no unknown or duplicate field. Versions: k8s.io/api v0.37,
// prometheus-operator's monitoring/v1 v0.95.2, Gateway API v1.6.3, and the
// Inference Extension v1.5.0 (what llm-d-router v0.10.0 builds with).
var kinds = map[string]func() any{
	"apps/v1/Deployment":                           func() any { return &appsv1.Deployment{} },
	"v1/Service":                                   func() any { return &corev1.Service{} },
	"v1/Secret":                                    func() any { return &corev1.Secret{} },
	"v1/ConfigMap":                                 func() any { return &corev1.ConfigMap{} },
	"v1/ServiceAccount":                            func() any { return &corev1.ServiceAccount{} },
	"rbac.authorization.k8s.io/v1/Role":            func() any { return &rbacv1.Role{} },
	"rbac.authorization.k8s.io/v1/RoleBinding":     func() any { return &rbacv1.RoleBinding{} },
	"autoscaling/v2/HorizontalPodAutoscaler":       func() any { return &autoscalingv2.HorizontalPodAutoscaler{} },
	"monitoring.coreos.com/v1/PodMonitor":          func() any { return &monitoringv1.PodMonitor{} },
	"monitoring.coreos.com/v1/ServiceMonitor":      func() any { return &monitoringv1.ServiceMonitor{} },
	"monitoring.coreos.com/v1/PrometheusRule":      func() any { return &monitoringv1.PrometheusRule{} },
	"monitoring.coreos.com/v1/Prometheus":          func() any { return &monitoringv1.Prometheus{} },
	"inference.networking.k8s.io/v1/InferencePool": func() any { return &inferencev1.InferencePool{} },
	"gateway.networking.k8s.io/v1/HTTPRoute":       func() any { return &gatewayv1.HTTPRoute{} },
	"keda.sh/v1alpha1/ScaledObject":                nil, // checked against KEDA's CRD schema
}

// decode reads one manifest strictly into its upstream type and checks the
// object metadata as the API server would.
func decode(template string, doc []byte) (object, error) {
	var head struct {
		APIVersion string            `json:"apiVersion"`
		Kind       string            `json:"kind"`
		Metadata   metav1.ObjectMeta `json:"metadata"`
	}
	if err := yaml.Unmarshal(doc, &head); err != nil {
		return object{}, err
	}
	o := object{template: template, apiVersion: head.APIVersion, kind: head.Kind, name: head.Metadata.Name, raw: doc}
	gvk := head.APIVersion + "/" + head.Kind
	newValue, known := kinds[gvk]
	switch {
	case !known:
		return o, fmt.Errorf("%s is not a kind the chart test knows", gvk)
	case newValue == nil:
		var v map[string]any
		if err := yaml.UnmarshalStrict(doc, &v); err != nil {
			return o, fmt.Errorf("%s %s: %w", gvk, o.name, err)
		}
		o.value = v
	default:
		o.value = newValue()
		if err := yaml.UnmarshalStrict(doc, o.value); err != nil {
			return o, fmt.Errorf("%s %s: %w", gvk, o.name, err)
		}
	}
	if errs := validateMeta(head.Kind, &head.Metadata); len(errs) > 0 {
		return o, fmt.Errorf("%s %s: %v", gvk, o.name, errs.ToAggregate())
	}
	return o, nil
}

// validateMeta applies the API server's rules for names, labels and
// annotations. Helm sets the namespace at install; a manifest names one
// only where a value asks for another.
func validateMeta(kind string, m *metav1.ObjectMeta) field.ErrorList {
	p := field.NewPath("metadata")
	var errs field.ErrorList
	nameRule := validation.IsDNS1123Subdomain
	if kind == "Service" {
		nameRule = validation.IsDNS1035Label // a Service name is a DNS label
	}
	for _, msg := range nameRule(m.Name) {
		errs = append(errs, field.Invalid(p.Child("name"), m.Name, msg))
	}
	errs = append(errs, metavalidation.ValidateLabels(m.Labels, p.Child("labels"))...)
	for k := range m.Annotations {
		for _, msg := range validation.IsQualifiedName(strings.ToLower(k)) {
			errs = append(errs, field.Invalid(p.Child("annotations"), k, msg))
		}
	}
	return errs
}
