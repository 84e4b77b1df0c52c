package codectest

import (
	"fmt"
	"strings"
	"testing"
)

// fatal records the first Fatalf of CheckAppend and stops it there.
type fatal struct {
	testing.TB
	msg string
}

func (f *fatal) Helper() {}

func (f *fatal) Fatalf(format string, args ...any) {
	f.msg = fmt.Sprintf(format, args...)
	panic(f)
}

// check runs CheckAppend with decode and returns its first failure, or "".
func check(t *testing.T, decode AppendDecoder, want []byte) (msg string) {
	f := &fatal{TB: t}
	defer func() {
		if r := recover(); r != nil && r != any(f) {
			panic(r)
		}
		msg = f.msg
	}()
	CheckAppend(f, decode, want, len(want), want)
	return ""
}

// TestCheckAppend: a decoder that appends as append does passes; each way
// of breaking the AppendDecode contract is reported.
func TestCheckAppend(t *testing.T) {
	want := []byte("ACGTACGTNN")
	for _, c := range []struct {
		name   string
		decode AppendDecoder
		fail   string // a part of the failure; "" for none
	}{
		{"append", func(dst, src []byte, _ int) ([]byte, error) { return append(dst, src...), nil }, ""},
		{"always reallocates", func(dst, src []byte, _ int) ([]byte, error) {
			return append(append(make([]byte, 0, len(dst)+len(src)), dst...), src...), nil
		}, "decoded in place = false"},
		{"drops the prefix", func(_, src []byte, _ int) ([]byte, error) { return append([]byte(nil), src...), nil }, "the prefix changed"},
		{"leaves the spare capacity", func(dst, src []byte, _ int) ([]byte, error) {
			if cap(dst)-len(dst) >= len(src) {
				return dst[:len(dst)+len(src)], nil
			}
			return append(dst, src...), nil
		}, "first difference at 0"},
		{"one byte short", func(dst, src []byte, _ int) ([]byte, error) { return append(dst, src[:len(src)-1]...), nil }, "9 bytes decoded differ from the 10"},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := check(t, c.decode, want)
			if c.fail == "" && got != "" || !strings.Contains(got, c.fail) {
				t.Fatalf("CheckAppend failed with %q, want a failure containing %q", got, c.fail)
			}
		})
	}
}

func TestFirstDiff(t *testing.T) {
	for _, c := range []struct {
		a, b string
		want int
	}{{"", "", 0}, {"abc", "abc", 3}, {"abc", "abd", 2}, {"ab", "abc", 2}, {"xbc", "abc", 0}} {
		if got := FirstDiff([]byte(c.a), []byte(c.b)); got != c.want {
			t.Errorf("FirstDiff(%q, %q) = %d, want %d", c.a, c.b, got, c.want)
		}
	}
}
