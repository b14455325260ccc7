package openai

import (
	"encoding/base64"
	"encoding/binary"
	"io"
	"math"
)

// EmbeddingRequest is the body of POST /v1/embeddings. Input takes the
// shapes a completions prompt takes: a string, strings, token ids or
// lists of them; each is embedded on its own.
type EmbeddingRequest struct {
	Model          string `json:"model"`
	Input          Prompt `json:"input"`
	EncodingFormat string `json:"encoding_format"` // float (default) or base64
	Dimensions     *int   `json:"dimensions"`
	User           string `json:"user"`
	// AddSpecialTokens (vLLM's, default true) adds the model's special
	// tokens to text inputs.
	AddSpecialTokens *bool `json:"add_special_tokens"`
}

// DecodeEmbeddingRequest reads and checks an embeddings request body.
func DecodeEmbeddingRequest(r io.Reader) (*EmbeddingRequest, error) {
	var req EmbeddingRequest
	if err := decodeChecked(r, &req, endpointEmbedding); err != nil {
		return nil, err
	}
	switch req.EncodingFormat {
	case "", "float", "base64":
	default:
		return nil, BadRequest("encoding_format", "encoding_format must be float or base64, got %q", req.EncodingFormat)
	}
	if req.Input.Len() == 0 {
		return nil, BadRequest("input", "`input` is required and must not be empty")
	}
	for _, t := range req.Input.Texts {
		if t == "" {
			return nil, BadRequest("input", "an input string is empty")
		}
	}
	for _, ids := range req.Input.Tokens {
		if len(ids) == 0 {
			return nil, BadRequest("input", "an input token list is empty")
		}
		if err := checkTokenIDs("input", ids); err != nil {
			return nil, err
		}
	}
	if req.Dimensions != nil && *req.Dimensions < 1 {
		return nil, BadRequest("dimensions", "dimensions must be at least 1, got %d", *req.Dimensions)
	}
	return &req, nil
}

// EmbeddingResponse is the answer of /v1/embeddings, with vLLM's id and
// created fields.
type EmbeddingResponse struct {
	ID      string          `json:"id"`
	Object  string          `json:"object"` // "list"
	Created int64           `json:"created"`
	Model   string          `json:"model"`
	Data    []EmbeddingData `json:"data"`
	Usage   EmbeddingUsage  `json:"usage"`
}

// EmbeddingData is one input's vector: a JSON array of numbers, or with
// encoding_format base64 the little-endian float32 bytes in base64, as
// OpenAI's clients decode them.
type EmbeddingData struct {
	Object    string `json:"object"` // "embedding"
	Index     int    `json:"index"`
	Embedding any    `json:"embedding"`
}

// EmbeddingUsage counts the inputs' tokens.
type EmbeddingUsage struct {
	PromptTokens int `json:"prompt_tokens"`
	TotalTokens  int `json:"total_tokens"`
}

// EncodeEmbedding writes v in the requested format.
func EncodeEmbedding(v []float32, format string) any {
	if format != "base64" {
		return v
	}
	b := make([]byte, 4*len(v))
	for i, x := range v {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(x))
	}
	return base64.StdEncoding.EncodeToString(b)
}
