package jsonobject

import (
	"encoding/json"
	"math"
	"strings"
	"testing"
)

// TestOrderKept: keys come out in the order written (not sorted, as a
// map's would), nested objects and lists of them too, and an empty or nil
// object is {}.
func TestOrderKept(t *testing.T) {
	var none Object
	o := Object{{"zeta", 1}, {"alpha", "a"}, {"nested", Object{{"b", true}, {"a", nil}}}, {"list", []Object{{{"y", 2}}, {}}}, {"nil", none}}
	got, err := json.Marshal(o)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"zeta":1,"alpha":"a","nested":{"b":true,"a":null},"list":[{"y":2},{}],"nil":{}}`
	if string(got) != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
	ind, err := json.MarshalIndent(Object{{"b", 1}, {"a", Object{{"c", 2}}}}, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	if want := "{\n  \"b\": 1,\n  \"a\": {\n    \"c\": 2\n  }\n}"; string(ind) != want {
		t.Errorf("indented:\n%s\nwant\n%s", ind, want)
	}
}

// TestKeysEscaped: a key is a JSON string, quotes and all.
func TestKeysEscaped(t *testing.T) {
	got, err := json.Marshal(Object{{`a"b`, 1}})
	if err != nil || string(got) != `{"a\"b":1}` {
		t.Errorf("%s, %v", got, err)
	}
}

// TestValueErrorNamesKey: a value JSON has no form for (NaN) fails the
// whole object, naming its key.
func TestValueErrorNamesKey(t *testing.T) {
	_, err := json.Marshal(Object{{"ok", 1}, {"rate", math.NaN()}})
	if err == nil || !strings.Contains(err.Error(), "marshal rate") {
		t.Errorf("NaN marshalled, or the error does not name its key: %v", err)
	}
}
