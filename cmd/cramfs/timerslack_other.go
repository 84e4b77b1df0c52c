//go:build !linux

package main

// raiseTimerSlack does nothing where prctl(2) is not available.
func raiseTimerSlack() {}
