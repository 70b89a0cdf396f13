package config

import (
	"errors"
	"fmt"

	"github.com/zclconf/go-cty/cty"
	"github.com/zclconf/go-cty/cty/function"
	"github.com/zclconf/go-cty/cty/function/stdlib"
)

// functions returns the function table for expressions, every function
// metered by m (see limits.go). It is built fresh for each load so nothing
// shared is ever mutated. Every function is pure: nothing reads the clock
// or the environment, and the file functions read only inside dir, the
// configuration directory, so a configuration means the same thing
// wherever it is evaluated.
func functions(m *meter, dir string) map[string]function.Function {
	table := map[string]function.Function{
		"upper":      stdlib.UpperFunc,
		"lower":      stdlib.LowerFunc,
		"title":      stdlib.TitleFunc,
		"format":     boundedFormat(stdlib.FormatFunc),
		"formatlist": boundedFormat(stdlib.FormatListFunc),
		"join":       stdlib.JoinFunc,
		"split":      stdlib.SplitFunc,
		"replace":    stdlib.ReplaceFunc,
		"trimspace":  stdlib.TrimSpaceFunc,
		"trimprefix": stdlib.TrimPrefixFunc,
		"trimsuffix": stdlib.TrimSuffixFunc,
		"concat":     stdlib.ConcatFunc,
		"length":     lengthFunc(),
		"strlen":     stdlib.StrlenFunc,
		"keys":       stdlib.KeysFunc,
		"values":     stdlib.ValuesFunc,
		"merge":      stdlib.MergeFunc,
		"lookup":     stdlib.LookupFunc,
		"contains":   stdlib.ContainsFunc,
		"distinct":   stdlib.DistinctFunc,
		"flatten":    stdlib.FlattenFunc,
		"compact":    stdlib.CompactFunc,
		"sort":       stdlib.SortFunc,
		"element":    stdlib.ElementFunc,
		"coalesce":   stdlib.CoalesceFunc,
		"setunion":   stdlib.SetUnionFunc,
		"min":        stdlib.MinFunc,
		"max":        stdlib.MaxFunc,
		"tostring":   stdlib.MakeToFunc(cty.String),
		"tonumber":   stdlib.MakeToFunc(cty.Number),
		"tobool":     stdlib.MakeToFunc(cty.Bool),
		"tolist":     stdlib.MakeToFunc(cty.List(cty.DynamicPseudoType)),
		"toset":      stdlib.MakeToFunc(cty.Set(cty.DynamicPseudoType)),
		"tomap":      stdlib.MakeToFunc(cty.Map(cty.DynamicPseudoType)),
	}
	terraformFunctions(dir, table)
	for name, f := range table {
		table[name] = m.wrap(name, f)
	}
	functionsWithTemplates(m, dir, table)
	return table
}

// convertsTo is the collection type a to-function converts its argument
// to; the meter converts it first, in linear time.
func convertsTo(name string) (cty.Type, bool) {
	switch name {
	case "tolist":
		return cty.List(cty.DynamicPseudoType), true
	case "toset":
		return cty.Set(cty.DynamicPseudoType), true
	case "tomap":
		return cty.Map(cty.DynamicPseudoType), true
	}
	return cty.NilType, false
}

// lengthFunc is length as Terraform users know it: the length of a
// collection, or the number of characters of a string (stdlib's length
// refuses strings).
func lengthFunc() function.Function {
	return function.New(&function.Spec{
		Params: []function.Parameter{{
			Name:             "value",
			Type:             cty.DynamicPseudoType,
			AllowDynamicType: true,
			AllowUnknown:     true,
		}},
		Type: func(args []cty.Value) (cty.Type, error) {
			ty := args[0].Type()
			if ty == cty.String || ty == cty.DynamicPseudoType || ty.IsCollectionType() || ty.IsTupleType() || ty.IsObjectType() {
				return cty.Number, nil
			}
			return cty.NilType, errors.New("argument must be a string, a collection type, or a structural type")
		},
		Impl: func(args []cty.Value, _ cty.Type) (cty.Value, error) {
			v := args[0]
			switch ty := v.Type(); {
			case ty == cty.String:
				return stdlib.Strlen(v)
			case ty.IsObjectType():
				if !v.IsKnown() {
					return cty.UnknownVal(cty.Number), nil
				}
				if v.IsNull() {
					return cty.NilVal, errors.New("argument must not be null")
				}
				return cty.NumberIntVal(int64(len(ty.AttributeTypes()))), nil
			}
			return stdlib.Length(v)
		},
	})
}

// maxFormatWidth bounds widths and precisions in format verbs: stdlib pads
// strings itself, so "%999999999s" would build a gigabyte string from one
// line of configuration.
const maxFormatWidth = 1024

// boundedFormat wraps format or formatlist to refuse absurd widths.
func boundedFormat(f function.Function) function.Function {
	return function.New(&function.Spec{
		Description: f.Description(),
		Params:      f.Params(),
		VarParam:    f.VarParam(),
		Type:        f.ReturnTypeForValues,
		Impl: func(args []cty.Value, _ cty.Type) (cty.Value, error) {
			if len(args) > 0 && args[0].IsKnown() && !args[0].IsNull() && args[0].Type() == cty.String {
				s, _ := args[0].Unmark()
				if err := checkFormatWidths(s.AsString()); err != nil {
					return cty.DynamicVal, function.NewArgError(0, err)
				}
			}
			return f.Call(args)
		},
	})
}

// checkFormatWidths finds every number in a verb (between "%" and the verb
// letter) and refuses those above maxFormatWidth.
func checkFormatWidths(format string) error {
	for i := 0; i < len(format); i++ {
		if format[i] != '%' {
			continue
		}
		for i++; i < len(format); i++ {
			c := format[i]
			if c >= '0' && c <= '9' {
				n := 0
				for ; i < len(format) && format[i] >= '0' && format[i] <= '9'; i++ {
					if n = n*10 + int(format[i]-'0'); n > maxFormatWidth {
						return fmt.Errorf("format widths and precisions are limited to %d", maxFormatWidth)
					}
				}
				i--
				continue
			}
			if c != '.' && c != '-' && c != '+' && c != '#' && c != ' ' && c != '[' && c != ']' {
				break // the verb letter, or "%%"
			}
		}
	}
	return nil
}
