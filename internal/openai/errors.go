// Package openai owns the OpenAI-compatible wire format that the server
// speaks: request and response types for completions, chat completions,
// models, tokenize and detokenize (in vLLM's shapes), decoding with clear
// errors, validation onto sampling.Params, the error body, and the SSE writer.
//
// It holds no state and starts no goroutines. It may import engine and
// sampling for their error and parameter types, but never server, metrics,
// tracing or an executor: handlers live in server.
package openai

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"

	"github.com/glassbox-llm/glassbox/internal/engine"
	"github.com/glassbox-llm/glassbox/internal/sampling"
)

// Error types, as vLLM names them in the "type" field.
const (
	TypeBadRequest         = "BadRequestError"
	TypeNotFound           = "NotFoundError"
	TypeAuthentication     = "AuthenticationError"
	TypeServiceUnavailable = "ServiceUnavailableError"
	TypeInternal           = "InternalServerError"
	TypeTooLarge           = "RequestEntityTooLargeError"
	TypeMethodNotAllowed   = "MethodNotAllowedError"
)

// Error is an error a client sees: an HTTP status and OpenAI's error object.
type Error struct {
	Status     int
	Type       string
	Message    string
	Param      string   // the request field at fault, or ""
	RetryAfter int      // seconds, sent as Retry-After when > 0
	Allow      []string // methods the path has, sent as Allow on a 405
	Err        error    // the cause, if any
}

func (e *Error) Error() string { return e.Message }

func (e *Error) Unwrap() error { return e.Err }

// BadRequest is a 400 naming the parameter at fault.
func BadRequest(param, format string, args ...any) *Error {
	return &Error{Status: http.StatusBadRequest, Type: TypeBadRequest, Param: param, Message: fmt.Sprintf(format, args...)}
}

// ModelNotFound is the 404 for a model the server does not serve, worded as
// vLLM's.
func ModelNotFound(model string) *Error {
	return &Error{
		Status:  http.StatusNotFound,
		Type:    TypeNotFound,
		Param:   "model",
		Message: fmt.Sprintf("The model `%s` does not exist.", model),
	}
}

// RouteNotFound is the 404 for a path the server does not serve, worded
// as OpenAI's ("Invalid URL").
func RouteNotFound(method, path string) *Error {
	msg := fmt.Sprintf("Invalid URL (%s %s): glassbox does not serve this route (docs/api.md lists the routes)", method, path)
	return &Error{Status: http.StatusNotFound, Type: TypeNotFound, Message: msg}
}

// MethodNotAllowed is the 405 for a served path asked with another method.
func MethodNotAllowed(method, path string, allowed []string) *Error {
	return &Error{Status: http.StatusMethodNotAllowed, Type: TypeMethodNotAllowed, Allow: allowed,
		Message: fmt.Sprintf("Method %s is not allowed for %s: use %s", method, path, strings.Join(allowed, " or "))}
}

// Unauthorized is the 401 for a missing or wrong API key.
func Unauthorized() *Error {
	return &Error{Status: http.StatusUnauthorized, Type: TypeAuthentication, Message: "Unauthorized: missing or invalid API key"}
}

// ErrorBody is the JSON body of every error response.
type ErrorBody struct {
	Error ErrorObject `json:"error"`
}

// ErrorObject is OpenAI's error object; Param is null when no field is at
// fault.
type ErrorObject struct {
	Message string  `json:"message"`
	Type    string  `json:"type"`
	Param   *string `json:"param"`
	Code    int     `json:"code"`
}

// AsError maps any error to what the client sees. It is the one place where
// errors become HTTP statuses: parameter errors are 400, an overloaded or
// closed engine is 503 with Retry-After, a dead one (its executor failed
// for good) 503 naming why, without Retry-After: it does not come back
// by itself. A body over the size limit is 413, and anything unexpected is
// 500.
func AsError(err error) *Error {
	var e *Error
	if errors.As(err, &e) {
		return e
	}
	var pe *sampling.ParamError
	var tooBig *http.MaxBytesError
	switch {
	case errors.As(err, &pe):
		return &Error{Status: http.StatusBadRequest, Type: TypeBadRequest, Param: pe.Param, Message: pe.Msg, Err: err}
	case errors.Is(err, engine.ErrOverloaded):
		return &Error{Status: http.StatusServiceUnavailable, Type: TypeServiceUnavailable, RetryAfter: 1,
			Message: "The server is overloaded: too many requests are waiting. Retry later.", Err: err}
	case errors.Is(err, engine.ErrEngineDead):
		msg := err.Error()
		var d *engine.DeadError
		if errors.As(err, &d) {
			msg = d.Error() // without the request's own prefix: the same words for every request
		}
		return &Error{Status: http.StatusServiceUnavailable, Type: TypeServiceUnavailable, Message: "The server cannot serve: its " + msg, Err: err}
	case errors.Is(err, engine.ErrClosed):
		return &Error{Status: http.StatusServiceUnavailable, Type: TypeServiceUnavailable, RetryAfter: 5,
			Message: "The server is shutting down.", Err: err}
	case errors.Is(err, engine.ErrPromptTooLong):
		return &Error{Status: http.StatusBadRequest, Type: TypeBadRequest, Param: "prompt", Message: err.Error(), Err: err}
	case errors.As(err, &tooBig):
		return &Error{Status: http.StatusRequestEntityTooLarge, Type: TypeTooLarge,
			Message: fmt.Sprintf("request body is larger than %d bytes", tooBig.Limit), Err: err}
	}
	return &Error{Status: http.StatusInternalServerError, Type: TypeInternal, Message: err.Error(), Err: err}
}

// Body returns the error's JSON body.
func (e *Error) Body() ErrorBody {
	b := ErrorBody{Error: ErrorObject{Message: e.Message, Type: e.Type, Code: e.Status}}
	if e.Param != "" {
		b.Error.Param = &e.Param
	}
	return b
}

// WriteError writes err as an error response (status, Retry-After, body) and
// returns the API error it became, for logging.
func WriteError(w http.ResponseWriter, err error) *Error {
	e := AsError(err)
	h := w.Header()
	h.Set("Content-Type", "application/json")
	if e.RetryAfter > 0 {
		h.Set("Retry-After", strconv.Itoa(e.RetryAfter))
	}
	if len(e.Allow) > 0 {
		h.Set("Allow", strings.Join(e.Allow, ", "))
	}
	w.WriteHeader(e.Status)
	// The status is out; a write error here means the client left.
	_ = json.NewEncoder(w).Encode(e.Body())
	return e
}
