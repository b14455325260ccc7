//go:build race

package kvcache

// growAllocs is what one slices.Grow allocates: under -race the compiler
// makes the appended zeroes a slice of their own, so two.
const growAllocs = 2
