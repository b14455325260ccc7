package glassbox

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// TestSimulatorEmbeddings: the simulated model serves /v1/embeddings at
// its hidden size; texts that share words lie closer than texts that do
// not, and dimensions shortens them.
func TestSimulatorEmbeddings(t *testing.T) {
	l := open(t, Options{Sim: &SimOptions{}})
	srv := httptest.NewServer(l.Handler())
	defer srv.Close()
	embed := func(body string) [][]float64 {
		t.Helper()
		resp, err := http.Post(srv.URL+"/v1/embeddings", "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var r struct {
			Data []struct{ Embedding []float64 }
		}
		if err := json.NewDecoder(resp.Body).Decode(&r); err != nil || resp.StatusCode != 200 {
			t.Fatalf("status %d: %v", resp.StatusCode, err)
		}
		var out [][]float64
		for _, d := range r.Data {
			out = append(out, d.Embedding)
		}
		return out
	}
	dot := func(a, b []float64) (s float64) {
		for i := range a {
			s += a[i] * b[i]
		}
		return s
	}
	v := embed(`{"input":["the old house by the river","the old house by the sea","quarterly revenue rose sharply"]}`)
	if len(v) != 3 || len(v[0]) != 4096 {
		t.Fatalf("%d vectors of %d", len(v), len(v[0]))
	}
	if n := dot(v[0], v[0]); n < 0.999 || n > 1.001 {
		t.Errorf("squared norm %v", n)
	}
	if near, far := dot(v[0], v[1]), dot(v[0], v[2]); near <= far {
		t.Errorf("similar texts %.3f, unrelated %.3f: want the similar closer", near, far)
	}
	if short := embed(`{"input":"x","dimensions":256}`); len(short[0]) != 256 {
		t.Errorf("dimensions 256 gave %d", len(short[0]))
	}
}
