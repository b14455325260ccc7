package workload

import (
	"bufio"
	"cmp"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Trace formats.
const (
	// TraceAzure is the Azure LLM inference traces' CSV (the 2023 and 2024
	// releases): TIMESTAMP,ContextTokens,GeneratedTokens, the timestamp a
	// date and time such as 2023-11-16 18:15:46.6805900 or
	// 2024-05-10 00:00:00.009930+00:00. inference-perf calls it
	// AzurePublicDataset.
	TraceAzure = "AzurePublicDataset"
	// TraceBurstGPT is BurstGPT's CSV: Timestamp (seconds from the trace's
	// start), Model, Request tokens, Response tokens, Total tokens, Log Type.
	TraceBurstGPT = "BurstGPT"
)

// TraceEntry is one request of a trace: when it arrived, from the trace's
// first request, and its token counts.
type TraceEntry struct {
	At            time.Duration
	Input, Output int
	Model         string // BurstGPT's Model column, else empty
	// Centis is the arrival truncated to hundredths of a second, as
	// inference-perf's Azure reader keeps it, from the same origin.
	Centis time.Duration
}

// ReadTrace reads a trace file of the given format (TraceAzure when empty).
func ReadTrace(path, format string) ([]TraceEntry, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("read trace: %w", err)
	}
	defer f.Close()
	var out []TraceEntry
	switch format {
	case "", TraceAzure:
		out, err = parseAzureTrace(f)
	case TraceBurstGPT:
		out, err = parseBurstGPT(f)
	default:
		return nil, fmt.Errorf("read trace %s: format %q: want %s or %s", path, format, TraceAzure, TraceBurstGPT)
	}
	if err != nil {
		return nil, fmt.Errorf("read trace %s: %w", path, err)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("read trace %s: no requests in it", path)
	}
	// Rows out of time order (a trace merged from several logs) are sent
	// in time order, from the earliest: the schedule releases offsets in
	// order, so one late row would hold back every row after it.
	slices.SortStableFunc(out, func(a, b TraceEntry) int { return cmp.Compare(a.At, b.At) })
	if d := out[0].At; d != 0 {
		c := out[0].Centis
		for i := range out {
			out[i].At -= d
			out[i].Centis -= c
		}
	}
	return out, nil
}

// parseAzureTrace reads TIMESTAMP,ContextTokens,GeneratedTokens rows, with
// or without the header; times are from the first row's.
func parseAzureTrace(r io.Reader) ([]TraceEntry, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	var out []TraceEntry
	var first, firstCentis time.Time
	for line := 1; sc.Scan(); line++ {
		text := strings.TrimSpace(sc.Text())
		if text == "" {
			continue
		}
		f := strings.Split(text, ",")
		if line == 1 && len(f) >= 1 && strings.EqualFold(strings.Trim(strings.TrimSpace(f[0]), `"`), "TIMESTAMP") {
			continue
		}
		if len(f) < 3 {
			return nil, fmt.Errorf("line %d: want TIMESTAMP,ContextTokens,GeneratedTokens, got %q", line, text)
		}
		ts, err := parseTraceTime(f[0])
		if err != nil {
			return nil, fmt.Errorf("line %d: %w", line, err)
		}
		in, err1 := strconv.Atoi(strings.TrimSpace(f[1]))
		outTok, err2 := strconv.Atoi(strings.TrimSpace(f[2]))
		if err1 != nil || err2 != nil || in < 0 || outTok < 0 {
			return nil, fmt.Errorf("line %d: the token counts %q, %q are not counts", line, f[1], f[2])
		}
		Centis := ts.Truncate(10 * time.Millisecond)
		if first.IsZero() {
			first, firstCentis = ts, Centis
		}
		out = append(out, TraceEntry{At: ts.Sub(first), Input: in, Output: outTok, Centis: Centis.Sub(firstCentis)})
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	return out, nil
}

var traceLayouts = []string{"2006-01-02 15:04:05Z07:00", "2006-01-02 15:04:05"}

// parseTraceTime reads the Azure traces' timestamps: a date, a time with
// any number of fraction digits, an optional Z or offset, T or space
// between, quotes allowed.
func parseTraceTime(s string) (time.Time, error) {
	v := strings.Trim(strings.TrimSpace(s), `"`)
	v = strings.Replace(v, "T", " ", 1)
	for _, layout := range traceLayouts {
		if t, err := time.Parse(layout, v); err == nil {
			return t, nil
		}
	}
	return time.Time{}, fmt.Errorf("timestamp %q: want YYYY-MM-DD HH:MM:SS[.fraction][Z|±HH:MM]", s)
}

// parseBurstGPT reads BurstGPT's CSV by its header's column names. Rows
// of failed requests (0 response tokens) are skipped: they have no output
// to ask for.
func parseBurstGPT(r io.Reader) ([]TraceEntry, error) {
	cr := csv.NewReader(r)
	cr.FieldsPerRecord = -1
	header, err := cr.Read()
	if err != nil {
		return nil, fmt.Errorf("read header: %w", err)
	}
	col := map[string]int{}
	for i, h := range header {
		col[strings.TrimSpace(h)] = i
	}
	for _, need := range []string{"Timestamp", "Request tokens", "Response tokens"} {
		if _, ok := col[need]; !ok {
			return nil, fmt.Errorf("no %q column: want BurstGPT's header (Timestamp,Model,Request tokens,Response tokens,Total tokens,Log Type)", need)
		}
	}
	var out []TraceEntry
	var first float64
	for line := 2; ; line++ {
		rec, err := cr.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, err
		}
		get := func(name string) string {
			if i, ok := col[name]; ok && i < len(rec) {
				return strings.TrimSpace(rec[i])
			}
			return ""
		}
		ts, err0 := strconv.ParseFloat(get("Timestamp"), 64)
		in, err1 := strconv.Atoi(get("Request tokens"))
		outTok, err2 := strconv.Atoi(get("Response tokens"))
		if err0 != nil || err1 != nil || err2 != nil || in < 0 || outTok < 0 || ts < 0 {
			return nil, fmt.Errorf("line %d: want a timestamp in seconds and token counts, got %q", line, strings.Join(rec, ","))
		}
		if outTok == 0 {
			continue
		}
		if len(out) == 0 {
			first = ts
		}
		at := Seconds(ts - first)
		out = append(out, TraceEntry{At: at, Input: in, Output: outTok, Model: get("Model"), Centis: at})
	}
	return out, nil
}
