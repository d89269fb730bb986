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
		st.Ino = uint64(s.Ino)
		st.Dev = uint64(s.Dev)
		st.Ctime = int64(s.Ctimespec.Sec)*1e9 + int64(s.Ctimespec.Nsec)
	}
}
