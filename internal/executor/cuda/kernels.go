package cuda

import (
	_ "embed"
	"fmt"

	"github.com/glassbox-llm/glassbox/internal/cuda"
)

//go:embed kernels.ptx
var kernelsPTX []byte

// kernels are the module's functions, looked up once.
type kernels struct {
	mod                                              *cuda.Module
	embed, rmsnorm, siluMul                          map[cuda.DType]*cuda.Function
	decode64, decode128, combine, prefill            map[cuda.DType]*cuda.Function
	flash64, flash128                                map[cuda.DType]*cuda.Function
	tdecode64, tdecode128                            map[cuda.DType]*cuda.Function
	qkvRope, dequantQ80, sample, convert, fillRandom *cuda.Function
}

// prefillMaxShared is the dynamic shared memory the prefill kernel may
// ask for (Hopper and Ampere give a block up to 227 and 163 KiB).
const prefillMaxShared = 160 << 10

func loadKernels(c *cuda.Context) (*kernels, error) {
	m, err := c.LoadPTX(kernelsPTX)
	if err != nil {
		return nil, err
	}
	k := &kernels{mod: m}
	var errs []error
	get := func(name string) *cuda.Function {
		f, err := m.Function(name)
		if err != nil {
			errs = append(errs, err)
		}
		return f
	}
	typed := func(prefix string) map[cuda.DType]*cuda.Function {
		return map[cuda.DType]*cuda.Function{cuda.F32: get(prefix + "_f32"), cuda.F16: get(prefix + "_f16"), cuda.BF16: get(prefix + "_bf16")}
	}
	k.embed, k.rmsnorm, k.siluMul = typed("embed"), typed("rmsnorm"), typed("silu_mul")
	k.decode64, k.decode128, k.combine, k.prefill = typed("decode64"), typed("decode128"), typed("decode_combine"), typed("prefill")
	k.flash64, k.flash128 = typed("flash64"), typed("flash128")
	k.tdecode64, k.tdecode128 = typed("tdecode64"), typed("tdecode128")
	k.qkvRope, k.dequantQ80, k.sample, k.convert, k.fillRandom = get("qkv_rope"), get("dequant_q8_0"), get("sample"), get("convert"), get("fill_random")
	if len(errs) > 0 {
		m.Unload()
		return nil, fmt.Errorf("load kernels: %v", errs)
	}
	limit := min(prefillMaxShared, c.Device.SharedOptin)
	for _, fs := range []map[cuda.DType]*cuda.Function{k.prefill, k.flash64, k.flash128} {
		for _, f := range fs {
			if err := f.SetMaxDynamicShared(limit); err != nil {
				m.Unload()
				return nil, fmt.Errorf("load kernels: %w", err)
			}
		}
	}
	return k, nil
}
