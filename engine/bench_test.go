package engine_test

import (
	"context"
	"testing"

	"github.com/nondet-sandbox/nondet-sandbox/engine"
	"github.com/nondet-sandbox/nondet-sandbox/internal/testenv"
	"github.com/nondet-sandbox/nondet-sandbox/report"
	"github.com/nondet-sandbox/nondet-sandbox/sandbox/host"
)

// BenchmarkFixtureScan scans the labelled fixtures on the host runtime and
// reports interpreters started and calls per second beside the wall time.
func BenchmarkFixtureScan(b *testing.B) {
	tg, err := engine.ParseTarget("../fixtures/known.py")
	if err != nil {
		b.Fatal(err)
	}
	opts := engine.Options{Runtime: host.New(), Python: testenv.Python(b), Runs: 3, Jobs: 2, Seed: 1, CacheDir: cacheDir}
	var rep *report.Report
	b.ResetTimer()
	for range b.N {
		if rep, err = engine.Scan(context.Background(), opts, []engine.Target{tg}); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(rep.Processes), "interpreters/op")
	b.ReportMetric(float64(rep.Calls)*float64(b.N)/b.Elapsed().Seconds(), "calls/s")
}
