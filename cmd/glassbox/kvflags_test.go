package main

import (
	"context"
	"io"
	"strings"
	"testing"
)

// TestKVFlagsRefusedByName: an offload tier that cannot be (negative,
// another backend, no prefix caching, smaller than a block), a residency
// sample out of (0, 1] and fewer than one data-parallel rank are refused
// by the flag's name.
func TestKVFlagsRefusedByName(t *testing.T) {
	for _, c := range []struct {
		args []string
		name string
	}{
		{[]string{"--kv-offloading-size", "-1"}, "--kv-offloading-size"},
		{[]string{"--kv-offloading-size", "NaN"}, "--kv-offloading-size"},
		{[]string{"--kv-offloading-size", "4", "--kv-offloading-backend", "lmcache"}, "--kv-offloading-backend"},
		{[]string{"--kv-offloading-size", "4", "--no-enable-prefix-caching"}, "--kv-offloading-size"},
		{[]string{"--kv-offloading-size", "0.0000001"}, "--kv-offloading-size"},
		{[]string{"--kv-cache-metrics", "--kv-cache-metrics-sample", "1.5"}, "kv-cache-metrics-sample"},
		{[]string{"--kv-cache-metrics", "--kv-cache-metrics-sample", "-0.5"}, "kv-cache-metrics-sample"},
		{[]string{"--data-parallel-size", "0"}, "--data-parallel-size"},
		{[]string{"--data-parallel-size", "-2"}, "--data-parallel-size"},
	} {
		_, err := startServe(context.Background(), append([]string{"--host", "127.0.0.1", "--port", "0"}, c.args...), io.Discard, io.Discard)
		if err == nil || !strings.Contains(err.Error(), c.name) {
			t.Errorf("%v: %v, want an error naming %s", c.args, err, c.name)
		}
	}
}
