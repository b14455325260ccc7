package sim

import "github.com/glassbox-llm/glassbox/internal/profiles"

// The profiles the simulator prices steps with live in internal/profiles,
// which the doctor and the planner read too.
type (
	Hardware       = profiles.Hardware
	Device         = profiles.Device
	Calibration    = profiles.Calibration
	Frontend       = profiles.Frontend
	Counters       = profiles.Counters
	Families       = profiles.Families
	FP8Calibration = profiles.FP8Calibration
	Model          = profiles.Model
)

// HardwareNames lists the valid hardware profile names.
func HardwareNames() []string { return profiles.HardwareNames() }

// ModelNames lists the valid model profile names.
func ModelNames() []string { return profiles.ModelNames() }

// LookupHardware returns the named hardware profile.
func LookupHardware(name string) (Hardware, error) { return profiles.LookupHardware(name) }

// LookupModel returns the named model profile, or the one of a Hugging
// Face repository of its shape.
func LookupModel(name string) (Model, error) { return profiles.LookupModel(name) }
