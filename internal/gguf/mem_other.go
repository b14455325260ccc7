//go:build !linux

package gguf

import "os"

// readFile reads path into memory.
func readFile(path string) ([]byte, func() error, error) {
	data, err := os.ReadFile(path)
	return data, func() error { return nil }, err
}
