package config

import (
	"testing"

	"github.com/zclconf/go-cty/cty"
	"github.com/zclconf/go-cty/cty/convert"
)

// Where convertPlain answers, it answers what typed's general path would.
func TestConvertPlainAgreesWithConvert(t *testing.T) {
	str := cty.StringVal
	list := cty.List(cty.String)
	mapOfLists := cty.Map(list)
	tests := []struct {
		name  string
		v     cty.Value
		ty    cty.Type
		plain bool
	}{
		{"string", str("4h"), cty.String, true},
		{"bool", cty.True, cty.Bool, true},
		{"number", cty.NumberIntVal(3), cty.Number, true},
		{"number as string", cty.NumberIntVal(3), cty.String, false},
		{"string as bool", str("true"), cty.Bool, false},
		{"marked string", str("x").Mark("secret"), cty.String, false},
		{"unknown string", cty.UnknownVal(cty.String), cty.String, false},
		{"null string", cty.NullVal(cty.String), cty.String, false},
		{"tuple of strings", cty.TupleVal([]cty.Value{str("a"), str("b")}), list, true},
		{"empty tuple", cty.EmptyTupleVal, list, true},
		{"list of strings", cty.ListVal([]cty.Value{str("a")}), list, true},
		{"empty list", cty.ListValEmpty(cty.String), list, true},
		{"tuple with a number", cty.TupleVal([]cty.Value{str("a"), cty.NumberIntVal(1)}), list, false},
		{"tuple with a null", cty.TupleVal([]cty.Value{str("a"), cty.NullVal(cty.String)}), list, false},
		{"tuple with a marked string", cty.TupleVal([]cty.Value{str("a").Mark("m")}), list, false},
		{"list with a marked string", cty.ListVal([]cty.Value{str("a").Mark("m")}), list, false},
		{"tuple with an unknown", cty.TupleVal([]cty.Value{cty.UnknownVal(cty.String)}), list, false},
		{"set of strings", cty.SetVal([]cty.Value{str("a")}), list, false},
		{"string as list", str("a"), list, false},
		{"object of tuples", cty.ObjectVal(map[string]cty.Value{
			"postgres": cty.TupleVal([]cty.Value{str("vector"), str("pg_trgm")}),
			"redis":    cty.EmptyTupleVal,
		}), mapOfLists, true},
		{"empty object", cty.EmptyObjectVal, mapOfLists, true},
		{"map of lists", cty.MapVal(map[string]cty.Value{"redis": cty.ListVal([]cty.Value{str("search")})}), mapOfLists, true},
		{"empty map", cty.MapValEmpty(list), mapOfLists, true},
		{"object with a string", cty.ObjectVal(map[string]cty.Value{"redis": str("search")}), mapOfLists, false},
		{"object with a null", cty.ObjectVal(map[string]cty.Value{"redis": cty.NullVal(list)}), mapOfLists, false},
		{"object with a marked list", cty.ObjectVal(map[string]cty.Value{"redis": cty.EmptyTupleVal.Mark("m")}), mapOfLists, false},
		{"marked object", cty.EmptyObjectVal.Mark("m"), mapOfLists, false},
		{"other target", str("a"), cty.Map(cty.String), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := convertPlain(tt.v, tt.ty)
			if ok != tt.plain {
				t.Fatalf("convertPlain ok = %v, want %v", ok, tt.plain)
			}
			if !ok {
				return
			}
			want, err := convert.Convert(tt.v, tt.ty)
			if err != nil {
				t.Fatalf("convert.Convert refuses what convertPlain takes: %v", err)
			}
			if !got.RawEquals(want) {
				t.Errorf("convertPlain = %#v, convert.Convert = %#v", got, want)
			}
		})
	}
}
