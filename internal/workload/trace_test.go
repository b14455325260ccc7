package workload

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

const azure2023 = `TIMESTAMP,ContextTokens,GeneratedTokens
2023-11-16 18:15:46.6805900,374,44
2023-11-16 18:15:50.9951690,396,109
2023-11-16 18:15:51.2224670,879,55
`

const azure2024 = `TIMESTAMP,ContextTokens,GeneratedTokens
2024-05-10 00:00:00.009930+00:00,2162,5
2024-05-10 00:00:01+00:00,76,15
2024-05-10 00:00:01.5Z,70,1
`

const burst = `Timestamp,Model,Request tokens,Response tokens,Total tokens,Log Type
5,ChatGPT,472,18,490,Conversation log
45,GPT-4,1087,0,1087,Conversation log
47,GPT-4,417,24,441,API log
`

// TestTraces: the Azure traces of both years and BurstGPT's, timed from
// their first request.
func TestTraces(t *testing.T) {
	for _, tc := range []struct {
		name, text, format string
		at                 []time.Duration
		in                 []int
	}{
		{"azure 2023", azure2023, TraceAzure, []time.Duration{0, 4314579000, 4541877000}, []int{374, 396, 879}},
		{"azure 2024", azure2024, TraceAzure, []time.Duration{0, 990070000, 1490070000}, []int{2162, 76, 70}},
		{"burstgpt", burst, TraceBurstGPT, []time.Duration{0, 42 * time.Second}, []int{472, 417}},
		// Rows out of order are sent in time order, from the earliest.
		{"azure, unsorted", "TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 18:15:50.9951690,396,109\n2023-11-16 18:15:46.6805900,374,44\n2023-11-16 18:15:51.2224670,879,55\n",
			TraceAzure, []time.Duration{0, 4314579000, 4541877000}, []int{374, 396, 879}},
	} {
		path := filepath.Join(t.TempDir(), "t.csv")
		os.WriteFile(path, []byte(tc.text), 0o644)
		if f, ok := TraceFormatOf(path); !ok || f != tc.format {
			t.Errorf("%s: detected %q", tc.name, f)
		}
		got, err := ReadTrace(path, tc.format)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if len(got) != len(tc.at) {
			t.Fatalf("%s: %d entries", tc.name, len(got))
		}
		for i := range got {
			if got[i].At != tc.at[i] || got[i].Input != tc.in[i] {
				t.Errorf("%s[%d]: %v %d, want %v %d", tc.name, i, got[i].At, got[i].Input, tc.at[i], tc.in[i])
			}
		}
	}
	for _, bad := range []string{"TIMESTAMP,a,b\n2023-13-45 99:00:00,1,2\n", "TIMESTAMP,a,b\n2023-11-16 18:15:46,x,2\n", "2023-11-16 18:15:46,1\n"} {
		if _, err := parseAzureTrace(strings.NewReader(bad)); err == nil || !strings.Contains(err.Error(), "line") {
			t.Errorf("%q: %v, want an error naming the line", bad, err)
		}
	}
}

func FuzzParseTraces(f *testing.F) {
	f.Add(azure2023)
	f.Add(burst)
	f.Fuzz(func(t *testing.T, s string) {
		for _, e := range must(parseAzureTrace(strings.NewReader(s))) {
			if e.Input < 0 || e.Output < 0 {
				t.Fatal("negative count")
			}
		}
		_, _ = parseBurstGPT(strings.NewReader(s))
	})
}

func must[T any](v T, _ error) T { return v }
