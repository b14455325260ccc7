package costmodel

// attnGroup is layers that see the same keys: all of them, a sliding
// window of the last window, or their own chunk of chunk positions.
type attnGroup struct {
	layers        float64
	window, chunk int
}

// attnShape is what pricing reads of a model's attention: its layer
// groups, the KV bytes one key takes a layer on each GPU, the FLOPs of one
// (query, key) pair a layer over all heads for a decode and in a prefill
// (they differ under MLA), and MLA's lift of a cached latent to every
// head's K and V a layer, which a prefill runs over its cached context.
type attnShape struct {
	groups                  [3]attnGroup
	kvLayer                 float64
	pairDecode, pairPrefill float64
	lift                    float64
}

// attnShape reads the model's attention. GQA: QKᵀ and AV are each
// 2·head_dim multiply-adds a head. MLA as vLLM runs it: a decode attends
// in the latent space with the up projections absorbed into the query
// and the output (QKᵀ over kv_lora_rank + the rotary part, AV over
// kv_lora_rank); a prefill lifts every key's latent to full heads (K of
// nope + rope, V of v_head_dim) and attends as MHA.
func (cm *Model) attnShape() attnShape {
	m := &cm.Model
	heads := float64(m.Heads)
	s := attnShape{kvLayer: float64(m.KVBytesPerToken(cm.TP)) / float64(m.Layers)}
	if a := m.MLA; a != nil {
		kvr, rope := float64(a.KVLoRARank), float64(a.QKRopeHeadDim)
		s.pairDecode = 2 * heads * (kvr + rope + kvr)
		s.pairPrefill = 2 * heads * (float64(a.QKNopeHeadDim) + rope + float64(a.VHeadDim))
		s.lift = 2 * kvr * heads * float64(a.QKNopeHeadDim+a.VHeadDim)
	} else {
		s.pairDecode = 4 * heads * float64(m.HeadDim)
		s.pairPrefill = s.pairDecode
	}
	full := m.Layers - m.WindowLayers - m.ChunkLayers
	s.groups[0] = attnGroup{layers: float64(full)}
	if m.WindowLayers > 0 {
		s.groups[1] = attnGroup{layers: float64(m.WindowLayers), window: m.Window}
	}
	if m.ChunkLayers > 0 {
		s.groups[2] = attnGroup{layers: float64(m.ChunkLayers), chunk: m.Chunk}
	}
	return s
}

// attnWork is a step's attention: FLOPs over all GPUs (causal within a
// prefill chunk, against its cached context, decode, MLA's lift) and KV
// bytes read and written on each GPU.
type attnWork struct {
	causal, context, decode, lift float64
	readPrefill, readDecode       float64
	write                         float64
}

// add prices one sequence's attention: a decode (one token at or past
// its prompt) reads every key its layers see; a prefill chunk of n tokens
// from pos attends causally within itself and to the context before it,
// and reads that context's KV once.
func (s *attnShape) add(w *attnWork, sq *Seq, decode bool) {
	n, pos := sq.Tokens, sq.Pos
	nn := float64(n)
	for i := range s.groups {
		g := &s.groups[i]
		if g.layers == 0 {
			continue
		}
		kv := g.layers * s.kvLayer
		w.write += nn * kv
		if decode {
			keys := float64(g.keys(pos))
			w.readDecode += keys * kv
			w.decode += keys * g.layers * s.pairDecode
			continue
		}
		causal, context, cached := g.prefill(n, pos)
		pair := g.layers * s.pairPrefill
		w.causal += causal * pair
		w.context += context * pair
		w.readPrefill += (cached + nn) * kv
		w.lift += cached * g.layers * s.lift
	}
}

// keys is how many keys a token at position pos sees.
func (g *attnGroup) keys(pos int) int {
	switch {
	case g.window > 0:
		return min(pos+1, g.window)
	case g.chunk > 0:
		return pos%g.chunk + 1
	}
	return pos + 1
}

// prefill counts a chunk of n tokens from pos: the (query, key) pairs
// within the chunk and against the context before it, and the cached
// keys it reads. Token i (0-based) sees pos+i+1 keys under full
// attention: pos of the cached context, i+1 of its own.
func (g *attnGroup) prefill(n, pos int) (causal, context, cached float64) {
	nn, p := float64(n), float64(pos)
	switch {
	case g.window > 0:
		total := minSum(p+1, p+nn, float64(g.window))
		causal = minSum(1, nn, float64(g.window))
		return causal, total - causal, float64(min(pos, g.window))
	case g.chunk > 0:
		// Token at p sees p%chunk + 1 keys; only the chunk's first span
		// shares its chunk with the cache: pos%chunk cached keys for each
		// of its tokens.
		c, off := float64(g.chunk), float64(pos%g.chunk)
		context = off * min(nn, c-off)
		total := chunkSum(pos+n, g.chunk) - chunkSum(pos, g.chunk)
		return total - context, context, off
	}
	return nn * (nn + 1) / 2, nn * p, p
}

// chunkSum is Σ (p mod c + 1) over the positions p below x.
func chunkSum(x, c int) float64 {
	q, r := float64(x/c), float64(x%c)
	cf := float64(c)
	return q*cf*(cf+1)/2 + r*(r+1)/2
}

// minSum is Σ min(x, w) over the integers x from a to b (a ≤ b).
func minSum(a, b, w float64) float64 {
	switch {
	case b <= w:
		return (a + b) * (b - a + 1) / 2
	case a >= w:
		return w * (b - a + 1)
	}
	return (a+w)*(w-a+1)/2 + w*(b-w)
}
