package docker

import (
	"os"
	"testing"

	"github.com/sandboxer/sandboxer/internal/testenv"
)

// TestMain removes the template volumes (pgtemplate.go) this package's
// tests made with providers of their own, as the engine must end as it
// began (testenv.WithoutNewTemplates).
func TestMain(m *testing.M) {
	os.Exit(testenv.WithoutNewTemplates(m.Run))
}

// TestTemplateLabelsInTestenv: testenv finds templates by this package's
// labels.
func TestTemplateLabelsInTestenv(t *testing.T) {
	if testenv.TemplateLabel != LabelTemplate || testenv.TemplateSaltLabel != labelTemplateSalt {
		t.Errorf("testenv spells the template labels %q, %q; they are %q, %q",
			testenv.TemplateLabel, testenv.TemplateSaltLabel, LabelTemplate, labelTemplateSalt)
	}
}
