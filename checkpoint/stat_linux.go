//go:build linux

package checkpoint

import (
	"io/fs"
	"syscall"
)

// sysStat fills in what only the OS knows: inode, device and ctime. ctime
// catches a rewrite that restored the old mtime (cp -p, tar, rsync).
func sysStat(fi fs.FileInfo, st *fileStat) {
	if s, ok := fi.Sys().(*syscall.Stat_t); ok {
		st.Ino = s.Ino
		st.Dev = s.Dev
		st.Ctime = s.Ctim.Sec*1e9 + s.Ctim.Nsec
	}
}
