package engine

import "github.com/glassbox-llm/glassbox/internal/kvcache"

// CachedBlocks is how many of a prompt's block hashes (kvcache.ChainHashes
// at the engine's block size), from the first, its prefix cache holds:
// what vLLM's KV events tell a precise prefix-aware router. Call it only
// from the goroutine that drives the engine, between steps (glassbox
// simulate's, which calls Advance).
func (e *Engine) CachedBlocks(hashes []kvcache.Hash) int { return e.kv.CachedBlocks(hashes) }
