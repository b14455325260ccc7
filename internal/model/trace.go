package model

import "strconv"

// Tracer is told of a forward pass's phases as they begin and end,
// properly nested (End closes the phase begun last): the embedding, each
// layer ("layer 0", …) and in it the phases below, then the LM head. A
// profiler times them; the model knows no clock.
type Tracer interface {
	Begin(name string)
	End()
}

// The phases of a forward pass, as a Tracer is told of them. A layer's
// are in order; PhaseMLP holds the three after it.
const (
	PhaseEmbed     = "embed"
	PhaseAttnNorm  = "attn_norm"     // RMSNorm before attention
	PhaseQKV       = "qkv_proj"      // the Q, K and V matmuls
	PhaseRoPE      = "rope_kv_write" // biases, q/k norms, RoPE, K/V into the paged cache
	PhaseAttention = "attention"     // paged attention over each sequence's context
	PhaseOProj     = "o_proj"        // the output matmul and the residual add
	PhaseFFNNorm   = "ffn_norm"      // RMSNorm before the MLP
	PhaseMLP       = "mlp"
	PhaseGateUp    = "gate_up_proj" // the gate and up matmuls
	PhaseSiLUMul   = "silu_mul"
	PhaseDown      = "down_proj" // the down matmul and the residual add
	PhaseLMHead    = "lm_head"   // the final norm and the output matmul on the rows asked for
)

func (r *Runner) begin(name string) {
	if r.Trace != nil {
		r.Trace.Begin(name)
	}
}

func (r *Runner) end() {
	if r.Trace != nil {
		r.Trace.End()
	}
}

// layerName is layer l's phase name; made only when traced.
func (r *Runner) layerName(l int) string {
	if r.Trace == nil {
		return ""
	}
	for len(r.layerNames) <= l {
		r.layerNames = append(r.layerNames, "layer "+strconv.Itoa(len(r.layerNames)))
	}
	return r.layerNames[l]
}
