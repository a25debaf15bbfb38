package gate

import "testing"

func TestSmells(t *testing.T) {
	f := Facts{Calls: []Call{
		{Name: "time.time", Line: 3},
		{Name: "random.Random", Line: 4, Args: 1}, // seeded: not a smell
		{Name: "random.Random", Line: 5},          // unseeded
		{Name: "random.choice", Line: 6, Args: 1},
		{Name: "os.urandom", Line: 7, Args: 1},
		{Name: "uuid.uuid4", Line: 8},
		{Name: "secrets.token_hex", Line: 9},
		{Name: "id", Line: 10, Args: 1},
		{Name: "hash", Line: 11, Args: 1},
		{Name: "datetime.datetime.now", Line: 12},
		{Name: "sorted", Line: 13, Args: 1},
		{Name: "time.sleep", Line: 14, Args: 1},
		{Name: "time.gmtime", Line: 15, Args: 1},   // converts its argument
		{Name: "time.strftime", Line: 16, Args: 2}, // formats its argument
	}, SetIters: []int{2}}
	got := Smells(f)
	want := []string{"set-iteration", "clock", "rng", "rng", "urandom", "uuid", "secrets", "id", "hash", "clock"}
	if len(got) != len(want) {
		t.Fatalf("got %+v", got)
	}
	for i, s := range got {
		if s.Kind != want[i] {
			t.Errorf("%d: %+v, want %s", i, s, want[i])
		}
	}
}
