package main

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/glassbox-llm/glassbox/internal/plan"
	"github.com/glassbox-llm/glassbox/internal/router"
	"github.com/glassbox-llm/glassbox/internal/simulate"
)

// parsePrices reads "h100=2.5/h,h200=3.6".
func parsePrices(s string) (map[string]float64, error) {
	out := map[string]float64{}
	for _, part := range strings.Split(s, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		name, v, ok := strings.Cut(part, "=")
		v = strings.TrimSuffix(v, "/h")
		p, err := strconv.ParseFloat(v, 64)
		if !ok || err != nil || !(p > 0) || math.IsInf(p, 0) {
			return nil, fmt.Errorf("--price %q: want HARDWARE=DOLLARS/h, e.g. h100=2.5/h", part)
		}
		out[strings.ToLower(name)] = p
	}
	return out, nil
}

// countList reads "1,2,4"; empty gives def.
func countList(s string, def int) ([]int, error) {
	if strings.TrimSpace(s) == "" {
		return []int{def}, nil
	}
	var out []int
	for _, f := range strings.Split(s, ",") {
		n, err := parseCount(f, 0)
		if err != nil || n < 1 {
			return nil, errors.New("want positive counts separated by commas, e.g. 64,128,256")
		}
		out = append(out, n)
	}
	return out, nil
}

// planFleet reads --replicas and --router into the search.
func planFleet(cfg *plan.Config, ff *fleetFlags, replicas, routers string, seed int64) error {
	switch strings.TrimSpace(replicas) {
	case "":
	case "auto":
		cfg.FitReplicas = true
		if cfg.TargetRate <= 0 {
			return errors.New("--replicas auto: give the --target-rate to fit the fleet to")
		}
	default:
		var err error
		if cfg.Fleets, err = countList(replicas, 1); err != nil {
			return fmt.Errorf("--replicas: %w", err)
		}
	}
	ff.anyPicker = strings.Contains(routers, router.EndpointPicker)
	for _, name := range strings.Split(routers, ",") {
		if name = strings.TrimSpace(name); name == "" {
			continue
		}
		rc, err := ff.routerConfig(name, seed)
		if err != nil {
			return err
		}
		cfg.Routers = append(cfg.Routers, rc)
	}
	if len(cfg.Routers) > 0 && len(cfg.Fleets) == 0 && !cfg.FitReplicas {
		return errors.New("--router: give the fleets it routes for with --replicas")
	}
	if name := ff.unread(append([]string{"autoscaler"}, autoscalerFlags...)); name != "" {
		return fmt.Errorf("%s: plan searches fixed fleets; simulate autoscales one", name)
	}
	if name := ff.unread(pickerFlags); name != "" && !ff.anyPicker {
		return fmt.Errorf("%s: only --router endpoint-picker reads it", name)
	}
	ff.replicas = 1
	var sc simulate.Config
	if err := ff.apply(&sc, seed); err != nil {
		return err
	}
	cfg.Fleet = func(c *simulate.Config) { c.RouterRefresh = sc.RouterRefresh }
	return nil
}
