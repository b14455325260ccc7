package openai

import (
	"bytes"
	"encoding/json"
	"sort"
)

// A field of the OpenAI API or of vLLM's extensions that glassbox does not
// honour is refused by name when a request sets it to anything but what
// asks for nothing (null, or the value that is the default), never
// silently ignored: a client that asked for it would otherwise get a
// different kind of answer and break far from the cause. Fields neither
// OpenAI nor vLLM defines are ignored, as vLLM ignores them.

// refusal is one field glassbox does not honour: its name, the values that
// ask for nothing, and why.
type refusal struct {
	field string
	// neutral reports whether the raw JSON value asks for nothing; null
	// always does.
	neutral func(raw []byte) bool
	why     string
}

// Endpoint kinds whose fields differ.
const (
	endpointChat       = "chat"
	endpointCompletion = "completion"
	endpointEmbedding  = "embedding"
	endpointResponses  = "responses"
)

// refusals lists, per endpoint, what is refused.
func refusals(endpoint string) []refusal {
	always := func([]byte) bool { return false }
	is := func(want string) func([]byte) bool {
		return func(raw []byte) bool { return bytes.Equal(compact(raw), []byte(want)) }
	}
	object := func(raw []byte) bool { return jsonKind(raw) == "object" }
	empty := func(raw []byte) bool {
		c := compact(raw)
		return bytes.Equal(c, []byte("{}")) || bytes.Equal(c, []byte("[]")) || bytes.Equal(c, []byte(`""`))
	}
	common := []refusal{
		{"logit_bias", empty, "logit_bias is not supported"},
		{"use_beam_search", is("false"), "beam search is not supported"},
		{"length_penalty", is("1"), "length_penalty applies to beam search, which is not supported"},
		{"skip_special_tokens", is("true"), "special tokens are always left out of the text"},
		{"truncate_prompt_tokens", always, "prompt truncation is not supported: send a shorter prompt"},
		{"prompt_logprobs", always, "prompt logprobs are not supported"},
		{"allowed_token_ids", always, "allowed_token_ids is not supported"},
		{"bad_words", empty, "bad_words is not supported"},
		{"logits_processors", empty, "logits processors are not supported"},
		{"priority", is("0"), "priority scheduling is not enabled: requests are served first come, first served"},
		{"request_id", always, "client request ids are not supported"},
		{"return_tokens_as_token_ids", is("false"), "return_tokens_as_token_ids is not supported"},
		{"return_token_ids", is("false"), "return_token_ids is not supported"},
		{"cache_salt", always, "cache_salt is not supported"},
		{"kv_transfer_params", always, "disaggregated serving is not supported"},
		{"vllm_xargs", always, "vllm_xargs is not supported"},
		{"guided_whitespace_pattern", always, "guided_whitespace_pattern is not supported"},
		{"guided_decoding_backend", is(`"auto"`), "glassbox has one structured-outputs backend of its own"},
		{"structural_tag", always, "structural tags are not supported"},
		{"mm_processor_kwargs", always, "this server reads text only"},
		{"stream_options.include_obfuscation", is("false"), "stream obfuscation is not supported"},
		{"service_tier", func(raw []byte) bool { return is(`"auto"`)(raw) || is(`"default"`)(raw) }, "service tiers are not supported"},
	}
	if endpoint == endpointEmbedding {
		return []refusal{
			{"truncate_prompt_tokens", always, "prompt truncation is not supported: send a shorter input"},
			{"priority", is("0"), "priority scheduling is not enabled: requests are served first come, first served"},
			{"request_id", always, "client request ids are not supported"},
			{"normalize", is("true"), "embeddings are always normalised"},
			{"embed_dtype", is(`"float32"`), "embeddings are float32"},
			{"messages", always, "chat-style embedding input is not supported: send `input`"},
			{"mm_processor_kwargs", always, "this server reads text only"},
			{"cache_salt", always, "cache_salt is not supported"},
			{"kv_transfer_params", always, "disaggregated serving is not supported"},
		}
	}
	var more []refusal
	switch endpoint {
	case endpointChat:
		more = []refusal{
			{"functions", empty, "the deprecated `functions` are not supported: use `tools`"},
			{"function_call", is(`"none"`), "the deprecated `function_call` is not supported: use `tool_choice`"},
			{"audio", always, "this server generates text only"},
			{"modalities", is(`["text"]`), "this server generates text only"},
			{"prediction", always, "predicted outputs are not supported"},
			{"web_search_options", always, "web search is not supported"},
			{"reasoning_effort", is(`"none"`), `reasoning models are not supported: only "none" (no reasoning) is served`},
			{"store", is("false"), "stored completions are not supported"},
			{"echo", is("false"), "echo is not supported for chat"},
			{"add_generation_prompt", is("true"), "the assistant's turn is always opened"},
			{"continue_final_message", is("false"), "continue_final_message is not supported"},
			{"add_special_tokens", is("false"), "the chat template writes the special tokens"},
			{"documents", always, "documents are not supported"},
			{"chat_template", always, "the model's own chat template is always used"},
			{"chat_template_kwargs", empty, "chat_template_kwargs is not supported"},
		}
	case endpointResponses:
		more = []refusal{
			// reasoning's fields are refused one by one: {} and effort
			// "none" (what the Agents SDK sends for GPT-5.x) ask for nothing.
			{"reasoning", object, "reasoning models are not supported"},
			{"reasoning.effort", is(`"none"`), `reasoning models are not supported: only effort "none" (no reasoning) is served`},
			{"reasoning.summary", always, "reasoning summaries are not produced: glassbox serves no reasoning models"},
			{"reasoning.generate_summary", always, "reasoning summaries are not produced: glassbox serves no reasoning models"},
			{"prompt", always, "prompt templates are not supported"},
			{"conversation", always, "conversations are not supported: use previous_response_id"},
			{"max_tool_calls", always, "max_tool_calls limits built-in tools, which are not served"},
			{"truncation", is(`"disabled"`), "truncation is not supported: send a shorter input"},
			{"previous_response", always, "previous_response (stateless turns with encrypted reasoning) is not supported: use previous_response_id"},
			{"previous_input_messages", always, "previous_input_messages (Harmony messages) is not supported"},
			{"enable_response_messages", is("false"), "enable_response_messages is not supported"},
			{"context_management", empty, "server-side context compaction is not supported"},
			{"prompt_cache_retention", always, "prompt_cache_retention is not supported: cached prefixes stay while the KV cache has room"},
		}
	case endpointCompletion:
		more = []refusal{
			{"best_of", is("1"), "best_of is not supported: use n"},
			{"suffix", empty, "suffix is not supported"},
			{"prompt_embeds", always, "prompt embeddings are not supported"},
		}
	}
	return append(common, more...)
}

// checkRefused returns a 400 naming the first refused field (in name
// order) that data sets to something.
func checkRefused(data []byte, endpoint string) error {
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(data, &fields); err != nil {
		return nil // the typed decode reports it
	}
	for _, parent := range []string{"stream_options", "reasoning"} {
		var sub map[string]json.RawMessage
		if json.Unmarshal(fields[parent], &sub) == nil {
			for k, v := range sub {
				fields[parent+"."+k] = v
			}
		}
	}
	rs := refusals(endpoint)
	sort.Slice(rs, func(i, j int) bool { return rs[i].field < rs[j].field })
	for _, r := range rs {
		raw, ok := fields[r.field]
		if !ok || bytes.Equal(compact(raw), []byte("null")) || r.neutral(raw) {
			continue
		}
		return BadRequest(r.field, "`%s` is not supported by glassbox: %s", r.field, r.why)
	}
	return nil
}

// compact is raw without insignificant whitespace.
func compact(raw []byte) []byte {
	var b bytes.Buffer
	if json.Compact(&b, raw) != nil {
		return raw
	}
	return b.Bytes()
}
