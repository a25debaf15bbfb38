// Package fifochan carries a job's record channel, input and call marks
// through three FIFOs in a folder that is bound read-only into its
// container, for runtimes that pass a container no descriptor (the Docker
// engine, gVisor's runsc). The container's first shell opens the FIFOs as
// descriptors 3, 4 and 5; once it holds all three, every name is unlinked
// before the input flows, so no path inside leads to them when the worker
// runs, and the probe cannot open them for writing through the read-only
// bind anyway. It is not the protocol (engine/protocol.go) nor a backend.
package fifochan

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"syscall"

	"github.com/nondet-sandbox/nondet-sandbox/sandbox"
)

// Inside is where the folder appears in the container.
const Inside = "/nondet-chan"

// Open is a shell command that opens the three FIFOs (their paths are its
// first three arguments) as descriptors 3, 4 and 5, then runs the rest of
// its arguments: sh -c Open sh RECORDS INPUT MARKS COMMAND...
const Open = `exec 3>"$1" 4<"$2" 5>"$3" || exit 125; shift 3; exec "$@"`

// Chan is one job's three FIFOs.
type Chan struct {
	Dir                   string // on the host: bind it read-only at Inside
	records, input, marks string
	relayed, marked       chan struct{}
}

// Make creates the FIFOs in dir (made if missing): the records and marks
// writable by the probe's user, the input readable.
func Make(dir string) (*Chan, error) {
	if err := os.MkdirAll(dir, 0o711); err != nil {
		return nil, err
	}
	if err := os.Chmod(dir, 0o711); err != nil {
		return nil, err
	}
	c := &Chan{Dir: dir, records: filepath.Join(dir, "records"), input: filepath.Join(dir, "input"), marks: filepath.Join(dir, "marks")}
	for _, f := range []struct {
		path string
		mode uint32
	}{{c.records, 0o622}, {c.input, 0o644}, {c.marks, 0o622}} {
		if err := syscall.Mkfifo(f.path, f.mode); err != nil {
			return nil, fmt.Errorf("record channel: %w", err)
		}
		if err := os.Chmod(f.path, os.FileMode(f.mode)); err != nil {
			return nil, err
		}
	}
	return c, nil
}

// Args are the FIFOs' paths inside the container, Open's first three
// arguments.
func (c *Chan) Args() []string {
	return []string{Inside + "/records", Inside + "/input", Inside + "/marks"}
}

// Serve relays the job's records and marks and feeds it its input, once
// the container's shell has opened all three: each open blocks until the
// shell opens the other end. Call Finish when the container has ended.
// A job with Admit gets its input only once Admit has returned nil.
func (c *Chan) Serve(ctx context.Context, job *sandbox.Job) {
	c.relayed, c.marked = make(chan struct{}), make(chan struct{})
	opened, marksOpened := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(c.relayed)
		f, err := os.Open(c.records)
		close(opened)
		if err != nil {
			return
		}
		defer f.Close()
		_, _ = io.Copy(job.Records, f)
	}()
	go func() {
		defer close(c.marked)
		f, err := os.Open(c.marks) // opened by the shell after the input
		close(marksOpened)
		if err != nil {
			return
		}
		defer f.Close()
		sandbox.RelayMarks(job.Marks, f)
	}()
	go func() {
		f, err := os.OpenFile(c.input, os.O_WRONLY, 0)
		<-opened
		<-marksOpened
		c.unlink()
		if err != nil {
			return
		}
		defer f.Close()
		if job.Admit != nil && job.Admit(ctx) != nil {
			return
		}
		if job.Input != nil {
			_, _ = io.Copy(f, job.Input)
		}
	}()
}

func (c *Chan) unlink() {
	os.Remove(c.records)
	os.Remove(c.input)
	os.Remove(c.marks)
}

// Finish releases the ends still waiting for a shell that never opened
// them (the container ended, or never started) and waits until every
// record and mark has been passed on.
func (c *Chan) Finish() {
	for _, w := range []string{c.records, c.marks} {
		if f, err := os.OpenFile(w, os.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
			f.Close()
		}
	}
	if f, err := os.OpenFile(c.input, os.O_RDONLY|syscall.O_NONBLOCK, 0); err == nil {
		f.Close()
	}
	if c.relayed != nil {
		<-c.relayed
		<-c.marked
	}
	c.unlink()
}
