package engine

import (
	"slices"

	"github.com/glassbox-llm/glassbox/internal/kvcache"
)

// CachedBlocks is how many of a prompt's block hashes (kvcache.ChainHashes
// at the engine's block size, in the request's Namespace), from the first,
// its prefix cache holds: what vLLM's KV events tell a precise
// prefix-aware router. Call it only from the goroutine that drives the
// engine, between steps (glassbox simulate's, which calls Advance).
func (e *Engine) CachedBlocks(hashes []kvcache.Hash) int { return e.kv.CachedBlocks(hashes) }

// Namespace is the prefix cache's namespace of a request for model (a LoRA
// adapter of Config.LoRAs, else the base model): 1 + the adapter's index,
// or 0. An adapter's KV is its own, as vLLM's block hashes include it.
func (e *Engine) Namespace(model string) uint32 { return uint32(slices.Index(e.cfg.LoRAs, model) + 1) }
