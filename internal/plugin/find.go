package plugin

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
)

// KubernetesProgram is the program that serves the kubernetes runtime.
const KubernetesProgram = "sandboxer-kubernetes"

// Find returns the path of program: beside the running executable (how
// `make build` and `go install ./cmd/...` leave them), else on PATH.
func Find(program string) (string, error) {
	self, err := os.Executable()
	if err == nil {
		if resolved, err := filepath.EvalSymlinks(self); err == nil {
			self = resolved
		}
		p := filepath.Join(filepath.Dir(self), program)
		if st, err := os.Stat(p); err == nil && !st.IsDir() && st.Mode()&0o111 != 0 {
			return p, nil
		}
	}
	p, err := exec.LookPath(program)
	if err == nil {
		return p, nil
	}
	if errors.Is(err, exec.ErrNotFound) {
		where := "on PATH"
		if self != "" {
			where = "beside " + self + " or on PATH"
		}
		return "", fmt.Errorf("its program %s is not %s; make build puts it beside sandboxer in bin/, go install github.com/sandboxer/sandboxer/cmd/%s installs it", program, where, program)
	}
	return "", fmt.Errorf("find %s: %w", program, err)
}
