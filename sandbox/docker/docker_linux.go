package docker

import (
	"archive/tar"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	cerrdefs "github.com/containerd/errdefs"
	mobyseccomp "github.com/moby/profiles/seccomp"
	"github.com/nondet-sandbox/nondet-sandbox/internal/cleanup"
	"github.com/nondet-sandbox/nondet-sandbox/sandbox/internal/fifochan"
	"io"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/docker/docker/api/types/build"
	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/filters"
	"github.com/docker/docker/api/types/mount"
	"github.com/docker/docker/client"
	"github.com/docker/docker/pkg/jsonmessage"
	"github.com/docker/docker/pkg/stdcopy"
	"github.com/docker/go-units"

	"github.com/nondet-sandbox/nondet-sandbox/sandbox"
)

// DefaultImage is what `make image` builds.
const DefaultImage = sandbox.ProbeImage

// ScanLabel labels every container with its scan's id.
const ScanLabel = "nondet-sandbox.scan"

// Runtime is the Docker backend.
type Runtime struct {
	cli   *client.Client
	image string
}

var _ sandbox.Runtime = (*Runtime)(nil)

// New connects to the engine named by the environment (DOCKER_HOST, or the
// default socket), negotiates the API version and checks the image. Its
// errors are one line that says what to do.
func New(ctx context.Context, image string) (*Runtime, error) {
	if image == "" {
		image = DefaultImage
	}
	cli, err := client.NewClientWithOpts(client.FromEnv, client.WithAPIVersionNegotiation())
	if err != nil {
		return nil, fmt.Errorf("docker: %v; check DOCKER_HOST", err)
	}
	pctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if _, err := cli.Ping(pctx); err != nil {
		cli.Close()
		return nil, sandbox.Unavailable(sandbox.ErrNoEngine, fmt.Sprintf("cannot reach the Docker engine at %s: start it (systemctl start docker, or dockerd &), point DOCKER_HOST at it, or use --runtime embedded", cli.DaemonHost()))
	}
	cli.NegotiateAPIVersion(ctx)
	if _, err := cli.ImageInspect(pctx, image); err != nil {
		cli.Close()
		if cerrdefs.IsNotFound(err) {
			return nil, sandbox.Unavailable(sandbox.ErrNoImage, fmt.Sprintf("the probe image %s is not there: build it with `make image` (images/build-offline.sh, no registry needed), or pass --image", image))
		}
		return nil, fmt.Errorf("docker: inspecting image %s: %v", image, firstLine(err.Error()))
	}
	return &Runtime{cli: cli, image: image}, nil
}

// Close releases the client.
func (r *Runtime) Close() error { return r.cli.Close() }

func (*Runtime) Name() string   { return "docker" }
func (*Runtime) Isolated() bool { return true }

// Capabilities: the interpreter is the image's; the engine cannot read a
// container's peak memory; a container's start (about 200 ms, most of it
// the engine's) is worth overlapping with the running ones.
func (*Runtime) Capabilities() sandbox.Capabilities {
	return sandbox.Capabilities{InImage: true, StartsAhead: true}
}

// Applies: the container's config sets each (hostname, user, working
// directory, HOME's tmpfs, cpuset) or the shell that starts the job does
// (umask, pid floor); the clock through the image's libfaketime.
func (*Runtime) Applies() []sandbox.Support {
	return sandbox.AppliesAll(sandbox.Hostname, sandbox.User, sandbox.Umask, sandbox.Cwd, sandbox.Home, sandbox.CPUs, sandbox.Clock, sandbox.Pid)
}

// Begin remembers the scan; containers are made per job.
func (r *Runtime) Begin(ctx context.Context, scan sandbox.Scan) (sandbox.Session, error) {
	return &session{Runtime: r, scan: scan, Ending: sandbox.EndOnce(func(ctx context.Context) error {
		_, err := r.removeScan(ctx, func(id string) bool { return id != scan.ID })
		return err
	})}, nil
}

// session is one scan's containers, labelled with its id.
type session struct {
	*Runtime
	scan sandbox.Scan
	sandbox.Ending
}

// seccompOpt hands Docker the same seccomp profile the embedded and oci
// runtimes compile (moby's default, from the module this binary was built
// with), not the engine's own built-in copy, which may be older and allow
// more (io_uring on Docker 20.10).
var seccompOpt = func() string {
	b, err := json.Marshal(mobyseccomp.DefaultProfile())
	if err != nil {
		panic(err) // a static value that always marshals
	}
	return "seccomp=" + string(b)
}()

// shim runs once fifochan.Open has opened the record channel, the input
// and the marks as fds 3, 4 and 5: it sets the umask, forks until the next
// pid is the run's (sandbox.ForkToFloor), and runs the interpreter as a
// child, so the shell stays pid 1; it closes the three descriptors once
// the interpreter has them, so no probe reaches them through /proc/1/fd.
const shim = `umask "$1"; t=$2; shift 2; ` + sandbox.ForkToFloor + `; ` + sandbox.RunAndLetGo

// Run creates, starts, waits for and removes one container.
func (s *session) Run(ctx context.Context, job *sandbox.Job) (*sandbox.Exit, error) {
	r := s
	// Docker passes no descriptors: the channel, the input and the marks
	// are FIFOs in a folder bound read-only into the container.
	ch, err := fifochan.Make(filepath.Join(job.Scratch, "chan"))
	if err != nil {
		return nil, err
	}
	defer ch.Finish()

	c := job.Cond
	home, tmpfsSize := job.HomeDir(), job.Tmpfs()
	mounts := []mount.Mount{
		{Type: mount.TypeBind, Source: ch.Dir, Target: fifochan.Inside, ReadOnly: true},
		// Docker mounts a world-writable /dev/mqueue; cover it.
		{Type: mount.TypeTmpfs, Target: "/dev/mqueue", ReadOnly: true, TmpfsOptions: &mount.TmpfsOptions{SizeBytes: 4096}},
	}
	for _, b := range job.Binds {
		mounts = append(mounts, mount.Mount{Type: mount.TypeBind, Source: b.Source, Target: b.Target, ReadOnly: true})
	}
	for _, m := range job.Masks {
		if m.Dir {
			mounts = append(mounts, mount.Mount{Type: mount.TypeTmpfs, Target: m.Target, ReadOnly: true,
				TmpfsOptions: &mount.TmpfsOptions{SizeBytes: 4096, Mode: 0o555}})
		} else {
			mounts = append(mounts, mount.Mount{Type: mount.TypeBind, Source: "/dev/null", Target: m.Target, ReadOnly: true})
		}
	}
	if c.CPUs != "" {
		online, err := sandbox.CPUOnlineFile(job.Scratch, c.CPUs)
		if err != nil {
			return nil, fmt.Errorf("docker: cpu set: %w", err)
		}
		mounts = append(mounts, mount.Mount{Type: mount.TypeBind, Source: online, Target: sandbox.CPUOnline, ReadOnly: true})
	}
	size := strconv.FormatInt(tmpfsSize, 10)
	pids := job.Limits.Pids
	hc := &container.HostConfig{
		ReadonlyRootfs: true,
		NetworkMode:    "none",
		IpcMode:        "none", // a private IPC namespace and no writable /dev/shm
		CapDrop:        []string{"ALL"},
		SecurityOpt:    []string{"no-new-privileges", seccompOpt},
		Mounts:         mounts,
		Tmpfs: map[string]string{
			"/tmp": "rw,nosuid,nodev,noexec,mode=1777,size=" + size,
			home:   fmt.Sprintf("rw,nosuid,nodev,noexec,mode=700,size=%s,uid=%d,gid=%d", size, c.UID, c.GID),
		},
		LogConfig: container.LogConfig{Type: "none"}, // the scanned code's output never lands on the host's disk
		Resources: container.Resources{
			Memory: job.Limits.MemoryBytes, MemorySwap: job.Limits.MemoryBytes,
			PidsLimit: &pids, CpusetCpus: c.CPUs, NanoCPUs: int64(job.Limits.CPUs * 1e9),
			Ulimits: []*units.Ulimit{{Name: "nofile", Soft: 1024, Hard: 1024}, {Name: "core", Soft: 0, Hard: 0}},
		},
	}
	umask := fmt.Sprintf("%04o", c.Umask)
	// The image's own ENV (LANG, PYTHON_VERSION, GPG_KEY in the official
	// images) must not reach the probe: env -i gives it exactly the job's.
	cmd := append(append([]string{"/bin/sh", "-c", fifochan.Open, "sh"}, ch.Args()...),
		"/bin/sh", "-c", shim, "sh", umask, strconv.Itoa(c.PidFloor), "/usr/bin/env", "-i")
	cmd = append(append(cmd, job.Env...), job.Argv...)
	cfg := &container.Config{
		Image: r.image, Cmd: cmd, Env: job.Env, WorkingDir: job.Dir, Hostname: c.Hostname,
		User:         fmt.Sprintf("%d:%d", c.UID, c.GID),
		Labels:       map[string]string{ScanLabel: s.scan.ID},
		AttachStdout: true, AttachStderr: true, NetworkDisabled: true,
	}
	created, err := r.cli.ContainerCreate(ctx, cfg, hc, nil, nil, job.ID)
	if err != nil {
		return nil, fmt.Errorf("docker: create: %v", firstLine(err.Error()))
	}
	id := created.ID
	defer cleanup.Do(ctx, 30*time.Second, func(rctx context.Context) {
		_ = r.cli.ContainerRemove(rctx, id, container.RemoveOptions{Force: true})
	})

	att, err := r.cli.ContainerAttach(ctx, id, container.AttachOptions{Stream: true, Stdout: true, Stderr: true})
	if err != nil {
		return nil, fmt.Errorf("docker: attach: %v", firstLine(err.Error()))
	}
	defer att.Close()
	copied := make(chan struct{})
	go func() {
		defer close(copied)
		_, _ = stdcopy.StdCopy(job.Stdout, job.Stderr, att.Reader)
	}()
	ch.Serve(ctx, job)
	waitC, errC := r.cli.ContainerWait(ctx, id, container.WaitConditionNextExit)
	if err := r.cli.ContainerStart(ctx, id, container.StartOptions{}); err != nil {
		return nil, fmt.Errorf("docker: start: %v", firstLine(err.Error()))
	}
	exit := &sandbox.Exit{}
	select {
	case w := <-waitC:
		exit.Code, exit.Signal = sandbox.DecodeShimStatus(int(w.StatusCode))
	case err := <-errC:
		cleanup.Do(ctx, 10*time.Second, func(kctx context.Context) { _ = r.cli.ContainerKill(kctx, id, "KILL") })
		if ctx.Err() == nil {
			return nil, fmt.Errorf("docker: wait: %v", firstLine(err.Error()))
		}
		exit.Signal = "SIGKILL"
	}
	ch.Finish()
	select {
	case <-copied:
	case <-time.After(2 * time.Second):
	}
	cleanup.Do(ctx, 10*time.Second, func(ictx context.Context) {
		if info, err := r.cli.ContainerInspect(ictx, id); err == nil && info.State != nil {
			exit.OOMKilled = info.State.OOMKilled
		}
	})
	return exit, nil
}

// Sweep removes the containers of scans that no longer run.
func (r *Runtime) Sweep(ctx context.Context, alive func(string) bool) ([]string, error) {
	return r.removeScan(ctx, alive)
}

func (r *Runtime) removeScan(ctx context.Context, alive func(string) bool) ([]string, error) {
	list, err := r.cli.ContainerList(ctx, container.ListOptions{All: true, Filters: filters.NewArgs(filters.Arg("label", ScanLabel))})
	if err != nil {
		return nil, fmt.Errorf("docker: list containers: %v", firstLine(err.Error()))
	}
	var removed []string
	var errs []error
	for _, c := range list {
		if alive(c.Labels[ScanLabel]) {
			continue
		}
		if err := r.cli.ContainerRemove(ctx, c.ID, container.RemoveOptions{Force: true}); err != nil && !cerrdefs.IsNotFound(err) {
			errs = append(errs, err)
			continue
		}
		name := c.ID[:12]
		if len(c.Names) > 0 {
			name = strings.TrimPrefix(c.Names[0], "/")
		}
		removed = append(removed, "container "+name)
	}
	return removed, errors.Join(errs...)
}

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}

// BuildImage builds the probe image from dockerfile (its own context: the
// Dockerfile copies nothing in) as tag through the engine, writing the
// build's output to log. It fails when the engine cannot fetch the base
// image, which is what happens with no registry: then build the base
// offline (images/build-offline.sh).
func BuildImage(ctx context.Context, dockerfile []byte, tag string, log io.Writer) error {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	if err := tw.WriteHeader(&tar.Header{Name: "Dockerfile", Mode: 0o644, Size: int64(len(dockerfile))}); err != nil {
		return err
	}
	if _, err := tw.Write(dockerfile); err != nil {
		return err
	}
	if err := tw.Close(); err != nil {
		return err
	}
	return BuildContext(ctx, &buf, tag, log)
}

// BuildContext builds an image from a build context (a tar holding a
// Dockerfile), tagged tag; the build's output goes to log.
func BuildContext(ctx context.Context, buildContext io.Reader, tag string, log io.Writer) error {
	cli, err := client.NewClientWithOpts(client.FromEnv, client.WithAPIVersionNegotiation())
	if err != nil {
		return fmt.Errorf("docker: %v; check DOCKER_HOST", err)
	}
	defer cli.Close()
	pctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if _, err := cli.Ping(pctx); err != nil {
		return sandbox.Unavailable(sandbox.ErrNoEngine, fmt.Sprintf("cannot reach the Docker engine at %s: start it (systemctl start docker, or dockerd &), or point DOCKER_HOST at it", cli.DaemonHost()))
	}
	resp, err := cli.ImageBuild(ctx, buildContext, build.ImageBuildOptions{Tags: []string{tag}, Dockerfile: "Dockerfile", Remove: true, ForceRemove: true})
	if err != nil {
		return fmt.Errorf("docker build: %v", firstLine(err.Error()))
	}
	defer resp.Body.Close()
	if err := jsonmessage.DisplayJSONMessagesStream(resp.Body, log, 0, false, nil); err != nil {
		return fmt.Errorf("docker build: %v", firstLine(err.Error()))
	}
	return nil
}
