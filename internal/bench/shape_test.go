package bench

import (
	"fmt"
	"math"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// TestLoadShapes runs four identical scripted requests under two shapes
// and checks send times, client queue times, duration and the peaks.
func TestLoadShapes(t *testing.T) {
	sc := script{ttft: 300 * ms, gaps: []time.Duration{100 * ms, 100 * ms}, promptTokens: 8}
	lat := sc.ttft + 200*ms
	each := lat + usageDelay // a request holds its slot until [DONE]
	tests := []struct {
		name      string
		cfg       Config
		starts    []time.Duration // send times, sorted
		queues    []time.Duration // client queue times, sorted
		duration  time.Duration
		peakConc  int
		peakChunk float64
	}{
		{"synchronous", Config{MaxConcurrency: 1},
			[]time.Duration{0, each, 2 * each, 3 * each}, []time.Duration{0, each, 2 * each, 3 * each}, 4 * each, 1,
			// chunks at 300,400,500 | 805,905,1005 | 1310,1410,1510 | 1815,1915,2015 ms
			6},
		{"constant 10 req/s", Config{RequestRate: 10, Burstiness: math.Inf(1)},
			[]time.Duration{100 * ms, 200 * ms, 300 * ms, 400 * ms}, []time.Duration{0, 0, 0, 0}, 400*ms + each, 4,
			12}, // 400..900 ms, all in the first second
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			scripts := map[string]script{}
			for i := range 4 {
				scripts[fmt.Sprintf("same %d", i)] = sc
			}
			tt.cfg.PercentileMetrics = []string{"ttft", "client_queue_time"}
			res := runFake(t, scripts, tt.cfg)
			p := res.Passes[0]
			var starts, queues []time.Duration
			for _, o := range p.Outputs {
				starts, queues = append(starts, o.Start.Sub(p.Start)), append(queues, o.QueueTime)
			}
			slices.Sort(starts)
			slices.Sort(queues)
			if diff := cmp.Diff(tt.starts, starts); diff != "" {
				t.Errorf("send times (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.queues, queues); diff != "" {
				t.Errorf("client queue times (-want +got):\n%s", diff)
			}
			m := p.Metrics
			if m.Duration != tt.duration || m.MaxConcurrentRequests != tt.peakConc || m.MaxOutputTokensPerS != tt.peakChunk {
				t.Errorf("duration %v, peak concurrency %d, peak tok/s %v; want %v, %d, %v",
					m.Duration, m.MaxConcurrentRequests, m.MaxOutputTokensPerS, tt.duration, tt.peakConc, tt.peakChunk)
			}
		})
	}
}

func TestKneeIsTheHighestRateMeetingSLOs(t *testing.T) {
	pt := func(rate float64, meets bool) SweepPoint { return SweepPoint{Rate: rate, MeetsSLOs: meets} }
	for _, tt := range []struct {
		points []SweepPoint
		want   int
	}{
		{[]SweepPoint{pt(5, true), pt(50, false), pt(20, true), pt(35, false)}, 2},
		{[]SweepPoint{pt(5, false), pt(50, false)}, -1},
		{[]SweepPoint{pt(5, true), pt(50, true), pt(20, true)}, 1},
	} {
		s := &Sweep{Points: tt.points}
		if s.findKnee(); s.Knee != tt.want {
			t.Errorf("knee of %v = %d, want %d", tt.points, s.Knee, tt.want)
		}
	}
}
