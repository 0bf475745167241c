package interceptors_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/toolstream/toolstream/interceptors"
	"github.com/toolstream/toolstream/internal/testutil"
)

// A number with a huge exponent is canonicalised in time linear in its
// length: arguments the engine did not prepare (a call of an unknown tool,
// which a LoopGuard set to see them counts) must not cost seconds of CPU
// per call. Before, a 400 KiB exponent took about a second and the time
// grew with the square of its length.
func TestLoopGuardHugeExponentIsCheap(t *testing.T) {
	lg := interceptors.LoopGuard(2, 0)
	lg.Unknown = true
	tk := icKit(t, nil, lg)
	s := testutil.Session(t, tk, "s")
	exp := strings.Repeat("7", 400<<10)
	start := time.Now()
	a := icRun(t, s, testutil.Call("c1", "nosuch", `{"n":1e`+exp+`}`))
	b := icRun(t, s, testutil.Call("c2", "nosuch", `{"n":10e`+exp[:len(exp)-1]+`6}`)) // the same number
	c := icRun(t, s, testutil.Call("c3", "nosuch", `{"n":-0.01e-`+exp+`}`))
	d := icRun(t, s, testutil.Call("c4", "nosuch", `{"n":-1e-`+exp[:len(exp)-1]+`9}`)) // the same as c3
	took := time.Since(start)
	if errors.Is(a.Err, interceptors.ErrLoop) || !errors.Is(b.Err, interceptors.ErrLoop) ||
		errors.Is(c.Err, interceptors.ErrLoop) || !errors.Is(d.Err, interceptors.ErrLoop) {
		t.Fatalf("%v / %v / %v / %v: the second and fourth calls repeat the first and third", a.Err, b.Err, c.Err, d.Err)
	}
	if took > 2*time.Second {
		t.Fatalf("four calls with a %d-digit exponent took %v", len(exp), took)
	}
}
