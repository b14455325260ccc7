package simulate

import (
	"container/heap"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/glassbox-llm/glassbox/internal/autoscaler"
	"github.com/glassbox-llm/glassbox/internal/engine"
	"github.com/glassbox-llm/glassbox/internal/kvcache"
	"github.com/glassbox-llm/glassbox/internal/profiles"
	"github.com/glassbox-llm/glassbox/internal/replica"
	"github.com/glassbox-llm/glassbox/internal/router"
)

// Defaults of the fleet's timings: the endpoint picker's
// --refresh-metrics-interval, the chart's monitoring.interval (the
// Prometheus scrape the autoscaler reads through) and its
// shutdownTimeoutSeconds.
const (
	DefaultRouterRefresh   = 50 * time.Millisecond
	DefaultScrapeInterval  = 5 * time.Second
	DefaultShutdownTimeout = 30 * time.Second
)

// node is one replica of the fleet: its engine on its own clock, and what
// the router and Prometheus last read of it.
type node struct {
	index    int
	rank     int    // its data-parallel rank: nodes of ranks after the first share the first's registry and readings
	name     string // instance label and router endpoint id
	rep      *replica.Replica
	registry prometheus.Gatherer // the raw registry
	gather   prometheus.Gatherer // what /metrics serves
	dcgm     http.Handler
	eng      *engine.Engine
	clk      *Clock
	steps    *stepSeqs

	live     map[string]*flight // submitted to the engine and not finished
	gone     []*flight          // given up, aborted, and not yet finished in the engine
	stalled  bool               // only aborted requests left and the engine idle
	arrivals []time.Time        // of the requests routed to it and not yet through the frontend, in order
	api      time.Time          // when its API server (rank 0's: one for every rank) is done with the tokens it was handed
	apiRun   int                // the tokens it handled back to back up to then

	nextObs, nextSer time.Time

	state                     nodeState
	started, readyAt, stopped time.Time
	drainBy                   time.Time

	inFlight int // routed and not answered (least-requests)
	routed   int
	metrics  router.Metrics // as the picker last read them
	scraped  float64        // requests waiting as Prometheus last scraped
}

type nodeState int

const (
	starting nodeState = iota
	ready
	draining
	stopped
)

// busy says the replica has work its engine must step.
func (n *node) busy() bool { return len(n.live) > 0 && !n.stalled }

func (n *node) instance() Instance {
	return Instance{Index: n.index, Name: n.name, Gatherer: n.gather, DCGM: n.dcgm}
}

// fleet is the replicas, the router and the autoscaler.
type fleet struct {
	all      []*node // every replica that ran, in start order
	running  []*node // not stopped
	lastStep time.Time
	vocab    interface{ Encode(string) []int }

	router  *router.Router
	eps     []router.Endpoint
	epNodes []*node
	kv      *kvIndex

	scaler    *autoscaler.Autoscaler
	scaling   []ScaleEvent
	lastHPA   time.Time
	unrouted  int
	rc        replica.Config
	instances func(i int) string
	fleetMode bool // more than one replica, or an autoscaler: instance labels of their own

	// ranks are the data-parallel ranks of the one server (1 without),
	// each a node; lb balances requests over them as vLLM's API server.
	ranks int
	lb    *engine.Balancer

	draining int   // replicas draining, whose deadlines are timers
	err      error // a replica the autoscaler could not build

	refresh, scrape, scale             time.Duration // 0: that timer is off
	nextRefresh, nextScrape, nextScale time.Time
}

// newDriver builds the fleet's first replicas, ready at the start.
func newDriver(cfg *Config, start time.Time, fe profiles.Frontend) (*driver, error) {
	d := &driver{cfg: cfg, start: start, fe: fe, sch: cfg.Plan.Start(), flights: make(map[int]*flight)}
	n := max(cfg.Replicas, 1)
	if a := cfg.Autoscaler; a != nil {
		s, err := autoscaler.New(*a)
		if err != nil {
			return nil, fmt.Errorf("simulate: %w", err)
		}
		d.scaler = s
		n = min(max(cfg.Replicas, a.MinReplicas), a.MaxReplicas)
		if cfg.Replicas == 0 {
			n = a.MinReplicas
		}
		d.scrape = cmpOr(cfg.ScrapeInterval, DefaultScrapeInterval)
		d.scale = s.Interval()
		d.nextScrape, d.nextScale = start, start.Add(d.scale)
	}
	d.fleetMode = n > 1 || d.scaler != nil
	if d.fleetMode && (cfg.Replica.Registerer != nil || cfg.Replica.Gatherer != nil) {
		return nil, errors.New("simulate: a registry of the caller's serves one replica; a fleet's replicas have their own")
	}
	d.instances = func(i int) string { return fmt.Sprintf("simulated-%d:8000", i) }
	if !d.fleetMode {
		d.instances = func(int) string {
			if s := cfg.Series; s != nil && s.Instance != "" {
				return s.Instance
			}
			return DefaultInstance
		}
	}
	d.rc = cfg.Replica
	d.rc.Sim.TimeScale = 1
	d.rc.Sim.PlainTokens = true
	if err := d.dataParallel(); err != nil {
		return nil, err
	}
	n *= d.ranks
	if cfg.Series != nil {
		d.rc.DCGM = true // --metrics-out carries the GPU's series, as a fleet's Prometheus does
	}
	rcfg := cfg.Router
	if rcfg.Policy == router.EndpointPicker {
		for _, s := range rcfg.Scorers {
			if s.Type == router.PrecisePrefixScorer {
				d.kv = &kvIndex{d: d}
				rcfg.KV = d.kv
			}
		}
		if d.fleetMode {
			d.refresh = cmpOr(cfg.RouterRefresh, DefaultRouterRefresh)
			d.nextRefresh = start
		}
	}
	r, err := router.New(rcfg)
	if err != nil {
		return nil, fmt.Errorf("simulate: %w", err)
	}
	d.router = r
	for range n {
		nd, err := d.newNode(start)
		if err != nil {
			d.close()
			return nil, err
		}
		d.ready(nd, start)
	}
	return d, nil
}

func cmpOr(d, def time.Duration) time.Duration {
	if d > 0 {
		return d
	}
	return def
}

// newNode builds a replica starting at t.
func (d *driver) newNode(t time.Time) (*node, error) {
	i := len(d.all)
	rc := d.rc
	rc.DataParallelRank = i % d.ranks
	if rc.DataParallelRank > 0 {
		rc.DCGM = false // the simulated dcgm-exporter shows rank 0's GPUs
	}
	clk := &Clock{now: t}
	rc.Clock = clk
	if d.fleetMode && rc.Hostname == "" {
		rc.Hostname = fmt.Sprintf("simulated-%d", i) // dcgm-exporter's Hostname, a node per replica
	}
	if rc.Registerer == nil && rc.Gatherer == nil {
		reg := prometheus.NewRegistry() // no Go or process collectors: they would read this machine, not the simulated one
		rc.Registerer, rc.Gatherer = reg, reg
	}
	steps := &stepSeqs{}
	rc.Observers = append(append([]engine.Observer(nil), rc.Observers...), steps)
	rep, err := replica.New(rc)
	if err != nil {
		if i > 0 {
			err = fmt.Errorf("replica %d: %w", i, err)
		}
		return nil, err
	}
	nd := &node{index: i, rank: rc.DataParallelRank, name: d.instances(i), rep: rep, registry: rc.Gatherer, gather: rep.Gatherer(), dcgm: rep.DCGMHandler(),
		eng: rep.Engine, clk: clk, steps: steps, live: map[string]*flight{}, started: t, nextObs: t, nextSer: t}
	if d.vocab == nil {
		d.vocab = rep.Tokenizer
	}
	nd.eng.Drive() // stepped by Advance on this goroutine, its streams read here
	d.all = append(d.all, nd)
	d.running = append(d.running, nd)
	return nd, nil
}

// ready makes a replica routable: its model is loaded.
func (d *driver) ready(nd *node, t time.Time) {
	if nd.state != starting {
		return // removed while it started
	}
	nd.state, nd.readyAt = ready, t
	if t.After(nd.clk.now) {
		nd.clk.now = t
	}
	// Its /metrics exists from now: the first readings are at t.
	nd.nextObs, nd.nextSer = t, t
	nd.metrics = d.read(nd)
	d.eps = append(d.eps, router.Endpoint{ID: nd.name, Metrics: nd.metrics})
	d.epNodes = append(d.epNodes, nd)
}

// read is the replica's gauges as the picker's scrape reads them.
func (d *driver) read(nd *node) router.Metrics {
	st := nd.eng.Stats()
	c := nd.eng.Config()
	return router.Metrics{Waiting: st.Waiting, Running: st.Running, KVUsage: st.KVUsage, BlockSize: c.BlockSize, NumBlocks: c.NumBlocks}
}

// route picks the replica for a request, or nil when none is ready.
func (d *driver) route(f *flight) *node {
	if len(d.eps) == 0 {
		return nil
	}
	i := 0
	if d.lb != nil {
		i = d.lb.Pick(f.sent, func(r int) (int, int) {
			st := d.epNodes[r].eng.Stats()
			return st.Waiting, st.Running
		})
	}
	if d.fleetMode {
		for k, nd := range d.epNodes {
			d.eps[k].InFlight, d.eps[k].Metrics = nd.inFlight, nd.metrics
		}
		model := d.rc.Sim.Model
		if f.req.Model != "" {
			model = f.req.Model // a LoRA adapter
		}
		i = d.router.Pick(&router.Request{Model: model, Prompt: f.prompt}, d.eps)
	}
	nd := d.epNodes[i]
	nd.inFlight++
	nd.routed++
	return nd
}

// earliestBusy is the busy replica whose next step starts first.
func (d *driver) earliestBusy() *node {
	var best *node
	for _, nd := range d.running {
		if len(nd.live) > 0 && !nd.stalled && (best == nil || nd.clk.now.Before(best.clk.now)) {
			best = nd
		}
	}
	return best
}

// nextTimer is the next of the router's refresh, Prometheus' scrape, the
// autoscaler's evaluation and the draining replicas' deadlines.
func (d *driver) nextTimer() (time.Time, bool) {
	t, ok := time.Time{}, false
	take := func(at time.Time) {
		if !ok || at.Before(t) {
			t, ok = at, true
		}
	}
	if d.refresh > 0 {
		take(d.nextRefresh)
	}
	if d.scrape > 0 {
		take(d.nextScrape)
	}
	if d.scale > 0 {
		take(d.nextScale)
	}
	if d.draining > 0 {
		for _, nd := range d.running {
			if nd.state == draining {
				take(nd.drainBy)
			}
		}
	}
	return t, ok
}

// tick handles the timers due at t.
func (d *driver) tick(t time.Time) {
	if d.refresh > 0 && !d.nextRefresh.After(t) {
		for _, nd := range d.epNodes {
			nd.metrics = d.read(nd)
		}
		d.nextRefresh = d.nextRefresh.Add(d.refresh)
	}
	if d.scrape > 0 && !d.nextScrape.After(t) {
		for _, nd := range d.running {
			if nd.state != starting {
				nd.scraped = float64(nd.eng.Stats().Waiting)
			}
		}
		d.nextScrape = d.nextScrape.Add(d.scrape)
	}
	if d.scale > 0 && !d.nextScale.After(t) {
		d.autoscale(t)
		d.nextScale = d.nextScale.Add(d.scale)
	}
	for _, nd := range append([]*node(nil), d.running...) {
		if nd.state == draining && (!nd.drainBy.After(t) || len(nd.live) == 0 && len(nd.arrivals) == 0) {
			d.stop(nd, t)
		}
	}
}

// autoscale asks the autoscaler and applies its answer.
func (d *driver) autoscale(t time.Time) {
	current, sum, seen := 0, 0.0, false
	for _, nd := range d.running {
		if nd.state == starting || nd.state == ready {
			current++
		}
		if nd.state == ready || nd.state == draining {
			sum += nd.scraped
			seen = true
		}
	}
	hpaDue := d.lastHPA.IsZero() || t.Sub(d.lastHPA) >= d.scaler.Config().SyncPeriod
	if hpaDue {
		d.lastHPA = t
	}
	want := d.scaler.Desired(t, current, sum, seen, hpaDue)
	if want == current {
		return
	}
	d.scaling = append(d.scaling, ScaleEvent{At: t, From: current, To: want, Waiting: sum})
	for ; current < want; current++ {
		nd, err := d.newNode(t)
		if err != nil {
			d.err = err
			return
		}
		heap.Push(&d.pending, event{at: t.Add(d.cfg.StartupDelay), n: nd, kind: replicaReady})
	}
	for ; current > want; current-- {
		d.remove(t)
	}
}

// remove takes the newest replica out of the router (a pod deleted on
// scale-down: the ReplicaSet deletes the youngest first, a starting one
// before a ready one); it finishes what it holds.
func (d *driver) remove(t time.Time) {
	var victim *node
	for i := len(d.running) - 1; i >= 0; i-- {
		nd := d.running[i]
		if nd.state == starting {
			victim = nd
			break
		}
		if nd.state == ready && victim == nil {
			victim = nd
		}
	}
	if victim == nil {
		return
	}
	if victim.state == starting {
		d.stop(victim, t)
		return
	}
	for k, nd := range d.epNodes {
		if nd == victim {
			d.eps = append(d.eps[:k], d.eps[k+1:]...)
			d.epNodes = append(d.epNodes[:k], d.epNodes[k+1:]...)
			break
		}
	}
	d.router.Forget(victim.name)
	victim.state = draining
	d.draining++
	victim.drainBy = t.Add(cmpOr(d.cfg.ShutdownTimeout, DefaultShutdownTimeout))
}

// stop ends a replica: what it still holds is aborted, as glassbox serve
// does past its --shutdown-timeout.
func (d *driver) stop(nd *node, t time.Time) {
	for _, f := range nd.live {
		d.giveUp(f, t, "replica shut down", "HTTP Error 503")
	}
	for k, x := range d.epNodes {
		if x == nd {
			d.eps = append(d.eps[:k], d.eps[k+1:]...)
			d.epNodes = append(d.epNodes[:k], d.epNodes[k+1:]...)
			break
		}
	}
	if nd.state != starting {
		end := t
		if nd.clk.now.After(end) {
			end = nd.clk.now
		}
		d.finishReadings(nd, end)
	}
	if nd.state == draining {
		d.draining--
	}
	nd.state, nd.stopped = stopped, t
	nd.eng.Stop()
	for k, x := range d.running {
		if x == nd {
			d.running = append(d.running[:k], d.running[k+1:]...)
			break
		}
	}
}

// close releases every replica.
func (d *driver) close() {
	for _, nd := range d.all {
		nd.rep.Close()
	}
}

// kvIndex is the precise prefix scorer's view of the engines' KV blocks:
// what their KV events would have told it, read from the engines
// themselves. A request's block hashes are computed once for all replicas
// (which serve the same adapters, so the same namespaces).
type kvIndex struct {
	d      *driver
	req    *router.Request
	hashes []kvcache.Hash
}

func (k *kvIndex) CachedTokens(endpoint string, req *router.Request) int {
	for _, nd := range k.d.epNodes {
		if nd.name != endpoint {
			continue
		}
		bs := nd.eng.Config().BlockSize
		if len(req.Prompt) == 0 {
			return 0
		}
		if k.req != req {
			k.req, k.hashes = req, kvcache.ChainHashes(bs, nd.eng.Namespace(req.Model), req.Prompt)
		}
		return nd.eng.CachedBlocks(k.hashes) * bs
	}
	return 0
}
