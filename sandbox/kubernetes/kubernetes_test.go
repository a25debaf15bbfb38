package kubernetes

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/nondet-sandbox/nondet-sandbox/engine/scansuite"
	"github.com/nondet-sandbox/nondet-sandbox/internal/testenv"
	"github.com/nondet-sandbox/nondet-sandbox/sandbox"
	"github.com/nondet-sandbox/nondet-sandbox/sandbox/conformance"
)

func newRuntime(t *testing.T) *Runtime {
	t.Helper()
	rt, err := New(context.Background(), Options{Kubeconfig: testenv.Kubeconfig(t)})
	if err != nil {
		testenv.Skip(t, "kubernetes runtime unavailable: "+err.Error())
	}
	return rt
}

func leftovers(rt *Runtime) func() []string {
	return func() []string {
		out, _ := rt.Resources(context.Background(), "")
		return out
	}
}

// TestContract checks each promise of the runtime interface on a real
// cluster (scripts/start-kubernetes in CI).
func TestContract(t *testing.T) {
	rt := newRuntime(t)
	conformance.Contract(t, rt, leftovers(rt))
}

// TestConformance runs the hostile fixtures in pods.
func TestConformance(t *testing.T) {
	rt := newRuntime(t)
	scansuite.Run(t, scansuite.Env{Runtime: rt, Python: "python3", HostileDir: "../../fixtures/hostile", Leftovers: leftovers(rt)})
}

// TestIntegrity: a hostile module beside an honest one changes none of the
// honest module's verdicts, in pods too: the techniques that go for the
// record channel, which is the pod's log here (the whole suite takes
// longer than the rest of the tests together at a pod per interpreter).
func TestIntegrity(t *testing.T) {
	scansuite.Integrity(t, newRuntime(t), "python3", "../../fixtures/integrity", "forge_channel", "fd_scribble", "signal_worker")
}

// TestDoctorPosture: what a probe sees from inside a pod: not root, no
// capabilities, no_new_privs, seccomp, a read-only root, its CPU quota.
func TestDoctorPosture(t *testing.T) {
	scansuite.Posture(t, newRuntime(t), "python3", scansuite.Expect{CPUQuota: true, Unvaried: []sandbox.Condition{sandbox.CPUs}})
}

// TestNetworkRefusalIsOneLine: a worker that found a network and refused
// (its exit status) fails the job with one line that names what the
// cluster must provide.
func TestNetworkRefusalIsOneLine(t *testing.T) {
	rt := newRuntime(t)
	scratch := t.TempDir()
	sess, err := rt.Begin(context.Background(), sandbox.Scan{ID: "feedf00d", Scratch: scratch, Jobs: 1, Limits: sandbox.Limits{MemoryBytes: 128 << 20}})
	if err != nil {
		t.Fatal(err)
	}
	defer sess.End(context.Background())
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	_, err = sess.Run(context.Background(), &sandbox.Job{
		ID: "nondet-sandbox-feedf00d-net", Argv: []string{"/bin/sh", "-c", "exit 86"}, Env: []string{"PATH=/usr/bin:/bin"},
		Dir: "/tmp", Records: w, Stdout: io.Discard, Stderr: io.Discard, Scratch: scratch,
		Cond: sandbox.Conditions{UID: sandbox.ProbeUIDs[0], GID: sandbox.ProbeUIDs[0], Umask: 0o022, Home: "/home/probe"},
	})
	if !errors.Is(err, sandbox.ErrNetwork) || strings.Contains(err.Error(), "\n") || !strings.Contains(err.Error(), "NetworkPolicy") {
		t.Fatalf("got %v; want one line naming what the cluster must provide", err)
	}
}

// TestPodSpecIsThePolicy: the sandbox policy and the run's conditions, as
// the pod spec says them.
func TestPodSpecIsThePolicy(t *testing.T) {
	s := &session{Runtime: &Runtime{opts: Options{Image: DefaultImage, PullPolicy: corev1.PullNever, RuntimeClass: "gvisor"}}, scan: sandbox.Scan{ID: "abcd"}}
	job := &sandbox.Job{
		ID: "nondet-sandbox-abcd-s0-r1-7", Argv: []string{"python3", "-B", "/nondet/worker.py", "probe"},
		Env: []string{"PATH=/usr/bin:/bin", "HOME=/home/probe-b", "TZ=UTC0"}, Dir: "/tmp/work",
		Cond:   sandbox.Conditions{Hostname: "probe-b", UID: 61001, GID: 61001, Umask: 0o077, Home: "/home/probe-b", PidFloor: 30},
		Limits: sandbox.Limits{MemoryBytes: 1 << 30, CPUs: 0.5, TmpfsBytes: 32 << 20},
	}
	tr := &tree{binds: []sandbox.Bind{{Source: "/x", Target: "/nondet"}, {Source: "/y", Target: "/scan/0"}}, room: 20 << 20}
	p := s.podSpec(podName(job.ID), job, tr, 1234)
	spec := p.Spec
	if p.Labels[ScanLabel] != "abcd" || p.Name != "nondet-sandbox-abcd-s0-r1-7" {
		t.Errorf("name %q labels %v", p.Name, p.Labels)
	}
	if *spec.AutomountServiceAccountToken || *spec.EnableServiceLinks || spec.Hostname != "probe-b" ||
		spec.RestartPolicy != corev1.RestartPolicyNever || spec.ActiveDeadlineSeconds == nil || *spec.RuntimeClassName != "gvisor" {
		t.Errorf("pod-level policy: %+v", spec)
	}
	if sc := spec.SecurityContext; *sc.RunAsUser != 61001 || *sc.RunAsGroup != 61001 || !*sc.RunAsNonRoot || sc.SeccompProfile.Type != corev1.SeccompProfileTypeRuntimeDefault {
		t.Errorf("pod security context %+v", sc)
	}
	for _, c := range append(spec.InitContainers, spec.Containers...) {
		sc := c.SecurityContext
		if !*sc.ReadOnlyRootFilesystem || *sc.AllowPrivilegeEscalation || !slices.Equal(sc.Capabilities.Drop, []corev1.Capability{"ALL"}) ||
			*sc.RunAsUser != 61001 || !*sc.RunAsNonRoot || c.ImagePullPolicy != corev1.PullNever {
			t.Errorf("container %s: %+v", c.Name, sc)
		}
		if m := c.Resources.Limits.Memory().Value(); m != 1<<30 {
			t.Errorf("container %s memory limit %d", c.Name, m)
		}
	}
	probe := spec.Containers[0]
	if cpu := probe.Resources.Limits.Cpu().MilliValue(); cpu != 500 {
		t.Errorf("cpu limit %dm", cpu)
	}
	if len(probe.Env) != 0 || !slices.Contains(probe.Command, "HOME=/home/probe-b") || !slices.Contains(probe.Command, "/usr/bin/env") {
		t.Errorf("the environment is not exactly the job's: env %v, command %v", probe.Env, probe.Command)
	}
	if !slices.Contains(probe.Command, "$$1") && !strings.Contains(strings.Join(probe.Command, " "), `umask "$$1"`) {
		t.Errorf("the shim's $ are not escaped for the kubelet: %v", probe.Command)
	}
	if !slices.Contains(probe.Command, "0077") || !slices.Contains(probe.Command, "30") || !slices.Contains(probe.Command, "/tmp/work") || !slices.Contains(probe.Command, "1234") {
		t.Errorf("umask, pid floor or working directory missing from %v", probe.Command)
	}
	mounts := map[string]corev1.VolumeMount{}
	for _, m := range probe.VolumeMounts {
		mounts[m.MountPath] = m
	}
	if m := mounts["/scan/0"]; !m.ReadOnly || m.SubPath != "b1" || m.Name != "tree" {
		t.Errorf("the scanned tree is not read-only from the unpacked tar: %+v", m)
	}
	if _, ok := mounts["/tmp"]; !ok {
		t.Error("no /tmp")
	}
	if _, ok := mounts["/home/probe-b"]; !ok {
		t.Error("no HOME")
	}
	for _, v := range spec.Volumes {
		if v.EmptyDir == nil || v.EmptyDir.Medium != corev1.StorageMediumMemory || v.EmptyDir.SizeLimit == nil {
			t.Errorf("volume %s is not a size-limited memory emptyDir", v.Name)
		}
	}
}

// TestPackLeavesOutWhatIsMasked: the tree's tar holds each bind under its
// own folder, readable, without the hidden entries the engine masks.
func TestPackLeavesOutWhatIsMasked(t *testing.T) {
	dir := t.TempDir()
	for name, body := range map[string]string{"pkg/mod.py": "x = 1\n", ".ssh/id_rsa": "secret", "top.py": ""} {
		p := filepath.Join(dir, name)
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	os.Symlink("pkg/mod.py", filepath.Join(dir, "link.py"))
	tr, err := pack([]sandbox.Bind{{Source: dir, Target: "/scan/0"}}, []sandbox.Mask{{Target: "/scan/0/.ssh", Dir: true}})
	if err != nil {
		t.Fatal(err)
	}
	zr, err := gzip.NewReader(bytes.NewReader(tr.data))
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]*tar.Header{}
	r := tar.NewReader(zr)
	for {
		h, err := r.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		got[h.Name] = h
	}
	if h := got["b0/pkg/mod.py"]; h == nil || h.Mode&0o444 != 0o444 || h.Size != 6 {
		t.Errorf("b0/pkg/mod.py: %+v", h)
	}
	if h := got["b0/link.py"]; h == nil || h.Linkname != "pkg/mod.py" {
		t.Errorf("b0/link.py: %+v", h)
	}
	for name := range got {
		if strings.Contains(name, ".ssh") {
			t.Errorf("masked entry sent: %s", name)
		}
	}
	if tr.room < 16<<20 {
		t.Errorf("room %d", tr.room)
	}
}

func TestPodName(t *testing.T) {
	for _, id := range []string{"nondet-sandbox-ab12-s0-attribute-hash-seed-3", "nondet-sandbox-ab12-" + strings.Repeat("x", 80) + "-1", "A_B:C"} {
		n := podName(id)
		if len(n) > 63 || strings.Trim(n, "abcdefghijklmnopqrstuvwxyz0123456789-") != "" || strings.HasPrefix(n, "-") || strings.HasSuffix(n, "-") {
			t.Errorf("podName(%q) = %q: not a DNS label", id, n)
		}
	}
	if podName("nondet-sandbox-ab12-"+strings.Repeat("x", 80)+"-1") == podName("nondet-sandbox-ab12-"+strings.Repeat("x", 80)+"-2") {
		t.Error("two long ids, one name")
	}
}

// TestBakedPodSpecSendsNothing: with a baked image the pod has no init
// container and no tree volume; its command checks the image's digest
// before the shim, and the digest is the tree's.
func TestBakedPodSpecSendsNothing(t *testing.T) {
	s := &session{Runtime: &Runtime{opts: Options{Image: "baked:1", Baked: true}}, scan: sandbox.Scan{ID: "abcd"}}
	job := &sandbox.Job{ID: "nondet-sandbox-abcd-s0-r0-1", Argv: []string{"python3", "-B", "/nondet/worker.py", "probe"},
		Cond: sandbox.Conditions{UID: 61000, GID: 61000, Umask: 0o022, Home: "/home/probe"}}
	tr := &tree{binds: []sandbox.Bind{{Source: "/x", Target: "/nondet"}, {Source: "/y", Target: "/scan/0"}}, digest: "d1g35t"}
	spec := s.podSpec(podName(job.ID), job, tr, 10).Spec
	if len(spec.InitContainers) != 0 {
		t.Errorf("init containers: %+v", spec.InitContainers)
	}
	for _, v := range spec.Volumes {
		if v.Name == "tree" {
			t.Errorf("a tree volume: %+v", v)
		}
	}
	for _, m := range spec.Containers[0].VolumeMounts {
		if m.Name == "tree" || strings.HasPrefix(m.MountPath, "/scan") || m.MountPath == "/nondet" {
			t.Errorf("a mount of the tree: %+v", m)
		}
	}
	cmd := spec.Containers[0].Command
	if len(cmd) < 5 || !strings.HasPrefix(cmd[2], `[ "$$(cat `+BakedFile) || cmd[4] != "d1g35t" || cmd[5] != "0022" {
		t.Errorf("the command does not check the digest first: %q", cmd)
	}
	if !strings.Contains(bakedCheck, "exit "+strconv.Itoa(BakedExit)) {
		t.Errorf("the check exits with another status than BakedExit: %q", bakedCheck)
	}
}

// TestDigestNamesTheFilesNotTheirTimes: the digest a baked image holds is
// the one the scan computes; it moves with a file's bytes, a new file and
// a mask, not with a file's time.
func TestDigestNamesTheFilesNotTheirTimes(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) {
		p := filepath.Join(dir, name)
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("pkg/mod.py", "x = 1\n")
	write(".secret/key", "k")
	binds := []sandbox.Bind{{Source: dir, Target: "/scan/0"}}
	masks := []sandbox.Mask{{Target: "/scan/0/.secret", Dir: true}}
	digest := func() string {
		d, err := Digest(binds, masks)
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	first := digest()
	var ctx bytes.Buffer
	baked, err := BakeContext(&ctx, "base:1", binds, masks)
	if err != nil || baked != first {
		t.Fatalf("the build context's digest %s (%v), the scan's %s", baked, err, first)
	}
	names := map[string]string{}
	r := tar.NewReader(&ctx)
	for {
		h, err := r.Next()
		if err != nil {
			break
		}
		b, _ := io.ReadAll(r)
		names[h.Name] = string(b)
	}
	if names["root/scan/0/pkg/mod.py"] != "x = 1\n" || names["root"+BakedFile] != first+"\n" || !strings.Contains(names["Dockerfile"], "FROM base:1\n") {
		t.Errorf("build context: %v", slices.Sorted(maps.Keys(names)))
	}
	for name := range names {
		if strings.Contains(name, ".secret") {
			t.Errorf("masked entry baked: %s", name)
		}
	}
	later := time.Now().Add(time.Hour)
	os.Chtimes(filepath.Join(dir, "pkg/mod.py"), later, later)
	if d := digest(); d != first {
		t.Error("a file's time moved the digest")
	}
	write("pkg/mod.py", "x = 2\n")
	if d := digest(); d == first {
		t.Error("a file's bytes did not move the digest")
	}
	write("pkg/mod.py", "x = 1\n")
	write("pkg/new.py", "")
	if d := digest(); d == first {
		t.Error("a new file did not move the digest")
	}
	os.Remove(filepath.Join(dir, "pkg/new.py"))
	if d := digest(); d != first {
		t.Error("the same files give another digest")
	}
	masks = nil
	if d := digest(); d == first {
		t.Error("an unmasked entry did not move the digest")
	}
}
