package metrics

import (
	"math"
	"sort"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"google.golang.org/protobuf/types/known/timestamppb"
)

// batchHistogram is a classic histogram that the engine goroutine observes
// a step's values at a time, under one lock, where client_golang's
// Observe takes four atomic operations a value, and every token a fleet
// generates is an inter-token latency. It exposes what a prometheus.Histogram
// of the same options does: the same buckets and count, and the sum added
// value by value in the order observed, as that one adds them between
// scrapes, so its float rounds alike.
type batchHistogram struct {
	desc    *prometheus.Desc
	labels  []*dto.LabelPair
	upper   []float64 // the buckets' upper bounds, +Inf left implicit
	created *timestamppb.Timestamp

	mu     sync.Mutex
	counts []uint64 // by bucket, not cumulative; the last is +Inf's
	count  uint64
	sum    float64
}

func newBatchHistogram(opts prometheus.HistogramOpts) *batchHistogram {
	desc := prometheus.NewDesc(opts.Name, opts.Help, nil, opts.ConstLabels)
	upper := opts.Buckets
	if len(upper) == 0 {
		upper = prometheus.DefBuckets
	}
	if math.IsInf(upper[len(upper)-1], 1) {
		upper = upper[:len(upper)-1] // implicit, as client_golang has it
	}
	return &batchHistogram{
		desc: desc, labels: prometheus.MakeLabelPairs(desc, nil), upper: upper,
		created: timestamppb.New(time.Now()), // as client_golang stamps a new histogram
		counts:  make([]uint64, len(upper)+1),
	}
}

// observe adds vs, in order.
func (h *batchHistogram) observe(vs []float64) {
	if len(vs) == 0 {
		return
	}
	h.mu.Lock()
	for _, v := range vs {
		h.counts[h.bucket(v)]++
		h.sum += v
	}
	h.count += uint64(len(vs))
	h.mu.Unlock()
}

// Observe adds one value (prometheus.Observer).
func (h *batchHistogram) Observe(v float64) {
	h.mu.Lock()
	h.counts[h.bucket(v)]++
	h.sum += v
	h.count++
	h.mu.Unlock()
}

// observeAll observes vs in order, a batchHistogram under one lock.
func observeAll(o prometheus.Observer, vs []float64) {
	if h, ok := o.(*batchHistogram); ok {
		h.observe(vs)
		return
	}
	for _, v := range vs {
		o.Observe(v)
	}
}

// bucket is the first bucket whose upper bound holds v, as client_golang's
// findBucket picks it.
func (h *batchHistogram) bucket(v float64) int {
	if len(h.upper) < 35 {
		for i, u := range h.upper {
			if v <= u {
				return i
			}
		}
		return len(h.upper)
	}
	return sort.SearchFloat64s(h.upper, v)
}

func (h *batchHistogram) Describe(ch chan<- *prometheus.Desc) { ch <- h.desc }
func (h *batchHistogram) Collect(ch chan<- prometheus.Metric) { ch <- h }
func (h *batchHistogram) Desc() *prometheus.Desc              { return h.desc }

// Write exposes the histogram as client_golang's Write does a classic one.
func (h *batchHistogram) Write(out *dto.Metric) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	his := &dto.Histogram{
		Bucket:           make([]*dto.Bucket, len(h.upper)),
		SampleCount:      new(h.count),
		SampleSum:        new(h.sum),
		CreatedTimestamp: h.created,
	}
	var cum uint64
	for i, u := range h.upper {
		cum += h.counts[i]
		his.Bucket[i] = &dto.Bucket{CumulativeCount: new(cum), UpperBound: new(u)}
	}
	out.Histogram = his
	out.Label = h.labels
	return nil
}
