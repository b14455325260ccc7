package metricspec

import (
	"math"
	"strconv"
	"strings"
)

// PyFloat formats v as prometheus_client's floatToGoString: Python's repr
// (shortest round-trip digits, fixed notation for exponents -4..15 with a
// trailing ".0" on integers), except that positive numbers with more than
// six integer digits switch to exponent form "d.ddde+0N", as Go's %g would
// (quirk kept: 1e10 is written "1e+010").
func PyFloat(v float64) string {
	switch {
	case math.IsInf(v, +1):
		return "+Inf"
	case math.IsInf(v, -1):
		return "-Inf"
	case math.IsNaN(v):
		return "NaN"
	}
	s := pyRepr(v)
	dot := strings.IndexByte(s, '.')
	if v > 0 && dot > 6 {
		mantissa := strings.TrimRight(s[:1]+"."+s[1:dot]+s[dot+1:], "0.")
		return mantissa + "e+0" + strconv.Itoa(dot-1)
	}
	return s
}

// PyRepr is Python's repr of a float: what str() writes into vLLM's info
// labels (gpu_memory_utilization="0.9", kv_cache_max_concurrency="1.7777777777777777").
func PyRepr(v float64) string {
	switch {
	case math.IsInf(v, +1):
		return "inf"
	case math.IsInf(v, -1):
		return "-inf"
	case math.IsNaN(v):
		return "nan"
	}
	return pyRepr(v)
}

func pyRepr(v float64) string {
	e := strconv.FormatFloat(v, 'e', -1, 64) // shortest digits, e.g. "1.5e+16"
	exp, _ := strconv.Atoi(e[strings.IndexByte(e, 'e')+1:])
	if v != 0 && (exp < -4 || exp >= 16) {
		return e // Go's 'e' form matches Python's: at least two exponent digits, no ".0"
	}
	s := strconv.FormatFloat(v, 'f', -1, 64)
	if !strings.ContainsRune(s, '.') {
		s += ".0"
	}
	return s
}

// BucketLabel is the le label value /metrics writes for the bucket bound v
// ("0.5", "10.0", "+Inf"): a query that selects one bucket must match it
// exactly.
func BucketLabel(v float64) string { return PyFloat(v) }

// PythonBool writes b as Python's str() does ("True", "False"), the form
// vLLM's info labels such as enable_prefix_caching carry.
func PythonBool(b bool) string {
	if b {
		return "True"
	}
	return "False"
}
