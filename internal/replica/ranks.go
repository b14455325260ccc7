package replica

import (
	"errors"
	"fmt"
	"strconv"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/glassbox-llm/glassbox/internal/engine"
	"github.com/glassbox-llm/glassbox/internal/executor"
	"github.com/glassbox-llm/glassbox/internal/metrics"
	"github.com/glassbox-llm/glassbox/internal/server"
)

// checkDataParallel refuses by name the data parallelism this replica
// cannot run: on an executor that cannot make more copies of its model.
func checkDataParallel(cfg *Config, life executor.Lifecycle) error {
	n := cfg.DataParallelSize
	switch {
	case n < 0:
		return fmt.Errorf("--data-parallel-size %d: want 1 or more", n)
	case n <= 1:
		return nil
	case !isReplicator(life):
		return errors.New("--data-parallel-size: the simulated GPU (no --model) runs data-parallel ranks; this executor serves one copy of its model")
	case cfg.DataParallelRank != 0:
		return fmt.Errorf("data parallelism: a replica of %d ranks cannot be rank %d of another", n, cfg.DataParallelRank)
	}
	return nil
}

// dataParallel builds the ranks after the first (eng): each its own
// executor, engine and vLLM metrics labelled with its engine index on the
// same registry (the API server's families are rank 0's), seen by the
// same observers but the simulated dcgm-exporter's (rank 0's GPUs). It
// returns every rank and what the server submits to.
func dataParallel(cfg *Config, life executor.Lifecycle, eng *engine.Engine, ecfg engine.Config, mcfg metrics.Config, reg prometheus.Registerer) ([]*engine.Engine, server.Engine, error) {
	ranks := []*engine.Engine{eng}
	if cfg.DataParallelSize <= 1 {
		return ranks, eng, nil
	}
	for k := 1; k < cfg.DataParallelSize; k++ {
		clock := cfg.Clock
		exec, err := life.(replicator).Another(clock)
		if err != nil {
			return nil, nil, fmt.Errorf("data-parallel rank %d: %w", k, err)
		}
		rc := ecfg
		rc.Clock = clock
		mc := mcfg
		mc.Engine, mc.NoFrontend = strconv.Itoa(k), true
		var e *engine.Engine
		mc.Stats = func() engine.Stats { return e.Stats() }
		m, err := metrics.New(mc, reg)
		if err != nil {
			return nil, nil, fmt.Errorf("data-parallel rank %d: %w", k, err)
		}
		var obs engine.Observer = m
		if len(cfg.Observers) > 0 {
			obs = append(engine.Observers{m}, cfg.Observers...)
		}
		if e, err = engine.New(rc, exec, obs); err != nil {
			return nil, nil, fmt.Errorf("data-parallel rank %d: %w", k, err)
		}
		ranks = append(ranks, e)
	}
	dp, err := engine.NewDataParallel(ranks)
	if err != nil {
		return nil, nil, err
	}
	return ranks, dp, nil
}

// replicator is an executor that runs more copies of its model, one for
// each data-parallel rank (the simulated GPU).
type replicator interface {
	Another(clock engine.Clock) (engine.Executor, error)
}

func isReplicator(life executor.Lifecycle) bool { _, ok := life.(replicator); return ok }
