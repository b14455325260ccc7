package metrics

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"google.golang.org/protobuf/testing/protocmp"

	"github.com/glassbox-llm/glassbox/internal/metricspec"
)

// TestBatchHistogramExposesWhatClientGolangDoes: the same values, observed
// a step at a time by a batchHistogram and one by one by client_golang's
// histogram of the same options, expose the same counts, buckets, labels
// and sum to the last bit, scraped between steps as a run is, for the
// inter-token latency's buckets, the default ones and more than 35 (where
// client_golang searches its buckets instead of scanning them), with
// values on the bounds and past the last.
func TestBatchHistogramExposesWhatClientGolangDoes(t *testing.T) {
	many := make([]float64, 50)
	for i := range many {
		many[i] = float64(i) / 10
	}
	for name, buckets := range map[string][]float64{
		"itl":     metricspec.Must(metricspec.InterTokenLatency).Buckets(0),
		"default": nil,
		"50":      append(many, math.Inf(1)),
	} {
		t.Run(name, func(t *testing.T) {
			opts := prometheus.HistogramOpts{Name: "x", Help: "h", Buckets: buckets, ConstLabels: prometheus.Labels{"engine": "0", "model_name": "m"}}
			want, got := prometheus.NewHistogram(opts), newBatchHistogram(opts)
			bounds := got.upper
			rng := rand.New(rand.NewPCG(3, 4))
			for step := range 300 {
				vs := make([]float64, rng.IntN(40))
				for i := range vs {
					switch rng.IntN(4) {
					case 0:
						vs[i] = bounds[rng.IntN(len(bounds))] // on a bound
					case 1:
						vs[i] = bounds[len(bounds)-1] * (1 + rng.Float64()) // past the last
					default:
						vs[i] = rng.Float64() * bounds[len(bounds)-1]
					}
				}
				for _, v := range vs {
					want.Observe(v)
				}
				if step%7 == 0 && len(vs) > 0 {
					got.Observe(vs[0]) // one at a time too
					got.observe(vs[1:])
				} else {
					got.observe(vs)
				}
				if step%10 == 0 || step == 299 {
					var w, g dto.Metric
					if err := want.Write(&w); err != nil {
						t.Fatal(err)
					}
					if err := got.Write(&g); err != nil {
						t.Fatal(err)
					}
					if d := cmp.Diff(&w, &g, protocmp.Transform(), protocmp.IgnoreFields(&dto.Histogram{}, "created_timestamp")); d != "" {
						t.Fatalf("step %d: the batch histogram exposes otherwise (-client_golang +batch):\n%s", step, d)
					}
				}
			}
		})
	}
}
