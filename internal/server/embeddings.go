package server

import (
	"cmp"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"math"
	"net/http"
	"time"

	"github.com/glassbox-llm/glassbox/internal/engine"
	"github.com/glassbox-llm/glassbox/internal/openai"
	"github.com/glassbox-llm/glassbox/internal/sampling"
)

// Embeddings describes what /v1/embeddings serves: the vector's size, the
// pooling that makes it (for errors and docs) and whether a client may ask
// for fewer dimensions (a Matryoshka-trained model's first ones are an
// embedding of their own).
type Embeddings struct {
	Dim         int
	Pooling     string
	Truncatable bool
}

// handleEmbeddings serves POST /v1/embeddings: every input is one engine
// request, batched with everything else, that ends with its prefill.
func (s *Server) handleEmbeddings(w http.ResponseWriter, r *http.Request) {
	arrival := time.Now()
	req, err := openai.DecodeEmbeddingRequest(http.MaxBytesReader(w, r.Body, maxBodyBytes))
	if err == nil {
		err = s.checkModel(req.Model)
	}
	var dims int
	var inputs [][]int
	if err == nil {
		dims, err = s.embeddingDims(req)
	}
	if err == nil {
		inputs, err = s.embeddingInputs(req)
	}
	if err != nil {
		s.fail(w, r, err)
		return
	}
	var b [16]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails
	id := "embd-" + hex.EncodeToString(b[:])
	g := s.eng.NewGroup(id, 1)
	defer g.Abort() // a client that leaves frees what is unfinished at once
	params := sampling.Defaults()
	params.MaxTokens = 1 // the engine's rule; an embedding generates nothing
	for i, ids := range inputs {
		base := engine.Request{Prompt: ids, Params: params, Embed: true, Arrival: arrival, LoRA: s.adapter(req.Model),
			TraceParent: r.Header.Get("traceparent"), TraceState: r.Header.Get("tracestate")}
		if len(inputs) > 1 {
			base.Group = fmt.Sprintf("%s-%d", id, i)
		}
		if err := g.Add(base, nil); err != nil {
			s.fail(w, r, fmt.Errorf("submit %s: %w", id, err))
			return
		}
	}
	name := req.Model
	if name == "" {
		name = s.cfg.ServedModelNames[0]
	}
	resp := openai.EmbeddingResponse{ID: id, Object: "list", Created: arrival.Unix(), Model: name, Data: make([]openai.EmbeddingData, len(inputs))}
	for left := len(inputs); left > 0; {
		m, out, ok := g.Next(r.Context())
		if !ok {
			s.log.DebugContext(r.Context(), "client left", "id", id)
			return
		}
		if !out.Finished {
			continue
		}
		left--
		if out.Err != nil || out.FinishReason != engine.FinishStop {
			s.fail(w, r, &outputError{fmt.Errorf("embed input %d: %w", m, cmp.Or(out.Err, engine.ErrClosed))})
			return
		}
		vec := out.Embedding
		if dims < len(vec) {
			vec = renormalize(vec[:dims])
		}
		resp.Data[m] = openai.EmbeddingData{Object: "embedding", Index: m, Embedding: openai.EncodeEmbedding(vec, req.EncodingFormat)}
		resp.Usage.PromptTokens += out.PromptTokens
	}
	resp.Usage.TotalTokens = resp.Usage.PromptTokens
	s.writeJSON(w, r, resp)
}

// embeddingDims checks that the model embeds and the dimensions asked for.
func (s *Server) embeddingDims(req *openai.EmbeddingRequest) (int, error) {
	e := s.cfg.Embeddings
	if e == nil {
		return 0, openai.BadRequest("model", "this model does not serve embeddings: its GGUF declares no pooling ({arch}.pooling_type), as embedding models' do")
	}
	if req.Dimensions == nil || *req.Dimensions == e.Dim {
		return e.Dim, nil
	}
	switch {
	case *req.Dimensions > e.Dim:
		return 0, openai.BadRequest("dimensions", "dimensions %d exceeds the model's %d", *req.Dimensions, e.Dim)
	case !e.Truncatable:
		return 0, openai.BadRequest("dimensions", "this model's embeddings have %d dimensions and it declares no Matryoshka training, so they cannot be shortened", e.Dim)
	}
	return *req.Dimensions, nil
}

// embeddingInputs tokenizes the inputs and checks them against the
// vocabulary and the context.
func (s *Server) embeddingInputs(req *openai.EmbeddingRequest) ([][]int, error) {
	encode := s.model.Encode
	if req.AddSpecialTokens != nil && !*req.AddSpecialTokens {
		encode = s.encodeChat
	}
	var inputs [][]int
	for _, text := range req.Input.Texts {
		inputs = append(inputs, encode(text))
	}
	inputs = append(inputs, req.Input.Tokens...)
	for i, ids := range inputs {
		if err := s.checkVocab("input", ids); err != nil {
			return nil, err
		}
		if len(ids) == 0 {
			return nil, openai.BadRequest("input", "input %d has no tokens", i)
		}
		if len(ids) >= s.maxModelLen {
			return nil, openai.BadRequest("input", "input %d has %d tokens; this model's maximum context length is %d", i, len(ids), s.maxModelLen-1)
		}
	}
	return inputs, nil
}

// renormalize scales a shortened vector back to unit length.
func renormalize(v []float32) []float32 {
	out := make([]float32, len(v))
	var sum float64
	for _, x := range v {
		sum += float64(x) * float64(x)
	}
	inv := float32(1)
	if sum > 0 {
		inv = float32(1 / math.Sqrt(sum))
	}
	for i, x := range v {
		out[i] = x * inv
	}
	return out
}
