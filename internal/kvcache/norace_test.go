//go:build !race

package kvcache

// growAllocs is what one slices.Grow allocates (see race_test.go).
const growAllocs = 1
