package engine

import "testing"

// TestPythonExpr: a rung's display becomes Python where it has a literal
// form, and is refused where the ladder built it (a function, a class, a
// module, an instance shown by its attributes).
func TestPythonExpr(t *testing.T) {
	for _, tc := range []struct {
		display, want string
		ok            bool
	}{
		{`"alpha"`, `"alpha"`, true},
		{`[3,1,2]`, `[3,1,2]`, true},
		{`None`, `None`, true},
		{`(1,2,3)`, `(1,2,3)`, true},
		{`set["a","b"]`, `{"a","b"}`, true},
		{`io.BytesIO(b'\x00', pos=0)`, `io.BytesIO(b'\x00')`, true},
		{`datetime.date:datetime.date(2024, 2, 29)`, `datetime.date(2024, 2, 29)`, true},
		{`function:__main__._callback`, "", false},
		{`class:__main__.Color`, "", false},
		{`module:colorsys`, "", false},
		{`__main__.Point(x=1,y=2)`, "", false},
		{`ast.Name{ctx:ast.Load{},id:"x"}`, "", false},
		{`readline([b'x = 1\n'])`, "", false},
	} {
		got, ok := pythonExpr(tc.display, map[string]bool{})
		if got != tc.want || ok != tc.ok {
			t.Errorf("pythonExpr(%s) = %q, %v; want %q, %v", tc.display, got, ok, tc.want, tc.ok)
		}
	}
}
