package simulate

import (
	"errors"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/glassbox-llm/glassbox/internal/engine"
)

// dataParallel sets the server up for --data-parallel-size: each rank is
// a node of its own (an engine on its own clock, as its GPUs run apart)
// built as rank k of the one server, their metrics on one registry with
// their engine labels, and the driver's route balances requests over them
// as vLLM's API server does. Data parallelism inside the replicas of a
// fleet is refused by name.
func (d *driver) dataParallel() error {
	n := d.rc.DataParallelSize
	d.ranks = max(n, 1)
	if n <= 1 {
		return nil
	}
	if d.fleetMode {
		return errors.New("simulate: --data-parallel-size runs ranks inside one server; with --replicas or an autoscaler, run one server or give each replica one rank")
	}
	d.rc.DataParallelSize = 0 // the driver builds the ranks
	d.rc.Sim.DataParallel = n // each rank's experts are 1/n of EP's
	if d.rc.Registerer == nil && d.rc.Gatherer == nil {
		reg := prometheus.NewRegistry()
		d.rc.Registerer, d.rc.Gatherer = reg, reg
	}
	d.lb = engine.NewBalancer(n)
	return nil
}
