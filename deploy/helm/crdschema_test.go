package helm

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"sigs.k8s.io/yaml"
)

// schema is the part of a CRD's structural OpenAPI v3 schema that decides
// what a manifest may contain. Validation reports, like the API server with
// fieldValidation=Strict, every field the schema does not declare.
type schema struct {
	Type                 string             `json:"type"`
	Properties           map[string]*schema `json:"properties"`
	AdditionalProperties *schema            `json:"additionalProperties"`
	Items                *schema            `json:"items"`
	Required             []string           `json:"required"`
	Enum                 []any              `json:"enum"`
	MinLength            *int               `json:"minLength"`
	MinItems             *int               `json:"minItems"`
	Minimum              *float64           `json:"minimum"`
	Maximum              *float64           `json:"maximum"`
	Format               string             `json:"format"`
	IntOrString          bool               `json:"x-kubernetes-int-or-string"`
	PreserveUnknown      bool               `json:"x-kubernetes-preserve-unknown-fields"`
}

// crd reads the schema of one version of a CRD file under testdata/.
func crd(file, version string) (*schema, error) {
	raw, err := os.ReadFile(filepath.Join("testdata", file))
	if err != nil {
		return nil, err
	}
	var doc struct {
		Spec struct {
			Versions []struct {
				Name   string `json:"name"`
				Schema struct {
					OpenAPIV3Schema *schema `json:"openAPIV3Schema"`
				} `json:"schema"`
			} `json:"versions"`
		} `json:"spec"`
	}
	if err := yaml.Unmarshal(raw, &doc); err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	for _, v := range doc.Spec.Versions {
		if v.Name == version && v.Schema.OpenAPIV3Schema != nil {
			return v.Schema.OpenAPIV3Schema, nil
		}
	}
	return nil, fmt.Errorf("%s: no schema for version %s", file, version)
}

// validate returns every violation of s in v (a value decoded from JSON),
// each with its path. The root's metadata is an ObjectMeta, which the API
// server checks itself (decode does).
func (s *schema) validate(path string, v any) []string {
	if s == nil {
		return nil
	}
	var errs []string
	bad := func(format string, a ...any) { errs = append(errs, path+": "+fmt.Sprintf(format, a...)) }
	if s.IntOrString {
		switch v.(type) {
		case string, float64:
		default:
			bad("want an integer or a string, got %T", v)
		}
		return errs
	}
	if len(s.Enum) > 0 && !slices.ContainsFunc(s.Enum, func(e any) bool { return fmt.Sprint(e) == fmt.Sprint(v) }) {
		bad("%v is not one of %v", v, s.Enum)
	}
	switch s.Type {
	case "object":
		if path == ".metadata" {
			return errs // an ObjectMeta, which decode checks as the API server does
		}
		obj, ok := v.(map[string]any)
		if !ok {
			bad("want an object, got %T", v)
			return errs
		}
		for _, r := range s.Required {
			if _, ok := obj[r]; !ok {
				bad("required field %q is missing", r)
			}
		}
		for _, k := range sortedKeys(obj) {
			child := path + "." + k
			switch {
			case s.Properties[k] != nil:
				errs = append(errs, s.Properties[k].validate(child, obj[k])...)
			case s.AdditionalProperties != nil:
				errs = append(errs, s.AdditionalProperties.validate(child, obj[k])...)
			case s.PreserveUnknown:
			default:
				errs = append(errs, child+": unknown field")
			}
		}
	case "array":
		arr, ok := v.([]any)
		if !ok {
			bad("want an array, got %T", v)
			return errs
		}
		if s.MinItems != nil && len(arr) < *s.MinItems {
			bad("%d items, want at least %d", len(arr), *s.MinItems)
		}
		for i, x := range arr {
			errs = append(errs, s.Items.validate(fmt.Sprintf("%s[%d]", path, i), x)...)
		}
	case "string":
		str, ok := v.(string)
		if !ok {
			bad("want a string, got %T (%v)", v, v)
		} else if s.MinLength != nil && len(str) < *s.MinLength {
			bad("%q is shorter than %d", str, *s.MinLength)
		}
	case "integer", "number":
		n, ok := v.(float64)
		switch {
		case !ok:
			bad("want a number, got %T (%v)", v, v)
		case s.Type == "integer" && n != float64(int64(n)):
			bad("want an integer, got %v", n)
		case s.Minimum != nil && n < *s.Minimum, s.Maximum != nil && n > *s.Maximum:
			bad("%v is out of range", n)
		}
	case "boolean":
		if _, ok := v.(bool); !ok {
			bad("want a boolean, got %T (%v)", v, v)
		}
	case "":
	default:
		bad("schema type %q is not handled", s.Type)
	}
	return errs
}

// validateAgainst checks a manifest (its raw YAML) against a CRD schema.
func validateAgainst(s *schema, raw []byte) error {
	var v any
	if err := yaml.Unmarshal(raw, &v); err != nil {
		return err
	}
	if errs := s.validate("", v); len(errs) > 0 {
		return fmt.Errorf("%d violations:\n  %s", len(errs), strings.Join(errs, "\n  "))
	}
	return nil
}
