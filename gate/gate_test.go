package gate

import "testing"

func TestCheck(t *testing.T) {
	cases := []struct {
		name    string
		call    Call
		refused bool
	}{
		{"open for reading", Call{Name: "open", Mode: "r"}, false},
		{"open binary read", Call{Name: "open", Mode: "rb"}, false},
		{"open for writing", Call{Name: "open", Mode: "w"}, true},
		{"open appending", Call{Name: "open", Mode: "a"}, true},
		{"open read-write", Call{Name: "open", Mode: "r+"}, true},
		{"open exclusive", Call{Name: "io.open", Mode: "x"}, true},
		{"open unknown mode", Call{Name: "open", Mode: "?"}, true},
		{"path open for writing", Call{Name: ".open", Mode: "w"}, true},
		{"os.remove", Call{Name: "os.remove"}, true},
		{"os.rename", Call{Name: "os.rename"}, true},
		{"os.mkdir", Call{Name: "os.mkdir"}, true},
		{"os.kill", Call{Name: "os.kill"}, true},
		{"os.system", Call{Name: "os.system"}, true},
		{"os.execvp", Call{Name: "os.execvp"}, true},
		{"shutil.rmtree", Call{Name: "shutil.rmtree"}, true},
		{"subprocess.run", Call{Name: "subprocess.run"}, true},
		{"socket.socket", Call{Name: "socket.socket"}, true},
		{"urllib.request.urlopen", Call{Name: "urllib.request.urlopen"}, true},
		{"webbrowser.open", Call{Name: "webbrowser.open"}, true},
		{"tempfile.mkstemp", Call{Name: "tempfile.mkstemp"}, true},
		{"path.write_text", Call{Name: ".write_text"}, true},
		{"path.unlink", Call{Name: ".unlink"}, true},
		// The read-only sources of nondeterminism are the target, never refused.
		{"time.time", Call{Name: "time.time"}, false},
		{"random.random", Call{Name: "random.random"}, false},
		{"uuid.uuid4", Call{Name: "uuid.uuid4"}, false},
		{"os.getpid", Call{Name: "os.getpid"}, false},
		{"os.urandom", Call{Name: "os.urandom"}, false},
		{"os.path.join", Call{Name: "os.path.join"}, false},
		{"os.environ.get", Call{Name: "os.environ.get"}, false},
		{"os.openpty is not os.open", Call{Name: "os.openpty"}, false},
		{"str.replace", Call{Name: ".replace"}, false},
		{"list.append", Call{Name: ".append"}, false},
		{"sorted", Call{Name: "sorted"}, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := Check(Facts{Calls: []Call{c.call}}) != nil
			if got != c.refused {
				t.Fatalf("%s: refused=%v, want %v", c.call.Name, got, c.refused)
			}
		})
	}
}

func TestCheckModuleFollowsLocalCalls(t *testing.T) {
	funcs := map[string]Facts{
		"a":      {Calls: []Call{{Name: "b", Local: true}}},
		"b":      {Calls: []Call{{Name: "c", Local: true}}},
		"c":      {Calls: []Call{{Name: "os.remove", Line: 9}}},
		"clean":  {Calls: []Call{{Name: "sorted"}}},
		"cycle1": {Calls: []Call{{Name: "cycle2", Local: true}}},
		"cycle2": {Calls: []Call{{Name: "cycle1", Local: true}}},
	}
	modRefusal, refused := CheckModule(Facts{}, funcs)
	if modRefusal != nil {
		t.Fatal(modRefusal)
	}
	if r := refused["a"]; r == nil || r.Call != "os.remove" || r.Via != "b -> c" {
		t.Fatalf("a: %+v", r)
	}
	for _, n := range []string{"clean", "cycle1", "cycle2"} {
		if refused[n] != nil {
			t.Errorf("%s refused: %v", n, refused[n])
		}
	}
	if r, _ := CheckModule(Facts{Calls: []Call{{Name: "subprocess.run", Line: 3}}}, funcs); r == nil {
		t.Fatal("module-level subprocess.run not refused")
	}
}

// TestModuleLevelCallOfAWriterRefusesTheModule: importing runs module-level
// code, and a call there to a function of the module that writes is a
// write at import.
func TestModuleLevelCallOfAWriterRefusesTheModule(t *testing.T) {
	funcs := map[string]Facts{
		"setup": {Calls: []Call{{Name: "os.remove", Line: 3}}},
		"pure":  {},
	}
	if r, _ := CheckModule(Facts{Calls: []Call{{Name: "pure", Local: true, Line: 9}}}, funcs); r != nil {
		t.Fatalf("a call to a pure function refused the module: %v", r)
	}
	r, _ := CheckModule(Facts{Calls: []Call{{Name: "setup", Local: true, Line: 9}}}, funcs)
	if r == nil || r.Line != 9 {
		t.Fatalf("module-level setup() that removes files: %+v", r)
	}
}
