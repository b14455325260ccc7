package profiles

import (
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strings"
)

// modules are printf patterns (of the layer index) of one module of each
// class, as the checkpoint names them: what quantization_config's ignore
// lists and targets are matched against. An empty pattern: the family has
// no such module.
type modules struct {
	attention, dense, shared, experts string
}

// hfQuant is what the cost model reads of a quantization_config.
type hfQuant struct {
	Method string `json:"quant_method"`
	// fp8, mxfp4, gptq, awq: modules left unquantised.
	NotConvert []string `json:"modules_to_not_convert"`
	Ignored    []string `json:"ignored_layers"`
	// compressed-tensors
	Groups   map[string]ctGroup `json:"config_groups"`
	Ignore   []string           `json:"ignore"`
	Sparsity *ctSparsity        `json:"sparsity_config"`
	// gptq, awq
	Bits      int `json:"bits"`
	GroupSize int `json:"group_size"`
	// GPTQModel's per-module overrides of bits and group size, or
	// modules left out ("-:" patterns), which vLLM's GPTQ honours.
	Dynamic map[string]json.RawMessage `json:"dynamic"`
}

// ctSparsity is compressed-tensors' sparsity_config: 2:4 sparse weights
// run on vLLM's sparse CUTLASS GEMMs, which the cost model has no terms
// for; unstructured sparsity kept dense runs as dense.
type ctSparsity struct {
	Format    string `json:"format"`
	Structure string `json:"sparsity_structure"`
}

type ctGroup struct {
	Targets []string `json:"targets"`
	Weights *ctArgs  `json:"weights"`
	Input   *ctArgs  `json:"input_activations"`
}

type ctArgs struct {
	NumBits   int    `json:"num_bits"`
	Type      string `json:"type"`
	GroupSize *int   `json:"group_size"`
}

// quantization reads the checkpoint's quantization_config into each
// class of linear layers' format. Methods and formats the cost model has
// no terms for are refused by name; so is a class whose layers the
// config quantises only in part.
func quantization(m *Model, raw json.RawMessage, mods modules, moe []int) error {
	if len(raw) == 0 || string(raw) == "null" {
		return nil
	}
	var q hfQuant
	if err := json.Unmarshal(raw, &q); err != nil {
		return fmt.Errorf("parse config.json: quantization_config: %w", err)
	}
	m.Quantization = strings.ToLower(q.Method)
	var format func(class, name string) (Format, error)
	switch m.Quantization {
	case "fp8":
		skip, err := newMatcher(append(slices.Clone(q.NotConvert), q.Ignored...))
		if err != nil {
			return err
		}
		format = func(_, name string) (Format, error) {
			if skip.match(name) {
				return Format{}, nil
			}
			return fp8W8A8, nil
		}
	case "compressed-tensors":
		var err error
		if format, err = compressedTensors(&q); err != nil {
			return err
		}
	case "mxfp4":
		// vLLM's mxfp4 quantises the experts (4-bit e2m1 with an e8m0
		// scale per 32 weights: 4.25 bits) and runs them widened to bf16
		// on Hopper (Marlin, Triton's matmul_ogs); the rest is bf16.
		if m.MoE == nil {
			return fmt.Errorf("parse config.json: quantization_config.quant_method mxfp4 quantises a mixture of experts' experts, and %s has none", m.Name)
		}
		skip, err := newMatcher(q.NotConvert)
		if err != nil {
			return err
		}
		mxfp4 := Format{Name: "mxfp4", Bytes: 4.25 / 8}
		format = func(class, name string) (Format, error) {
			if class != "experts" || skip.match(name) {
				return Format{}, nil
			}
			return mxfp4, nil
		}
	case "gptq", "awq", "gptq_marlin", "awq_marlin":
		if q.Bits != 4 && q.Bits != 8 {
			return fmt.Errorf("parse config.json: quantization_config.bits %d: the simulator prices %s at 4 or 8 bits", q.Bits, q.Method)
		}
		if len(q.Dynamic) > 0 {
			return fmt.Errorf("parse config.json: quantization_config.dynamic: per-module overrides of %s's bits are not priced", q.Method)
		}
		skip, err := newMatcher(q.NotConvert)
		if err != nil {
			return err
		}
		w := weightOnly(q.Bits, q.GroupSize)
		format = func(_, name string) (Format, error) {
			if skip.match(name) {
				return Format{}, nil
			}
			return w, nil
		}
	default:
		return fmt.Errorf("parse config.json: quantization_config.quant_method %q is not priced (the simulator prices fp8, compressed-tensors, mxfp4, gptq and awq checkpoints)", q.Method)
	}
	var attn, mlp, exp []string
	for i := range m.Layers {
		moeLayer := slices.Contains(moe, i) && m.MoE != nil
		attn = append(attn, fmt.Sprintf(mods.attention, i))
		switch {
		case moeLayer && m.MoE.SharedIntermediate > 0 && mods.shared != "":
			mlp = append(mlp, fmt.Sprintf(mods.shared, i))
		case !moeLayer && mods.dense != "":
			mlp = append(mlp, fmt.Sprintf(mods.dense, i))
		}
		if moeLayer {
			exp = append(exp, fmt.Sprintf(mods.experts, i))
		}
	}
	var err error
	if m.Weights.Attention, err = classFormat(attn, "attention", format); err != nil {
		return err
	}
	if m.Weights.MLP, err = classFormat(mlp, "MLP", format); err != nil {
		return err
	}
	m.Weights.Experts, err = classFormat(exp, "experts", format)
	return err
}

// classFormat is the one format of a class's modules: a config that
// quantises some layers of a class and not others is refused.
func classFormat(names []string, class string, format func(class, name string) (Format, error)) (Format, error) {
	var f Format
	for i, n := range names {
		g, err := format(class, n)
		if err != nil {
			return Format{}, err
		}
		if i > 0 && g != f {
			return Format{}, fmt.Errorf("parse config.json: quantization_config stores %s in %s and %s in %s: a class of layers in mixed formats is not priced",
				names[0], fmtName(f), n, fmtName(g))
		}
		f = g
	}
	return f, nil
}

func fmtName(f Format) string {
	if f.Bytes == 0 {
		return "the model's dtype"
	}
	return f.Name
}

// weightOnly is an integer weight-only format of bits a weight with a
// bf16 scale per group of group weights (per channel when group ≤ 0).
func weightOnly(bits, group int) Format {
	f := Format{Name: fmt.Sprintf("int%d", bits), Bytes: float64(bits) / 8}
	if group > 0 {
		f.Bytes += 2 / float64(group)
	}
	return f
}

// compressedTensors reads compressed-tensors' config groups: each names
// its targets (Linear: every linear layer; re:… a module pattern) and the
// weights' and input activations' types; ignore lists modules left
// unquantised.
func compressedTensors(q *hfQuant) (func(class, name string) (Format, error), error) {
	if sp := q.Sparsity; sp != nil && (sp.Structure == "2:4" || sp.Format != "" && sp.Format != "dense") {
		return nil, fmt.Errorf("parse config.json: quantization_config.sparsity_config: %s sparse weights (%s) are not priced", sp.Structure, sp.Format)
	}
	skip, err := newMatcher(q.Ignore)
	if err != nil {
		return nil, err
	}
	type group struct {
		targets *matcher
		linear  bool
		format  Format
	}
	var groups []group
	keys := make([]string, 0, len(q.Groups))
	for k := range q.Groups {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		g := q.Groups[k]
		f, err := ctFormat(k, &g)
		if err != nil {
			return nil, err
		}
		t, err := newMatcher(g.Targets)
		if err != nil {
			return nil, err
		}
		groups = append(groups, group{targets: t, linear: slices.Contains(g.Targets, "Linear"), format: f})
	}
	return func(_, name string) (Format, error) {
		if skip.match(name) {
			return Format{}, nil
		}
		for _, g := range groups {
			if g.linear || g.targets.match(name) {
				return g.format, nil
			}
		}
		return Format{}, nil
	}, nil
}

// ctFormat is one compressed-tensors group's format: FP8 weights (W8A8
// with 8-bit float activations, else weight-only), or 4- or 8-bit integer
// weights, weight-only.
func ctFormat(key string, g *ctGroup) (Format, error) {
	w, in := g.Weights, g.Input
	if w == nil {
		return Format{}, nil
	}
	switch {
	case w.Type == "float" && w.NumBits == 8:
		f := Format{Name: "fp8", Bytes: 1}
		if in != nil && in.Type == "float" && in.NumBits == 8 {
			f.FP8 = true
		} else {
			f.Name = "fp8 weight-only"
		}
		return f, nil
	case w.Type == "int" && (w.NumBits == 4 || w.NumBits == 8) && (in == nil || in.NumBits == 0 || in.NumBits >= 16):
		group := 0
		if w.GroupSize != nil {
			group = *w.GroupSize
		}
		return weightOnly(w.NumBits, group), nil
	}
	act := "none"
	if in != nil {
		act = fmt.Sprintf("%d-bit %s", in.NumBits, in.Type)
	}
	return Format{}, fmt.Errorf("parse config.json: quantization_config.config_groups.%s: %d-bit %s weights with %s activations are not priced "+
		"(the simulator prices FP8 weights, W8A8 or weight-only, and 4- or 8-bit integer weights, weight-only)", key, w.NumBits, w.Type, act)
}

// matcher matches module names against a config's module patterns:
// "re:…" a regular expression from the name's start (compressed-tensors),
// a pattern with * a glob over dotted names (modules_to_not_convert), else
// a module name or a dotted part of one (model.layers.0.self_attn
// matches its q_proj; a checkpoint's prefix may differ).
type matcher struct {
	plain []string
	res   []*regexp.Regexp
}

func newMatcher(patterns []string) (*matcher, error) {
	m := &matcher{}
	for _, p := range patterns {
		switch {
		case strings.HasPrefix(p, "re:"):
			re, err := regexp.Compile("^(?:" + p[3:] + ")")
			if err != nil {
				return nil, fmt.Errorf("parse config.json: quantization_config: module pattern %q: %w", p, err)
			}
			m.res = append(m.res, re)
		case strings.Contains(p, "*"):
			glob := strings.ReplaceAll(regexp.QuoteMeta(p), `\*`, `.*`)
			m.res = append(m.res, regexp.MustCompile(`(^|\.)`+glob+`(\..*)?$`))
		case p != "":
			m.plain = append(m.plain, p)
		}
	}
	return m, nil
}

func (m *matcher) match(name string) bool {
	for _, p := range m.plain {
		if name == p || strings.HasPrefix(name, p+".") || strings.HasSuffix(name, "."+p) || strings.Contains(name, "."+p+".") {
			return true
		}
	}
	for _, re := range m.res {
		if re.MatchString(name) {
			return true
		}
	}
	return false
}
