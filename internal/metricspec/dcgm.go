package metricspec

// DCGMField is one dcgm-exporter counter: its DCGM field id (families are
// written in id order, as dcgm-exporter does), name, Prometheus type and
// HELP text. The rows are NVIDIA dcgm-exporter's etc/default-counters.csv
// (release 4.5.3-4.8.2), HELP as that file has it after the exporter trims
// spaces; SM_ACTIVE and SM_OCCUPANCY are commented out there (a fleet
// enables them with its own counters file) but glassbox exports them, since
// "is the GPU busy" is what they answer. A real exporter also writes
// DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL; the simulator has no NVLink counters
// and leaves it out, as a GPU that reports it blank does.
type DCGMField struct {
	ID         int
	Name, Type string
	Help       string
	Float      bool // DCGM_FT_DOUBLE: printed with six decimals
}

const (
	DCGMSMClock          = "DCGM_FI_DEV_SM_CLOCK"
	DCGMMemClock         = "DCGM_FI_DEV_MEM_CLOCK"
	DCGMMemoryTemp       = "DCGM_FI_DEV_MEMORY_TEMP"
	DCGMGPUTemp          = "DCGM_FI_DEV_GPU_TEMP"
	DCGMPowerUsage       = "DCGM_FI_DEV_POWER_USAGE"
	DCGMTotalEnergy      = "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION"
	DCGMPCIeReplay       = "DCGM_FI_DEV_PCIE_REPLAY_COUNTER"
	DCGMGPUUtil          = "DCGM_FI_DEV_GPU_UTIL"
	DCGMMemCopyUtil      = "DCGM_FI_DEV_MEM_COPY_UTIL"
	DCGMEncUtil          = "DCGM_FI_DEV_ENC_UTIL"
	DCGMDecUtil          = "DCGM_FI_DEV_DEC_UTIL"
	DCGMXIDErrors        = "DCGM_FI_DEV_XID_ERRORS"
	DCGMFBFree           = "DCGM_FI_DEV_FB_FREE"
	DCGMFBUsed           = "DCGM_FI_DEV_FB_USED"
	DCGMFBReserved       = "DCGM_FI_DEV_FB_RESERVED"
	DCGMUncorrectedRows  = "DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS"
	DCGMCorrectedRows    = "DCGM_FI_DEV_CORRECTABLE_REMAPPED_ROWS"
	DCGMRowRemapFailure  = "DCGM_FI_DEV_ROW_REMAP_FAILURE"
	DCGMVGPULicense      = "DCGM_FI_DEV_VGPU_LICENSE_STATUS"
	DCGMGREngineActive   = "DCGM_FI_PROF_GR_ENGINE_ACTIVE"
	DCGMSMActive         = "DCGM_FI_PROF_SM_ACTIVE"
	DCGMSMOccupancy      = "DCGM_FI_PROF_SM_OCCUPANCY"
	DCGMTensorActive     = "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE"
	DCGMDRAMActive       = "DCGM_FI_PROF_DRAM_ACTIVE"
	DCGMPCIeTxBytes      = "DCGM_FI_PROF_PCIE_TX_BYTES"
	DCGMPCIeRxBytes      = "DCGM_FI_PROF_PCIE_RX_BYTES"
	DCGMDriverVersionKey = "DCGM_FI_DRIVER_VERSION"
)

var dcgmFields = []DCGMField{
	{100, DCGMSMClock, "gauge", "SM clock frequency (in MHz).", false},
	{101, DCGMMemClock, "gauge", "Memory clock frequency (in MHz).", false},
	{140, DCGMMemoryTemp, "gauge", "Memory temperature (in C).", false},
	{150, DCGMGPUTemp, "gauge", "GPU temperature (in C).", false},
	{155, DCGMPowerUsage, "gauge", "Power draw (in W).", true},
	{156, DCGMTotalEnergy, "counter", "Total energy consumption since boot (in mJ).", false},
	{202, DCGMPCIeReplay, "counter", "Total number of PCIe retries.", false},
	{203, DCGMGPUUtil, "gauge", "GPU utilization (in %).", false},
	{204, DCGMMemCopyUtil, "gauge", "Memory utilization (in %).", false},
	{206, DCGMEncUtil, "gauge", "Encoder utilization (in %).", false},
	{207, DCGMDecUtil, "gauge", "Decoder utilization (in %).", false},
	{230, DCGMXIDErrors, "gauge", "Value of the last XID error encountered.", false},
	{251, DCGMFBFree, "gauge", "Framebuffer memory free (in MiB).", false},
	{252, DCGMFBUsed, "gauge", "Framebuffer memory used (in MiB).", false},
	{253, DCGMFBReserved, "gauge", "Framebuffer memory reserved (in MiB).", false},
	{393, DCGMUncorrectedRows, "counter", "Number of remapped rows for uncorrectable errors", false},
	{394, DCGMCorrectedRows, "counter", "Number of remapped rows for correctable errors", false},
	{395, DCGMRowRemapFailure, "gauge", "Whether remapping of rows has failed", false},
	{526, DCGMVGPULicense, "gauge", "vGPU License status", false},
	{1001, DCGMGREngineActive, "gauge", "Ratio of time the graphics engine is active.", true},
	{1002, DCGMSMActive, "gauge", "The ratio of cycles an SM has at least 1 warp assigned.", true},
	{1003, DCGMSMOccupancy, "gauge", "The ratio of number of warps resident on an SM.", true},
	{1004, DCGMTensorActive, "gauge", "Ratio of cycles the tensor (HMMA) pipe is active.", true},
	{1005, DCGMDRAMActive, "gauge", "Ratio of cycles the device memory interface is active sending or receiving data.", true},
	{1009, DCGMPCIeTxBytes, "gauge", "The rate of data transmitted over the PCIe bus - including both protocol headers and data payloads - in bytes per second.", false},
	{1010, DCGMPCIeRxBytes, "gauge", "The rate of data received over the PCIe bus - including both protocol headers and data payloads - in bytes per second.", false},
}

// DCGMFields lists the simulated dcgm-exporter's families, in the order
// it writes them.
func DCGMFields() []DCGMField { return append([]DCGMField(nil), dcgmFields...) }
