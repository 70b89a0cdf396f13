package config

import (
	"crypto/md5"
	"crypto/sha1"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"math/big"
	"os"
	"path/filepath"
	"strings"
	"unicode/utf8"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/ext/tryfunc"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/zclconf/go-cty/cty"
	"github.com/zclconf/go-cty/cty/function"
	"github.com/zclconf/go-cty/cty/function/stdlib"
)

// The rest of Terraform's function library that is pure and fits: from
// go-cty's stdlib where it has them, written here where Terraform wrote
// its own (sum, one, alltrue, startswith, the hashes, templatestring, …).
// docs/functions.md lists every Terraform function with why any is left
// out. All of them go through the meter like the others; those whose
// result can outgrow their arguments have an estimate (estimateMore).

// MaxFileBytes bounds what file and templatefile read: a configuration
// reads templates and small fixtures, not data sets.
const MaxFileBytes = 1 << 20

func terraformFunctions(dir string, table map[string]function.Function) {
	more := map[string]function.Function{
		// Collections.
		"range":                  stdlib.RangeFunc,
		"zipmap":                 stdlib.ZipmapFunc,
		"slice":                  stdlib.SliceFunc,
		"reverse":                stdlib.ReverseListFunc,
		"setproduct":             stdlib.SetProductFunc,
		"setintersection":        stdlib.SetIntersectionFunc,
		"setsubtract":            stdlib.SetSubtractFunc,
		"setsymmetricdifference": stdlib.SetSymmetricDifferenceFunc,
		"chunklist":              stdlib.ChunklistFunc,
		"coalescelist":           stdlib.CoalesceListFunc,
		"index":                  stdlib.IndexFunc,
		"sum":                    sumFunc,
		"one":                    oneFunc,
		"alltrue":                allTrueFunc,
		"anytrue":                anyTrueFunc,
		// Numbers.
		"abs":      stdlib.AbsoluteFunc,
		"ceil":     stdlib.CeilFunc,
		"floor":    stdlib.FloorFunc,
		"pow":      stdlib.PowFunc,
		"log":      stdlib.LogFunc,
		"signum":   stdlib.SignumFunc,
		"parseint": stdlib.ParseIntFunc,
		// Strings.
		"substr":      stdlib.SubstrFunc,
		"strrev":      stdlib.ReverseFunc,
		"regex":       stdlib.RegexFunc,
		"regexall":    stdlib.RegexAllFunc,
		"replace":     replaceFunc,
		"trim":        stdlib.TrimFunc,
		"chomp":       stdlib.ChompFunc,
		"indent":      stdlib.IndentFunc,
		"startswith":  stringTest(strings.HasPrefix),
		"endswith":    stringTest(strings.HasSuffix),
		"strcontains": stringTest(strings.Contains),
		// Encoding and hashes.
		"jsonencode":   stdlib.JSONEncodeFunc,
		"jsondecode":   stdlib.JSONDecodeFunc,
		"csvdecode":    stdlib.CSVDecodeFunc,
		"base64encode": stringFunc(func(s string) (string, error) { return base64.StdEncoding.EncodeToString([]byte(s)), nil }),
		"base64decode": stringFunc(base64Decode),
		"md5":          stringFunc(hashHex(func(b []byte) []byte { s := md5.Sum(b); return s[:] })),
		"sha1":         stringFunc(hashHex(func(b []byte) []byte { s := sha1.Sum(b); return s[:] })),
		"sha256":       stringFunc(hashHex(func(b []byte) []byte { s := sha256.Sum256(b); return s[:] })),
		// Time, from a given timestamp only: nothing reads the clock.
		"formatdate": stdlib.FormatDateFunc,
		"timeadd":    stdlib.TimeAddFunc,
		// Files, inside the configuration directory only.
		"file":       fileFunc(dir),
		"fileexists": fileExistsFunc(dir),
	}
	for name, f := range more {
		table[name] = f
	}
}

// functionsWithTemplates adds the functions that evaluate a template with
// the (metered) table itself; try and can, which evaluate their argument
// expressions, are added unmetered: what they evaluate is metered.
func functionsWithTemplates(m *meter, dir string, table map[string]function.Function) {
	// A template cannot call the template functions: one that renders
	// itself would never end.
	inner := make(map[string]function.Function, len(table))
	for k, f := range table {
		inner[k] = f
	}
	table["templatestring"] = m.wrap("templatestring", templateStringFunc(m, inner))
	table["templatefile"] = m.wrap("templatefile", templateFileFunc(m, dir, inner))
	table["try"] = tryfunc.TryFunc
	table["can"] = tryfunc.CanFunc
}

func stringFunc(f func(string) (string, error)) function.Function {
	return function.New(&function.Spec{
		Params: []function.Parameter{{Name: "str", Type: cty.String}},
		Type:   function.StaticReturnType(cty.String),
		Impl: func(args []cty.Value, _ cty.Type) (cty.Value, error) {
			out, err := f(args[0].AsString())
			if err != nil {
				return cty.UnknownVal(cty.String), function.NewArgError(0, err)
			}
			return cty.StringVal(out), nil
		},
	})
}

func base64Decode(s string) (string, error) {
	b, err := base64.StdEncoding.DecodeString(s)
	if err != nil {
		return "", fmt.Errorf("not base64: %w", err)
	}
	if !utf8.Valid(b) {
		return "", errors.New("the decoded bytes are not valid UTF-8")
	}
	return string(b), nil
}

func hashHex(sum func([]byte) []byte) func(string) (string, error) {
	return func(s string) (string, error) { return hex.EncodeToString(sum([]byte(s))), nil }
}

func stringTest(test func(s, part string) bool) function.Function {
	return function.New(&function.Spec{
		Params: []function.Parameter{{Name: "str", Type: cty.String}, {Name: "part", Type: cty.String}},
		Type:   function.StaticReturnType(cty.Bool),
		Impl: func(args []cty.Value, _ cty.Type) (cty.Value, error) {
			return cty.BoolVal(test(args[0].AsString(), args[1].AsString())), nil
		},
	})
}

// replaceFunc is Terraform's replace: a substring wrapped in slashes is a
// regular expression.
var replaceFunc = function.New(&function.Spec{
	Params: []function.Parameter{{Name: "str", Type: cty.String}, {Name: "substr", Type: cty.String}, {Name: "replace", Type: cty.String}},
	Type:   function.StaticReturnType(cty.String),
	Impl: func(args []cty.Value, _ cty.Type) (cty.Value, error) {
		sub := args[1].AsString()
		if len(sub) > 1 && sub[0] == '/' && sub[len(sub)-1] == '/' {
			return stdlib.RegexReplace(args[0], cty.StringVal(sub[1:len(sub)-1]), args[2])
		}
		return stdlib.Replace(args[0], args[1], args[2])
	},
})

var sumFunc = function.New(&function.Spec{
	Params: []function.Parameter{{Name: "list", Type: cty.DynamicPseudoType}},
	Type:   function.StaticReturnType(cty.Number),
	Impl: func(args []cty.Value, _ cty.Type) (cty.Value, error) {
		v := args[0]
		if !v.CanIterateElements() || v.LengthInt() == 0 {
			return cty.NilVal, function.NewArgErrorf(0, "sum needs a non-empty list or set of numbers")
		}
		total := new(big.Float)
		for it := v.ElementIterator(); it.Next(); {
			_, e := it.Element()
			n, err := convertNumber(e)
			if err != nil {
				return cty.NilVal, function.NewArgError(0, err)
			}
			total.Add(total, n.AsBigFloat())
		}
		return cty.NumberVal(total), nil
	},
})

func convertNumber(v cty.Value) (cty.Value, error) {
	if v.IsNull() || !v.IsKnown() {
		return cty.NilVal, errors.New("every element must be a known number")
	}
	if v.Type() == cty.Number {
		return v, nil
	}
	n, err := stdlib.MakeToFunc(cty.Number).Call([]cty.Value{v})
	if err != nil {
		return cty.NilVal, errors.New("every element must be a number")
	}
	return n, nil
}

var oneFunc = function.New(&function.Spec{
	Params: []function.Parameter{{Name: "list", Type: cty.DynamicPseudoType}},
	Type: func(args []cty.Value) (cty.Type, error) {
		ty := args[0].Type()
		switch {
		case ty.IsListType() || ty.IsSetType():
			return ty.ElementType(), nil
		case ty.IsTupleType():
			if ts := ty.TupleElementTypes(); len(ts) == 1 {
				return ts[0], nil
			} else if len(ts) == 0 {
				return cty.DynamicPseudoType, nil
			}
		}
		return cty.NilType, errors.New("one needs a list, set or tuple of at most one element")
	},
	Impl: func(args []cty.Value, ret cty.Type) (cty.Value, error) {
		v := args[0]
		switch n := v.LengthInt(); n {
		case 0:
			return cty.NullVal(ret), nil
		case 1:
			it := v.ElementIterator()
			it.Next()
			_, e := it.Element()
			return e, nil
		default:
			return cty.NilVal, function.NewArgErrorf(0, "must have no more than one element, has %d", n)
		}
	},
})

func boolFold(all bool) function.Function {
	return function.New(&function.Spec{
		Params: []function.Parameter{{Name: "list", Type: cty.List(cty.Bool)}},
		Type:   function.StaticReturnType(cty.Bool),
		Impl: func(args []cty.Value, _ cty.Type) (cty.Value, error) {
			for it := args[0].ElementIterator(); it.Next(); {
				_, e := it.Element()
				if e.IsNull() || !e.IsKnown() {
					return cty.NilVal, function.NewArgErrorf(0, "every element must be true or false")
				}
				if e.True() != all {
					return cty.BoolVal(!all), nil
				}
			}
			return cty.BoolVal(all), nil
		},
	})
}

var (
	allTrueFunc = boolFold(true)
	anyTrueFunc = boolFold(false)
)

// inDir resolves a path given in the configuration against its directory
// and refuses one that leaves it (an absolute path, "..", a symlink out):
// a committed configuration must not read the machine's files.
func inDir(dir, p string) (string, error) {
	if filepath.IsAbs(p) {
		return "", fmt.Errorf("%q: give a path relative to the configuration directory", p)
	}
	root, err := filepath.EvalSymlinks(dir)
	if err != nil {
		return "", fmt.Errorf("configuration directory: %w", err)
	}
	full := filepath.Join(root, p)
	if real, err := filepath.EvalSymlinks(full); err == nil {
		full = real
	}
	if rel, err := filepath.Rel(root, full); err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return "", fmt.Errorf("%q is outside the configuration directory", p)
	}
	return full, nil
}

func readBounded(dir, p string) (string, error) {
	full, err := inDir(dir, p)
	if err != nil {
		return "", err
	}
	fi, err := os.Stat(full)
	if err != nil {
		return "", fmt.Errorf("%q: %w", p, errors.Unwrap(err))
	}
	if fi.Size() > MaxFileBytes {
		return "", fmt.Errorf("%q is %d bytes; files read by a configuration are limited to %d", p, fi.Size(), MaxFileBytes)
	}
	b, err := os.ReadFile(full)
	if err != nil {
		return "", fmt.Errorf("%q: %w", p, errors.Unwrap(err))
	}
	if !utf8.Valid(b) {
		return "", fmt.Errorf("%q is not UTF-8 text", p)
	}
	return string(b), nil
}

func fileFunc(dir string) function.Function {
	return stringFunc(func(p string) (string, error) { return readBounded(dir, p) })
}

func fileExistsFunc(dir string) function.Function {
	return function.New(&function.Spec{
		Params: []function.Parameter{{Name: "path", Type: cty.String}},
		Type:   function.StaticReturnType(cty.Bool),
		Impl: func(args []cty.Value, _ cty.Type) (cty.Value, error) {
			full, err := inDir(dir, args[0].AsString())
			if err != nil {
				return cty.NilVal, function.NewArgError(0, err)
			}
			fi, err := os.Stat(full)
			return cty.BoolVal(err == nil && fi.Mode().IsRegular()), nil
		},
	})
}

// renderTemplate evaluates src as a string template with vars (an object
// or map) as its only variables and funcs as its functions, its
// %{for} loops bounded by the load's loop budget as any expression's.
func renderTemplate(m *meter, src, name string, vars cty.Value, funcs map[string]function.Function) (cty.Value, error) {
	expr, diags := hclsyntax.ParseTemplate([]byte(src), name, hcl.InitialPos)
	if diags.HasErrors() {
		return cty.NilVal, errors.New(diags.Error())
	}
	if !vars.Type().IsObjectType() && !vars.Type().IsMapType() {
		return cty.NilVal, errors.New("the template variables must be an object or a map")
	}
	variables := map[string]cty.Value{}
	if !vars.IsNull() {
		for k, v := range vars.AsValueMap() {
			variables[k] = v
		}
	}
	v, diags := m.valueWithin(expr, &hcl.EvalContext{Variables: variables, Functions: funcs})
	if diags.HasErrors() {
		return cty.NilVal, errors.New(diags.Error())
	}
	return v, nil
}

func templateStringFunc(m *meter, funcs map[string]function.Function) function.Function {
	return function.New(&function.Spec{
		Params: []function.Parameter{{Name: "template", Type: cty.String}, {Name: "vars", Type: cty.DynamicPseudoType}},
		Type:   function.StaticReturnType(cty.DynamicPseudoType),
		Impl: func(args []cty.Value, _ cty.Type) (cty.Value, error) {
			return renderTemplate(m, args[0].AsString(), "templatestring", args[1], funcs)
		},
	})
}

func templateFileFunc(m *meter, dir string, funcs map[string]function.Function) function.Function {
	return function.New(&function.Spec{
		Params: []function.Parameter{{Name: "path", Type: cty.String}, {Name: "vars", Type: cty.DynamicPseudoType}},
		Type:   function.StaticReturnType(cty.DynamicPseudoType),
		Impl: func(args []cty.Value, _ cty.Type) (cty.Value, error) {
			src, err := readBounded(dir, args[0].AsString())
			if err != nil {
				return cty.NilVal, function.NewArgError(0, err)
			}
			return renderTemplate(m, src, args[0].AsString(), args[1], funcs)
		},
	})
}
