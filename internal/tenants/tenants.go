package tenants

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/zclconf/go-cty/cty"

	"github.com/sandboxer/sandboxer"
)

// Set is a loaded tenants file: the tenants by the hash of each token,
// and by the ServiceAccounts each admits (ServiceAccount).
type Set struct {
	byHash map[[32]byte]*sandboxer.Tenant
	// bySA maps "namespace:name" and "namespace:*" to their tenant.
	bySA  map[string]*sandboxer.Tenant
	names []string
}

// Lookup is the tenant whose token hashes to sum; nil when none has it.
func (s *Set) Lookup(sum [32]byte) *sandboxer.Tenant {
	if s == nil {
		return nil
	}
	return s.byHash[sum]
}

// Names are the tenants' names, sorted.
func (s *Set) Names() []string { return slices.Clone(s.names) }

// Hash is how a token is written in the file: "sha256:" and the hex
// SHA-256 of the token.
func Hash(token string) string {
	sum := sha256.Sum256([]byte(token))
	return "sha256:" + hex.EncodeToString(sum[:])
}

var (
	fileSchema   = &hcl.BodySchema{Blocks: []hcl.BlockHeaderSchema{{Type: "tenant", LabelNames: []string{"name"}}}}
	tenantSchema = &hcl.BodySchema{
		Attributes: []hcl.AttributeSchema{{Name: "tokens"}, {Name: "service_accounts"}, {Name: "blocks"}},
		Blocks:     []hcl.BlockHeaderSchema{{Type: "quota"}},
	}
	quotaSchema = &hcl.BodySchema{Attributes: []hcl.AttributeSchema{
		{Name: "instances"}, {Name: "max_ttl"}, {Name: "databases"}, {Name: "snapshots"}, {Name: "requests_per_minute"},
	}}
	hashPattern = regexp.MustCompile(`^sha256:[0-9a-f]{64}$`)
)

// Load reads and checks the file at path. blocks are the on-demand
// blocks of the configuration a tenant may name. The error, when the
// file is bad, lists every problem as file:line:col.
func Load(path string, blocks []string) (*Set, error) {
	src, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read tenants file: %w", err)
	}
	set, diags := Parse(src, path, blocks)
	if diags.HasErrors() {
		return nil, Error(diags)
	}
	return set, nil
}

// Error renders diagnostics as one error, a line each, file:line:col
// first.
func Error(diags hcl.Diagnostics) error {
	var lines []string
	for _, d := range diags {
		if d.Severity != hcl.DiagError {
			continue
		}
		where := ""
		if d.Subject != nil {
			where = fmt.Sprintf("%s:%d:%d: ", d.Subject.Filename, d.Subject.Start.Line, d.Subject.Start.Column)
		}
		msg := where + d.Summary
		if d.Detail != "" {
			msg += ": " + d.Detail
		}
		lines = append(lines, msg)
	}
	return fmt.Errorf("tenants file: %s", strings.Join(lines, "\n"))
}

// Parse decodes a tenants file. Diagnostics never quote a token or a
// hash.
func Parse(src []byte, filename string, blocks []string) (*Set, hcl.Diagnostics) {
	f, diags := hclsyntax.ParseConfig(src, filename, hcl.InitialPos)
	if diags.HasErrors() {
		return nil, diags
	}
	content, d := f.Body.Content(fileSchema)
	diags = append(diags, d...)
	set := &Set{byHash: map[[32]byte]*sandboxer.Tenant{}, bySA: map[string]*sandboxer.Tenant{}}
	seen := map[string]hcl.Range{}
	hashSeen := map[[32]byte]hcl.Range{}
	saSeen := map[string]hcl.Range{}
	for _, b := range content.Blocks {
		name := b.Labels[0]
		if !sandboxer.TenantNamePattern.MatchString(name) {
			diags = append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Invalid tenant name",
				Detail:  fmt.Sprintf("%q: a tenant name is 1 to 24 lowercase letters, digits and '-', starting with a letter or digit", name),
				Subject: b.LabelRanges[0].Ptr()})
			continue
		}
		if prev, dup := seen[name]; dup {
			diags = append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Duplicate tenant",
				Detail: fmt.Sprintf("tenant %q is already declared at %s", name, prev), Subject: b.LabelRanges[0].Ptr()})
			continue
		}
		seen[name] = b.LabelRanges[0]
		t, sums, sas, d := decodeTenant(name, b, blocks)
		diags = append(diags, d...)
		if t == nil {
			continue
		}
		for _, s := range sums {
			if prev, dup := hashSeen[s.sum]; dup {
				diags = append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Duplicate token",
					Detail: fmt.Sprintf("this token's hash is already given at %s; a token belongs to one tenant", prev), Subject: s.rng.Ptr()})
				continue
			}
			hashSeen[s.sum] = s.rng
			set.byHash[s.sum] = t
		}
		for _, sa := range sas {
			if prev, dup := saSeen[sa.v]; dup {
				diags = append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Duplicate service account",
					Detail: fmt.Sprintf("%q is already given at %s; a ServiceAccount pattern belongs to one tenant", sa.v, prev), Subject: sa.rng.Ptr()})
				continue
			}
			saSeen[sa.v] = sa.rng
			set.bySA[sa.v] = t
		}
		set.names = append(set.names, name)
	}
	if diags.HasErrors() {
		return nil, diags
	}
	slices.Sort(set.names)
	return set, diags
}

type tokenHash struct {
	sum [32]byte
	rng hcl.Range
}

func decodeTenant(name string, b *hcl.Block, blocks []string) (*sandboxer.Tenant, []tokenHash, []located, hcl.Diagnostics) {
	content, diags := b.Body.Content(tenantSchema)
	if diags.HasErrors() {
		return nil, nil, nil, diags
	}
	t := &sandboxer.Tenant{Name: name}
	var sums []tokenHash
	tokens, d := stringList(content.Attributes["tokens"])
	diags = append(diags, d...)
	sas, dsa := serviceAccounts(content.Attributes["service_accounts"])
	diags = append(diags, dsa...)
	if len(tokens) == 0 && len(sas) == 0 && !d.HasErrors() && !dsa.HasErrors() {
		subject := b.DefRange.Ptr()
		if a := content.Attributes["tokens"]; a != nil {
			subject = a.Range.Ptr()
		} else if a := content.Attributes["service_accounts"]; a != nil {
			subject = a.Range.Ptr()
		}
		diags = append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "No tokens",
			Detail: fmt.Sprintf("tenant %q needs at least one token hash (tokens) or ServiceAccount (service_accounts)", name), Subject: subject})
	}
	for _, tok := range tokens {
		if !hashPattern.MatchString(tok.v) {
			// Never quote it: it may be the token itself.
			diags = append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Not a token hash",
				Detail:  `tokens holds only hashes, "sha256:" and 64 lowercase hex digits (printf %s "$TOKEN" | sha256sum); a plain-text token must never be in this file`,
				Subject: tok.rng.Ptr()})
			continue
		}
		var s [32]byte
		_, _ = hex.Decode(s[:], []byte(tok.v[len("sha256:"):]))
		sums = append(sums, tokenHash{sum: s, rng: tok.rng})
	}
	if a, ok := content.Attributes["blocks"]; ok {
		names, d := stringList(a)
		diags = append(diags, d...)
		for _, n := range names {
			if !slices.Contains(blocks, n.v) {
				diags = append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Unknown block",
					Detail:  fmt.Sprintf("no on-demand sandbox block %q in the configuration (on-demand blocks: %s)", n.v, strings.Join(blocks, ", ")),
					Subject: n.rng.Ptr()})
				continue
			}
			t.Blocks = append(t.Blocks, n.v)
		}
	}
	for i, qb := range content.Blocks {
		if i > 0 {
			diags = append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Duplicate quota block",
				Detail: fmt.Sprintf("tenant %q has one quota block", name), Subject: qb.DefRange.Ptr()})
			continue
		}
		diags = append(diags, decodeQuota(qb, &t.Quota)...)
	}
	if diags.HasErrors() {
		return nil, nil, nil, diags
	}
	return t, sums, sas, diags
}

func decodeQuota(b *hcl.Block, q *sandboxer.Quota) hcl.Diagnostics {
	content, diags := b.Body.Content(quotaSchema)
	if diags.HasErrors() {
		return diags
	}
	ints := map[string]*int{"instances": &q.Instances, "requests_per_minute": &q.RequestsPerMinute,
		"databases": &q.Databases, "snapshots": &q.Snapshots}
	for name, dst := range ints {
		a, ok := content.Attributes[name]
		if !ok {
			continue
		}
		v, d := a.Expr.Value(nil)
		diags = append(diags, d...)
		if d.HasErrors() {
			continue
		}
		n, ok := wholeNumber(v)
		if !ok || n < 0 {
			diags = append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Invalid quota",
				Detail: fmt.Sprintf("%s is a whole number, 0 or more (0: no bound)", name), Subject: a.Expr.Range().Ptr()})
			continue
		}
		*dst = n
	}
	if a, ok := content.Attributes["max_ttl"]; ok {
		v, d := a.Expr.Value(nil)
		diags = append(diags, d...)
		var ttl time.Duration
		var err error
		if !d.HasErrors() {
			if v.Type() != cty.String || v.IsNull() {
				err = fmt.Errorf("want a string")
			} else if ttl, err = time.ParseDuration(v.AsString()); err == nil && ttl <= 0 {
				err = fmt.Errorf("want a positive duration")
			}
		}
		if err != nil {
			diags = append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Invalid quota",
				Detail: "max_ttl is a duration such as \"4h\"", Subject: a.Expr.Range().Ptr()})
		}
		q.MaxTTL = ttl
	}
	return diags
}

func wholeNumber(v cty.Value) (int, bool) {
	if v.IsNull() || v.Type() != cty.Number {
		return 0, false
	}
	bf := v.AsBigFloat()
	if !bf.IsInt() {
		return 0, false
	}
	n, acc := bf.Int64()
	if acc != 0 || n > 1<<31 {
		return 0, false
	}
	return int(n), true
}

type located struct {
	v   string
	rng hcl.Range
}

// stringList is a list of string literals, each with its own range (a
// token hash's error points at that hash).
func stringList(a *hcl.Attribute) ([]located, hcl.Diagnostics) {
	if a == nil {
		return nil, nil
	}
	bad := hcl.Diagnostics{{Severity: hcl.DiagError, Summary: "Invalid list",
		Detail: fmt.Sprintf("%s is a list of strings", a.Name), Subject: a.Expr.Range().Ptr()}}
	tup, ok := a.Expr.(*hclsyntax.TupleConsExpr)
	if !ok {
		return nil, bad
	}
	var out []located
	var diags hcl.Diagnostics
	for _, e := range tup.Exprs {
		v, d := e.Value(nil)
		if d.HasErrors() || v.IsNull() || v.Type() != cty.String {
			diags = append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Invalid list",
				Detail: fmt.Sprintf("%s is a list of strings", a.Name), Subject: e.Range().Ptr()})
			continue
		}
		out = append(out, located{v: v.AsString(), rng: e.Range()})
	}
	return out, diags
}
