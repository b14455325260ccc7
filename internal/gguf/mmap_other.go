//go:build !unix

package gguf

import "os"

// mapFile reads the whole file where memory mapping is not available.
func mapFile(path string) ([]byte, func() error, error) {
	data, err := os.ReadFile(path)
	return data, func() error { return nil }, err
}
