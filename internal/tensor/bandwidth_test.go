package tensor

import "testing"

func TestReadBandwidth(t *testing.T) {
	if _, err := ReadBandwidth(2, 1000, 1); err == nil {
		t.Error("a buffer smaller than 1 MiB was measured")
	}
	bw, err := ReadBandwidth(2, 4<<20, 2)
	if err != nil || !(bw > 0) {
		t.Fatalf("ReadBandwidth = %v, %v", bw, err)
	}
}
