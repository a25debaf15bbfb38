package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/nondet-sandbox/nondet-sandbox/internal/testenv"
)

// TestSARIFLocationsWhateverTheTarget: code scanning places a finding at
// the same file, relative to the repository root (or the working
// directory), whether the target was relative, absolute, reached through
// ../ or one of two targets; and each result has a partial fingerprint.
func TestSARIFLocationsWhateverTheTarget(t *testing.T) {
	testenv.Integration(t)
	abs, err := filepath.Abs("../../fixtures/known.py")
	if err != nil {
		t.Fatal(err)
	}
	want, err := filepath.Rel(locationBase(), abs)
	if err != nil {
		t.Fatal(err)
	}
	want = filepath.ToSlash(want)
	for name, args := range map[string][]string{
		"relative": {"../../fixtures/known.py::epoch_year"},
		"absolute": {abs + "::epoch_year"},
		"two":      {"../../fixtures/known.py::epoch_year", "../../fixtures/causes.py::from_timezone"},
	} {
		t.Run(name, func(t *testing.T) {
			opts := testOptions(t, "host", 6)
			opts.format = "sarif"
			var out, errOut bytes.Buffer
			if err := runRun(context.Background(), opts, args, &out, &errOut); !errors.Is(err, errFindings) {
				t.Fatalf("%v\n%s", err, errOut.String())
			}
			var doc struct {
				Runs []struct {
					Results []struct {
						Locations []struct {
							PhysicalLocation struct {
								ArtifactLocation struct {
									URI string `json:"uri"`
								} `json:"artifactLocation"`
							} `json:"physicalLocation"`
						} `json:"locations"`
						PartialFingerprints map[string]string `json:"partialFingerprints"`
					} `json:"results"`
				} `json:"runs"`
			}
			if err := json.Unmarshal(out.Bytes(), &doc); err != nil {
				t.Fatal(err)
			}
			found := false
			for _, r := range doc.Runs[0].Results {
				uri := r.Locations[0].PhysicalLocation.ArtifactLocation.URI
				if _, err := os.Stat(filepath.Join(locationBase(), filepath.FromSlash(uri))); err != nil {
					t.Errorf("location %q is not a file under %s", uri, locationBase())
				}
				found = found || uri == want
				if len(r.PartialFingerprints) == 0 {
					t.Errorf("%s: no partial fingerprint", uri)
				}
			}
			if !found {
				t.Errorf("no result located at %s: %s", want, out.String())
			}
		})
	}
}
