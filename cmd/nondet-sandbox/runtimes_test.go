package main

import (
	"bytes"
	"context"
	cryptorand "crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nondet-sandbox/nondet-sandbox/engine"
	"github.com/nondet-sandbox/nondet-sandbox/internal/testenv"
	"github.com/nondet-sandbox/nondet-sandbox/report"
	"github.com/nondet-sandbox/nondet-sandbox/sandbox"
	"github.com/nondet-sandbox/nondet-sandbox/sandbox/docker"
	"github.com/spf13/pflag"
)

// TestFixtureVerdictsSameOnEveryRuntime: the labelled fixtures get the
// same verdicts on docker, oci and embedded (and on the host).
func TestFixtureVerdictsSameOnEveryRuntime(t *testing.T) {
	testenv.Integration(t)
	testenv.NeedRoot(t)
	// Each runtime in a subtest of its own: one that is missing here does
	// not discard the others' comparison.
	verdicts := map[string]map[string]string{}
	// Every registered runtime but rootless, which runs as a user who is
	// not root (sandbox/rootless checks it as uid 65534), and the oci
	// runtime again on gVisor's runsc.
	var runtimes []string
	for _, r := range sandbox.Registrations() {
		if r.Name != "rootless" {
			runtimes = append(runtimes, r.Name)
		}
	}
	for _, rt := range append(runtimes, "runsc") {
		t.Run(rt, func(t *testing.T) {
			name := rt
			if rt == "runsc" { // the oci runtime on gVisor's runsc
				name = "oci"
			}
			opts := testOptions(t, name, 21)
			if rt == "runsc" {
				if opts.ociRuntime = os.Getenv("NONDET_SANDBOX_RUNSC"); opts.ociRuntime == "" {
					opts.ociRuntime = "runsc"
				}
			}
			if rt == "kubernetes" {
				opts.kubeconfig = testenv.Kubeconfig(t)
			}
			opts.smellRuns = 0
			var out, errOut bytes.Buffer
			err := runRun(context.Background(), opts, []string{"../../fixtures/known.py"}, &out, &errOut)
			if rt == "runsc" && err != nil && strings.Contains(err.Error(), "cannot start a sandbox on this host") {
				testenv.HostCannot(t, err.Error())
			}
			if errors.Is(err, engine.ErrRuntime) {
				testenv.Skip(t, rt+" runtime unavailable: "+err.Error())
			}
			if !errors.Is(err, errFindings) {
				t.Fatalf("%s: %v\n%s", rt, err, errOut.String())
			}
			var rep report.Report
			if err := json.Unmarshal(out.Bytes(), &rep); err != nil {
				t.Fatal(err)
			}
			verdicts[rt] = map[string]string{}
			for _, f := range rep.Functions {
				verdicts[rt][f.ID] = f.Verdict
			}
		})
	}
	base := "embedded"
	if verdicts[base] == nil {
		base = "host"
	}
	for id, want := range verdicts[base] {
		for rt, vs := range verdicts {
			if vs[id] != want {
				t.Errorf("%s: %s on %s, %s on %s", id, want, base, vs[id], rt)
			}
		}
	}
	if len(verdicts[base]) != 19 {
		t.Errorf("want 19 functions, got %d", len(verdicts[base]))
	}
}

// TestDockerUnreachable: no engine gives one line that says what to do,
// and exit status 2.
func TestDockerUnreachable(t *testing.T) {
	t.Setenv("DOCKER_HOST", "unix:///nonexistent/docker.sock")
	var opts runOptions
	opts.AddFlags(pflag.NewFlagSet("test", pflag.ContinueOnError))
	opts.format, opts.runs = "text", 3
	opts.runtimeName, opts.jobs, opts.image = "docker", 1, docker.DefaultImage
	err := runRun(context.Background(), opts, []string{"../../fixtures/known.py"}, &bytes.Buffer{}, &bytes.Buffer{})
	if code := exitCode(context.Background(), err); code != 2 {
		t.Fatalf("exit %d, want 2 (%v)", code, err)
	}
	msg := err.Error()
	if strings.Contains(msg, "\n") || !strings.Contains(msg, "cannot reach the Docker engine at unix:///nonexistent/docker.sock") ||
		!strings.Contains(msg, "start it") {
		t.Fatalf("not a one-line error that says what to do: %q", msg)
	}
}

// TestKubernetesTreeOf50MB: a scanned tree of 50 MB (a module and an
// incompressible file beside it) reaches every pod whole: the module's
// function reads the file and raises unless its digest is the one written.
func TestKubernetesTreeOf50MB(t *testing.T) {
	testenv.Integration(t)
	kubeconfig := testenv.Kubeconfig(t)
	dir := t.TempDir()
	os.Chmod(dir, 0o755)
	blob := make([]byte, 50<<20)
	if _, err := cryptorand.Read(blob); err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(blob)
	if err := os.WriteFile(filepath.Join(dir, "blob.bin"), blob, 0o644); err != nil {
		t.Fatal(err)
	}
	src := fmt.Sprintf(`import hashlib, os


def whole():
    with open(os.path.join(os.path.dirname(__file__), "blob.bin"), "rb") as fh:
        data = fh.read()
    if hashlib.sha256(data).hexdigest() != %q:
        raise ValueError("the tree arrived cut or changed")
    return len(data)
`, hex.EncodeToString(sum[:]))
	if err := os.WriteFile(filepath.Join(dir, "big.py"), []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	opts := testOptions(t, "kubernetes", 3)
	opts.kubeconfig, opts.smellRuns = kubeconfig, 0
	var out, errOut bytes.Buffer
	err := runRun(context.Background(), opts, []string{dir}, &out, &errOut)
	if errors.Is(err, engine.ErrRuntime) {
		testenv.Skip(t, "kubernetes runtime unavailable: "+err.Error())
	}
	if err != nil {
		t.Fatalf("%v\n%s", err, errOut.String())
	}
	var rep report.Report
	if err := json.Unmarshal(out.Bytes(), &rep); err != nil {
		t.Fatal(err)
	}
	f := rep.Function("big.py::whole")
	if f == nil || f.Verdict != engine.VerdictDeterministic || f.Rungs.Answered == 0 || f.Rungs.Raised != 0 {
		t.Fatalf("big.py::whole: %+v", f)
	}
}
