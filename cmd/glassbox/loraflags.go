package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/glassbox-llm/glassbox/internal/replica"
	"github.com/glassbox-llm/glassbox/internal/server"
)

// loRA is the LoRA set-up the flags describe, or nil without --enable-lora.
func (e *engineFlags) loRA() (*replica.LoRA, error) {
	if !e.enableLoRA {
		if len(e.loraModules) > 0 || e.loraSizeSet {
			return nil, errors.New("--lora-modules, --max-loras and --max-lora-rank need --enable-lora")
		}
		return nil, nil
	}
	if e.maxLoRAs < 1 || e.maxLoRARank < 1 {
		return nil, fmt.Errorf("--max-loras and --max-lora-rank must be at least 1, got %d and %d", e.maxLoRAs, e.maxLoRARank)
	}
	l := &replica.LoRA{MaxLoRAs: e.maxLoRAs, MaxRank: e.maxLoRARank}
	seen := map[string]bool{}
	for _, v := range e.loraModules {
		var m server.LoRAModule
		if strings.HasPrefix(strings.TrimSpace(v), "{") {
			var j struct {
				Name, Path    string
				BaseModelName string `json:"base_model_name"`
			}
			if err := json.Unmarshal([]byte(v), &j); err != nil {
				return nil, fmt.Errorf("--lora-modules %s: %w", v, err)
			}
			m = server.LoRAModule{Name: j.Name, Path: j.Path}
		} else {
			name, path, ok := strings.Cut(v, "=")
			if !ok {
				return nil, fmt.Errorf("--lora-modules %q: want name=path", v)
			}
			m = server.LoRAModule{Name: name, Path: path}
		}
		if m.Name == "" || m.Path == "" || seen[m.Name] {
			return nil, fmt.Errorf("--lora-modules %q: each adapter needs a name, given once, and a path", v)
		}
		seen[m.Name] = true
		l.Modules = append(l.Modules, m)
	}
	return l, nil
}
