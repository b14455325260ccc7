package main

import (
	"flag"
	"fmt"
	"os"
	"strings"

	"github.com/glassbox-llm/glassbox/internal/doctor"
	"github.com/glassbox-llm/glassbox/internal/profiles"
)

// thresholdFlags are the doctor's thresholds on a command line (doctor,
// dashboard, monitoring export, serve, plan): --thresholds FILE over the
// defaults, then each --threshold name=value in order.
type thresholdFlags struct {
	file string
	sets []string
}

func (t *thresholdFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&t.file, "thresholds", "", "a YAML or JSON file of the doctor's thresholds (name: value; docs/doctor.md lists them), over the defaults")
	fs.Func("threshold", "set one of the doctor's thresholds, name=value, e.g. kv_watermark=0.85 (repeatable; applied after --thresholds)", func(s string) error {
		var probe doctor.Thresholds // the name and number, refused at once
		if err := probe.SetText(s); err != nil {
			return err
		}
		t.sets = append(t.sets, s)
		return nil
	})
}

// thresholds are the defaults, the file's, then the flags'.
func (t *thresholdFlags) thresholds() (doctor.Thresholds, error) {
	th := doctor.DefaultThresholds()
	if t.file != "" {
		f, err := os.Open(t.file)
		if err != nil {
			return th, fmt.Errorf("--thresholds: %w", err)
		}
		defer f.Close()
		if th, err = doctor.ReadThresholds(f, th); err != nil {
			return th, fmt.Errorf("--thresholds %s: %w", t.file, err)
		}
	}
	for _, s := range t.sets {
		if err := th.SetText(s); err != nil {
			return th, fmt.Errorf("--threshold: %w", err)
		}
	}
	if err := th.Validate(); err != nil {
		return th, fmt.Errorf("--threshold: %w", err)
	}
	return th, nil
}

// diagnoserFlags make the doctor of doctor and dashboard: its thresholds,
// and the hints a vLLM target's series do not give.
type diagnoserFlags struct {
	thresholdFlags
	hints doctor.Hints
}

// register adds the flags; whose is "target's" or "targets'".
func (d *diagnoserFlags) register(fs *flag.FlagSet, whose string) {
	d.thresholdFlags.register(fs)
	fs.StringVar(&d.hints.GPU, "gpu", "", "the "+whose+" GPU (h100, h200, a100-80g, l40s), for MFU and bandwidth utilisation when the series do not say")
	fs.IntVar(&d.hints.MaxNumSeqs, "max-num-seqs", 0, "the "+whose+" --max-num-seqs, when the series do not say (vLLM's do not)")
	fs.IntVar(&d.hints.MaxNumBatchedTokens, "max-num-batched-tokens", 0, "the "+whose+" --max-num-batched-tokens, when the series do not say")
	fs.StringVar(&d.hints.Quantization, "quantization", "", "the "+whose+" --quantization (fp8): MFU and the roofline against the GPU's FP8 peak, when the series do not say (vLLM's do not)")
}

func (d *diagnoserFlags) diagnoser() (doctor.Diagnoser, error) {
	if g := d.hints.GPU; g != "" {
		if _, err := profiles.LookupHardware(g); err != nil {
			return doctor.Diagnoser{}, fmt.Errorf("--gpu: %w", err)
		}
	}
	if q := d.hints.Quantization; q != "" && !strings.EqualFold(q, "fp8") {
		return doctor.Diagnoser{}, fmt.Errorf("--quantization %s: the doctor knows fp8 weights' peaks (and the model's own type without the flag)", q)
	}
	th, err := d.thresholds()
	if err != nil {
		return doctor.Diagnoser{}, err
	}
	return doctor.NewDiagnoser(th, d.hints), nil
}
