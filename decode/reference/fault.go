package reference

import "fmt"

// Reading mapped bytes faults (SIGBUS) when the file behind the mapping
// was truncated: bounds are checked against the mapping's length, but the
// file can shrink at any time and no check rules that out. So every
// function that reads mapped bytes does so with
//
//	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
//	defer func() {
//		if r := recover(); faulted(r) {
//			err = changed(path, what)
//		}
//	}()
//
// and a truncated reference is an ErrChanged error instead of a crash.

// faulted reports whether r, a value recover returned, is the panic of a
// memory fault: false for nil (no panic); any other panic goes on.
func faulted(r any) bool {
	if r == nil {
		return false
	}
	if _, ok := r.(interface{ Addr() uintptr }); !ok {
		panic(r)
	}
	return true
}

// changed is the error of a fault reading the mapping of path while doing
// what.
func changed(path, what string) error {
	return fmt.Errorf("%w: %s: %s faulted: the file was truncated while mapped", ErrChanged, path, what)
}
