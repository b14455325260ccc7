package engine

import (
	"cmp"
	"fmt"

	"github.com/glassbox-llm/glassbox/internal/sampling"
	"github.com/glassbox-llm/glassbox/internal/speculative"
)

// Capabilities are what an executor runs beyond plain generation. Each
// executor declares them once (Capable); the engine admits what they
// cover and refuses the rest by name where it is asked for: a
// configuration at New (CheckCapabilities), a request at Submit. So no
// step carries work its executor cannot do, and no executor checks its
// batches for it step by step.
type Capabilities struct {
	// Name is who the executor is, for the refusals ("the GPU executor").
	Name string
	// Embeddings: it pools a prompt into a vector (Request.Embed,
	// SeqBatch.Embed), as an embedding model or the simulator does.
	Embeddings bool
	// Speculative: it verifies drafts (SeqBatch.Draft), as
	// --speculative-config's every method needs.
	Speculative bool
	// DraftModel: it drafts with a model of its own beside the target
	// (SeqBatch.Propose and DraftKV in, StepResult.Drafts and DraftKV
	// out): the draft_model method.
	DraftModel bool
	// LoRA: it runs LoRA adapters (SeqBatch.LoRA): --enable-lora.
	LoRA bool
	// AsyncScheduling: it overlaps its host work for the next step with
	// the device's for this one: --async-scheduling.
	AsyncScheduling bool
}

// Capable is an Executor that declares what it runs. One that does not
// runs plain generation only.
type Capable interface {
	Executor
	Capabilities() Capabilities
}

// CapabilitiesOf is what x declares, or plain generation when it
// declares nothing.
func CapabilitiesOf(x Executor) Capabilities {
	if c, ok := x.(Capable); ok {
		return c.Capabilities()
	}
	return Capabilities{}
}

// CheckCapabilities refuses, by the flag that asks for it, the first thing
// c asks of an executor that caps do not cover; nil when it runs c. New
// checks it; a caller that loads an executor checks it first, before the
// executor spends memory on a configuration it cannot run.
func (c *Config) CheckCapabilities(caps Capabilities) error {
	who := cmp.Or(caps.Name, "the executor")
	sp := &c.Speculative
	switch {
	case sp.Enabled() && !caps.Speculative:
		return fmt.Errorf("--speculative-config: %s does not run speculative decoding", who)
	case sp.Method == speculative.MethodDraftModel && !caps.DraftModel:
		return fmt.Errorf("--speculative-config method %s: %s has no draft model", sp.Method, who)
	case (len(c.LoRAs) > 0 || c.MaxLoRAs > 0) && !caps.LoRA:
		return fmt.Errorf("--enable-lora: %s does not run LoRA adapters", who)
	case c.AsyncScheduling && !caps.AsyncScheduling:
		return fmt.Errorf("--async-scheduling: %s does not overlap its host work with a device's", who)
	}
	return nil
}

// checkEmbed refuses an Embed request unless the executor embeds, so that
// one request cannot fail a step that other requests share.
func (e *Engine) checkEmbed() error {
	if e.caps.Embeddings {
		return nil
	}
	who := ""
	if e.caps.Name != "" {
		who = " on " + e.caps.Name
	}
	return &sampling.ParamError{Param: "model", Msg: "this model does not serve embeddings" + who + ": it has no pooling"}
}
