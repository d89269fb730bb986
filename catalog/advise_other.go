//go:build !linux

package catalog

// adviseRandom has nothing to do here (see advise_linux.go).
func adviseRandom(string) bool { return true }
