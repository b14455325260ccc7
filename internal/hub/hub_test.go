package hub

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// fakeHub serves one file with Range support and the hub's sha256 header,
// recording the Range header of each request.
func fakeHub(t *testing.T, content []byte, etag string) (*httptest.Server, *[]string) {
	var mu sync.Mutex
	var ranges []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/o/r/resolve/main/dir/m.gguf" && r.URL.Path != "/datasets/o/r/resolve/main/dir/m.gguf" {
			http.NotFound(w, r)
			return
		}
		mu.Lock()
		ranges = append(ranges, r.Header.Get("Range"))
		mu.Unlock()
		w.Header().Set("X-Linked-Etag", `"`+etag+`"`)
		http.ServeContent(w, r, "m.gguf", time.Time{}, bytes.NewReader(content))
	}))
	t.Cleanup(srv.Close)
	return srv, &ranges
}

func digest(b []byte) string { s := sha256.Sum256(b); return hex.EncodeToString(s[:]) }

func TestParseRef(t *testing.T) {
	r, err := ParseRef("hf://Qwen/Qwen2.5-0.5B-Instruct-GGUF/qwen2.5-0.5b-instruct-q8_0.gguf")
	if err != nil || r.Owner != "Qwen" || r.Repo != "Qwen2.5-0.5B-Instruct-GGUF" || r.File != "qwen2.5-0.5b-instruct-q8_0.gguf" {
		t.Fatalf("%+v %v", r, err)
	}
	for _, bad := range []string{"hf://a/b", "hf://a/../c/d", "hf:///b/c", "http://a/b/c", "hf://a/b/c d"} {
		if _, err := ParseRef(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

func TestFetchDownloadsResumesAndCaches(t *testing.T) {
	content := bytes.Repeat([]byte("glassbox"), 100_000)
	srv, ranges := fakeHub(t, content, digest(content))
	var progress strings.Builder
	c := &Config{BaseURL: srv.URL, CacheDir: t.TempDir(), Progress: &progress}
	ref := Ref{Owner: "o", Repo: "r", File: "dir/m.gguf"}
	dest := filepath.Join(c.CacheDir, "o", "r", "dir", "m.gguf")
	// A previous, interrupted download left the first 300 kB.
	os.MkdirAll(filepath.Dir(dest), 0o755)
	os.WriteFile(dest+".part", content[:300_000], 0o644)

	path, err := c.Fetch(context.Background(), ref)
	if err != nil {
		t.Fatal(err)
	}
	got, _ := os.ReadFile(path)
	if !bytes.Equal(got, content) {
		t.Fatalf("downloaded %d bytes, want the %d-byte file", len(got), len(content))
	}
	if len(*ranges) != 1 || (*ranges)[0] != "bytes=300000-" {
		t.Errorf("requests' Range headers %q, want one resuming at 300000", *ranges)
	}
	if !strings.Contains(progress.String(), "100%") {
		t.Errorf("progress output %q has no 100%% line", progress.String())
	}
	// Cached: no second request.
	if _, err := c.Fetch(context.Background(), ref); err != nil || len(*ranges) != 1 {
		t.Errorf("second fetch: %v, %d requests", err, len(*ranges))
	}
}

func TestFetchChecksum(t *testing.T) {
	content := []byte("the real file")
	srv, _ := fakeHub(t, content, digest([]byte("something else")))
	c := &Config{BaseURL: srv.URL, CacheDir: t.TempDir()}
	_, err := c.Fetch(context.Background(), Ref{Owner: "o", Repo: "r", File: "dir/m.gguf"})
	if err == nil || !strings.Contains(err.Error(), "sha256 mismatch") {
		t.Fatalf("got %v, want a sha256 mismatch", err)
	}
	if _, err := os.Stat(filepath.Join(c.CacheDir, "o", "r", "dir", "m.gguf")); err == nil {
		t.Error("a file that failed its checksum was kept")
	}
}

func TestFetchOfflineAndMissing(t *testing.T) {
	srv, _ := fakeHub(t, []byte("x"), "")
	c := &Config{BaseURL: srv.URL, CacheDir: t.TempDir()}
	if _, err := c.Fetch(context.Background(), Ref{Owner: "o", Repo: "r", File: "nope.gguf"}); err == nil || !strings.Contains(err.Error(), "no such file") {
		t.Errorf("missing file: %v", err)
	}
	srv.Close()
	_, err := c.Fetch(context.Background(), Ref{Owner: "o", Repo: "r", File: "dir/m.gguf"})
	if err == nil || !strings.Contains(err.Error(), "offline") || !strings.Contains(err.Error(), "local path") {
		t.Errorf("offline: %v", err)
	}
}

// TestFetchDataset: hf://datasets/… references a dataset repository, which
// the hub serves under /datasets/, cached apart from a model of the same
// name.
func TestFetchDataset(t *testing.T) {
	ref, err := ParseRef("hf://datasets/o/r/dir/m.gguf")
	if err != nil || !ref.Dataset || ref.Owner != "o" || ref.String() != "hf://datasets/o/r/dir/m.gguf" {
		t.Fatalf("%+v %v", ref, err)
	}
	content := []byte("conversations")
	srv, _ := fakeHub(t, content, digest(content))
	c := &Config{BaseURL: srv.URL, CacheDir: t.TempDir()}
	path, err := c.Fetch(context.Background(), ref)
	if err != nil {
		t.Fatal(err)
	}
	if want := filepath.Join(c.CacheDir, "datasets", "o", "r", "dir", "m.gguf"); path != want {
		t.Errorf("cached at %s, want %s", path, want)
	}
	srv.Close()
	os.Remove(path)
	if _, err := c.Fetch(context.Background(), ref); err == nil || !strings.Contains(err.Error(), "hf://datasets/o/r/dir/m.gguf") || strings.Contains(err.Error(), "--model") {
		t.Errorf("offline: %v, want the dataset named and no --model hint", err)
	}
}

// TestRows: a dataset's rows from the dataset viewer, cached per page so
// that a second read needs no network.
func TestRows(t *testing.T) {
	var calls int
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls++
		q := r.URL.Query()
		if r.URL.Path != "/rows" || q.Get("dataset") != "o/d" || q.Get("config") != "default" || q.Get("split") != "train" || q.Get("offset") != "100" {
			http.Error(w, "bad query "+r.URL.String(), 400)
			return
		}
		w.Write([]byte(`{"features":[],"rows":[{"row_idx":100,"row":{"turns":["hi"]},"truncated_cells":[]}],"num_rows_total":101}`))
	}))
	c := &Config{RowsURL: srv.URL, CacheDir: t.TempDir()}
	rows, total, err := c.Rows(context.Background(), "o/d", "default", "train", 100, 100)
	if err != nil || len(rows) != 1 || total != 101 || rows[0]["turns"].([]any)[0] != "hi" {
		t.Fatalf("%v %d %v", rows, total, err)
	}
	srv.Close()
	if _, _, err := c.Rows(context.Background(), "o/d", "default", "train", 100, 100); err != nil || calls != 1 {
		t.Errorf("cached read: %v after %d calls", err, calls)
	}
	if _, _, err := c.Rows(context.Background(), "o/d", "default", "train", 0, 100); err == nil || !strings.Contains(err.Error(), "offline") {
		t.Errorf("offline: %v", err)
	}
	if _, _, err := c.Rows(context.Background(), "../x", "default", "train", 0, 1); err == nil {
		t.Error("a path outside the cache was accepted")
	}
}
