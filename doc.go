// Package glassbox runs glassbox's serving engine inside a Go program:
// offline batch inference as vLLM's LLM(model=…).generate(prompts,
// SamplingParams(…)), chat through the model's template, token-by-token
// streaming, and the OpenAI-compatible HTTP API as an http.Handler to
// mount in your own server, with vLLM's Prometheus metrics on your own
// registry.
//
// It is a façade over the engine glassbox serve runs, not a second one:
// continuous batching under MaxNumSeqs and MaxNumBatchedTokens, chunked
// prefill, a paged KV cache with prefix caching and recompute preemption,
// on a GGUF model on this CPU or on the simulated GPU.
//
//	llm, err := glassbox.Open(ctx, glassbox.Options{Model: "model.gguf"})
//	if err != nil {
//		return err
//	}
//	defer llm.Close()
//	outs, err := llm.Generate(ctx, []string{"Once upon a time"},
//		glassbox.SamplingParams{Temperature: 0.7, TopP: 0.95, MaxTokens: 512})
//	if err != nil {
//		return err
//	}
//	fmt.Println(outs[0].Completions[0].Text)
//
// # Models
//
// Options.Model is a local GGUF file or hf://OWNER/REPO/FILE, downloaded
// once (resumably, checked against the hub's sha256) into
// Options.DownloadDir, by default the cache glassbox serve uses. Setting
// Options.Sim instead runs the simulated GPU (Llama-3.1-8B on an H200 by
// default): no files, deterministic tokens, the real scheduler and KV
// cache. Nothing is read from the environment: paths and tokens are
// Options fields.
//
// # Generating
//
// Generate and Chat submit every prompt (SamplingParams.N completions
// each) to the engine at once, wait for all, and return one Output per
// prompt, in prompt order. Batched results equal one-by-one results
// (greedy, or sampled with a Seed).
// Calls may run concurrently with each other and with Handler's requests:
// they share the engine and are batched together. SamplingParams are
// validated, and each prompt checked against the context
// (ErrPromptTooLong), before anything is submitted.
//
// Stream and StreamChat yield one prompt's output as it is generated, as
// an iter.Seq2[Completion, error] to range over.
//
// Every call takes a context: when it ends, the call's unfinished
// requests are aborted and their KV blocks freed before the call returns
// its error.
//
// # Serving and metrics
//
// Handler is the API glassbox serve listens with (/v1/completions,
// /v1/chat/completions, /v1/models, …). vLLM's metrics, with vLLM's
// names, labels and buckets, go to Options.Registerer, so a program
// exports them on its own /metrics; without one, Handler serves them.
//
// # Stability
//
// This is v0: the API may change in any release. It is kept small, and
// the internal packages behind it are not importable.
//
// # Not built
//
// Logprobs, per-prompt SamplingParams, token-id prompts, beam search,
// guided decoding, LoRA adapters (glassbox serve has them on the
// simulator), embeddings and multimodal inputs are not built;
// the CPU runs on one machine (tensor parallelism exists only in the
// simulator's cost model); tracing and the step profiler are glassbox
// serve's (--otlp-traces-endpoint, --profiler-dir) only.
package glassbox
