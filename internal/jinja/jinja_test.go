package jinja

import (
	"encoding/json"
	"os"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// fixedNow is the clock testdata/gen_features.py gives strftime_now.
func fixedNow() time.Time { return time.Date(2024, 7, 9, 14, 5, 3, 0, time.UTC) }

type featureCase struct {
	Name     string          `json:"name"`
	Template string          `json:"template"`
	Vars     json.RawMessage `json:"vars"`
	Want     *string         `json:"want"`
	Error    bool            `json:"error"`
	PyError  string          `json:"python_error"`
}

// TestFeatures runs the language cases in testdata/features.json, whose
// expected outputs Python Jinja2 produced in transformers' environment
// (testdata/gen_features.py). Cases Jinja2 refuses must fail here too.
func TestFeatures(t *testing.T) {
	b, err := os.ReadFile("testdata/features.json")
	if err != nil {
		t.Fatal(err)
	}
	var cases []featureCase
	if err := json.Unmarshal(b, &cases); err != nil {
		t.Fatal(err)
	}
	if len(cases) < 50 {
		t.Fatalf("only %d feature cases", len(cases))
	}
	for _, c := range cases {
		t.Run(c.Name, func(t *testing.T) {
			v, err := FromJSON(c.Vars)
			if err != nil {
				t.Fatal(err)
			}
			vars := map[string]any{}
			d := v.(*Dict)
			for _, k := range d.Keys() {
				vars[k], _ = d.Get(k)
			}
			tmpl, err := Parse(c.Template)
			var got string
			if err == nil {
				got, err = tmpl.RenderOptions(vars, Options{Now: fixedNow})
			}
			if c.Error {
				if err == nil {
					t.Fatalf("rendered %q; Jinja2 raised %s", got, c.PyError)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(*c.Want, got); diff != "" {
				t.Errorf("template %q (-want +got):\n%s", c.Template, diff)
			}
		})
	}
}
