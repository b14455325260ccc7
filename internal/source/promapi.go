package source

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// Prometheus's range API: one query over [start, end] at a step, retried
// while Prometheus restarts.

// promPoint is one sample of a range-query series.
type promPoint struct {
	ms int64
	v  float64
}

// promSeries is one series of a matrix answer.
type promSeries struct {
	Metric map[string]string
	Values []promPoint
}

// rangeQuery runs query over q's window.
func (q *promQuery) rangeQuery(ctx context.Context, query string) ([]promSeries, error) {
	// A Prometheus restarting (or briefly overloaded) refuses connections
	// or answers 503 for a few seconds: wait it out a little, then give up.
	var err error
	for wait := 500 * time.Millisecond; ; wait *= 2 {
		var out []promSeries
		var retry bool
		out, retry, err = q.queryOnce(ctx, query)
		if err == nil || !retry || wait > 4*time.Second {
			return out, err
		}
		select {
		case <-ctx.Done():
			return nil, err
		case <-time.After(wait):
		}
	}
}

// queryOnce sends one range query; retry says whether the failure may pass.
func (q *promQuery) queryOnce(ctx context.Context, query string) (out []promSeries, retry bool, err error) {
	v := url.Values{"query": {query}, "start": {formatTime(q.start)}, "end": {formatTime(q.end)},
		"step": {strconv.FormatFloat(q.step.Seconds(), 'f', -1, 64)}}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, q.base+"/api/v1/query_range", strings.NewReader(v.Encode()))
	if err != nil {
		return nil, false, fmt.Errorf("query prometheus: %w", err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	resp, err := q.client.Do(req)
	if err != nil {
		return nil, ctx.Err() == nil, fmt.Errorf("query prometheus: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode == http.StatusServiceUnavailable || resp.StatusCode == http.StatusBadGateway || resp.StatusCode == http.StatusGatewayTimeout {
		return nil, true, fmt.Errorf("query prometheus %q: HTTP %d", query, resp.StatusCode)
	}
	out, err = parseRangeResponse(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return nil, false, fmt.Errorf("query prometheus %q (HTTP %d): %w", query, resp.StatusCode, err)
	}
	return out, false, nil
}

func formatTime(t time.Time) string {
	return strconv.FormatFloat(float64(t.UnixMilli())/1000, 'f', 3, 64)
}

// parseRangeResponse decodes the /api/v1/query_range answer: a matrix of
// [unix seconds, "value"] pairs per series.
func parseRangeResponse(r io.Reader) ([]promSeries, error) {
	var body struct {
		Status    string `json:"status"`
		Error     string `json:"error"`
		ErrorType string `json:"errorType"`
		Data      struct {
			ResultType string `json:"resultType"`
			Result     []struct {
				Metric map[string]string `json:"metric"`
				Values [][2]any          `json:"values"`
			} `json:"result"`
		} `json:"data"`
	}
	if err := json.NewDecoder(r).Decode(&body); err != nil {
		return nil, fmt.Errorf("decode answer: %w", err)
	}
	if body.Status != "success" {
		if body.Error == "" {
			body.Error = "status " + strconv.Quote(body.Status)
		}
		return nil, errors.New(body.ErrorType + ": " + body.Error)
	}
	if body.Data.ResultType != "matrix" {
		return nil, fmt.Errorf("decode answer: result type %q, want matrix", body.Data.ResultType)
	}
	out := make([]promSeries, 0, len(body.Data.Result))
	for _, s := range body.Data.Result {
		ps := promSeries{Metric: s.Metric}
		for _, pair := range s.Values {
			ts, ok := pair[0].(float64)
			str, ok2 := pair[1].(string)
			if !ok || !ok2 || math.IsNaN(ts) || math.IsInf(ts, 0) {
				return nil, fmt.Errorf("decode answer: malformed sample %v", pair)
			}
			v, err := strconv.ParseFloat(str, 64)
			if err != nil {
				return nil, fmt.Errorf("decode answer: value %q: %w", str, err)
			}
			ps.Values = append(ps.Values, promPoint{ms: int64(math.Round(ts * 1000)), v: v})
		}
		out = append(out, ps)
	}
	return out, nil
}
