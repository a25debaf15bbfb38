package main

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8s "k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	manifests "github.com/nondet-sandbox/nondet-sandbox/deploy/kubernetes"
	"github.com/nondet-sandbox/nondet-sandbox/internal/testenv"
	"github.com/nondet-sandbox/nondet-sandbox/report"
)

// jobTree is what the Indexed Job test scans: two files, so each of two
// parts holds one, with a finding each.
const jobTree = "testdata/jobtree"

// TestIndexedJobMergesToTheWhole runs deploy/kubernetes as written on the
// single-node cluster of scripts/start-kubernetes: the coordinator image
// built offline (scripts/coordinator-image), the manifests' RBAC, network
// policy and Indexed Job, two coordinators each scanning its part with
// its probes as pods; the parts merged are the report of the same scan
// run whole. What the cluster needs and the manifests cannot say is the
// only change made to them: the coordinators reach the API server on the
// node's loopback (this cluster gives pods no network, so they take the
// node's, in a namespace of their own that may), and the reports go to a
// host folder instead of a claim (no storage provisioner).
func TestIndexedJobMergesToTheWhole(t *testing.T) {
	kubeconfig, _ := startedCluster(t, "the Job test", "the coordinator image")
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()

	image := "nondet-sandbox-coordinator:test"
	build := exec.CommandContext(ctx, "../../scripts/coordinator-image", jobTree)
	build.Env = append(os.Environ(), "IMAGE="+image)
	var buildErr bytes.Buffer
	build.Stderr = &buildErr
	if out, err := build.Output(); err != nil || strings.TrimSpace(string(out)) != image {
		t.Fatalf("scripts/coordinator-image: %v (%q)\n%s", err, out, buildErr.String())
	}

	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	cfg.WarningHandler = rest.NoWarnings{} // the coordinators' namespace is privileged on purpose
	cs, err := k8s.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	server, err := url.Parse(cfg.Host)
	if err != nil {
		t.Fatal(err)
	}

	objs, err := manifests.Objects()
	if err != nil {
		t.Fatal(err)
	}
	var job *batchv1.Job
	var sa *corev1.ServiceAccount
	var binding *rbacv1.RoleBinding
	probeNS := ""
	for _, o := range objs {
		switch v := o.(type) {
		case *batchv1.Job:
			job = v
		case *corev1.ServiceAccount:
			sa = v
		case *rbacv1.RoleBinding:
			binding = v
		case *corev1.Namespace:
			probeNS = v.Name
		}
	}
	if job == nil || sa == nil || binding == nil || probeNS == "" {
		t.Fatal("deploy/kubernetes lacks the Job, the ServiceAccount, the RoleBinding or the Namespace")
	}

	// The probes' namespace and what is in it, as the manifests say;
	// what this test made is deleted after it, past its deadline too.
	cleanupCtx, cleanupDone := context.WithTimeout(context.WithoutCancel(ctx), 21*time.Minute)
	defer cleanupDone()
	var undo []func()
	defer func() {
		for i := len(undo) - 1; i >= 0; i-- {
			undo[i]()
		}
	}()
	bg := metav1.DeletePropagationBackground
	del := metav1.DeleteOptions{PropagationPolicy: &bg}
	for _, o := range objs {
		var err error
		var gone func()
		switch v := o.(type) {
		case *corev1.Namespace:
			awaitNamespaceGone(ctx, t, cs, v.Name)
			_, err = cs.CoreV1().Namespaces().Create(ctx, v, metav1.CreateOptions{})
			gone = func() { cs.CoreV1().Namespaces().Delete(cleanupCtx, v.Name, del) }
		case *corev1.ServiceAccount:
			_, err = cs.CoreV1().ServiceAccounts(v.Namespace).Create(ctx, v, metav1.CreateOptions{})
			gone = func() { cs.CoreV1().ServiceAccounts(v.Namespace).Delete(cleanupCtx, v.Name, del) }
		case *rbacv1.Role:
			_, err = cs.RbacV1().Roles(v.Namespace).Create(ctx, v, metav1.CreateOptions{})
			gone = func() { cs.RbacV1().Roles(v.Namespace).Delete(cleanupCtx, v.Name, del) }
		case *networkingv1.NetworkPolicy:
			_, err = cs.NetworkingV1().NetworkPolicies(v.Namespace).Create(ctx, v, metav1.CreateOptions{})
			gone = func() { cs.NetworkingV1().NetworkPolicies(v.Namespace).Delete(cleanupCtx, v.Name, del) }
		default:
			continue // the Job, its claim and the binding: below
		}
		switch {
		case err == nil:
			undo = append(undo, gone)
		case !apierrors.IsAlreadyExists(err):
			t.Fatalf("creating %T from deploy/kubernetes: %v", o, err)
		}
	}

	// The coordinators' namespace may take the node's network and a host
	// folder; its ServiceAccount gets the Role through the manifests'
	// binding, with one more subject.
	coordNS := fmt.Sprintf("nondet-sandbox-job-%d", time.Now().UnixNano()%1e6)
	if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: coordNS,
		Labels: map[string]string{"pod-security.kubernetes.io/enforce": "privileged"}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	undo = append(undo, func() { cs.CoreV1().Namespaces().Delete(cleanupCtx, coordNS, del) })
	coordSA := sa.DeepCopy()
	coordSA.Namespace = coordNS
	if _, err := cs.CoreV1().ServiceAccounts(coordNS).Create(ctx, coordSA, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	b := binding.DeepCopy()
	b.Name += "-" + coordNS
	b.Subjects = append(b.Subjects, rbacv1.Subject{Kind: "ServiceAccount", Name: sa.Name, Namespace: coordNS})
	if _, err := cs.RbacV1().RoleBindings(b.Namespace).Create(ctx, b, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	undo = append(undo, func() { cs.RbacV1().RoleBindings(b.Namespace).Delete(cleanupCtx, b.Name, del) })

	reports, err := os.MkdirTemp("", "nondet-sandbox-job-")
	if err != nil {
		t.Fatal(err)
	}
	undo = append(undo, func() { os.RemoveAll(reports) })
	if err := os.Chmod(reports, 0o777); err != nil { // the coordinators run as 65534
		t.Fatal(err)
	}

	const parts = 2
	j := job.DeepCopy()
	j.Namespace = coordNS
	n := int32(parts)
	j.Spec.Completions, j.Spec.Parallelism = &n, &n
	none := int32(0)
	j.Spec.BackoffLimit = &none
	pod := &j.Spec.Template.Spec
	pod.HostNetwork = true
	c := &pod.Containers[0]
	c.Image, c.ImagePullPolicy = image, corev1.PullNever
	for i, e := range c.Env {
		if e.Name == "PARTS" {
			c.Env[i].Value = fmt.Sprint(parts)
		}
	}
	c.Env = append(c.Env,
		corev1.EnvVar{Name: "KUBERNETES_SERVICE_HOST", Value: server.Hostname()},
		corev1.EnvVar{Name: "KUBERNETES_SERVICE_PORT", Value: cmp.Or(server.Port(), "443")})
	dirType := corev1.HostPathDirectory
	for i, v := range pod.Volumes {
		if v.PersistentVolumeClaim != nil {
			pod.Volumes[i].VolumeSource = corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: reports, Type: &dirType}}
		}
	}
	seed := uint64(0)
	for _, e := range c.Env {
		if e.Name == "SEED" {
			fmt.Sscan(e.Value, &seed)
		}
	}
	if seed == 0 {
		t.Fatal("the Job sets no SEED")
	}
	if _, err := cs.BatchV1().Jobs(coordNS).Create(ctx, j, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	// The whole scan runs meanwhile, from here, on the same cluster, on a
	// copy of the tree at src as the coordinators see it (a module's path
	// is its file's, from the folder the scan ran in).
	opts := testOptions(t, "kubernetes", seed)
	opts.kubeconfig, opts.namespace = kubeconfig, probeNS
	here := t.TempDir()
	if err := os.CopyFS(filepath.Join(here, "src"), os.DirFS(jobTree)); err != nil {
		t.Fatal(err)
	}
	t.Chdir(here)
	var out, errOut bytes.Buffer
	err = runRun(ctx, opts, []string{"src"}, &out, &errOut)
	if err != nil && !errors.Is(err, errFindings) {
		t.Fatalf("the whole scan: %v\n%s", err, errOut.String())
	}
	var whole report.Report
	if err := json.Unmarshal(out.Bytes(), &whole); err != nil {
		t.Fatal(err)
	}

	for {
		got, err := cs.BatchV1().Jobs(coordNS).Get(ctx, j.Name, metav1.GetOptions{})
		if err != nil {
			t.Fatalf("the Job: %v\n%s", err, coordinatorLogs(cs, coordNS))
		}
		if got.Status.Succeeded == parts {
			break
		}
		if got.Status.Failed > 0 {
			t.Fatalf("the Job did not complete (%d of %d parts, %d failed):\n%s", got.Status.Succeeded, parts, got.Status.Failed, coordinatorLogs(cs, coordNS))
		}
		if why := coordinatorsStuck(ctx, cs, coordNS); why != "" {
			t.Fatalf("the coordinators cannot start: %s", why)
		}
		time.Sleep(2 * time.Second)
	}

	var reps []*report.Report
	for k := range parts {
		data, err := os.ReadFile(filepath.Join(reports, fmt.Sprintf("part-%d.json", k)))
		if err != nil {
			t.Fatalf("part %d wrote no report: %v\n%s", k, err, coordinatorLogs(cs, coordNS))
		}
		var r report.Report
		if err := json.Unmarshal(data, &r); err != nil {
			t.Fatalf("part %d: %v", k, err)
		}
		if r.Part == nil || r.Part.Index != k+1 || len(r.Functions) == 0 {
			t.Errorf("part %d is %+v with %d functions: not one part of two", k, r.Part, len(r.Functions))
		}
		reps = append(reps, &r)
	}
	merged, err := report.Merge(reps)
	if err != nil {
		t.Fatal(err)
	}
	if whole.Census.Nondeterministic != 2 {
		t.Errorf("the whole scan found %d nondeterministic functions, want 2 (one per file)", whole.Census.Nondeterministic)
	}
	// The coordinators scanned /src with a binary of their own; the rest
	// is the scan's.
	merged.Targets, merged.Tool = whole.Targets, whole.Tool
	a, bb := unfixable(t, &whole), unfixable(t, merged)
	if !bytes.Equal(a, bb) {
		t.Errorf("the Job's merged parts are not the whole scan:\n%s", firstDiff(a, bb))
	}
}

// startedCluster is the single-node cluster of scripts/start-kubernetes,
// with the probe image in Docker: the tests that build an image on it
// and import it into the cluster's containerd (test, image) run there.
// It returns the cluster's kubeconfig and that containerd's socket, or
// skips, saying why.
func startedCluster(t *testing.T, test, image string) (kubeconfig, containerd string) {
	t.Helper()
	testenv.NeedRoot(t)
	kubeconfig = testenv.Kubeconfig(t)
	if err := exec.Command("docker", "image", "inspect", "nondet-sandbox-probe:latest").Run(); err != nil {
		testenv.Skip(t, "no probe image in a running Docker (scripts/start-docker && make image): "+image+" is built on it")
	}
	run := cmp.Or(os.Getenv("NONDET_SANDBOX_K8S_RUN"), "/run/nondet-sandbox-k8s")
	containerd = filepath.Join(run, "containerd", "containerd.sock")
	if _, err := os.Stat(containerd); err != nil {
		testenv.Skip(t, test+" runs on the cluster of scripts/start-kubernetes, whose containerd "+image+" is imported into; none runs here")
	}
	return kubeconfig, containerd
}

// awaitNamespaceGone waits while an earlier run's namespace of that name
// is being deleted: nothing can be made in it meanwhile.
func awaitNamespaceGone(ctx context.Context, t *testing.T, cs *k8s.Clientset, name string) {
	t.Helper()
	for {
		ns, err := cs.CoreV1().Namespaces().Get(ctx, name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) || err == nil && ns.Status.Phase != corev1.NamespaceTerminating {
			return
		}
		if ctx.Err() != nil {
			t.Fatalf("namespace %s is still being deleted", name)
		}
		time.Sleep(time.Second)
	}
}

// coordinatorsStuck says why a coordinator waits for what will not come
// (the image is not on the node), or "".
func coordinatorsStuck(ctx context.Context, cs *k8s.Clientset, ns string) string {
	pods, err := cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return ""
	}
	for _, p := range pods.Items {
		for _, st := range p.Status.ContainerStatuses {
			if w := st.State.Waiting; w != nil && (w.Reason == "ErrImageNeverPull" || w.Reason == "CreateContainerConfigError") {
				return fmt.Sprintf("pod %s: %s: %s", p.Name, w.Reason, w.Message)
			}
		}
	}
	return ""
}

// coordinatorLogs are the coordinators' logs, for a failure's message.
func coordinatorLogs(cs *k8s.Clientset, ns string) string {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	pods, err := cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return err.Error()
	}
	var b strings.Builder
	for _, p := range pods.Items {
		data, err := cs.CoreV1().Pods(ns).GetLogs(p.Name, &corev1.PodLogOptions{}).DoRaw(ctx)
		fmt.Fprintf(&b, "--- %s (%s): %v\n%s\n", p.Name, p.Status.Phase, err, data)
	}
	return b.String()
}
