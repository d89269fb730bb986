//go:build darwin || freebsd

package checkpoint

import (
	"io/fs"
	"syscall"
)

// sysStat fills in what only the OS knows: inode, device and ctime. ctime
// catches a rewrite that restored the old mtime (cp -p, tar, rsync).
func sysStat(fi fs.FileInfo, st *fileStat) {
	if s, ok := fi.Sys().(*syscall.Stat_t); ok {
		st.ino = uint64(s.Ino)
		st.dev = uint64(s.Dev)
		st.ctime = int64(s.Ctimespec.Sec)*1e9 + int64(s.Ctimespec.Nsec)
	}
}
