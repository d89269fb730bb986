package oneproc

import "syscall"

// cmdline returns the process's command line from /proc/self/cmdline
// (os.Args is set by os's init, which runs after this package's), nil
// when it cannot be read.
func cmdline() []byte {
	fd, err := syscall.Open("/proc/self/cmdline", syscall.O_RDONLY|syscall.O_CLOEXEC, 0)
	if err != nil {
		return nil
	}
	defer syscall.Close(fd)
	var buf []byte
	chunk := make([]byte, 4096)
	for {
		n, err := syscall.Read(fd, chunk)
		if n <= 0 || err != nil {
			return buf
		}
		buf = append(buf, chunk[:n]...)
	}
}
