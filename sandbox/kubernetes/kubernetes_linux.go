package kubernetes

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/go-logr/logr"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/httpstream"
	"k8s.io/apimachinery/pkg/watch"
	typedcoordinationv1 "k8s.io/client-go/kubernetes/typed/coordination/v1"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/tools/remotecommand"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"

	"github.com/nondet-sandbox/nondet-sandbox/internal/cleanup"
	"github.com/nondet-sandbox/nondet-sandbox/sandbox"
)

// DefaultImage is the probe image, as on Docker: `make image` builds it;
// a cluster's nodes must have it (loaded, or from a registry they reach).
const DefaultImage = sandbox.ProbeImage

// ScanLabel labels every pod and lease with its scan's id.
const ScanLabel = "nondet-sandbox.scan"

// treeDir is where the init container unpacks the tree, in the emptyDir
// the probe mounts read-only (one subPath per bind).
const treeDir = "/nondet-tree"

// maxTree caps the unpacked tree a pod receives.
const maxTree = 512 << 20

// deadline is each pod's activeDeadlineSeconds: a backstop for a
// coordinator that stops watching; the engine's own limits come first.
const deadline = 6 * time.Hour

// leaseTerm is how long a scan's lease holds without renewal: a scan whose
// lease is older is dead, and a later scan sweeps what it left.
const leaseTerm = 60 * time.Second

// Options say which cluster, where in it, and with what.
type Options struct {
	Kubeconfig   string // "" for $KUBECONFIG or ~/.kube/config, or in-cluster
	Namespace    string // "" for the kubeconfig context's, else default
	Image        string
	RuntimeClass string // a RuntimeClass name (gvisor), or ""
	PullPolicy   corev1.PullPolicy
	// Baked: Image already holds the scan's files at their targets (made
	// by BakeContext for the same targets): no init container, nothing
	// sent per pod, and the engine keeps no code folder. A pod whose
	// image holds another digest ends with BakedExit.
	Baked bool
}

// BakedExit is a baked pod's exit status when its image holds files of
// other targets than the scan's.
const BakedExit = 87

// Runtime is the Kubernetes backend.
type Runtime struct {
	cfg    *rest.Config
	core   typedcorev1.CoreV1Interface
	leases typedcoordinationv1.CoordinationV1Interface
	ns     string
	opts   Options
	host   string // the API server, for messages
}

var _ sandbox.Runtime = (*Runtime)(nil)

var quietKlog sync.Once

// New connects to the cluster and checks that it answers. Its errors are
// one line that says what to do.
func New(ctx context.Context, o Options) (*Runtime, error) {
	// client-go logs what it recovers from (a closed stream) through
	// klog, to standard error: a library of this tool prints nothing.
	// Once: streams of an earlier runtime may be logging meanwhile.
	quietKlog.Do(func() { klog.SetLogger(logr.Discard()) })
	if o.Image == "" {
		o.Image = DefaultImage
	}
	if o.PullPolicy == "" {
		o.PullPolicy = corev1.PullIfNotPresent
	}
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	if o.Kubeconfig != "" {
		rules.ExplicitPath = o.Kubeconfig
	}
	cc := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{})
	cfg, err := cc.ClientConfig()
	if err != nil {
		return nil, sandbox.Unavailable(sandbox.ErrNoEngine, fmt.Sprintf("no Kubernetes cluster configured (%s): pass --kubeconfig, set KUBECONFIG, or run inside a cluster", firstLine(err.Error())))
	}
	ns := o.Namespace
	if ns == "" {
		if ns, _, err = cc.Namespace(); err != nil || ns == "" {
			ns = "default"
		}
	}
	// A scan makes a few calls per pod and runs many pods at once.
	cfg.QPS, cfg.Burst = 50, 100
	// Only the two API groups it uses: the whole clientset would triple
	// the binary.
	core, err := typedcorev1.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("kubernetes: %v", err)
	}
	leases, err := typedcoordinationv1.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("kubernetes: %v", err)
	}
	pctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	if _, err := core.Namespaces().Get(pctx, ns, metav1.GetOptions{}); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, sandbox.Unavailable(sandbox.ErrNoEngine, fmt.Sprintf("the namespace %s does not exist in the cluster at %s: create it or pass --namespace", ns, cfg.Host))
		}
		if !apierrors.IsForbidden(err) { // a role may rightly not read namespaces
			return nil, sandbox.Unavailable(sandbox.ErrNoEngine, fmt.Sprintf("cannot reach the Kubernetes API at %s: %s; check --kubeconfig and that the cluster runs", cfg.Host, firstLine(err.Error())))
		}
	}
	return &Runtime{cfg: cfg, core: core, leases: leases, ns: ns, opts: o, host: cfg.Host}, nil
}

func (*Runtime) Name() string   { return "kubernetes" }
func (*Runtime) Isolated() bool { return true }

// Capabilities: the interpreter is the image's, as on Docker; the worker
// checks from inside that nothing but loopback is reachable (the cluster's
// network plugin decides that, not this runtime); and no marks are carried,
// since the pod's log is the one way out and the scanned code can write to
// any descriptor its module's child holds. A baked image's files are fixed
// before the scan: no code folder.
func (r *Runtime) Capabilities() sandbox.Capabilities {
	return sandbox.Capabilities{InImage: true, CheckNetwork: true, Markless: true, FixedBinds: r.opts.Baked}
}

// Applies: every condition but the CPU set, which a pod cannot choose.
func (*Runtime) Applies() []sandbox.Support {
	return append(sandbox.AppliesAll(sandbox.Hostname, sandbox.User, sandbox.Umask, sandbox.Cwd, sandbox.Home, sandbox.Clock, sandbox.Pid),
		sandbox.Support{Condition: sandbox.CPUs, Reason: "a pod cannot choose its CPUs (only a node's static CPU manager pins them)"})
}

// Namespace is where the runtime makes its pods.
func (r *Runtime) Namespace() string { return r.ns }

// Begin takes the scan's lease, renewed while the scan runs.
func (r *Runtime) Begin(ctx context.Context, scan sandbox.Scan) (sandbox.Session, error) {
	s := &session{Runtime: r, scan: scan, pods: r.core.Pods(r.ns), stop: make(chan struct{})}
	lease := &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Name: leaseName(scan.ID), Labels: map[string]string{ScanLabel: scan.ID}},
		Spec: coordinationv1.LeaseSpec{
			HolderIdentity:       ptr.To(holder()),
			LeaseDurationSeconds: ptr.To(int32(leaseTerm / time.Second)),
			AcquireTime:          &metav1.MicroTime{Time: time.Now()},
			RenewTime:            &metav1.MicroTime{Time: time.Now()},
		},
	}
	leases := r.leases.Leases(r.ns)
	if _, err := leases.Create(ctx, lease, metav1.CreateOptions{}); err != nil {
		return nil, fmt.Errorf("kubernetes: taking the scan's lease in namespace %s: %s", r.ns, firstLine(err.Error()))
	}
	go s.renew()
	s.Ending = sandbox.EndOnce(func(ctx context.Context) error {
		close(s.stop)
		_, err := r.removeScan(ctx, func(id string) bool { return id != scan.ID })
		return err
	})
	return s, nil
}

func leaseName(scanID string) string { return "nondet-sandbox-" + scanID }

func holder() string {
	return fmt.Sprintf("%s/%d", machine(), os.Getpid())
}

// machine names where a scan's lock can be seen: the host name and the
// mount namespace. Containers may share a host name (pods on the node's
// network share the node's) and still see lock folders of their own, so
// neither may take the other's running scans for its own dead ones.
func machine() string {
	h, _ := os.Hostname()
	if ns, err := os.Readlink("/proc/self/ns/mnt"); err == nil {
		h += "+" + strings.TrimSuffix(strings.TrimPrefix(ns, "mnt:["), "]")
	}
	return h
}

// session is one scan's pods.
type session struct {
	*Runtime
	scan sandbox.Scan
	pods typedcorev1.PodInterface
	stop chan struct{}
	sandbox.Ending

	treeMu  sync.Mutex
	treeKey string
	tree    *tree
}

// renew keeps the scan's lease fresh until the session ends.
func (s *session) renew() {
	t := time.NewTicker(leaseTerm / 4)
	defer t.Stop()
	leases := s.leases.Leases(s.ns)
	for {
		select {
		case <-s.stop:
			return
		case <-t.C:
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		if l, err := leases.Get(ctx, leaseName(s.scan.ID), metav1.GetOptions{}); err == nil {
			l.Spec.RenewTime = &metav1.MicroTime{Time: time.Now()}
			_, _ = leases.Update(ctx, l, metav1.UpdateOptions{})
		}
		cancel()
	}
}

// shim runs as the probe container's command, as the run's user: the
// container's standard output (its log) becomes the record channel, fd 3;
// exactly the input's bytes of its standard input (the attach the runtime
// writes the request into; a background job's would be /dev/null), read by
// head and piped, the input, fd 4; marks
// go nowhere (fd 5: nothing scanned may reach the log). Everything else
// the worker and the scanned code write goes nowhere. It lowers the
// open-file limit as Docker's is, sets the umask, makes and enters the
// working directory, forks until the next pid is the run's, runs the
// interpreter as a child and lets go of the log and the input once it has
// them, so no probe reaches them through /proc/1/fd. It outlives the
// interpreter by a second: containerd 1.6 loses what is still on its way
// to the log when a container ends (a 220 kB output written just before
// the end arrived cut at 96 to 176 kB, in the log file too; whole after a
// second, every time).
const shim = `exec 3>&1 6<&0 5>/dev/null 1>/dev/null 2>/dev/null
ulimit -n 1024; ulimit -c 0
umask "$1"; t=$2; d=$3; n=$4; shift 4
mkdir -p -- "$d" 2>/dev/null; cd -- "$d" || exit 125
` + sandbox.ForkToFloor + `
head -c "$n" <&6 6<&- | { exec 4<&0 0</dev/null 6<&-; exec "$@"; } & p=$!; exec 0</dev/null 3>&- 5>&- 6<&-; wait $p; s=$?; sleep 1; exit $s`

// unpack is the init container's command: exactly the tree's bytes of its
// standard input (its first argument says how many), unpacked.
const unpack = `umask 022; head -c "$1" | tar -xzf - -C ` + treeDir + ` --no-same-owner`

// bakedCheck goes before the shim in a baked pod: the image must hold
// the scan's files (their digest is $1), or the pod ends with BakedExit
// before anything runs.
const bakedCheck = `[ "$(cat ` + BakedFile + ` 2>/dev/null)" = "$1" ] || exit 87; shift
`

// Attach streams are held open once their bytes are sent and closed only
// when the container is done with them: closing a container's standard
// input right after the last byte can lose the bytes still in flight (a
// 220 kB input arrived cut at 192 kB), so the containers read exactly
// as many bytes as they are sent, and no end of input is needed.
type held struct{ done <-chan struct{} }

func (h held) Read([]byte) (int, error) {
	<-h.done
	return 0, io.EOF
}

// Run makes one pod, feeds it the tree and the request, relays its records
// from the log, waits for it and deletes it.
func (s *session) Run(ctx context.Context, job *sandbox.Job) (*sandbox.Exit, error) {
	tr, err := s.treeFor(job)
	if err != nil {
		return nil, err
	}
	var input []byte
	if job.Input != nil {
		if input, err = io.ReadAll(job.Input); err != nil {
			return nil, fmt.Errorf("kubernetes: reading the job's input: %w", err)
		}
	}
	name := podName(job.ID)
	pod := s.podSpec(name, job, tr, len(input))
	made, err := s.pods.Create(ctx, pod, metav1.CreateOptions{})
	if err != nil {
		return nil, fmt.Errorf("kubernetes: creating pod %s: %s", name, firstLine(err.Error()))
	}
	defer cleanup.Do(ctx, 30*time.Second, func(dctx context.Context) {
		_ = s.pods.Delete(dctx, name, metav1.DeleteOptions{GracePeriodSeconds: ptr.To(int64(0))})
	})
	pw := &podWatch{pods: s.pods, name: name, last: made}
	defer pw.stop()

	// The tree, once the init container runs.
	p, err := pw.until(ctx, func(p *corev1.Pod) (bool, error) {
		if s.opts.Baked {
			return true, nil
		}
		if st := status(p.Status.InitContainerStatuses, "tree"); st != nil && (st.State.Running != nil || st.State.Terminated != nil) {
			return true, nil
		}
		return false, stuck(p)
	})
	if err != nil {
		return s.failed(ctx, err)
	}
	treeCtx, treeSent := context.WithCancel(ctx)
	defer treeSent()
	if st := status(p.Status.InitContainerStatuses, "tree"); st != nil && st.State.Running != nil {
		go func() {
			_ = s.attach(treeCtx, name, "tree", io.MultiReader(bytes.NewReader(tr.data), held{treeCtx.Done()}))
		}()
	}
	// The request and the records, once the probe runs.
	p, err = pw.until(ctx, func(p *corev1.Pod) (bool, error) {
		if st := status(p.Status.InitContainerStatuses, "tree"); st != nil && st.State.Terminated != nil && st.State.Terminated.ExitCode != 0 {
			return false, fmt.Errorf("the tree could not be unpacked in the pod (exit status %d): is the emptyDir's size limit too small?", st.State.Terminated.ExitCode)
		}
		if st := status(p.Status.ContainerStatuses, "probe"); st != nil && (st.State.Running != nil || st.State.Terminated != nil) {
			return true, nil
		}
		return false, stuck(p)
	})
	if err != nil {
		return s.failed(ctx, err)
	}
	treeSent()
	inCtx, inSent := context.WithCancel(ctx)
	defer inSent()
	attached := make(chan struct{})
	go func() {
		defer close(attached)
		_ = s.attach(inCtx, name, "probe", io.MultiReader(bytes.NewReader(input), held{inCtx.Done()}))
	}()
	logs, err := s.pods.GetLogs(name, &corev1.PodLogOptions{Container: "probe", Follow: true}).Stream(ctx)
	if err != nil {
		return s.failed(ctx, fmt.Errorf("reading the probe's log: %s", firstLine(err.Error())))
	}
	relayed := make(chan struct{})
	var sent int64
	go func() {
		defer close(relayed)
		defer logs.Close()
		sent, _ = io.Copy(job.Records, logs)
	}()
	p, err = pw.until(ctx, func(p *corev1.Pod) (bool, error) {
		if p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
			return true, nil
		}
		st := status(p.Status.ContainerStatuses, "probe")
		return st != nil && st.State.Terminated != nil, nil
	})
	if err != nil {
		if ctx.Err() != nil {
			return &sandbox.Exit{Signal: "SIGKILL"}, nil
		}
		return nil, fmt.Errorf("kubernetes: pod %s: %s", name, firstLine(err.Error()))
	}
	select {
	case <-relayed:
	case <-time.After(10 * time.Second):
		logs.Close()
		<-relayed
	}
	// A followed log may end before the last lines the container wrote
	// (the kubelet stops following when it sees the container gone): the
	// log read whole, once the container has ended, has the rest.
	if whole, err := s.pods.GetLogs(name, &corev1.PodLogOptions{Container: "probe"}).DoRaw(ctx); err == nil && int64(len(whole)) > sent {
		_, _ = job.Records.Write(whole[sent:])
	}
	inSent()
	select {
	case <-attached:
	case <-time.After(2 * time.Second):
	}
	exit := &sandbox.Exit{}
	st := status(p.Status.ContainerStatuses, "probe")
	switch {
	case st != nil && st.State.Terminated != nil:
		t := st.State.Terminated
		exit.Code, exit.Signal = sandbox.DecodeShimStatus(int(t.ExitCode))
		exit.OOMKilled = t.Reason == "OOMKilled"
		if exit.OOMKilled && exit.Signal == "" {
			exit.Signal = "SIGKILL"
		}
	default: // the deadline, or the node, ended it
		exit.Signal = "SIGKILL"
	}
	if exit.Code == BakedExit && exit.Signal == "" && s.opts.Baked {
		return nil, sandbox.Unavailable(sandbox.ErrNoImage, fmt.Sprintf(
			"the image %s does not hold this scan's files (--baked; they are nondet-sandbox-baked:%s): bake them with `nondet-sandbox image bake` and the scan's own targets and flags, make the image reach the nodes, and pass its name to --image; or drop --baked", s.opts.Image, tr.digest[:12]))
	}
	if exit.Code == sandbox.NetworkExit && exit.Signal == "" {
		return nil, sandbox.Unavailable(sandbox.ErrNetwork, fmt.Sprintf(
			"the probe pod can reach a network beyond loopback, so the worker refused to run scanned code: give probe pods no route out (nodes whose CNI configuration gives pods only a loopback interface, or a deny-all NetworkPolicy in namespace %s enforced by the cluster's network plugin; see deploy/kubernetes/)", s.ns))
	}
	return exit, nil
}

// failed ends a job that could not start: cancelled, or the pod is stuck.
func (s *session) failed(ctx context.Context, err error) (*sandbox.Exit, error) {
	if ctx.Err() != nil {
		return &sandbox.Exit{Signal: "SIGKILL"}, nil
	}
	return nil, fmt.Errorf("kubernetes: %s", firstLine(err.Error()))
}

// stuck says why a pod that is not running never will: an image it cannot
// have, a spec the node refuses.
func stuck(p *corev1.Pod) error {
	if p.Status.Phase == corev1.PodFailed {
		return fmt.Errorf("pod %s failed: %s %s", p.Name, p.Status.Reason, p.Status.Message)
	}
	for _, st := range append(append([]corev1.ContainerStatus{}, p.Status.InitContainerStatuses...), p.Status.ContainerStatuses...) {
		if w := st.State.Waiting; w != nil {
			switch w.Reason {
			case "ErrImagePull", "ImagePullBackOff", "ErrImageNeverPull", "InvalidImageName":
				return fmt.Errorf("the nodes cannot get the probe image %s (%s: %s): load it on every node (docker save | ctr -n k8s.io images import -) or push it where they pull from, or pass --image", st.Image, w.Reason, w.Message)
			case "CreateContainerConfigError", "CreateContainerError", "RunContainerError":
				return fmt.Errorf("the node refused the probe container (%s: %s)", w.Reason, w.Message)
			}
		}
	}
	return nil
}

func status(list []corev1.ContainerStatus, name string) *corev1.ContainerStatus {
	for i := range list {
		if list[i].Name == name {
			return &list[i]
		}
	}
	return nil
}

// podWatch follows one pod through its life with one watch, opened at
// the pod's creation and kept across the steps of a job (the tree, the
// request, the end); it is opened again only when the server ends it.
type podWatch struct {
	pods typedcorev1.PodInterface
	name string
	last *corev1.Pod // the pod as last seen
	w    watch.Interface
}

// until returns the pod as soon as done says so (or fails), looking at
// what was last seen first. The watch lives in the first call's ctx: a
// job's steps share one.
func (pw *podWatch) until(ctx context.Context, done func(*corev1.Pod) (bool, error)) (*corev1.Pod, error) {
	if ok, err := done(pw.last); ok || err != nil {
		return pw.last, err
	}
	pause := 50 * time.Millisecond
	for {
		if pw.w == nil {
			w, err := pw.pods.Watch(ctx, metav1.ListOptions{
				FieldSelector:   fields.OneTermEqualSelector("metadata.name", pw.name).String(),
				ResourceVersion: pw.last.ResourceVersion,
			})
			if err != nil {
				return nil, err
			}
			pw.w = w
		}
		events := 0
		for ev := range pw.w.ResultChan() {
			events++
			switch p := ev.Object.(type) {
			case *corev1.Pod:
				if ev.Type == watch.Deleted {
					return nil, fmt.Errorf("pod %s was deleted", pw.name)
				}
				pw.last = p
				if ok, err := done(p); ok || err != nil {
					return p, err
				}
			case *metav1.Status:
				// The version watched from is gone (expired): look again.
				pw.stop()
				got, err := pw.pods.Get(ctx, pw.name, metav1.GetOptions{})
				if err != nil {
					return nil, err
				}
				pw.last = got
				if ok, err := done(got); ok || err != nil {
					return got, err
				}
			}
			if pw.w == nil {
				break
			}
		}
		pw.stop()
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		// The server ended the watch: go on from what was last seen. A
		// watch that ended with nothing to say (a broken connection gives
		// an empty one) is opened again after a pause that grows.
		if events == 0 {
			select {
			case <-ctx.Done():
				return nil, ctx.Err()
			case <-time.After(pause):
			}
			pause = min(2*pause, time.Second)
		}
	}
}

func (pw *podWatch) stop() {
	if pw.w != nil {
		pw.w.Stop()
		pw.w = nil
	}
}

// attach writes in to a container's standard input and closes it.
func (s *session) attach(ctx context.Context, name, container string, in io.Reader) error {
	req := s.core.RESTClient().Post().Resource("pods").Namespace(s.ns).Name(name).SubResource("attach").
		VersionedParams(&corev1.PodAttachOptions{Container: container, Stdin: true}, parameterCodec)
	ws, err := remotecommand.NewWebSocketExecutor(s.cfg, "GET", req.URL().String())
	if err != nil {
		return err
	}
	spdy, err := remotecommand.NewSPDYExecutor(s.cfg, "POST", req.URL())
	if err != nil {
		return err
	}
	exec, err := remotecommand.NewFallbackExecutor(ws, spdy, httpstream.IsUpgradeFailure)
	if err != nil {
		return err
	}
	return exec.StreamWithContext(ctx, remotecommand.StreamOptions{Stdin: in})
}

// podSpec is the sandbox policy and the run's conditions as a pod.
func (s *session) podSpec(name string, job *sandbox.Job, tr *tree, inputBytes int) *corev1.Pod {
	c := job.Cond
	home, tmpfs := job.HomeDir(), job.Tmpfs()
	memory := job.Limits.MemoryBytes
	if memory <= 0 {
		memory = 2 << 30
	}
	limits := corev1.ResourceList{corev1.ResourceMemory: *resource.NewQuantity(memory, resource.BinarySI)}
	if job.Limits.CPUs > 0 {
		limits[corev1.ResourceCPU] = *resource.NewMilliQuantity(int64(job.Limits.CPUs*1000), resource.DecimalSI)
	}
	requests := corev1.ResourceList{
		corev1.ResourceMemory: *resource.NewQuantity(min(memory, 256<<20), resource.BinarySI),
		corev1.ResourceCPU:    *resource.NewMilliQuantity(100, resource.DecimalSI),
	}
	restricted := &corev1.SecurityContext{
		RunAsUser: ptr.To(int64(c.UID)), RunAsGroup: ptr.To(int64(c.GID)), RunAsNonRoot: ptr.To(true),
		ReadOnlyRootFilesystem:   ptr.To(true),
		AllowPrivilegeEscalation: ptr.To(false),
		Privileged:               ptr.To(false),
		Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
		SeccompProfile:           &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
	}
	memDir := func(name string, size int64) corev1.Volume {
		return corev1.Volume{Name: name, VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{
			Medium: corev1.StorageMediumMemory, SizeLimit: resource.NewQuantity(size, resource.BinarySI)}}}
	}
	// /dev/shm (the pod's) and /dev/mqueue are writable: covered
	// read-only, as Docker's are.
	mounts := []corev1.VolumeMount{{Name: "tmp", MountPath: "/tmp"}, {Name: "home", MountPath: home},
		{Name: "cover", MountPath: "/dev/shm", ReadOnly: true}, {Name: "cover", MountPath: "/dev/mqueue", ReadOnly: true}}
	if !s.opts.Baked {
		for i, b := range tr.binds {
			mounts = append(mounts, corev1.VolumeMount{Name: "tree", MountPath: b.Target, SubPath: "b" + strconv.Itoa(i), ReadOnly: true})
		}
	}
	dir := job.Dir
	if dir == "" {
		dir = "/"
	}
	cmd := []string{"/bin/sh", "-c", shim, "sh"}
	if s.opts.Baked {
		cmd = []string{"/bin/sh", "-c", bakedCheck + shim, "sh", tr.digest}
	}
	cmd = append(cmd, fmt.Sprintf("%04o", c.Umask), strconv.Itoa(c.PidFloor), dir, strconv.Itoa(inputBytes), "/usr/bin/env", "-i")
	cmd = append(append(cmd, job.Env...), job.Argv...)
	spec := corev1.PodSpec{
		RestartPolicy:                 corev1.RestartPolicyNever,
		AutomountServiceAccountToken:  ptr.To(false),
		EnableServiceLinks:            ptr.To(false),
		Hostname:                      hostname(c.Hostname),
		ActiveDeadlineSeconds:         ptr.To(int64(deadline / time.Second)),
		TerminationGracePeriodSeconds: ptr.To(int64(0)),
		SecurityContext: &corev1.PodSecurityContext{
			RunAsUser: ptr.To(int64(c.UID)), RunAsGroup: ptr.To(int64(c.GID)), RunAsNonRoot: ptr.To(true),
			SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
		},
		Volumes: []corev1.Volume{memDir("tmp", tmpfs), memDir("home", tmpfs), memDir("cover", 4096)},
		InitContainers: []corev1.Container{{
			Name: "tree", Image: s.opts.Image, ImagePullPolicy: s.opts.PullPolicy,
			Command: literal([]string{"/bin/sh", "-c", unpack, "sh", strconv.Itoa(len(tr.data))}), Stdin: true, StdinOnce: true,
			VolumeMounts:    []corev1.VolumeMount{{Name: "tree", MountPath: treeDir}},
			SecurityContext: restricted,
			Resources:       corev1.ResourceRequirements{Limits: limits, Requests: requests},
		}},
		Containers: []corev1.Container{{
			Name: "probe", Image: s.opts.Image, ImagePullPolicy: s.opts.PullPolicy,
			Command: literal(cmd), Stdin: true, StdinOnce: true, WorkingDir: "/",
			VolumeMounts:    mounts,
			SecurityContext: restricted,
			Resources:       corev1.ResourceRequirements{Limits: limits, Requests: requests},
		}},
	}
	if s.opts.Baked {
		spec.InitContainers = nil
	} else {
		spec.Volumes = append(spec.Volumes, memDir("tree", tr.room))
	}
	if s.opts.RuntimeClass != "" {
		spec.RuntimeClassName = ptr.To(s.opts.RuntimeClass)
	}
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{ScanLabel: s.scan.ID, "app.kubernetes.io/managed-by": "nondet-sandbox"}},
		Spec:       spec,
	}
}

// parameterCodec encodes the attach options, from core/v1's types alone.
var parameterCodec = func() runtime.ParameterCodec {
	sch := runtime.NewScheme()
	if err := corev1.AddToScheme(sch); err != nil {
		panic(err) // static types that always register
	}
	return runtime.NewParameterCodec(sch)
}()

// literal escapes a command for the kubelet, which expands $(NAME) and
// turns $$ into $ in a container's command.
func literal(cmd []string) []string {
	out := make([]string, len(cmd))
	for i, a := range cmd {
		out[i] = strings.ReplaceAll(a, "$", "$$")
	}
	return out
}

var notName = regexp.MustCompile(`[^a-z0-9-]+`)

// podName makes a job's id a pod name (a DNS label), unique by a digest
// when it has to be cut.
func podName(id string) string {
	n := strings.Trim(notName.ReplaceAllString(strings.ToLower(id), "-"), "-")
	if len(n) > 63 {
		sum := sha256.Sum256([]byte(id))
		n = strings.TrimRight(n[:52], "-") + "-" + hex.EncodeToString(sum[:])[:10]
	}
	return n
}

// hostname keeps a run's hostname when it is a DNS label, as the pod
// field must be.
func hostname(h string) string {
	if h == "" {
		return ""
	}
	n := strings.Trim(notName.ReplaceAllString(strings.ToLower(h), "-"), "-")
	if len(n) > 63 {
		n = n[:63]
	}
	return n
}

// Sweep removes the pods and leases of scans that no longer run: not
// running here (alive) and with a lease no one renewed within its term.
func (r *Runtime) Sweep(ctx context.Context, alive func(string) bool) ([]string, error) {
	live := map[string]bool{}
	leases, err := r.leases.Leases(r.ns).List(ctx, metav1.ListOptions{LabelSelector: ScanLabel})
	if err != nil {
		return nil, fmt.Errorf("kubernetes: listing leases: %s", firstLine(err.Error()))
	}
	here := machine()
	for _, l := range leases.Items {
		// A scan of this machine (machine) is alive when alive says so,
		// however fresh its lease; one of another machine while its lease is.
		h := ""
		if l.Spec.HolderIdentity != nil {
			h, _, _ = strings.Cut(*l.Spec.HolderIdentity, "/")
		}
		if h != here && fresh(&l) {
			live[l.Labels[ScanLabel]] = true
		}
	}
	return r.removeScan(ctx, func(id string) bool { return alive(id) || live[id] })
}

// fresh says a lease was renewed within its term.
func fresh(l *coordinationv1.Lease) bool {
	if l.Spec.RenewTime == nil || l.Spec.LeaseDurationSeconds == nil {
		return false
	}
	return time.Since(l.Spec.RenewTime.Time) < time.Duration(*l.Spec.LeaseDurationSeconds)*time.Second
}

// removeScan deletes the pods and leases of every scan alive says is not.
func (r *Runtime) removeScan(ctx context.Context, alive func(string) bool) ([]string, error) {
	var removed []string
	var errs []error
	pods, err := r.core.Pods(r.ns).List(ctx, metav1.ListOptions{LabelSelector: ScanLabel})
	if err != nil {
		return nil, fmt.Errorf("kubernetes: listing pods: %s", firstLine(err.Error()))
	}
	for _, p := range pods.Items {
		if alive(p.Labels[ScanLabel]) {
			continue
		}
		err := r.core.Pods(r.ns).Delete(ctx, p.Name, metav1.DeleteOptions{GracePeriodSeconds: ptr.To(int64(0))})
		if err != nil && !apierrors.IsNotFound(err) {
			errs = append(errs, err)
			continue
		}
		removed = append(removed, "pod "+p.Name)
	}
	leases, err := r.leases.Leases(r.ns).List(ctx, metav1.ListOptions{LabelSelector: ScanLabel})
	if err != nil {
		return removed, errors.Join(append(errs, err)...)
	}
	for _, l := range leases.Items {
		if alive(l.Labels[ScanLabel]) {
			continue
		}
		if err := r.leases.Leases(r.ns).Delete(ctx, l.Name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			errs = append(errs, err)
			continue
		}
		removed = append(removed, "lease "+l.Name)
	}
	return removed, errors.Join(errs...)
}

// Resources lists the pods and leases of a scan (every scan's when id is
// empty) that exist now, as "pod NAME" and "lease NAME".
func (r *Runtime) Resources(ctx context.Context, id string) ([]string, error) {
	sel := ScanLabel
	if id != "" {
		sel = ScanLabel + "=" + id
	}
	var out []string
	pods, err := r.core.Pods(r.ns).List(ctx, metav1.ListOptions{LabelSelector: sel})
	if err != nil {
		return nil, err
	}
	for _, p := range pods.Items {
		out = append(out, "pod "+p.Name)
	}
	leases, err := r.leases.Leases(r.ns).List(ctx, metav1.ListOptions{LabelSelector: sel})
	if err != nil {
		return nil, err
	}
	for _, l := range leases.Items {
		out = append(out, "lease "+l.Name)
	}
	return out, nil
}

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}
