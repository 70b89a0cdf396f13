package config

import (
	"errors"

	"github.com/zclconf/go-cty/cty"
	"github.com/zclconf/go-cty/cty/function"
	"github.com/zclconf/go-cty/cty/function/stdlib"
)

// functions returns the function table for expressions. It is built fresh
// for each load so nothing shared is ever mutated. The set is deliberately
// small and pure: nothing here reads files, the clock or the environment,
// so a configuration means the same thing wherever it is evaluated.
func functions() map[string]function.Function {
	return map[string]function.Function{
		"upper":      stdlib.UpperFunc,
		"lower":      stdlib.LowerFunc,
		"title":      stdlib.TitleFunc,
		"format":     stdlib.FormatFunc,
		"formatlist": stdlib.FormatListFunc,
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
			AllowMarked:      true,
		}},
		Type: func(args []cty.Value) (cty.Type, error) {
			ty := args[0].Type()
			if ty == cty.String || ty == cty.DynamicPseudoType || ty.IsCollectionType() || ty.IsTupleType() || ty.IsObjectType() {
				return cty.Number, nil
			}
			return cty.NilType, errors.New("argument must be a string, a collection type, or a structural type")
		},
		Impl: func(args []cty.Value, _ cty.Type) (cty.Value, error) {
			if args[0].Type() == cty.String {
				return stdlib.Strlen(args[0])
			}
			return stdlib.Length(args[0])
		},
	})
}
