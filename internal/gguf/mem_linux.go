//go:build linux

package gguf

import (
	"io"

	"golang.org/x/sys/unix"
)

// readFile reads path into anonymous memory that asks for transparent huge
// pages: decode streams every weight once per token, and 2 MiB pages spare
// the TLB misses and prefetcher stops of 4 KiB ones.
func readFile(path string) ([]byte, func() error, error) {
	f, size, err := openSized(path)
	if err != nil || size == 0 {
		return []byte{}, func() error { return nil }, err
	}
	defer f.Close()
	data, err := unix.Mmap(-1, 0, size, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
	if err != nil {
		return nil, nil, err
	}
	_ = unix.Madvise(data, unix.MADV_HUGEPAGE) // a hint: without it, 4 KiB pages
	if _, err := io.ReadFull(f, data); err != nil {
		unix.Munmap(data)
		return nil, nil, err
	}
	return data, func() error { return unix.Munmap(data) }, nil
}
