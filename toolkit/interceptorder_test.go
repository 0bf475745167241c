package toolkit_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/toolstream/toolstream/internal/testutil"
	"github.com/toolstream/toolstream/toolkit"
)

// TestInterceptorNamesAreUnique: a second interceptor of a name in use is
// refused (the first keeps running), in one Use as across two; nothing of a
// refused Use is added.
func TestInterceptorNamesAreUnique(t *testing.T) {
	tk := testutil.Kit(t)
	testutil.Add(t, tk, echoTool(t))
	tr := &trace{}
	if err := tk.Use(tracing("limits", tr)); err != nil {
		t.Fatal(err)
	}
	other := &trace{}
	err := tk.Use(tracing("audit", other), tracing("limits", other))
	if err == nil || !strings.Contains(err.Error(), `"limits" is already in use`) || !strings.Contains(err.Error(), "ReplaceInterceptor") {
		t.Fatalf("a second %q: %v", "limits", err)
	}
	if err := tk.Use(tracing("x", other), tracing("x", other)); err == nil {
		t.Fatal("two interceptors of one name in one Use were accepted")
	}
	if names, _ := tk.Interceptors(); !slices.Equal(names, []string{"limits"}) {
		t.Fatalf("after refused Uses the interceptors are %v", names)
	}
	testutil.Run(t, tk, "s", testutil.Call("1", "echo", `{}`))
	if got := tr.get(); !slices.Equal(got, []string{"limits>", "<limits"}) || len(other.get()) != 0 {
		t.Fatalf("the first ran %v, the refused ones %v", got, other.get())
	}
	if err := tk.ReplaceInterceptor(tracing("nobody", tr)); err == nil {
		t.Fatal("replaced an interceptor nobody added")
	}
}

// TestInterceptorOrder: Order places an interceptor whenever it is added,
// lowest outermost; equal orders keep the order of adding; a replacement
// with a new Order moves.
func TestInterceptorOrder(t *testing.T) {
	tk := testutil.Kit(t)
	testutil.Add(t, tk, echoTool(t))
	tr := &trace{}
	at := func(name string, order int) toolkit.Interceptor {
		ic := tracing(name, tr)
		ic.Order = order
		return ic
	}
	if err := tk.Use(at("retry", 0), at("audit", 10)); err != nil {
		t.Fatal(err)
	}
	if err := tk.Use(at("permissions", -100), at("sanitize", 0)); err != nil {
		t.Fatal(err)
	}
	names, _ := tk.Interceptors()
	if want := []string{"permissions", "retry", "sanitize", "audit"}; !slices.Equal(names, want) {
		t.Fatalf("order %v, want %v", names, want)
	}
	testutil.Run(t, tk, "s", testutil.Call("1", "echo", `{}`))
	if got, want := tr.get(), []string{"permissions>", "retry>", "sanitize>", "audit>", "<audit", "<sanitize", "<retry", "<permissions"}; !slices.Equal(got, want) {
		t.Fatalf("ran %v, want %v", got, want)
	}
	if err := tk.ReplaceInterceptor(at("retry", 20)); err != nil {
		t.Fatal(err)
	}
	if names, _ := tk.Interceptors(); !slices.Equal(names, []string{"permissions", "sanitize", "audit", "retry"}) {
		t.Fatalf("after moving retry: %v", names)
	}
}

// TestSetInterceptors: the whole list replaced in one step, placed by
// Order; a list with a name twice changes nothing; no interceptors clears it.
func TestSetInterceptors(t *testing.T) {
	tk := testutil.Kit(t)
	testutil.Add(t, tk, echoTool(t))
	tr := &trace{}
	if err := tk.Use(tracing("old", tr)); err != nil {
		t.Fatal(err)
	}
	if err := tk.EnableInterceptor("old", false); err != nil {
		t.Fatal(err)
	}
	b := tracing("b", tr)
	b.Order = -1
	if err := tk.SetInterceptors(tracing("a", tr), tracing("a", tr)); err == nil {
		t.Fatal("a list with a name twice was accepted")
	}
	if err := tk.SetInterceptors(tracing("a", tr), b, tracing("old", tr)); err != nil {
		t.Fatal(err)
	}
	names, on := tk.Interceptors()
	if !slices.Equal(names, []string{"b", "a", "old"}) || !slices.Equal(on, []bool{true, true, true}) {
		t.Fatalf("after SetInterceptors: %v %v", names, on)
	}
	testutil.Run(t, tk, "s", testutil.Call("1", "echo", `{}`))
	if got := tr.get(); !slices.Equal(got, []string{"b>", "a>", "old>", "<old", "<a", "<b"}) {
		t.Fatalf("ran %v", got)
	}
	if err := tk.SetInterceptors(); err != nil {
		t.Fatal(err)
	}
	if names, _ := tk.Interceptors(); len(names) != 0 {
		t.Fatalf("SetInterceptors() left %v", names)
	}
}
