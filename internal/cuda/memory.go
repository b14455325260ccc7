package cuda

import (
	"fmt"
	"unsafe"
)

// Ptr is a device address (CUdeviceptr).
type Ptr uint64

// Add is p advanced by n bytes.
func (p Ptr) Add(n int64) Ptr { return p + Ptr(n) }

// Alloc reserves n bytes of device memory (cuMemAlloc: 256-byte aligned).
func (c *Context) Alloc(n int64) (Ptr, error) {
	if n <= 0 {
		return 0, fmt.Errorf("alloc %d bytes: not a size", n)
	}
	var p Ptr
	if err := c.d.check("cuMemAlloc", c.d.api.MemAlloc(&p, uint64(n))); err != nil {
		return 0, fmt.Errorf("alloc %d bytes of device memory: %w", n, err)
	}
	return p, nil
}

// Free releases memory from Alloc (0 is ignored).
func (c *Context) Free(p Ptr) {
	if p != 0 {
		c.d.api.MemFree(p)
	}
}

// HostAlloc reserves n bytes of page-locked host memory, which copies
// reach at full speed and asynchronously; FreeHost releases it.
func (c *Context) HostAlloc(n int) ([]byte, error) {
	if n <= 0 {
		return nil, fmt.Errorf("alloc %d bytes of pinned host memory: not a size", n)
	}
	var p unsafe.Pointer
	if err := c.d.check("cuMemAllocHost", c.d.api.MemAllocHost(&p, uint64(n))); err != nil {
		return nil, fmt.Errorf("alloc %d bytes of pinned host memory: %w", n, err)
	}
	return unsafe.Slice((*byte)(p), n), nil
}

// FreeHost releases memory from HostAlloc.
func (c *Context) FreeHost(b []byte) {
	if len(b) > 0 {
		c.d.api.MemFreeHost(unsafe.Pointer(unsafe.SliceData(b)))
	}
}

// bytesOf views a slice's elements as bytes.
func bytesOf[T any](s []T) (unsafe.Pointer, uint64) {
	var z T
	return unsafe.Pointer(unsafe.SliceData(s)), uint64(len(s)) * uint64(unsafe.Sizeof(z))
}

// Every copy is work on a stream, ordered with the kernels queued on it:
// there is no copy on the legacy default stream, which a non-blocking
// stream neither waits for nor holds up (a weight copied there could
// still be in flight when the stream's dequantise kernel reads it).

// CopyIn copies src to dst on s, after everything queued on s before it,
// and waits for it: src may change once it returns.
func CopyIn[T any](s *Stream, dst Ptr, src []T) error {
	if err := CopyInAsync(s, dst, src); err != nil {
		return err
	}
	return s.Synchronize()
}

// CopyOut copies src into dst on s, after everything queued on s before
// it (the kernels that wrote src), and waits for it.
func CopyOut[T any](s *Stream, dst []T, src Ptr) error {
	if err := CopyOutAsync(s, dst, src); err != nil {
		return err
	}
	return s.Synchronize()
}

// CopyInAsync queues a copy of src to dst on s. src must stay unchanged
// until the copy is done (and be pinned for it to be asynchronous: the
// driver stages pageable memory before it returns).
func CopyInAsync[T any](s *Stream, dst Ptr, src []T) error {
	p, n := bytesOf(src)
	if n == 0 {
		return nil
	}
	return s.c.d.check("cuMemcpyHtoDAsync", s.c.d.api.MemcpyHtoDAsync(dst, p, n, s.h))
}

// CopyOutAsync queues a copy of src into dst on s; dst is valid once the
// stream has reached it.
func CopyOutAsync[T any](s *Stream, dst []T, src Ptr) error {
	p, n := bytesOf(dst)
	if n == 0 {
		return nil
	}
	return s.c.d.check("cuMemcpyDtoHAsync", s.c.d.api.MemcpyDtoHAsync(p, src, n, s.h))
}

// CopyAsync queues a device-to-device copy of n bytes on s.
func (s *Stream) CopyAsync(dst, src Ptr, n int64) error {
	if n == 0 {
		return nil
	}
	return s.c.d.check("cuMemcpyDtoDAsync", s.c.d.api.MemcpyDtoDAsync(dst, src, uint64(n), s.h))
}

// Zero queues the clearing of n bytes at p on s.
func (s *Stream) Zero(p Ptr, n int64) error {
	if n == 0 {
		return nil
	}
	return s.c.d.check("cuMemsetD8Async", s.c.d.api.MemsetD8Async(p, 0, uint64(n), s.h))
}

// Fill32 queues the setting of n 32-bit words at p to v on s.
func (s *Stream) Fill32(p Ptr, v uint32, n int64) error {
	if n == 0 {
		return nil
	}
	return s.c.d.check("cuMemsetD32Async", s.c.d.api.MemsetD32Async(p, v, uint64(n), s.h))
}
