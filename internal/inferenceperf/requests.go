// per_request_lifecycle_metrics.json: every request's record, written one
// at a time.

package inferenceperf

import (
	"bufio"
	"encoding/json"
	"io"
)

// The records of per_request_lifecycle_metrics.json, as structs (fields
// in inference-perf's order): a run has one per request, so they are
// written one at a time, not built as one value.
type (
	ipRequestRecord struct {
		StartTime float64        `json:"start_time"`
		EndTime   float64        `json:"end_time"`
		Request   *string        `json:"request"`
		Response  string         `json:"response"`
		Info      ipInfo         `json:"info"`
		Error     *ipErrorRecord `json:"error"`
	}
	ipInfo struct {
		RequestMetrics struct {
			Text struct {
				InputTokens int `json:"input_tokens"`
			} `json:"text"`
			Image *struct{} `json:"image"`
			Video *struct{} `json:"video"`
			Audio *struct{} `json:"audio"`
		} `json:"request_metrics"`
		ResponseMetrics ipResponseMetrics `json:"response_metrics"`
		ExtraInfo       ipExtraInfo       `json:"extra_info"`
		LoRAAdapter     *string           `json:"lora_adapter"`
		Labels          struct{}          `json:"labels"`
		InputTokens     int               `json:"input_tokens"`
	}
	ipResponseMetrics struct {
		OutputTokens     int        `json:"output_tokens"`
		ServerUsage      *ipUsage   `json:"server_usage"`
		ResponseChunks   *[]string  `json:"response_chunks,omitempty"`
		ChunkTimes       *[]float64 `json:"chunk_times,omitempty"`
		OutputTokenTimes *[]float64 `json:"output_token_times,omitempty"`
	}
	ipUsage struct {
		PromptTokens        int `json:"prompt_tokens"`
		CompletionTokens    int `json:"completion_tokens"`
		TotalTokens         int `json:"total_tokens"`
		PromptTokensDetails *struct {
			CachedTokens int `json:"cached_tokens"`
		} `json:"prompt_tokens_details,omitempty"`
	}
	// ipExtraInfo is what inference-perf's user sessions (shared_prefix's
	// multi-turn chat, conversation_replay) add to their requests' info:
	// the session's name and the request's round in it; others have none.
	ipExtraInfo struct {
		UserSession string `json:"user_session,omitempty"`
		ChatRound   int    `json:"chat_round,omitempty"`
	}
	ipErrorRecord struct {
		ErrorType string `json:"error_type"`
		ErrorMsg  string `json:"error_msg"`
	}
)

// perRequest is per_request_lifecycle_metrics.json: each request's times,
// its answer (glassbox keeps no request body), and inference-perf's info
// and error records.
func (x *ipContext) perRequest(recs []*ipRecord) ipRecords {
	out := make(ipRecords, 0, len(recs))
	for _, q := range recs {
		o := q.o
		var r ipRequestRecord
		r.StartTime, r.EndTime, r.Response = q.start, q.end, o.GeneratedText
		r.Info.RequestMetrics.Text.InputTokens, r.Info.InputTokens = q.inputTokens, q.inputTokens
		rm := &r.Info.ResponseMetrics
		rm.OutputTokens = q.outTokens
		if o.Success {
			rm.ServerUsage = &ipUsage{PromptTokens: o.PromptLen, CompletionTokens: o.OutputTokens, TotalTokens: o.PromptLen + o.OutputTokens}
			if o.CachedTokens != nil {
				rm.ServerUsage.PromptTokensDetails = &struct {
					CachedTokens int `json:"cached_tokens"`
				}{*o.CachedTokens}
			}
		}
		if !o.Unary {
			tt := q.tokenTimes
			if tt == nil {
				tt = []float64{}
			}
			chunks := []string{}
			rm.ResponseChunks, rm.ChunkTimes, rm.OutputTokenTimes = &chunks, &tt, &tt
		}
		if o.Round > 0 {
			r.Info.ExtraInfo = ipExtraInfo{UserSession: o.SessionID, ChatRound: o.Round}
		}
		if o.Model != "" {
			m := o.Model
			r.Info.LoRAAdapter = &m
		}
		if !o.Success {
			typ := o.ErrorType
			if typ == "" {
				typ = "ClientError"
			}
			r.Error = &ipErrorRecord{ErrorType: typ, ErrorMsg: cmpOr(o.ErrorBody, o.Error)}
			r.Response = o.ErrorBody
		}
		out = append(out, r)
	}
	return out
}

// ipRecords writes itself one record at a time.
type ipRecords []ipRequestRecord

func (rs ipRecords) writeTo(w io.Writer) error {
	bw := bufio.NewWriterSize(w, 1<<20)
	bw.WriteString("[")
	for i := range rs {
		if i > 0 {
			bw.WriteString(",")
		}
		b, err := json.MarshalIndent(&rs[i], "  ", "  ")
		if err != nil {
			return err
		}
		bw.WriteString("\n  ")
		bw.Write(b)
	}
	bw.WriteString("\n]")
	return bw.Flush()
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}
