package cuda

import (
	"reflect"
	"testing"
	"unsafe"
)

// TestCLayouts asserts the Go copies of C structs against their headers
// on the 64-bit platforms NVIDIA's Linux libraries run on (LP64: size_t,
// long long and pointers 8 bytes, int and enums 4): each size, and each
// field's offset, as the C compiler lays them out. The numbers are the
// headers' (cublasLt.h, nvml.h), worked out by hand from their
// declarations, which are quoted beside them.
func TestCLayouts(t *testing.T) {
	if unsafe.Sizeof(uintptr(0)) != 8 {
		t.Skip("SKIPPED: NVIDIA's libraries are 64-bit only; this build is 32-bit")
	}
	for _, c := range []struct {
		c      string // the C type
		v      any
		size   uintptr
		fields map[string]uintptr // Go field: its C offset
	}{
		// typedef struct { uint64_t data[8]; } cublasLtMatmulAlgo_t;
		{"cublasLtMatmulAlgo_t", MatmulAlgo{}, 64, map[string]uintptr{"Data": 0}},
		// typedef struct { cublasLtMatmulAlgo_t algo; size_t workspaceSize;
		// cublasStatus_t state; float wavesCount; int reserved[4]; }
		// cublasLtMatmulHeuristicResult_t;
		{"cublasLtMatmulHeuristicResult_t", HeuristicResult{}, 96,
			map[string]uintptr{"Algo": 0, "WorkspaceSize": 64, "State": 72, "WavesCount": 76, "Reserved": 80}},
		// typedef struct nvmlMemory_st { unsigned long long total, free,
		// used; } nvmlMemory_t;
		{"nvmlMemory_t", nvmlMemory{}, 24, map[string]uintptr{"Total": 0, "Free": 8, "Used": 16}},
		// typedef struct nvmlMemory_v2_st { unsigned int version; unsigned
		// long long total, reserved, free, used; } nvmlMemory_v2_t;
		{"nvmlMemory_v2_t", nvmlMemoryV2{}, 40,
			map[string]uintptr{"Version": 0, "Total": 8, "Reserved": 16, "Free": 24, "Used": 32}},
		// typedef struct nvmlUtilization_st { unsigned int gpu, memory; }
		{"nvmlUtilization_t", nvmlUtilization{}, 8, map[string]uintptr{"GPU": 0, "Memory": 4}},
		// typedef struct nvmlPciInfo_st { char busIdLegacy[16]; unsigned int
		// domain, bus, device, pciDeviceId, pciSubSystemId; char busId[32]; }
		{"nvmlPciInfo_t", nvmlPciInfo{}, 68, map[string]uintptr{"BusIDLegacy": 0, "Domain": 16, "Bus": 20, "Device": 24, "PCIDeviceID": 28, "PCISubSystemID": 32, "BusID": 36}},
		// typedef struct nvmlFieldValue_st { unsigned int fieldId, scopeId;
		// long long timestamp, latencyUsec; nvmlValueType_t valueType;
		// nvmlReturn_t nvmlReturn; nvmlValue_t value; } (the union: 8 bytes)
		{"nvmlFieldValue_t", nvmlFieldValue{}, 40,
			map[string]uintptr{"FieldID": 0, "ScopeID": 4, "Timestamp": 8, "Latency": 16, "ValueType": 24, "Return": 28, "Value": 32}},
		// typedef struct { unsigned int version, isSupportedDevice; }
		{"nvmlGpmSupport_t", nvmlGpmSupport{}, 8, map[string]uintptr{"Version": 0, "Supported": 4}},
		// typedef struct { unsigned int metricId; nvmlReturn_t nvmlReturn;
		// double value; struct { char *shortName, *longName, *unit; }
		// metricInfo; } nvmlGpmMetric_t;
		{"nvmlGpmMetric_t", nvmlGpmMetric{}, 40, map[string]uintptr{"ID": 0, "Return": 4, "Value": 8, "Info": 16}},
		// typedef struct { unsigned int version, numMetrics; nvmlGpmSample_t
		// sample1, sample2; nvmlGpmMetric_t metrics[NVML_GPM_METRIC_MAX]; }
		// (sized here for gpmMetricSlots metrics)
		{"nvmlGpmMetricsGet_t", nvmlGpmMetricsGet{}, 24 + 40*gpmMetricSlots,
			map[string]uintptr{"Version": 0, "Num": 4, "Sample1": 8, "Sample2": 16, "Metrics": 24}},
	} {
		typ := reflect.TypeOf(c.v)
		if typ.Size() != c.size {
			t.Errorf("%s: Go's %s is %d bytes, C's %d", c.c, typ.Name(), typ.Size(), c.size)
		}
		for i := range typ.NumField() {
			f := typ.Field(i)
			if f.Name == "_" {
				continue
			}
			if want, ok := c.fields[f.Name]; !ok {
				t.Errorf("%s: Go field %s is not in the test's list", c.c, f.Name)
			} else if f.Offset != want {
				t.Errorf("%s: %s at offset %d, C's at %d", c.c, f.Name, f.Offset, want)
			}
		}
		for name := range c.fields {
			if _, ok := typ.FieldByName(name); !ok {
				t.Errorf("%s: no Go field %s", c.c, name)
			}
		}
	}
	if nvmlMemoryV2Version != 40|2<<24 {
		t.Errorf("nvmlMemory_v2 is %#x, want sizeof(nvmlMemory_v2_t) | 2<<24 = %#x", nvmlMemoryV2Version, 40|2<<24)
	}
}
