//go:build linux

package catalog

import (
	"bytes"
	"os"
	"strconv"

	"golang.org/x/sys/unix"
)

// adviseRandom marks this process's mappings of the file at path as
// read at random (MADV_RANDOM), and reports whether it found one. A
// fault on a page of the catalog that is not in the page cache then
// reads that page, where it read the device's whole read-around window
// (8 MiB on this VM's disk, whose DAMON pages out what sat unread for a
// minute): a query after a pause took 90-150 ms in 5-8 such faults.
// Cached pages are mapped as before (fault-around included). SQLite maps
// the file itself; the mapping is found by the file's device and inode
// in /proc/self/maps.
func adviseRandom(path string) bool {
	var st unix.Stat_t
	if unix.Stat(path, &st) != nil {
		return false
	}
	maps, err := os.ReadFile("/proc/self/maps")
	if err != nil {
		return false
	}
	ino := strconv.FormatUint(st.Ino, 10)
	found := false
	for len(maps) > 0 {
		var line []byte
		line, maps, _ = bytes.Cut(maps, []byte("\n"))
		// start-end perms offset major:minor inode path
		f := bytes.Fields(line)
		if len(f) < 6 || string(f[4]) != ino {
			continue
		}
		major, minor, _ := bytes.Cut(f[3], []byte(":"))
		lo, hi, _ := bytes.Cut(f[0], []byte("-"))
		ma, err1 := strconv.ParseUint(string(major), 16, 32)
		mi, err2 := strconv.ParseUint(string(minor), 16, 32)
		start, err3 := strconv.ParseUint(string(lo), 16, 64)
		end, err4 := strconv.ParseUint(string(hi), 16, 64)
		if err1 != nil || err2 != nil || err3 != nil || err4 != nil || end <= start ||
			uint32(ma) != unix.Major(st.Dev) || uint32(mi) != unix.Minor(st.Dev) {
			continue
		}
		// Advice only: a range SQLite unmapped meanwhile fails, harmlessly.
		if _, _, e := unix.Syscall(unix.SYS_MADVISE, uintptr(start), uintptr(end-start), unix.MADV_RANDOM); e == 0 {
			found = true
		}
	}
	return found
}
