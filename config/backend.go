package config

import (
	"fmt"
	"net/url"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/zclconf/go-cty/cty"
)

// The sandboxer block names the state backend, as Terraform's terraform
// block does:
//
//	sandboxer {
//	  backend "postgres" {
//	    url          = "postgres://sandboxer@db.internal/state?sslmode=require"
//	    password_env = "SANDBOXER_STATE_PASSWORD" # default PGPASSWORD
//	  }
//	}
//
// or backend "file" { path = "state/sandboxer.db" }. The values are
// literal strings: a backend is chosen before anything is evaluated.
var (
	sandboxerBlockSchema = &hcl.BodySchema{Blocks: []hcl.BlockHeaderSchema{{Type: "backend", LabelNames: []string{"type"}}}}
	pgBackendSchema      = &hcl.BodySchema{Attributes: []hcl.AttributeSchema{{Name: "url", Required: true}, {Name: "password_env"}}}
	fileBackendSchema    = &hcl.BodySchema{Attributes: []hcl.AttributeSchema{{Name: "path"}}}
	backendFileSchema    = &hcl.BodySchema{Blocks: []hcl.BlockHeaderSchema{{Type: "sandboxer"}}}
)

// BackendDecl is the backend the configuration declares.
type BackendDecl struct {
	// Type is "postgres" or "file".
	Type string
	// URL is the PostgreSQL URL without a password; PasswordEnv names the
	// environment variable that holds it.
	URL, PasswordEnv string
	// Path is the state file's path ("" for the default).
	Path      string
	DeclRange hcl.Range
}

// Where is the backend as --backend takes it: the URL with the password
// from getenv (when set), or "file".
func (b *BackendDecl) Where(getenv func(string) string) string {
	if b.Type != "postgres" {
		return "file"
	}
	pw := getenv(b.PasswordEnv)
	u, err := url.Parse(b.URL)
	if pw == "" || err != nil || u.User == nil {
		return b.URL
	}
	u.User = url.UserPassword(u.User.Username(), pw)
	return u.String()
}

// ReadBackend reads the backend of the configuration in dir from its
// sandboxer block alone, so a state command needs no more of the
// configuration than that (nil when none is declared).
func ReadBackend(dir string) (*BackendDecl, hcl.Diagnostics) {
	sources, diags := readDir(dir)
	if diags.HasErrors() {
		return nil, nil // no configuration to read: no backend declared in it
	}
	var blocks hcl.Blocks
	for name, src := range sources {
		f, d := hclsyntax.ParseConfig(src, name, hcl.InitialPos)
		diags = append(diags, d...)
		if d.HasErrors() {
			continue
		}
		content, _, d := f.Body.PartialContent(backendFileSchema)
		diags = append(diags, d...)
		blocks = append(blocks, content.Blocks...)
	}
	if diags.HasErrors() {
		return nil, diags
	}
	return decodeSandboxerBlocks(blocks)
}

// decodeSandboxerBlocks decodes the sandboxer blocks: at most one
// backend among them.
func decodeSandboxerBlocks(blocks hcl.Blocks) (*BackendDecl, hcl.Diagnostics) {
	var diags hcl.Diagnostics
	var decl *BackendDecl
	for _, b := range blocks {
		content, d := b.Body.Content(sandboxerBlockSchema)
		diags = append(diags, d...)
		if d.HasErrors() {
			continue
		}
		for _, bb := range content.Blocks {
			if decl != nil {
				diags = append(diags, errorDiag("Duplicate backend", fmt.Sprintf("A backend is already declared at %s; a configuration has one.", decl.DeclRange), bb.DefRange))
				continue
			}
			nb, d := decodeBackend(bb)
			diags = append(diags, d...)
			if !d.HasErrors() {
				decl = nb
			}
		}
	}
	return decl, diags
}

func decodeBackend(b *hcl.Block) (*BackendDecl, hcl.Diagnostics) {
	decl := &BackendDecl{Type: b.Labels[0], DeclRange: b.DefRange}
	literal := func(attr *hcl.Attribute) (string, hcl.Diagnostics) {
		v, d := attr.Expr.Value(nil)
		if d.HasErrors() || v.IsNull() || v.Type() != cty.String {
			return "", hcl.Diagnostics{errorDiag("Invalid backend setting",
				fmt.Sprintf("%s must be a literal string: a backend is chosen before variables are evaluated.", attr.Name), attr.Expr.Range())}
		}
		return v.AsString(), nil
	}
	switch decl.Type {
	case "postgres":
		content, diags := b.Body.Content(pgBackendSchema)
		if diags.HasErrors() {
			return nil, diags
		}
		attr := content.Attributes["url"]
		s, d := literal(attr)
		if d.HasErrors() {
			return nil, d
		}
		u, err := url.Parse(s)
		if err != nil || (u.Scheme != "postgres" && u.Scheme != "postgresql") {
			// Not echoed: it may hold a password.
			return nil, hcl.Diagnostics{errorDiag("Invalid backend URL", "url must be a postgres:// URL.", attr.Expr.Range())}
		}
		if _, has := u.User.Password(); has || strings.Contains(u.RawQuery, "password=") {
			// Located at the block, not the url: a diagnostic shows its
			// subject's line, and that line holds the password.
			return nil, hcl.Diagnostics{errorDiag("Password in the configuration",
				fmt.Sprintf("The backend's url (line %d) holds a password, and configuration files are committed. Take it out of the url and give it in the environment: the variable password_env names (PGPASSWORD unless set), or the whole URL in SANDBOXER_BACKEND_URL.", attr.Expr.Range().Start.Line),
				b.DefRange)}
		}
		decl.URL, decl.PasswordEnv = s, "PGPASSWORD"
		if a := content.Attributes["password_env"]; a != nil {
			if decl.PasswordEnv, d = literal(a); d.HasErrors() {
				return nil, d
			}
		}
	case "file":
		content, diags := b.Body.Content(fileBackendSchema)
		if diags.HasErrors() {
			return nil, diags
		}
		if a := content.Attributes["path"]; a != nil {
			var d hcl.Diagnostics
			if decl.Path, d = literal(a); d.HasErrors() {
				return nil, d
			}
		}
	default:
		return nil, hcl.Diagnostics{errorDiag("Unknown backend", fmt.Sprintf("Backend %q is not one sandboxer has: use \"postgres\" or \"file\".", decl.Type), b.LabelRanges[0])}
	}
	return decl, nil
}

// decodeSandboxer checks the sandboxer blocks while loading (validate,
// plan); ReadBackend is what chooses the backend.
func (l *loader) decodeSandboxer(blocks hcl.Blocks) hcl.Diagnostics {
	decl, diags := decodeSandboxerBlocks(blocks)
	l.cfg.Backend = decl
	return diags
}
