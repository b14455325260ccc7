// Package hub fetches model files named hf://OWNER/REPO/FILE (and dataset
// files, hf://datasets/OWNER/REPO/FILE, as huggingface_hub names them)
// from the Hugging Face hub into a local cache, as vLLM and Ollama users
// expect:
// downloads resume from a partial file, are checked against the hub's
// sha256 when it gives one, show progress, and fail with a clear message
// when the hub cannot be reached.
//
// It is used by cmd/ and the public package (which resolve --model and
// Options.Model) and must not import the engine or server side.
package hub

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"time"
)

// Prefix marks a hub reference.
const Prefix = "hf://"

// Config says where to download from and to.
type Config struct {
	BaseURL  string       // default https://huggingface.co
	CacheDir string       // files land in CacheDir/OWNER/REPO/FILE
	Client   *http.Client // default: no overall timeout (files are large)
	Progress io.Writer    // nil: quiet
	Token    string       // sent as a bearer token (gated repositories)
	RowsURL  string       // the dataset viewer, for Rows; default https://datasets-server.huggingface.co
}

// DefaultCacheDir is where downloads land unless told otherwise: glassbox/hf
// under the user's cache directory (~/.cache/glassbox/hf on Linux), shared
// by glassbox serve and the public package.
func DefaultCacheDir() (string, error) {
	base, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("find a cache directory: %w", err)
	}
	return filepath.Join(base, "glassbox", "hf"), nil
}

// Ref is a parsed hf:// reference; Dataset marks a dataset repository's.
type Ref struct {
	Owner, Repo, File string
	Dataset           bool
}

var part = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]*$`)

// ParseRef splits hf://OWNER/REPO/FILE or hf://datasets/OWNER/REPO/FILE;
// the file may sit in a folder.
func ParseRef(s string) (Ref, error) {
	rest, ok := strings.CutPrefix(s, Prefix)
	if !ok {
		return Ref{}, fmt.Errorf("%q is not an %sOWNER/REPO/FILE reference", s, Prefix)
	}
	rest, dataset := strings.CutPrefix(rest, "datasets/")
	parts := strings.Split(rest, "/")
	if len(parts) < 3 {
		return Ref{}, fmt.Errorf("%q: want %sOWNER/REPO/FILE", s, Prefix)
	}
	for _, p := range parts {
		if !part.MatchString(p) || p == ".." {
			return Ref{}, fmt.Errorf("%q: %q is not a valid path element", s, p)
		}
	}
	return Ref{Owner: parts[0], Repo: parts[1], File: strings.Join(parts[2:], "/"), Dataset: dataset}, nil
}

// String is the reference as ParseRef reads it.
func (r Ref) String() string {
	kind := ""
	if r.Dataset {
		kind = "datasets/"
	}
	return Prefix + kind + r.Owner + "/" + r.Repo + "/" + r.File
}

// Fetch returns the local path of ref, downloading it first unless the
// cache already holds it.
func (c *Config) Fetch(ctx context.Context, ref Ref) (string, error) {
	kind, hint := "", "give its local path as the model: --model, Options.Model"
	if ref.Dataset {
		kind, hint = "datasets/", "give its local path instead"
	}
	dest := filepath.Join(c.CacheDir, kind+ref.Owner, ref.Repo, filepath.FromSlash(ref.File))
	if st, err := os.Stat(dest); err == nil && st.Mode().IsRegular() {
		return dest, nil
	}
	if err := os.MkdirAll(filepath.Dir(dest), 0o755); err != nil {
		return "", fmt.Errorf("fetch %s: %w", ref.File, err)
	}
	base := c.BaseURL
	if base == "" {
		base = "https://huggingface.co"
	}
	url := fmt.Sprintf("%s/%s%s/%s/resolve/main/%s", strings.TrimSuffix(base, "/"), kind, ref.Owner, ref.Repo, ref.File)
	if err := c.download(ctx, url, dest); err != nil {
		return "", fmt.Errorf("fetch %s: %w\n(to use a file you already have, %s; a partial download resumes next time)", ref, err, hint)
	}
	return dest, nil
}

func (c *Config) client() *http.Client {
	if c.Client != nil {
		return c.Client
	}
	return &http.Client{}
}

func (c *Config) download(ctx context.Context, url, dest string) error {
	tmp := dest + ".part"
	f, err := os.OpenFile(tmp, os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	defer f.Close()
	have, err := f.Seek(0, io.SeekEnd)
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	if c.Token != "" {
		req.Header.Set("Authorization", "Bearer "+c.Token)
	}
	if have > 0 {
		req.Header.Set("Range", fmt.Sprintf("bytes=%d-", have))
	}
	resp, err := c.client().Do(req)
	if err != nil {
		return fmt.Errorf("cannot reach the hub (offline?): %w", err)
	}
	defer resp.Body.Close()
	switch resp.StatusCode {
	case http.StatusOK:
		// No resume: start over.
		if err := f.Truncate(0); err != nil {
			return err
		}
		if _, err := f.Seek(0, io.SeekStart); err != nil {
			return err
		}
		have = 0
	case http.StatusPartialContent:
	case http.StatusRequestedRangeNotSatisfiable:
		// The partial file is already whole (or bigger): verify below.
		resp.Body.Close()
		return c.finish(f, tmp, dest, resp.Header)
	case http.StatusUnauthorized, http.StatusForbidden:
		return fmt.Errorf("the hub refused access (%s): the repository may be gated or private", resp.Status)
	case http.StatusNotFound:
		return fmt.Errorf("no such file on the hub (%s)", resp.Status)
	default:
		return fmt.Errorf("the hub answered %s", resp.Status)
	}
	total := have + resp.ContentLength
	pr := &progress{w: c.Progress, done: have, total: total}
	if _, err := io.Copy(f, io.TeeReader(resp.Body, pr)); err != nil {
		return fmt.Errorf("download interrupted after %d bytes: %w", pr.done, err)
	}
	pr.finish()
	return c.finish(f, tmp, dest, resp.Header)
}

var sha256Hex = regexp.MustCompile(`^[0-9a-f]{64}$`)

// finish checks the file against the hub's sha256 (its X-Linked-Etag for
// LFS files) when it has one, then moves it into place.
func (c *Config) finish(f *os.File, tmp, dest string, h http.Header) error {
	if err := f.Sync(); err != nil {
		return err
	}
	etag := strings.Trim(strings.TrimPrefix(h.Get("X-Linked-Etag"), "W/"), `"`)
	if sha256Hex.MatchString(etag) {
		got, err := fileSHA256(tmp)
		if err != nil {
			return err
		}
		if got != etag {
			os.Remove(tmp)
			return fmt.Errorf("sha256 mismatch: got %s, the hub says %s (the partial file was removed; try again)", got, etag)
		}
	}
	return os.Rename(tmp, dest)
}

func fileSHA256(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// progress prints a line per 5% (or per 100 MB when the size is unknown).
type progress struct {
	w           io.Writer
	done, total int64
	lastStep    int64
	start       time.Time
}

func (p *progress) Write(b []byte) (int, error) {
	if p.start.IsZero() {
		p.start = time.Now()
	}
	p.done += int64(len(b))
	if p.w == nil {
		return len(b), nil
	}
	step := p.done / (100 << 20)
	if p.total > 0 {
		step = p.done * 20 / p.total
	}
	if step != p.lastStep {
		p.lastStep = step
		p.print()
	}
	return len(b), nil
}

func (p *progress) print() {
	mb := float64(p.done) / 1e6
	rate := mb / max(time.Since(p.start).Seconds(), 1e-3)
	if p.total > 0 {
		fmt.Fprintf(p.w, "downloading: %3d%% %8.1f / %.1f MB  %.1f MB/s\n", p.done*100/p.total, mb, float64(p.total)/1e6, rate)
		return
	}
	fmt.Fprintf(p.w, "downloading: %8.1f MB  %.1f MB/s\n", mb, rate)
}

func (p *progress) finish() {
	if p.w != nil && p.done > 0 && (p.total <= 0 || p.lastStep != 20) {
		p.print()
	}
}
