//go:build unix

package gguf

import (
	"os"
	"syscall"
)

// mapFile maps path read-only: weights are paged in on use, never copied.
func mapFile(path string) ([]byte, func() error, error) {
	f, size, err := openSized(path)
	if err != nil || size == 0 {
		return []byte{}, func() error { return nil }, err
	}
	defer f.Close()
	data, err := syscall.Mmap(int(f.Fd()), 0, size, syscall.PROT_READ, syscall.MAP_SHARED)
	if err != nil {
		return nil, nil, err
	}
	return data, func() error { return syscall.Munmap(data) }, nil
}

// openSized opens path and returns its size, which must fit in an int;
// an empty file is returned closed (nothing to map or read).
func openSized(path string) (*os.File, int, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, 0, err
	}
	st, err := f.Stat()
	if err == nil && int64(int(st.Size())) != st.Size() {
		err = syscall.EFBIG
	}
	if err != nil || st.Size() == 0 {
		f.Close()
		return nil, 0, err
	}
	return f, int(st.Size()), nil
}
