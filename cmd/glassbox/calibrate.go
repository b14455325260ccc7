package main

import (
	"cmp"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/glassbox-llm/glassbox/internal/calibrate"
	"github.com/glassbox-llm/glassbox/internal/profiles"
)

// runCalibrate runs 'glassbox simulate calibrate'.
func runCalibrate(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("simulate calibrate", flag.ContinueOnError)
	fs.SetOutput(stderr)
	runsDir := fs.String("runs", "", "a directory of measured runs (see docs/simulator.md: workload.yaml, server.args, result.json and run.yaml in each)")
	var probes listFlag
	fs.Var(&probes, "from-probe", "a GPU probe's measurements (scripts/gpu-probe.py's output, or the reference's h200-*.json); repeat to merge files: fits the hardware profile's step terms and counters")
	reference := fs.String("reference", "", "reference/calibration/README.md: take its table A (vLLM 0.15.1 on H100) as the runs")
	table := fs.String("table", "a", "with --reference: a (the request-level H100 runs), a-prime (table A′'s runs on --sim-hardware's GPU), or stages (the first round's stage-level runs, which a fit of A never sees)")
	scoreboard := fs.Bool("scoreboard", false, "with --reference: replay every experiment of tables A and A′ on its GPU's built-in profile and print the scoreboard (docs/simulator.md's)")
	hardware := fs.String("sim-hardware", "", "the profile to start from (default: h100; with --from-probe, the profile of the GPU the probe names)")
	from := fs.String("sim-calibration", "", "start from this profile file instead")
	iterations := fs.Int("iterations", 4, "replay-and-fit rounds; 0 only replays and prints the errors")
	output := fs.String("output", "", "write the fitted profile here (load it with --sim-calibration)")
	terms := fs.String("terms", "", "the terms to fit, comma-separated (default every one: "+strings.Join(calibrate.Terms, ", ")+"); the others keep the starting profile's values")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if len(probes) > 0 {
		if *runsDir != "" || *reference != "" || *from != "" {
			return errors.New("simulate calibrate: --from-probe fits a GPU's steps; --runs, --reference and --sim-calibration fit served runs: give one kind")
		}
		return calibrateFromProbe(probes, *hardware, *output, stdout)
	}
	if fs.NArg() > 0 || (*runsDir == "") == (*reference == "") {
		return errors.New("simulate calibrate: give --runs DIR, --reference README.md or --from-probe FILE")
	}
	if *scoreboard {
		others := false
		fs.Visit(func(f *flag.Flag) { others = others || (f.Name != "scoreboard" && f.Name != "reference") })
		if *reference == "" || others {
			return errors.New("simulate calibrate: --scoreboard takes --reference alone: it replays every experiment on its own GPU's built-in profile")
		}
		return writeScoreboard(ctx, *reference, stdout)
	}
	hw, err := profiles.LookupHardware(cmp.Or(*hardware, "h100"))
	if err != nil {
		return err
	}
	var runs []calibrate.Run
	if *runsDir != "" {
		runs, err = calibrate.ReadRuns(*runsDir)
	} else {
		var fh *os.File
		if fh, err = os.Open(*reference); err == nil {
			switch *table {
			case "a":
				runs, err = calibrate.ReadTable(fh)
			case "a-prime":
				runs, err = primeRuns(fh, hw.Name, stderr)
			case "stages":
				runs, err = calibrate.ReadStageTable(fh)
			default:
				err = fmt.Errorf("--table %q: want a, a-prime or stages", *table)
			}
			fh.Close()
		}
	}
	if err != nil {
		return err
	}
	start := hw.Calib
	if *from != "" {
		name, c, err := calibrate.ReadProfileFile(*from)
		if err != nil {
			return err
		}
		hw.Name, start = name, c
	}
	for i := range runs {
		runs[i].Server.Hardware = hw.Name
	}
	if *iterations == 0 {
		preds, err := calibrate.Evaluate(ctx, runs, start)
		if err != nil {
			return err
		}
		fmt.Fprintf(stdout, "The %s profile replaying %d measured runs:\n\n", hw.Name, len(runs))
		calibrate.WriteTable(stdout, preds)
		fmt.Fprintln(stdout)
		calibrate.WriteSpeed(stdout, preds)
		return nil
	}
	fitted, before, after, err := calibrate.Fit(ctx, runs, start, calibrate.FitOptions{Iterations: *iterations, Terms: splitList(*terms),
		Progress: func(round int, p []calibrate.Prediction) {
			s := calibrate.Summarize(p)
			fmt.Fprintf(stderr, "round %d: mean absolute error TTFT %.1f%%, E2E %.1f%%, TPOT %.1f%%\n", round, 100*s.MeanAbs.TTFT, 100*s.MeanAbs.E2E, 100*s.MeanAbs.TPOT)
		}})
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "Before (the %s profile as it was):\n\n", hw.Name)
	calibrate.WriteTable(stdout, before)
	fmt.Fprintf(stdout, "\nAfter %d rounds of fitting:\n\n", *iterations)
	calibrate.WriteTable(stdout, after)
	fmt.Fprintln(stdout, "\nFitted terms (the rest of the profile is kept):")
	calibrate.WriteTerms(stdout, start, fitted)
	calibrate.WriteSpeed(stdout, after)
	if *output != "" {
		fh, err := os.Create(*output)
		if err != nil {
			return err
		}
		note := fmt.Sprintf("fitted by glassbox %s simulate calibrate on %d runs", version, len(runs))
		if err := errors.Join(calibrate.WriteProfile(fh, hw.Name, note, fitted), fh.Close()); err != nil {
			return err
		}
		fmt.Fprintf(stdout, "Profile written to %s (use it with --sim-hardware %s --sim-calibration %s)\n", *output, hw.Name, *output)
	}
	return nil
}

// calibrateFromProbe fits a hardware profile to a GPU probe's files and
// writes it where --output says.
func calibrateFromProbe(paths []string, hardware, output string, stdout io.Writer) error {
	p, err := calibrate.ReadProbe(paths...)
	if err != nil {
		return err
	}
	if hardware == "" {
		h, ok := profiles.HardwareByDeviceName(p.GPU)
		if !ok {
			return fmt.Errorf("simulate calibrate: the probe measured %q, which no profile names: give --sim-hardware (one of %s) to fit that profile's terms to it",
				p.GPU, strings.Join(profiles.HardwareNames(), ", "))
		}
		hardware = h.Name
	}
	hw, err := profiles.LookupHardware(hardware)
	if err != nil {
		return err
	}
	f, err := calibrate.FitProbe(p, hw)
	if err != nil {
		return err
	}
	calibrate.WriteProbeReport(stdout, f)
	if output == "" {
		return nil
	}
	fh, err := os.Create(output)
	if err != nil {
		return err
	}
	note := fmt.Sprintf("fitted by glassbox %s simulate calibrate --from-probe %s", version, strings.Join(paths, " "))
	if err := errors.Join(calibrate.WriteProfile(fh, hw.Name, note, f.Hardware.Calib), fh.Close()); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "\nProfile written to %s (use it with --sim-hardware %s --sim-calibration %s)\n", output, hw.Name, output)
	return nil
}

// splitList is a comma-separated flag's values, none for "".
func splitList(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(s, ",")
}

// primeRuns are table A′'s runs on the GPU of the hardware profile, the
// experiments it cannot replay named on stderr.
func primeRuns(r io.Reader, hardware string, stderr io.Writer) ([]calibrate.Run, error) {
	all, not, err := calibrate.ReadTablePrime(r)
	if err != nil {
		return nil, err
	}
	for _, e := range not {
		if e.Run.Server.Hardware == hardware {
			fmt.Fprintf(stderr, "exp %d (%s) is not simulated: %s\n", e.ID, e.Model, e.NotSimulated)
		}
	}
	var runs []calibrate.Run
	for _, r := range all {
		if r.Server.Hardware == hardware {
			runs = append(runs, r)
		}
	}
	if len(runs) == 0 {
		return nil, fmt.Errorf("table A′ has no run the simulator replays on %s", hardware)
	}
	return runs, nil
}

// writeScoreboard prints the scoreboard of the reference's tables A and A′.
func writeScoreboard(ctx context.Context, reference string, stdout io.Writer) error {
	fh, err := os.Open(reference)
	if err != nil {
		return err
	}
	exps, err := calibrate.ReadExperiments(fh)
	fh.Close()
	if err != nil {
		return err
	}
	scores, err := calibrate.Scoreboard(ctx, exps)
	if err != nil {
		return err
	}
	calibrate.WriteScoreboard(stdout, scores)
	return nil
}
