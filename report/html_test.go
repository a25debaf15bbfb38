package report

import (
	"bytes"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"unicode/utf8"
)

// TestHTMLNumbersAgreeAndScale: the title, the heading and the census
// count the same findings; the conditions shown are the ones that moved
// the answer, the rest folded; order-sensitive functions are listed;
// packages are sorted by findings; and with many findings each one's
// answers are folded, so a thousand stay readable.
func TestHTMLNumbersAgreeAndScale(t *testing.T) {
	rep := synthetic()
	rep.Packages = append(rep.Packages, Package{Name: "aaa", Version: "2"}, Package{Name: "zzz", Version: "3", Census: Census{Nondeterministic: 9}})
	var b bytes.Buffer
	if err := WriteHTML(&b, rep); err != nil {
		t.Fatal(err)
	}
	page := b.String()
	n := rep.Census.Nondeterministic
	if !strings.Contains(page, fmt.Sprintf("<title>nondet-sandbox report · %d nondeterministic", n)) ||
		!strings.Contains(page, fmt.Sprintf("<h1>nondet-sandbox: %d nondeterministic functions", n)) {
		t.Errorf("the title and heading do not both say %d nondeterministic", n)
	}
	if !strings.Contains(page, `id="order-sensitive"`) {
		t.Error("order-sensitive functions are not listed")
	}
	// resolve's cause is hash-seed: that row is shown and marked, the
	// others folded.
	resolve := page[strings.Index(page, `data-id="pkg/a.py::resolve"`):]
	resolve = resolve[:strings.Index(resolve, "</article>")]
	shown := resolve[:strings.Index(resolve, "the other conditions")]
	if !strings.Contains(shown, `<tr class="differs"><td>hash seed</td>`) || strings.Contains(shown, "<td>timezone</td>") {
		t.Errorf("resolve shows other rows than its cause's:\n%s", shown)
	}
	if i, j := strings.Index(page, "<td>zzz 3</td>"), strings.Index(page, "<td>aaa 2</td>"); i < 0 || j < 0 || i > j {
		t.Error("packages are not sorted by findings")
	}
	if !strings.Contains(page, `<details class="witness" open>`) {
		t.Error("a few findings are not shown open")
	}

	many := synthetic()
	var first *Function
	for _, f := range many.Functions {
		if f.ID == "pkg/a.py::resolve" {
			first = f
		}
	}
	for i := 0; i < 1000; i++ {
		f := *first
		f.ID = fmt.Sprintf("pkg/gen%04d.py::resolve", i)
		many.Functions = append(many.Functions, &f)
	}
	many.Finish()
	b.Reset()
	if err := WriteHTML(&b, many); err != nil {
		t.Fatal(err)
	}
	page = b.String()
	if strings.Contains(page, `<details class="witness" open>`) {
		t.Error("a thousand findings are all shown open")
	}
	if got := len(regexp.MustCompile(`<article `).FindAllString(page, -1)); got != len(many.Findings()) {
		t.Errorf("%d articles for %d findings", got, len(many.Findings()))
	}
}

// TestHTMLShowsWhatElseTheReportSays: the page marks where two long
// answers part, lists the functions moved only by another's state and
// the ignore comments that suppressed nothing.
func TestHTMLShowsWhatElseTheReportSays(t *testing.T) {
	r := synthetic()
	long := strings.Repeat("alpha,", 40)
	f := r.Function("pkg/a.py::both")
	f.Witness.Answers = []Answer{{Run: 0, Value: "V:[" + long + "one," + long + "]"}, {Run: 1, Value: "V:[" + long + "two," + long + "]"}}
	r.UnusedSuppressions = []string{"pkg/a.py:40"}
	var b bytes.Buffer
	if err := WriteHTML(&b, r); err != nil {
		t.Fatal(err)
	}
	page := b.String()
	for _, want := range []string{"<mark>one</mark>", "<mark>two</mark>", "Moved only by another function: 1", "pkg/a.py::set_mode", "Unused ignore comments: 1", "pkg/a.py:40"} {
		if !strings.Contains(page, want) {
			t.Errorf("the page does not hold %q", want)
		}
	}
	for _, c := range [][2]string{{"", ""}, {"abc", "abc"}, {"é1", "é2"}, {"x1é", "x2é"}, {"ab", "abc"}} {
		pre, post := commonEnds(c[0], c[1])
		if pre+post > min(len(c[0]), len(c[1])) || !utf8.ValidString(c[0][:pre]) || !utf8.ValidString(c[0][len(c[0])-post:]) {
			t.Errorf("commonEnds(%q, %q) = %d, %d", c[0], c[1], pre, post)
		}
	}
}
