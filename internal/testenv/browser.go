package testenv

import (
	"os"
	"os/exec"
	"testing"
)

// The dashboard's tests drive a real headless Chromium (Debian's
// chromium package; .ci/run installs it with scripts/chromium.sh).
// Without one they skip, unless SANDBOXER_REQUIRE_BROWSER=1 (set by
// .ci/run), where that is a failure. SANDBOXER_BROWSER names the
// program when it is not on PATH under a usual name.
const (
	BrowserRequireEnv = "SANDBOXER_REQUIRE_BROWSER"
	BrowserEnv        = "SANDBOXER_BROWSER"
)

// Browser returns the path of a Chromium to run, or skips tb (fails it
// with SANDBOXER_REQUIRE_BROWSER=1) when there is none.
func Browser(tb testing.TB) string {
	tb.Helper()
	names := []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable"}
	if env := os.Getenv(BrowserEnv); env != "" {
		names = []string{env}
	}
	for _, name := range names {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if v := os.Getenv(BrowserRequireEnv); v != "" && v != "0" && v != "false" {
		tb.Fatalf("no Chromium (tried %v), and %s=1 requires one (apt-get install chromium, or scripts/chromium.sh)", names, BrowserRequireEnv)
	}
	tb.Skipf("no Chromium (tried %v; apt-get install chromium; %s=1 makes this a failure)", names, BrowserRequireEnv)
	return ""
}
