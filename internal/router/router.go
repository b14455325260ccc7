// Package router is the choice of a replica for each request in a
// simulated fleet: round robin, least requests, random, and the llm-d
// endpoint picker's scheduling profile (its queue, KV-cache utilisation
// and prefix-cache scorers, weighted, and its max-score picker). It holds
// what the router itself keeps (the round-robin position, the approximate
// prefix index) and scores what it is shown of the replicas: the metrics
// as of the picker's last refresh and, for the precise prefix scorer, the
// replicas' KV blocks. It has no clock and no goroutines, and must not
// import the engine, the executors, net/http or Prometheus: simulate shows
// it the replicas as their scrapes and KV events would.
package router

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
)

// Policies are the routers Config.Policy names.
const (
	RoundRobin     = "round-robin"
	LeastRequests  = "least-requests"
	Random         = "random"
	EndpointPicker = "endpoint-picker"
)

// The llm-d endpoint picker's scorers, by their plugin type names.
const (
	QueueScorer         = "queue-scorer"
	KVCacheScorer       = "kv-cache-utilization-scorer"
	PrefixScorer        = "prefix-cache-scorer"
	PrecisePrefixScorer = "precise-prefix-cache-scorer"
)

// DefaultScorers is the picker's default scheduling profile (llm-d-router
// v0.10.0, pkg/epp/config/loader/defaults.go, and deploy/helm/glassbox's
// router.weights): queue 2, KV-cache utilisation 2, approximate prefix
// cache 3.
func DefaultScorers() []Scorer {
	return []Scorer{{QueueScorer, 2}, {KVCacheScorer, 2}, {PrefixScorer, 3}}
}

// Scorer is one scorer of the picker's profile and its weight.
type Scorer struct {
	Type   string
	Weight float64
}

// Config chooses the policy.
type Config struct {
	Policy string // one of the policies above; empty is round robin
	// Scorers are the endpoint picker's profile; nil is DefaultScorers.
	Scorers []Scorer
	// PrefixBlockSize and PrefixLRUCapacity tune the approximate prefix
	// scorer's producer (blockSizeTokens, lruCapacityPerServer); zero
	// auto-tunes them from the endpoints' metrics as llm-d does: the
	// engines' block size, at least 64 tokens, and their number of KV
	// blocks.
	PrefixBlockSize   int
	PrefixLRUCapacity int
	// PreciseBlockSize is the precise scorer's block (its
	// tokenProcessorConfig.blockSize); zero is llm-d's default, 16.
	PreciseBlockSize int
	// KV answers the precise prefix scorer: how many leading tokens of a
	// prompt an endpoint's KV cache holds (what the engines' KV events
	// have told the picker's index).
	KV   KVIndex
	Seed uint64
}

// KVIndex is the engines' KV block state as the precise prefix scorer's
// index holds it.
type KVIndex interface {
	// CachedTokens is how many leading tokens of req's prompt endpoint
	// holds for req's model (the base model or a LoRA adapter, whose KV is
	// its own), in whole blocks of its cache.
	CachedTokens(endpoint string, req *Request) int
}

// Request is what the picker reads of a request.
type Request struct {
	Model  string // the model the client named, a LoRA adapter's name for one (the prefix hashes' seed)
	Prompt []int  // token ids, as the picker's token producer gives them
}

// Endpoint is a replica as the picker sees it.
type Endpoint struct {
	ID string // stable for the replica's life (a pod's name)
	// Metrics are as of the picker's last refresh of the endpoint.
	Metrics Metrics
	// InFlight counts the requests this router sent the endpoint that are
	// not answered yet.
	InFlight int
}

// Metrics are the model server's gauges the picker scrapes.
type Metrics struct {
	Waiting   int     // vllm:num_requests_waiting
	Running   int     // vllm:num_requests_running
	KVUsage   float64 // vllm:kv_cache_usage_perc
	BlockSize int     // vllm:cache_config_info's block_size
	NumBlocks int     // and num_gpu_blocks
}

// Router picks an endpoint for each request. It is not safe for
// concurrent use.
type Router struct {
	cfg    Config
	rng    *rand.Rand
	next   int // round robin's position
	prefix *prefixIndex
	order  []int
	scores []float64
}

// New checks cfg and returns its router.
func New(cfg Config) (*Router, error) {
	if cfg.Policy == "" {
		cfg.Policy = RoundRobin
	}
	r := &Router{cfg: cfg, rng: rand.New(rand.NewPCG(cfg.Seed, 0x5eed))}
	switch cfg.Policy {
	case RoundRobin, LeastRequests, Random:
		if cfg.Scorers != nil {
			return nil, fmt.Errorf("router %s: scorers are the %s's", cfg.Policy, EndpointPicker)
		}
		return r, nil
	case EndpointPicker:
	default:
		return nil, fmt.Errorf("router %q: want %s, %s, %s or %s", cfg.Policy, RoundRobin, LeastRequests, Random, EndpointPicker)
	}
	if r.cfg.Scorers == nil {
		r.cfg.Scorers = DefaultScorers()
	}
	if len(r.cfg.Scorers) == 0 {
		return nil, fmt.Errorf("router %s: no scorers", EndpointPicker)
	}
	for _, s := range r.cfg.Scorers {
		switch s.Type {
		case QueueScorer, KVCacheScorer:
		case PrefixScorer:
			r.prefix = newPrefixIndex(cfg.PrefixBlockSize, cfg.PrefixLRUCapacity)
		case PrecisePrefixScorer:
			if cfg.KV == nil {
				return nil, fmt.Errorf("router: the %s needs the engines' KV state", PrecisePrefixScorer)
			}
		default:
			return nil, fmt.Errorf("router: unknown scorer %q (want %s, %s, %s or %s)", s.Type, QueueScorer, KVCacheScorer, PrefixScorer, PrecisePrefixScorer)
		}
		if !(s.Weight >= 0) {
			return nil, fmt.Errorf("router: scorer %s's weight %v must not be negative", s.Type, s.Weight)
		}
	}
	if r.cfg.PreciseBlockSize == 0 {
		r.cfg.PreciseBlockSize = 16
	}
	if r.cfg.PreciseBlockSize < 1 || cfg.PrefixBlockSize < 0 || cfg.PrefixLRUCapacity < 0 {
		return nil, fmt.Errorf("router: prefix block sizes and capacities must be positive")
	}
	return r, nil
}

// Policy names the router's policy.
func (r *Router) Policy() string { return r.cfg.Policy }

// Scorers are the endpoint picker's profile (nil for the other policies).
func (r *Router) Scorers() []Scorer { return r.cfg.Scorers }

// Pick chooses among eps (at least one) for req and returns its index.
func (r *Router) Pick(req *Request, eps []Endpoint) int {
	switch r.cfg.Policy {
	case RoundRobin:
		i := r.next % len(eps)
		r.next = i + 1
		return i
	case Random:
		return r.rng.IntN(len(eps))
	case LeastRequests:
		best, ties := 0, 0
		for i := range eps {
			switch {
			case eps[i].InFlight < eps[best].InFlight:
				best, ties = i, 1
			case eps[i].InFlight == eps[best].InFlight:
				ties++
				if r.rng.IntN(ties) == 0 { // a uniform choice among the ties
					best = i
				}
			}
		}
		return best
	}
	return r.pickScored(req, eps)
}

// Forget drops what the router keeps of an endpoint that left the pool.
func (r *Router) Forget(id string) {
	if r.prefix != nil {
		r.prefix.remove(id)
	}
}

// pickScored is the endpoint picker's scheduling cycle: every scorer
// scores every endpoint in [0, 1], the weighted sum ranks them, and the
// max-score picker takes the best, ties broken at random (it shuffles,
// then sorts stably).
func (r *Router) pickScored(req *Request, eps []Endpoint) int {
	r.scores = slices.Grow(r.scores[:0], len(eps))[:len(eps)]
	clear(r.scores)
	var hashes []uint64
	for _, s := range r.cfg.Scorers {
		switch s.Type {
		case QueueScorer:
			lo, hi := eps[0].Metrics.Waiting, eps[0].Metrics.Waiting
			for _, e := range eps {
				lo, hi = min(lo, e.Metrics.Waiting), max(hi, e.Metrics.Waiting)
			}
			for i, e := range eps {
				v := 1.0 // all alike: neutral
				if hi > lo {
					v = float64(hi-e.Metrics.Waiting) / float64(hi-lo)
				}
				r.scores[i] += s.Weight * v
			}
		case KVCacheScorer:
			for i, e := range eps {
				r.scores[i] += s.Weight * clamp01(1-e.Metrics.KVUsage)
			}
		case PrefixScorer:
			hashes = r.prefix.hashes(req, r.prefix.blockSize(eps))
			r.prefix.score(hashes, eps, s.Weight, r.scores)
		case PrecisePrefixScorer:
			bs := r.cfg.PreciseBlockSize
			total := len(req.Prompt) / bs // the producer keys full blocks only
			if total == 0 {
				continue
			}
			for i, e := range eps {
				matched := r.cfg.KV.CachedTokens(e.ID, req) / bs
				r.scores[i] += s.Weight * clamp01(float64(matched)/float64(total))
			}
		}
	}
	r.order = slices.Grow(r.order[:0], len(eps))[:len(eps)]
	for i := range r.order {
		r.order[i] = i
	}
	r.rng.Shuffle(len(r.order), func(i, j int) { r.order[i], r.order[j] = r.order[j], r.order[i] })
	best := r.order[0]
	for _, i := range r.order[1:] {
		if r.scores[i] > r.scores[best] {
			best = i
		}
	}
	if r.prefix != nil {
		// PreRequest: the chosen endpoint now holds the prompt's blocks.
		r.prefix.add(hashes, eps[best])
	}
	return best
}

func clamp01(v float64) float64 { return min(1, max(0, v)) }

// ParseScorers reads the picker's profile as "queue-scorer=2,
// kv-cache-utilization-scorer=2,prefix-cache-scorer=3" (the scheduling
// profile's pluginRef and weight; a scorer without a weight has llm-d's
// default, 1).
func ParseScorers(s string) ([]Scorer, error) {
	var out []Scorer
	for _, part := range strings.Split(s, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		name, w, hasW := strings.Cut(part, "=")
		sc := Scorer{Type: strings.TrimSpace(name), Weight: 1}
		if hasW {
			v, err := strconv.ParseFloat(strings.TrimSpace(w), 64)
			if err != nil || !(v >= 0) || v > 1e6 {
				return nil, fmt.Errorf("parse scorers %q: the weight must be a non-negative number", part)
			}
			sc.Weight = v
		}
		switch sc.Type {
		case QueueScorer, KVCacheScorer, PrefixScorer, PrecisePrefixScorer:
		default:
			return nil, fmt.Errorf("parse scorers %q: unknown scorer (want %s, %s, %s or %s)", part, QueueScorer, KVCacheScorer, PrefixScorer, PrecisePrefixScorer)
		}
		if slices.ContainsFunc(out, func(o Scorer) bool { return o.Type == sc.Type }) {
			return nil, fmt.Errorf("parse scorers: %s given twice", sc.Type)
		}
		out = append(out, sc)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("parse scorers %q: none given", s)
	}
	return out, nil
}

// FormatScorers writes a profile as ParseScorers reads it.
func FormatScorers(ss []Scorer) string {
	parts := make([]string, len(ss))
	for i, s := range ss {
		parts[i] = s.Type + "=" + strconv.FormatFloat(s.Weight, 'g', -1, 64)
	}
	return strings.Join(parts, ",")
}
