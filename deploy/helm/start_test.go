package helm

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net"
	"net/http"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"helm.sh/helm/v3/pkg/chartutil"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"
)

// TestChartPodRunsGlassbox runs what the pods would: every value set's
// arguments must be flags 'glassbox serve' has, and the simulator's sets
// start the real binary with the rendered arguments and environment: /health
// answers on the probes' port, the metrics port serves the vLLM gauges
// without credentials while the API wants the key, the DCGM port serves
// dcgm-exporter's series, and SIGTERM drains and exits 0 within the pod's
// grace period.
func TestChartPodRunsGlassbox(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs glassbox; skipped with -short")
	}
	bin := filepath.Join(t.TempDir(), "glassbox")
	build := exec.Command("go", "build", "-o", bin, "./cmd/glassbox")
	build.Dir = filepath.Join("..", "..")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build glassbox: %v\n%s", err, out)
	}
	flags := serveFlags(t, bin)
	for _, name := range sortedKeys(valueSets) {
		m := mustRender(t, valueSets[name])
		c := container(t, named[appsv1.Deployment](t, m, "Deployment", "demo-glassbox").Spec.Template.Spec.Containers, "glassbox")
		for f := range argFlags(c.Args[1:]) {
			if !flags[f] {
				t.Errorf("%s: --%s is not a flag of glassbox serve", name, f)
			}
		}
	}
	for _, name := range []string{"default", "service-monitor, key, KEDA, router, Thanos sidecar"} {
		t.Run(name, func(t *testing.T) {
			api, metrics, dcgm := freePort(t), freePort(t), freePort(t)
			m := mustRender(t, overlay(t, valueSets[name], fmt.Sprintf("{ports: {api: %d, metrics: %d, dcgm: %d}, sim: {timeScale: 0}}", api, metrics, dcgm)))
			pod := named[appsv1.Deployment](t, m, "Deployment", "demo-glassbox").Spec.Template.Spec
			runPod(t, m, bin, &pod, api, metrics, dcgm)
		})
	}
}

// runPod starts the container's command as the kubelet would and checks
// what the probes, Prometheus and the endpoint picker see.
func runPod(t *testing.T, m *manifests, bin string, pod *corev1.PodSpec, api, metrics, dcgm int) {
	t.Helper()
	c := container(t, pod.Containers, "glassbox")
	env := []string{"HOME=" + t.TempDir()}
	key := ""
	for _, e := range c.Env {
		switch {
		case e.ValueFrom == nil:
			env = append(env, e.Name+"="+e.Value)
		case e.ValueFrom.FieldRef != nil:
			env = append(env, e.Name+"=node-a")
		case e.ValueFrom.SecretKeyRef != nil:
			ref := e.ValueFrom.SecretKeyRef
			key = named[corev1.Secret](t, m, "Secret", ref.Name).StringData[ref.Key]
			env = append(env, e.Name+"="+key)
		}
	}
	// The pod listens on all interfaces; on this shared machine, loopback.
	cmd := exec.Command(bin, append(c.Args, "--host=127.0.0.1")...)
	cmd.Env = env
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	defer func() {
		if cmd.ProcessState == nil {
			_ = cmd.Process.Kill()
			<-exited
		}
		if t.Failed() {
			t.Logf("glassbox output:\n%s", out.String())
		}
	}()

	base := func(port int) string { return fmt.Sprintf("http://127.0.0.1:%d", port) }
	deadline := time.Now().Add(30 * time.Second)
	for status(t, base(api)+pod.Containers[0].ReadinessProbe.HTTPGet.Path, "") != http.StatusOK {
		if time.Now().After(deadline) {
			t.Fatalf("/health never answered on port %d", api)
		}
		time.Sleep(100 * time.Millisecond)
	}
	body := get(t, base(metrics)+"/metrics")
	for _, name := range []string{"vllm:num_requests_waiting", "vllm:num_requests_running", "vllm:kv_cache_usage_perc", "vllm:cache_config_info"} {
		if !strings.Contains(body, "\n"+name) {
			t.Errorf("the metrics port does not serve %s", name)
		}
	}
	if dcgmBody := get(t, base(dcgm)+"/metrics"); !strings.Contains(dcgmBody, `DCGM_FI_DEV_GPU_UTIL{`) || !strings.Contains(dcgmBody, `Hostname="node-a"`) {
		t.Errorf("the DCGM port does not serve dcgm-exporter's series with the node's name")
	}
	if key != "" {
		if s := status(t, base(api)+"/v1/models", ""); s != http.StatusUnauthorized {
			t.Errorf("API without the key: %d, want 401", s)
		}
		if s := status(t, base(api)+"/v1/models", key); s != http.StatusOK {
			t.Errorf("API with the key: %d, want 200", s)
		}
	}

	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	grace := time.Duration(*pod.TerminationGracePeriodSeconds) * time.Second
	select {
	case err := <-exited:
		if err != nil {
			t.Errorf("glassbox exited with %v after SIGTERM, want 0", err)
		}
	case <-time.After(grace):
		t.Errorf("glassbox still running %v after SIGTERM: the kubelet would kill it", grace)
	}
}

// serveFlags lists the flags 'glassbox serve -h' prints.
func serveFlags(t *testing.T, bin string) map[string]bool {
	t.Helper()
	out, _ := exec.Command(bin, "serve", "-h").CombinedOutput() // -h exits 0 or 2 depending on the flag package
	flags := map[string]bool{}
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "  -") {
			name, _, _ := strings.Cut(strings.TrimPrefix(line, "  -"), " ")
			flags[name] = true
		}
	}
	if !flags["port"] || !flags["metrics-port"] {
		t.Fatalf("could not read serve's flags from:\n%s", out)
	}
	return flags
}

func freePort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

func status(t *testing.T, url, key string) int {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, url, nil)
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode
}

func get(t *testing.T, url string) string {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Errorf("GET %s: %s", url, resp.Status)
	}
	return string(b)
}

// overlay returns the values YAML base with override's keys on top.
func overlay(t *testing.T, base, override string) string {
	t.Helper()
	b, err := chartutil.ReadValues([]byte(base))
	if err != nil {
		t.Fatal(err)
	}
	o, err := chartutil.ReadValues([]byte(override))
	if err != nil {
		t.Fatal(err)
	}
	out, err := yaml.Marshal(chartutil.MergeTables(o, b))
	if err != nil {
		t.Fatal(err)
	}
	return string(out)
}
