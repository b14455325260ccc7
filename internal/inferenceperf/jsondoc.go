package inferenceperf

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"

	"go.yaml.in/yaml/v3"
)

// JSONDoc is a YAML value kept as JSON with its mappings' keys in the
// order the file gives them: a JSON schema's properties are generated in
// that order (vLLM's xgrammar and glassbox's grammar alike), which a Go
// map would sort.
type JSONDoc []byte

// MarshalJSON writes the document as it is.
func (d JSONDoc) MarshalJSON() ([]byte, error) {
	if d == nil {
		return []byte("null"), nil
	}
	return d, nil
}

// UnmarshalYAML converts the node to JSON.
func (d *JSONDoc) UnmarshalYAML(n *yaml.Node) error {
	var b bytes.Buffer
	budget := 1_000_000 // nodes written: aliases could make a small file huge
	if err := writeJSON(&b, n, &budget); err != nil {
		return err
	}
	*d = b.Bytes()
	return nil
}

func writeJSON(b *bytes.Buffer, n *yaml.Node, budget *int) error {
	if *budget--; *budget < 0 {
		return errors.New("the document is too large (or aliases repeat too much of it)")
	}
	for n.Kind == yaml.AliasNode && n.Alias != nil {
		n = n.Alias
	}
	switch n.Kind {
	case yaml.DocumentNode:
		if len(n.Content) == 0 {
			b.WriteString("null")
			return nil
		}
		return writeJSON(b, n.Content[0], budget)
	case yaml.MappingNode:
		b.WriteByte('{')
		seen := map[string]bool{}
		for i := 0; i+1 < len(n.Content); i += 2 {
			k := n.Content[i]
			for k.Kind == yaml.AliasNode && k.Alias != nil {
				k = k.Alias
			}
			switch {
			case k.Kind != yaml.ScalarNode:
				return fmt.Errorf("line %d: a JSON object's key must be a string", k.Line)
			case k.Tag == "!!merge":
				return fmt.Errorf("line %d: YAML merge keys (<<) are not taken here: write the keys out", k.Line)
			case seen[k.Value]:
				return fmt.Errorf("line %d: key %q is already defined in this object", k.Line, k.Value)
			}
			seen[k.Value] = true
			if i > 0 {
				b.WriteByte(',')
			}
			key, _ := json.Marshal(k.Value)
			b.Write(key)
			b.WriteByte(':')
			if err := writeJSON(b, n.Content[i+1], budget); err != nil {
				return err
			}
		}
		b.WriteByte('}')
	case yaml.SequenceNode:
		b.WriteByte('[')
		for i, e := range n.Content {
			if i > 0 {
				b.WriteByte(',')
			}
			if err := writeJSON(b, e, budget); err != nil {
				return err
			}
		}
		b.WriteByte(']')
	case yaml.ScalarNode:
		var v any
		if err := n.Decode(&v); err != nil {
			return err
		}
		out, err := json.Marshal(v)
		if err != nil {
			return fmt.Errorf("line %d: %v has no JSON form", n.Line, n.Value)
		}
		b.Write(out)
	default:
		return fmt.Errorf("line %d: this YAML has no JSON form", n.Line)
	}
	return nil
}
