// inference-perf's failure reports: each failed request's concise label
// and message, counted by label.

package inferenceperf

import (
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/glassbox-llm/glassbox/internal/bench"
)

var (
	ipCodeLabels = map[string]string{"429": "Rate Limit", "500": "Internal Server Error", "502": "Bad Gateway",
		"503": "Service Unavailable", "504": "Gateway Timeout"}
	ipHTTPLabels = []struct {
		re    *regexp.Regexp
		label string
	}{
		{regexp.MustCompile(`(?i)context.window|context length|maximum context|max.?tokens|token.?limit`), "Context Window"},
		{regexp.MustCompile(`(?i)invalid.?json|json.?parse|malformed.?json|unexpected.?token|expecting value|unterminated string|expecting ',' delimiter`), "Invalid JSON"},
		{regexp.MustCompile(`(?i)timeout|timed.?out`), "Timeout"},
		{regexp.MustCompile(`(?i)model.?not.?found|no such model`), "Model Not Found"},
	}
	ipOtherLabels = []struct {
		re    *regexp.Regexp
		label string
	}{
		{regexp.MustCompile(`(?i)timeout|timed.?out`), "Timeout"},
		{regexp.MustCompile(`(?i)connection.?refused|connect`), "Connection Error"},
	}
)

// errorMessage is what inference-perf keeps of a failure: an HTTP error's
// body's error.message when it is OpenAI's JSON, else the text.
func errorMessage(o *bench.Output) string {
	raw := o.Error
	if o.ErrorBody != "" {
		raw = o.ErrorBody
	}
	var body map[string]any
	if json.Unmarshal([]byte(raw), &body) == nil {
		e, _ := body["error"].(map[string]any)
		if e == nil {
			e = body
		}
		if m, ok := e["message"]; ok {
			return fmt.Sprint(m)
		}
	}
	return raw
}

// errorLabel is inference-perf's make_concise_label.
func errorLabel(typ, msg string) string {
	if code, ok := strings.CutPrefix(typ, "HTTP Error "); ok {
		if l, ok := ipCodeLabels[code]; ok {
			return code + " - " + l
		}
		for _, l := range ipHTTPLabels {
			if l.re.MatchString(msg) {
				return code + " - " + l.label
			}
		}
		return code + " - other"
	}
	for _, l := range ipOtherLabels {
		if l.re.MatchString(msg) {
			return l.label
		}
	}
	return strings.ToLower(strings.TrimSpace(typ))
}

// errorCounts is inference-perf's build_error_counts: per label, how many
// and the distinct messages (at most max_error_messages), the most
// frequent label first.
func (x *ipContext) errorCounts(failed []*ipRecord) object {
	counts := map[string]int{}
	var labels []string
	msgs := map[string][]string{}
	for _, q := range failed {
		msg := errorMessage(q.o)
		typ := q.o.ErrorType
		if typ == "" {
			typ = "ClientError"
		}
		l := errorLabel(typ, msg)
		if counts[l] == 0 {
			labels = append(labels, l)
		}
		counts[l]++
		if !slices.Contains(msgs[l], msg) && len(msgs[l]) < x.maxMessages {
			msgs[l] = append(msgs[l], msg)
		}
	}
	slices.SortStableFunc(labels, func(a, b string) int { return counts[b] - counts[a] })
	out := object{}
	for _, l := range labels {
		var ms []object
		for _, m := range msgs[l] {
			ms = append(ms, object{{"message", m}})
		}
		if ms == nil {
			ms = []object{}
		}
		out = append(out, field{l, object{{"count", counts[l]}, {"messages", ms}}})
	}
	return out
}
