package server

import (
	"encoding/base64"
	"encoding/binary"
	"math"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"github.com/glassbox-llm/glassbox/internal/engine"
	oa "github.com/glassbox-llm/glassbox/internal/openai"
)

// vecExec embeds a prompt as (its length, its first token, its LoRA
// adapter, 0), normalised; it generates the alphabet otherwise.
type vecExec struct{ alphabetExec }

func (x *vecExec) Capabilities() engine.Capabilities {
	return engine.Capabilities{Embeddings: true, LoRA: true}
}

func (x *vecExec) Execute(b *engine.Batch, r *engine.StepResult) error {
	if err := x.alphabetExec.Execute(b, r); err != nil {
		return err
	}
	for i, s := range b.Seqs {
		if s.Embed && s.Sample {
			v := []float64{float64(len(s.History)), float64(s.History[0]), float64(s.LoRA)}
			n := math.Sqrt(v[0]*v[0] + v[1]*v[1] + v[2]*v[2])
			r.Embeddings[i] = []float32{float32(v[0] / n), float32(v[1] / n), float32(v[2] / n), 0}
		}
	}
	return nil
}

func withEmbeddings(truncatable bool) envOption {
	return func(_ *engine.Config, c *Config) {
		c.Embeddings = &Embeddings{Dim: 4, Pooling: "last", Truncatable: truncatable}
	}
}

func TestEmbeddings(t *testing.T) {
	env := startExec(t, &vecExec{}, withEmbeddings(true))
	var resp oa.EmbeddingResponse
	decodeBody(t, env.post(t, "/v1/embeddings", `{"model":"test-model","input":["abc","xy"]}`), 200, &resp)
	if resp.Object != "list" || len(resp.Data) != 2 || resp.Usage.PromptTokens != 5 || resp.Usage.TotalTokens != 5 {
		t.Fatalf("response %+v", resp)
	}
	for i, d := range resp.Data {
		v, _ := d.Embedding.([]any)
		if d.Index != i || d.Object != "embedding" || len(v) != 4 {
			t.Errorf("data %d: %+v", i, d)
		}
	}
	// The official Go client, float and base64, and fewer dimensions.
	client := openai.NewClient(option.WithBaseURL(env.url+"/v1/"), option.WithAPIKey("unused"),
		option.WithHTTPClient(env.srv.Client()), option.WithMaxRetries(0))
	got, err := client.Embeddings.New(t.Context(), openai.EmbeddingNewParams{
		Model: modelName, Input: openai.EmbeddingNewParamsInputUnion{OfString: openai.String("abcd")},
	})
	if err != nil {
		t.Fatal(err)
	}
	if e := got.Data[0].Embedding; len(e) != 4 || math.Abs(e[0]-4/math.Hypot(4, 'a')) > 1e-6 {
		t.Errorf("float embedding %v", e)
	}
	b64 := env.post(t, "/v1/embeddings", `{"input":[[1,2,3]],"encoding_format":"base64","dimensions":2}`)
	var bresp struct {
		Data []struct{ Embedding string }
	}
	decodeBody(t, b64, 200, &bresp)
	raw, err := base64.StdEncoding.DecodeString(bresp.Data[0].Embedding)
	if err != nil || len(raw) != 8 {
		t.Fatalf("base64 %q: %v", bresp.Data[0].Embedding, err)
	}
	x, y := math.Float32frombits(binary.LittleEndian.Uint32(raw)), math.Float32frombits(binary.LittleEndian.Uint32(raw[4:]))
	if math.Abs(float64(x*x+y*y)-1) > 1e-5 || math.Abs(float64(x)-3/math.Hypot(3, 1)) > 1e-5 {
		t.Errorf("base64 vector (%v, %v), want the shortened one renormalised", x, y)
	}
}

func TestEmbeddingErrors(t *testing.T) {
	plain := startExec(t, &vecExec{})
	fixed := startExec(t, &vecExec{}, withEmbeddings(false))
	tests := []struct {
		env              *testEnv
		body, param, msg string
	}{
		{plain, `{"input":"x"}`, "model", "does not serve embeddings"},
		{fixed, `{"input":"x","dimensions":2}`, "dimensions", "cannot be shortened"},
		{fixed, `{"input":"x","dimensions":9}`, "dimensions", "exceeds"},
		{fixed, `{"input":[]}`, "input", "required"},
		{fixed, `{"input":"x","encoding_format":"int8"}`, "encoding_format", "float or base64"},
		{fixed, `{"input":[[1,999]]}`, "input", "out of vocabulary"},
		{fixed, `{"input":"` + strings.Repeat("x", 300) + `"}`, "input", "maximum context length"},
		{fixed, `{"input":"x","truncate_prompt_tokens":5}`, "truncate_prompt_tokens", "not supported"},
		{fixed, `{"model":"nope","input":"x"}`, "model", "does not exist"},
	}
	for _, tt := range tests {
		var body oa.ErrorBody
		resp := tt.env.post(t, "/v1/embeddings", tt.body)
		if resp.StatusCode != 400 && resp.StatusCode != 404 {
			t.Errorf("%s: status %d", tt.body, resp.StatusCode)
			continue
		}
		decodeBody(t, resp, resp.StatusCode, &body)
		if body.Error.Param == nil || *body.Error.Param != tt.param || !strings.Contains(body.Error.Message, tt.msg) {
			t.Errorf("%s: error %+v, want param %s and %q", tt.body, body.Error, tt.param, tt.msg)
		}
	}
}

// TestEmbeddingsRunTheAdapter: a LoRA adapter named as the model embeds
// with that adapter, as a completion runs with it, not with the base
// model under the adapter's name.
func TestEmbeddingsRunTheAdapter(t *testing.T) {
	env := startExec(t, &vecExec{}, withEmbeddings(false), func(e *engine.Config, c *Config) {
		e.LoRAs, e.MaxLoRAs = []string{"sql"}, 1
		c.LoRA = []LoRAModule{{Name: "sql", Path: "/adapters/sql"}}
	})
	for model, adapter := range map[string]bool{"sql": true, modelName: false} {
		var resp struct {
			Model string
			Data  []struct{ Embedding []float64 }
		}
		decodeBody(t, env.post(t, "/v1/embeddings", `{"model":"`+model+`","input":"abc"}`), 200, &resp)
		if resp.Model != model || len(resp.Data) != 1 || len(resp.Data[0].Embedding) != 4 {
			t.Fatalf("%s: response %+v", model, resp)
		}
		if ran := resp.Data[0].Embedding[2] > 0; ran != adapter {
			t.Errorf("model %s: embedded with the adapter %v, want %v", model, ran, adapter)
		}
	}
}
