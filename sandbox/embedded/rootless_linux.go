package embedded

import (
	"os"
	"strconv"
	"strings"

	"github.com/nondet-sandbox/nondet-sandbox/sandbox"
)

// newRootless checks what the rootless mode needs of the kernel: user
// namespaces a user without root may create.
func newRootless(opts Options) (*Runtime, error) {
	if opts.Seccomp && !seccompBuilt {
		return nil, sandbox.Unavailable(sandbox.ErrNotInstalled, "this binary was built without seccomp support; build it with `make build` (go build -tags seccomp, needs libseccomp-dev), or pass --seccomp=false")
	}
	if why := userNamespacesRefused(); why != "" {
		return nil, sandbox.Unavailable(sandbox.ErrNotInstalled, "the rootless runtime needs unprivileged user namespaces, and "+why+"; ask an administrator to allow them, or use --runtime docker or --runtime host")
	}
	return &Runtime{opts: opts}, nil
}

// userNamespacesRefused says why this kernel refuses a user namespace to
// a user without root, or "" when it allows one.
func userNamespacesRefused() string {
	if n, err := readInt("/proc/sys/user/max_user_namespaces"); err == nil && n == 0 {
		return "user.max_user_namespaces is 0"
	}
	// Debian's and Ubuntu's own switch, where the kernel has it.
	if n, err := readInt("/proc/sys/kernel/unprivileged_userns_clone"); err == nil && n == 0 {
		return "kernel.unprivileged_userns_clone is 0"
	}
	if n, err := readInt("/proc/sys/kernel/apparmor_restrict_unprivileged_userns"); err == nil && n == 1 && os.Geteuid() != 0 {
		return "AppArmor restricts unprivileged user namespaces (kernel.apparmor_restrict_unprivileged_userns is 1)"
	}
	return ""
}

func readInt(path string) (int, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	return strconv.Atoi(strings.TrimSpace(string(b)))
}
