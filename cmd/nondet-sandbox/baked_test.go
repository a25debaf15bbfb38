package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8s "k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/nondet-sandbox/nondet-sandbox/report"
)

// TestBakedImageSendsNothing bakes the Job test's tree into an image
// (image bake), imports it into the single-node cluster of
// scripts/start-kubernetes, and scans the tree with --baked: the report
// is the one of the same scan that sends each pod the tree. A tree with
// one more file is refused, with a message that says what to do.
func TestBakedImageSendsNothing(t *testing.T) {
	kubeconfig, sock := startedCluster(t, "the baked image test", "the baked image")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	// A namespace of its own: the kubernetes package's tests, which may
	// run meanwhile, count every scan's pods in theirs as left behind.
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	cs, err := k8s.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	const ns = "nondet-sandbox-baked-test"
	awaitNamespaceGone(ctx, t, cs, ns)
	if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	defer cs.CoreV1().Namespaces().Delete(context.Background(), ns, metav1.DeleteOptions{})
	here := t.TempDir()
	if err := os.CopyFS(filepath.Join(here, "src"), os.DirFS(jobTree)); err != nil {
		t.Fatal(err)
	}
	t.Chdir(here)

	var out, errOut bytes.Buffer
	if err := runImageBake(ctx, bakeOptions{run: testOptions(t, "kubernetes", 7)}, []string{"src"}, &out, &errOut); err != nil {
		t.Fatalf("image bake: %v\n%s", err, errOut.String())
	}
	image := strings.TrimSpace(out.String())
	if !strings.HasPrefix(image, "nondet-sandbox-baked:") || len(image) != len("nondet-sandbox-baked:")+12 {
		t.Fatalf("image bake named %q, not the files' digest", image)
	}
	saved := filepath.Join(t.TempDir(), "image.tar")
	for _, c := range [][]string{{"docker", "save", "-o", saved, image}, {"ctr", "--address", sock, "-n", "k8s.io", "images", "import", saved}} {
		if b, err := exec.CommandContext(ctx, c[0], c[1:]...).CombinedOutput(); err != nil {
			t.Fatalf("%s: %v\n%s", strings.Join(c, " "), err, b)
		}
	}

	scan := func(baked bool) (*report.Report, error, string) {
		opts := testOptions(t, "kubernetes", 7)
		opts.kubeconfig, opts.namespace, opts.baked = kubeconfig, ns, baked
		if baked {
			opts.image = image
		}
		var out, errOut bytes.Buffer
		err := runRun(ctx, opts, []string{"src"}, &out, &errOut)
		if err != nil && !errors.Is(err, errFindings) {
			return nil, err, errOut.String()
		}
		var r report.Report
		if err := json.Unmarshal(out.Bytes(), &r); err != nil {
			t.Fatalf("baked %v: %v\n%s", baked, err, errOut.String())
		}
		return &r, nil, errOut.String()
	}
	start := time.Now()
	baked, err, stderr := scan(true)
	if err != nil {
		t.Fatalf("the baked scan: %v\n%s", err, stderr)
	}
	bakedTook := time.Since(start)
	start = time.Now()
	sent, err, stderr := scan(false)
	if err != nil {
		t.Fatalf("the scan that sends the tree: %v\n%s", err, stderr)
	}
	t.Logf("pods: %d baked in %s, %d sent the tree in %s", baked.Processes, bakedTook.Round(time.Second), sent.Processes, time.Since(start).Round(time.Second))
	if baked.Census.Nondeterministic != 2 {
		t.Errorf("the baked scan found %d nondeterministic functions, want 2 (one per file)", baked.Census.Nondeterministic)
	}
	if a, b := unfixable(t, sent), unfixable(t, baked); !bytes.Equal(a, b) {
		t.Errorf("the baked scan's report is not the one of the scan that sends the tree:\n%s", firstDiff(a, b))
	}

	if err := os.WriteFile(filepath.Join("src", "extra.py"), []byte("def extra():\n    return 1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err, stderr := scan(true); err == nil || !strings.Contains(err.Error()+stderr, "does not hold this scan's files") || !strings.Contains(err.Error()+stderr, "image bake") {
		t.Errorf("a tree the image does not hold: %v\n%s", err, stderr)
	}
}
