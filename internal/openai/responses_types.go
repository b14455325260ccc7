package openai

import "encoding/json"

// Response is the Responses API's response object, in vLLM's shape.
type Response struct {
	ID                 string             `json:"id"`
	Object             string             `json:"object"` // "response"
	CreatedAt          int64              `json:"created_at"`
	Status             string             `json:"status"` // queued, in_progress, completed, incomplete, cancelled, failed
	Error              *ResponseError     `json:"error"`
	IncompleteDetails  *IncompleteDetails `json:"incomplete_details"`
	Instructions       *string            `json:"instructions"`
	MaxOutputTokens    int                `json:"max_output_tokens"`
	Model              string             `json:"model"`
	Output             []ResponseItem     `json:"output"`
	ParallelToolCalls  bool               `json:"parallel_tool_calls"`
	PreviousResponseID *string            `json:"previous_response_id"`
	Temperature        float64            `json:"temperature"`
	TopP               float64            `json:"top_p"`
	ToolChoice         any                `json:"tool_choice"`
	Tools              []ResponseTool     `json:"tools"`
	Text               ResponseText       `json:"text"`
	Truncation         string             `json:"truncation"`
	Usage              *ResponseUsage     `json:"usage"`
	User               *string            `json:"user"`
	Metadata           map[string]string  `json:"metadata"`
	Store              bool               `json:"store"`
	Background         bool               `json:"background"`
	ServiceTier        string             `json:"service_tier"`
	Reasoning          *struct{}          `json:"reasoning"`
	TopLogprobs        int                `json:"top_logprobs"`
}

// ResponseDeleted answers DELETE /v1/responses/{id}.
type ResponseDeleted struct {
	ID      string `json:"id"`
	Object  string `json:"object"` // response
	Deleted bool   `json:"deleted"`
}

// ResponseError is a response's error (null when it has none).
type ResponseError struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

// IncompleteDetails says why a response is incomplete.
type IncompleteDetails struct {
	Reason string `json:"reason"` // max_output_tokens
}

// ResponseUsage counts a response's tokens.
type ResponseUsage struct {
	InputTokens         int                 `json:"input_tokens"`
	InputTokensDetails  InputTokensDetails  `json:"input_tokens_details"`
	OutputTokens        int                 `json:"output_tokens"`
	OutputTokensDetails OutputTokensDetails `json:"output_tokens_details"`
	TotalTokens         int                 `json:"total_tokens"`
}

// InputTokensDetails says how much of the input the prefix cache served.
type InputTokensDetails struct {
	CachedTokens int `json:"cached_tokens"`
}

// OutputTokensDetails counts reasoning tokens (none: glassbox serves no
// reasoning models).
type OutputTokensDetails struct {
	ReasoningTokens int `json:"reasoning_tokens"`
}

// ResponseItem is one output item: an assistant message (Content) or a
// function call (CallID, Name, Arguments).
type ResponseItem struct {
	ID        string
	Type      string // message, function_call
	Status    string // in_progress, completed, incomplete
	Content   []OutputText
	CallID    string
	Name      string
	Arguments string
}

// MarshalJSON writes the fields of the item's type.
func (it ResponseItem) MarshalJSON() ([]byte, error) {
	if it.Type == "function_call" {
		return json.Marshal(struct {
			ID        string `json:"id"`
			Type      string `json:"type"`
			Status    string `json:"status"`
			CallID    string `json:"call_id"`
			Name      string `json:"name"`
			Arguments string `json:"arguments"`
		}{it.ID, it.Type, it.Status, it.CallID, it.Name, it.Arguments})
	}
	content := it.Content
	if content == nil {
		content = []OutputText{}
	}
	return json.Marshal(struct {
		ID      string       `json:"id"`
		Type    string       `json:"type"`
		Status  string       `json:"status"`
		Role    string       `json:"role"`
		Content []OutputText `json:"content"`
	}{it.ID, it.Type, it.Status, "assistant", content})
}

// UnmarshalJSON reads either kind of item (clients of the Go packages
// decode responses too).
func (it *ResponseItem) UnmarshalJSON(data []byte) error {
	var wire struct {
		ID        string       `json:"id"`
		Type      string       `json:"type"`
		Status    string       `json:"status"`
		Content   []OutputText `json:"content"`
		CallID    string       `json:"call_id"`
		Name      string       `json:"name"`
		Arguments string       `json:"arguments"`
	}
	if err := json.Unmarshal(data, &wire); err != nil {
		return err
	}
	*it = ResponseItem(wire)
	return nil
}

// Input is the item as a later request's input (an item_reference
// resolves to it).
func (it ResponseItem) Input() InputItem {
	if it.Type == "function_call" {
		return InputItem{Type: "function_call", CallID: it.CallID, Name: it.Name, Arguments: it.Arguments}
	}
	var text string
	for _, c := range it.Content {
		text += c.Text
	}
	return InputItem{Type: "message", Role: "assistant", Content: responseContent(text)}
}

// OutputText is a message's text part.
type OutputText struct {
	Type        string             `json:"type"` // output_text
	Text        string             `json:"text"`
	Annotations []any              `json:"annotations"`
	Logprobs    []ChatTokenLogprob `json:"logprobs"`
}

// NewOutputText is a text part with no annotations.
func NewOutputText(text string, lp []ChatTokenLogprob) OutputText {
	if lp == nil {
		lp = []ChatTokenLogprob{}
	}
	return OutputText{Type: "output_text", Text: text, Annotations: []any{}, Logprobs: lp}
}

// ResponseEvent is one streamed event: its type names which fields it has.
type ResponseEvent struct {
	Type           string              `json:"type"`
	SequenceNumber int                 `json:"sequence_number"`
	Response       *Response           `json:"response,omitempty"`
	OutputIndex    *int                `json:"output_index,omitempty"`
	ItemID         string              `json:"item_id,omitempty"`
	ContentIndex   *int                `json:"content_index,omitempty"`
	Item           *ResponseItem       `json:"item,omitempty"`
	Part           *OutputText         `json:"part,omitempty"`
	Delta          *string             `json:"delta,omitempty"`
	Text           *string             `json:"text,omitempty"`
	Name           string              `json:"name,omitempty"`
	Arguments      *string             `json:"arguments,omitempty"`
	Logprobs       *[]ChatTokenLogprob `json:"logprobs,omitempty"`
	// An error event's fields.
	Code    *string `json:"code,omitempty"`
	Message string  `json:"message,omitempty"`
	Param   *string `json:"param,omitempty"`
}
