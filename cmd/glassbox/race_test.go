//go:build race

package main

// raceEnabled: the race detector slows the simulator about 16×, so the
// corpus tests regenerate and replay fewer scenarios under -race (and
// .ci/run runs them all without it).
const raceEnabled = true
