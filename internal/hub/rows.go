package hub

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// RowsPage is one page of a dataset's rows, as the hub's dataset viewer
// serves them.
type RowsPage struct {
	Rows []struct {
		Row map[string]any `json:"row"`
	} `json:"rows"`
	Total int `json:"num_rows_total"`
}

// Rows reads rows offset to offset+length (at most 100) of a hub dataset's
// subset and split from the hub's dataset viewer (RowsURL, default
// https://datasets-server.huggingface.co), caching each page under
// CacheDir/datasets-rows, so that a dataset read once runs offline.
func (c *Config) Rows(ctx context.Context, dataset, subset, split string, offset, length int) ([]map[string]any, int, error) {
	for _, p := range append(strings.Split(dataset, "/"), subset, split) {
		if !part.MatchString(p) || p == ".." {
			return nil, 0, fmt.Errorf("read rows of %s: %q is not a valid name", dataset, p)
		}
	}
	dest := filepath.Join(c.CacheDir, "datasets-rows", filepath.FromSlash(dataset), subset, split, fmt.Sprintf("%d-%d.json", offset, length))
	var page RowsPage
	raw, err := os.ReadFile(dest)
	if err != nil {
		if raw, err = c.fetchRows(ctx, dataset, subset, split, offset, length); err != nil {
			return nil, 0, fmt.Errorf("read rows of %s (%s/%s) from the hub: %w", dataset, subset, split, err)
		}
		if err := json.Unmarshal(raw, &page); err != nil {
			return nil, 0, fmt.Errorf("read rows of %s: %w", dataset, err) // not cached: the next run asks again
		}
		if err := os.MkdirAll(filepath.Dir(dest), 0o755); err == nil {
			_ = os.WriteFile(dest+".part", raw, 0o644)
			_ = os.Rename(dest+".part", dest)
		}
	} else if err := json.Unmarshal(raw, &page); err != nil {
		return nil, 0, fmt.Errorf("read rows of %s (cached at %s): %w", dataset, dest, err)
	}
	out := make([]map[string]any, 0, len(page.Rows))
	for _, r := range page.Rows {
		out = append(out, r.Row)
	}
	return out, page.Total, nil
}

func (c *Config) fetchRows(ctx context.Context, dataset, subset, split string, offset, length int) ([]byte, error) {
	base := c.RowsURL
	if base == "" {
		base = "https://datasets-server.huggingface.co"
	}
	q := url.Values{"dataset": {dataset}, "config": {subset}, "split": {split}, "offset": {strconv.Itoa(offset)}, "length": {strconv.Itoa(length)}}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimSuffix(base, "/")+"/rows?"+q.Encode(), nil)
	if err != nil {
		return nil, err
	}
	if c.Token != "" {
		req.Header.Set("Authorization", "Bearer "+c.Token)
	}
	resp, err := c.client().Do(req)
	if err != nil {
		return nil, fmt.Errorf("cannot reach the hub (offline?): %w", err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 256<<20))
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("the hub answered %s: %s", resp.Status, strings.TrimSpace(string(body[:min(len(body), 300)])))
	}
	return body, nil
}
