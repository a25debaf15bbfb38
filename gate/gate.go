package gate

import (
	"fmt"
	"sort"
	"strings"
)

// Call is one call site in a function body, as discovery saw it: the
// dotted name through the module's imports (os.remove), or ".method" when
// the receiver is computed.
type Call struct {
	Name  string `json:"name"`
	Line  int    `json:"line"`
	Mode  string `json:"mode,omitempty"`  // for open() and friends: the literal mode, or "?"
	Local bool   `json:"local,omitempty"` // a module-level function of the same module
	Args  int    `json:"args,omitempty"`  // how many arguments the call passes
}

// Facts is what discovery reports about one body.
type Facts struct {
	Calls    []Call `json:"calls"`
	SetIters []int  `json:"set_iters"`
}

// Refusal says why a function may not run outside a container.
type Refusal struct {
	Call string
	Line int
	Via  string // the same-module function through which it is reached
}

func (r *Refusal) Error() string {
	via := ""
	if r.Via != "" {
		via = " (through " + r.Via + ")"
	}
	return fmt.Sprintf("calls %s at line %d%s, which could change the world outside the process", r.Call, r.Line, via)
}

// worldChanging are dotted names (or prefixes ending in ".") whose call
// could write, delete, signal or communicate.
var worldChanging = []string{
	"os.system", "os.popen", "os.remove", "os.unlink", "os.rename", "os.renames",
	"os.replace", "os.mkdir", "os.makedirs", "os.rmdir", "os.removedirs", "os.kill",
	"os.killpg", "os.fork", "os.forkpty", "os.exec", "os.spawn", "os.posix_spawn",
	"os.truncate", "os.ftruncate", "os.chmod", "os.lchmod", "os.chown", "os.lchown",
	"os.link", "os.symlink", "os.mkfifo", "os.mknod", "os.open", "os.write",
	"os.pwrite", "os.utime", "os.setxattr", "os.removexattr", "os.chdir", "os.chroot",
	"os.setuid", "os.setgid", "os.setsid", "os.sendfile", "os.copy_file_range",
	"shutil.", "subprocess.", "socket.", "ssl.", "urllib.request.", "urllib.urlopen",
	"http.client.", "http.server.", "ftplib.", "smtplib.", "poplib.", "imaplib.",
	"telnetlib.", "xmlrpc.", "socketserver.", "asyncio.open_connection",
	"asyncio.create_subprocess", "asyncio.start_server", "webbrowser.", "tempfile.",
	"multiprocessing.", "concurrent.futures.ProcessPoolExecutor", "pty.", "ctypes.",
	"signal.pthread_kill", "sqlite3.connect", "dbm.", "shelve.open", "zipfile.ZipFile",
	"tarfile.", "gzip.open", "bz2.open", "lzma.open", "logging.FileHandler",
	"logging.basicConfig", "requests.", "httpx.", "urllib3.", "aiohttp.",
	"pathlib.Path.write", "pathlib.Path.touch", "pathlib.Path.mkdir",
	"pathlib.Path.unlink", "pathlib.Path.rmdir", "pathlib.Path.rename",
	"builtins.exec", "builtins.eval", "exec", "eval", "__import__", "importlib.import_module",
	"io.FileIO", "os.fchmod", "os.fchown", "os.lchflags", "os.chflags", "os.setpgid", "os.setpgrp",
	"signal.pidfd_send_signal", "_posixsubprocess.", "_socket.", "posix.", "nt.",
}

// writingMethods are method names that write or delete whatever their
// receiver is (pathlib paths, zip and tar files, loggers' handlers).
var writingMethods = map[string]bool{
	"write_text": true, "write_bytes": true, "touch": true, "mkdir": true,
	"unlink": true, "rmdir": true, "rename": true, "symlink_to": true,
	"hardlink_to": true, "chmod": true, "lchmod": true, "writestr": true,
	"extractall": true, "extract": true, "sendall": true, "sendto": true,
	"connect": true, "bind": true, "listen": true,
}

// openers open a file in the mode of their second argument or mode=;
// ".open" is Path(...).open and the like.
var openers = map[string]bool{
	"open": true, "io.open": true, "codecs.open": true, "os.fdopen": true, ".open": true, "builtins.open": true,
	"gzip.open": true, "bz2.open": true, "lzma.open": true, "tarfile.open": true,
	"pathlib.Path.open": true,
}

// Openers are the calls whose mode discovery must record, sorted.
func Openers() []string {
	out := make([]string, 0, len(openers))
	for name := range openers {
		out = append(out, name)
	}
	sort.Strings(out)
	return out
}

// callRefused says whether one call site changes the world.
func callRefused(c Call) bool {
	if openers[c.Name] {
		return c.Mode == "?" || strings.ContainsAny(c.Mode, "wax+")
	}
	if strings.HasPrefix(c.Name, ".") {
		return writingMethods[c.Name[1:]]
	}
	for _, w := range worldChanging {
		switch {
		case strings.HasSuffix(w, "."), w == "os.exec", w == "os.spawn", w == "os.posix_spawn":
			if strings.HasPrefix(c.Name, w) {
				return true
			}
		case c.Name == w:
			return true
		}
	}
	return false
}

// Check returns the first world-changing call in a body, or nil.
func Check(f Facts) *Refusal {
	for _, c := range f.Calls {
		if callRefused(c) {
			return &Refusal{Call: c.Name, Line: c.Line}
		}
	}
	return nil
}

// CheckModule judges every function of a module, following calls to other
// module-level functions of the same module, so a function that reaches a
// write through a local helper is refused too. Module-level code that
// changes the world refuses the whole module: importing runs it.
func CheckModule(module Facts, funcs map[string]Facts) (moduleRefusal *Refusal, refused map[string]*Refusal) {
	if r := Check(module); r != nil {
		return r, nil
	}
	refused = map[string]*Refusal{}
	names := make([]string, 0, len(funcs))
	for n := range funcs {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		if r := reach(n, funcs, map[string]bool{}); r != nil {
			refused[n] = r
		}
	}
	// Module-level code that calls one of its own world-changing functions
	// runs that function at import.
	for _, c := range module.Calls {
		if r := refused[c.Name]; c.Local && r != nil {
			return &Refusal{Call: r.Call, Line: c.Line, Via: c.Name}, refused
		}
	}
	return nil, refused
}

func reach(name string, funcs map[string]Facts, visiting map[string]bool) *Refusal {
	if visiting[name] {
		return nil
	}
	visiting[name] = true
	f := funcs[name]
	if r := Check(f); r != nil {
		return r
	}
	for _, c := range f.Calls {
		if !c.Local {
			continue
		}
		if _, ok := funcs[c.Name]; !ok {
			continue
		}
		if r := reach(c.Name, funcs, visiting); r != nil {
			via := c.Name
			if r.Via != "" {
				via = c.Name + " -> " + r.Via
			}
			return &Refusal{Call: r.Call, Line: r.Line, Via: via}
		}
	}
	return nil
}
