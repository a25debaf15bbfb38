package report

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// TestSARIFFollowsTheSchema renders a report with every kind of result
// (findings new and in the baseline, suppressed in the source and by the
// configuration, looks, modules that could not be read) and validates it
// against the SARIF 2.1.0 schema's rules it relies on
// (testdata/sarif-2.1.0-rules.json), and finds no null anywhere: the
// schema has no member whose value may be null.
func TestSARIFFollowsTheSchema(t *testing.T) {
	rep := synthetic()
	ignoredOne := false
	for _, f := range rep.Functions {
		if f.Verdict == VerdictNondeterministic && !f.IsSuppressed() && !f.InBaseline && !ignoredOne {
			f.Ignored = append([]string(nil), f.Causes...)
			ignoredOne = true
		}
	}
	if !ignoredOne {
		t.Fatal("the synthetic report has no finding to ignore by configuration")
	}
	var b bytes.Buffer
	if err := WriteSARIF(&b, rep); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"kind": "inSource"`, `"kind": "external"`, `"baselineState": "new"`, `"baselineState": "unchanged"`} {
		if !bytes.Contains(b.Bytes(), []byte(want)) {
			t.Errorf("the SARIF has no %s: the test would not check it", want)
		}
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(b.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.Open("testdata/sarif-2.1.0-rules.json")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rules, err := jsonschema.UnmarshalJSON(f)
	if err != nil {
		t.Fatal(err)
	}
	c := jsonschema.NewCompiler()
	c.AssertFormat()
	if err := c.AddResource("rules.json", rules); err != nil {
		t.Fatal(err)
	}
	schema, err := c.Compile("rules.json")
	if err != nil {
		t.Fatal(err)
	}
	if err := schema.Validate(doc); err != nil {
		t.Errorf("the SARIF breaks the schema's rules:\n%v", err)
	}
	var v any
	if err := json.Unmarshal(b.Bytes(), &v); err != nil {
		t.Fatal(err)
	}
	if path := findNull(v, "$"); path != "" {
		t.Errorf("null at %s", path)
	}
}

func findNull(v any, at string) string {
	switch x := v.(type) {
	case nil:
		return at
	case map[string]any:
		for k, e := range x {
			if p := findNull(e, at+"."+k); p != "" {
				return p
			}
		}
	case []any:
		for i, e := range x {
			if p := findNull(e, fmt.Sprintf("%s[%d]", at, i)); p != "" {
				return p
			}
		}
	}
	return ""
}
