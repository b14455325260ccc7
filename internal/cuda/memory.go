package cuda

import (
	"fmt"
	"unsafe"
)

// Ptr is a device address.
type Ptr uint64

// Add is p advanced by n bytes.
func (p Ptr) Add(n int64) Ptr { return p + Ptr(n) }

// Alloc reserves n bytes of device memory (cuMemAlloc: 256-byte aligned).
func (c *Context) Alloc(n int64) (Ptr, error) {
	var p Ptr
	if n <= 0 {
		return 0, fmt.Errorf("alloc %d bytes: not a size", n)
	}
	if err := c.d.check("cuMemAlloc", call(c.d.fn.memAlloc, ptr(&p), uintptr(n))); err != nil {
		return 0, fmt.Errorf("alloc %d bytes of device memory: %w", n, err)
	}
	return p, nil
}

// Free releases memory from Alloc (0 is ignored).
func (c *Context) Free(p Ptr) {
	if p != 0 {
		call(c.d.fn.memFree, uintptr(p))
	}
}

// HostAlloc reserves n bytes of page-locked host memory, which copies
// reach at full speed and asynchronously; FreeHost releases it.
func (c *Context) HostAlloc(n int) ([]byte, error) {
	var p unsafe.Pointer
	if err := c.d.check("cuMemAllocHost", call(c.d.fn.memAllocHost, ptr(&p), uintptr(n))); err != nil {
		return nil, fmt.Errorf("alloc %d bytes of pinned host memory: %w", n, err)
	}
	return unsafe.Slice((*byte)(p), n), nil
}

// FreeHost releases memory from HostAlloc.
func (c *Context) FreeHost(b []byte) {
	if len(b) > 0 {
		call(c.d.fn.memFreeHost, uintptr(unsafe.Pointer(unsafe.SliceData(b))))
	}
}

// bytesOf views a slice's elements as bytes.
func bytesOf[T any](s []T) (unsafe.Pointer, int) {
	var z T
	return unsafe.Pointer(unsafe.SliceData(s)), len(s) * int(unsafe.Sizeof(z))
}

// CopyIn copies src to device memory at dst, synchronously.
func CopyIn[T any](c *Context, dst Ptr, src []T) error {
	p, n := bytesOf(src)
	if n == 0 {
		return nil
	}
	return c.d.check("cuMemcpyHtoD", call(c.d.fn.memcpyHtoD, uintptr(dst), uintptr(p), uintptr(n)))
}

// CopyOut copies device memory at src into dst, synchronously.
func CopyOut[T any](c *Context, dst []T, src Ptr) error {
	p, n := bytesOf(dst)
	if n == 0 {
		return nil
	}
	return c.d.check("cuMemcpyDtoH", call(c.d.fn.memcpyDtoH, uintptr(p), uintptr(src), uintptr(n)))
}

// CopyInAsync queues a copy of src to dst on s. src must stay unchanged
// until the copy is done (and be pinned for it to be asynchronous).
func CopyInAsync[T any](s *Stream, dst Ptr, src []T) error {
	p, n := bytesOf(src)
	if n == 0 {
		return nil
	}
	return s.c.d.check("cuMemcpyHtoDAsync", call(s.c.d.fn.memcpyHtoDAsync, uintptr(dst), uintptr(p), uintptr(n), s.h))
}

// CopyOutAsync queues a copy of src into dst on s; dst is valid once the
// stream has reached it.
func CopyOutAsync[T any](s *Stream, dst []T, src Ptr) error {
	p, n := bytesOf(dst)
	if n == 0 {
		return nil
	}
	return s.c.d.check("cuMemcpyDtoHAsync", call(s.c.d.fn.memcpyDtoHAsync, uintptr(p), uintptr(src), uintptr(n), s.h))
}

// CopyAsync queues a device-to-device copy of n bytes on s.
func (s *Stream) CopyAsync(dst, src Ptr, n int64) error {
	if n == 0 {
		return nil
	}
	return s.c.d.check("cuMemcpyDtoDAsync", call(s.c.d.fn.memcpyDtoDAsync, uintptr(dst), uintptr(src), uintptr(n), s.h))
}

// Zero queues the clearing of n bytes at p on s.
func (s *Stream) Zero(p Ptr, n int64) error {
	if n == 0 {
		return nil
	}
	return s.c.d.check("cuMemsetD8Async", call(s.c.d.fn.memsetD8Async, uintptr(p), 0, uintptr(n), s.h))
}

// Fill32 queues the setting of n 32-bit words at p to v on s.
func (s *Stream) Fill32(p Ptr, v uint32, n int64) error {
	if n == 0 {
		return nil
	}
	return s.c.d.check("cuMemsetD32Async", call(s.c.d.fn.memsetD32Async, uintptr(p), uintptr(v), uintptr(n), s.h))
}
