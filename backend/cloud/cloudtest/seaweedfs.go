package cloudtest

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"gocloud.dev/blob"

	"github.com/trovekit/trove/backend"
	"github.com/trovekit/trove/backend/cloud"
)

// SeaweedFSVersion is the SeaweedFS module version whose weed binary the
// tests run; scripts/install-test-servers reads it from this line.
const SeaweedFSVersion = "v0.0.0-20261109003541-7506e5f91cd6"

// SeaweedFSBinary is where scripts/install-test-servers puts weed: the
// user's cache directory, keyed by version, so that every clone on the
// machine shares one build. $TROVE_SEAWEEDFS overrides it.
func SeaweedFSBinary() (string, error) {
	if bin := os.Getenv("TROVE_SEAWEEDFS"); bin != "" {
		return bin, nil
	}
	dir, err := os.UserCacheDir()
	if err != nil {
		return "", err
	}
	return filepath.Join(dir, "trove-test", "seaweedfs-"+SeaweedFSVersion, "weed"), nil
}

// FindSeaweedFS returns the weed binary as StartSeaweedFS finds it,
// waiting while the install script builds it; when weed is neither built
// nor being built, an error wrapping fs.ErrNotExist.
func FindSeaweedFS() (string, error) {
	bin, skip, err := findWeed()
	if skip {
		return "", fmt.Errorf("%w (run scripts/install-test-servers --seaweedfs): %w", err, fs.ErrNotExist)
	}
	return bin, err
}

// findWeed returns the weed binary, waiting while the install script's
// background build of it runs (its build.pid names a live process) for up
// to $TROVE_SEAWEEDFS_WAIT (default 20m). skip reports that weed is not
// installed and no build is under way.
func findWeed() (bin string, skip bool, err error) {
	bin, err = SeaweedFSBinary()
	if err != nil {
		return "", false, err
	}
	wait := 20 * time.Minute
	if s := os.Getenv("TROVE_SEAWEEDFS_WAIT"); s != "" {
		if wait, err = time.ParseDuration(s); err != nil {
			return "", false, fmt.Errorf("TROVE_SEAWEEDFS_WAIT: %w", err)
		}
	}
	deadline := time.Now().Add(wait)
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for {
		if _, err := os.Stat(bin); err == nil {
			return bin, false, nil
		} else if !errors.Is(err, fs.ErrNotExist) {
			return "", false, err
		}
		if !building(filepath.Join(filepath.Dir(bin), "build.pid")) {
			return "", true, fmt.Errorf("weed not installed at %s", bin)
		}
		if time.Now().After(deadline) {
			return "", false, fmt.Errorf("weed still building after %v (log: %s)", wait, filepath.Join(filepath.Dir(bin), "build.log"))
		}
		<-tick.C
	}
}

// building reports whether pidFile names a live process.
func building(pidFile string) bool {
	data, err := os.ReadFile(pidFile)
	if err != nil {
		return false
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(data)))
	if err != nil || pid <= 0 {
		return false
	}
	return alive(pid)
}

// Weed is a running `weed mini`: master, volume, filer and S3 gateway in one
// process, every port a free one on 127.0.0.1, telemetry off.
type Weed struct {
	cmd    *exec.Cmd
	addr   string // the S3 gateway, 127.0.0.1:PORT
	exited chan struct{}
	out    *tail
	once   sync.Once
	tmp    string         // weed's TMPDIR: its log files
	ports  map[string]int // its ports, by weed's flag
}

// Addr is the S3 gateway's address, 127.0.0.1:PORT.
func (w *Weed) Addr() string { return w.addr }

// Output is the last lines weed printed.
func (w *Weed) Output() string { return w.out.String() }

// Stop kills weed and everything it started, and waits for it.
func (w *Weed) Stop() {
	w.once.Do(func() {
		killGroup(w.cmd)
		<-w.exited
		os.RemoveAll(w.tmp)
		// weed names a unix socket after each gRPC port in /tmp whatever
		// TMPDIR says, and leaves them: the ports were ours.
		for _, p := range w.ports {
			socks, _ := filepath.Glob("/tmp/seaweedfs-*-" + strconv.Itoa(p) + ".sock")
			for _, s := range socks {
				os.Remove(s)
			}
		}
	})
}

// LaunchSeaweedFS starts bin as `weed mini` on dir, bound to 127.0.0.1 on
// free ports, and returns once its S3 gateway answers (or fails within
// the timeout). The caller stops it.
func LaunchSeaweedFS(bin, dir string, timeout time.Duration) (*Weed, error) {
	var err error
	// A port picked by closing a listener can be taken before weed binds
	// it; try a few times, each in a directory of its own: a volume server
	// keeps the id of the cluster it joined, and one started again in the
	// same directory under a new master freezes volume growth.
	for i := range 3 {
		try := dir
		if i > 0 {
			try = filepath.Join(dir, "retry"+strconv.Itoa(i))
		}
		var w *Weed
		if w, err = launchWeed(bin, try, timeout); err == nil {
			return w, nil
		}
	}
	return nil, err
}

func launchWeed(bin, dir string, timeout time.Duration) (*Weed, error) {
	// Every port weed mini opens, the admin server's too (12535 by
	// default): two tests' weeds run at once.
	names := []string{"master.port", "master.port.grpc", "volume.port", "volume.port.grpc",
		"filer.port", "filer.port.grpc", "s3.port", "s3.port.grpc", "admin.port", "admin.port.grpc"}
	args := []string{"mini", "-dir=" + dir, "-ip=127.0.0.1", "-ip.bind=127.0.0.1",
		"-master.telemetry=false", // it reports to a remote host unless told not to
		"-webdav=false", "-admin.ui=false", "-admin.port.legacy=0",
		"-s3.port.iceberg=0", "-s3.port.lance=0",
		// Each bucket is a collection with volumes of its own; weed caps the
		// volumes at free disk / volume size (1 GiB by default), which the
		// suites' thousands of buckets exhaust (then every PUT fails 500).
		"-master.volumeSizeLimitMB=64", "-volume.max=100000",
		"-s3.allowDeleteBucketNotEmpty=true"}
	ports := map[string]int{}
	for _, n := range names {
		p, err := freePort()
		if err != nil {
			return nil, err
		}
		ports[n] = p
		args = append(args, "-"+n+"="+strconv.Itoa(p))
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	// weed puts its glog files in TMPDIR and never removes them: give it
	// one of its own, removed when it stops, with its two configurable
	// sockets (a socket's path is at most 107 bytes: MkdirTemp's is short).
	tmp, err := os.MkdirTemp("", "weed")
	if err != nil {
		return nil, err
	}
	args = append(args, "-filer.localSocket="+filepath.Join(tmp, "filer.sock"), "-s3.localSocket="+filepath.Join(tmp, "s3.sock"))
	cmd := exec.Command(bin, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "TMPDIR="+tmp)
	w := &Weed{cmd: cmd, addr: "127.0.0.1:" + strconv.Itoa(ports["s3.port"]), exited: make(chan struct{}), out: &tail{max: 16 << 10}, tmp: tmp, ports: ports}
	cmd.Stdout, cmd.Stderr = w.out, w.out
	setProcAttr(cmd)
	if err := cmd.Start(); err != nil {
		os.RemoveAll(tmp)
		return nil, fmt.Errorf("start %s: %w", bin, err)
	}
	go func() { cmd.Wait(); close(w.exited) }()

	// Ready when a bucket can be made and written: the gateway answers
	// before the filer and volume server behind it are up.
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	client := s3Client(w.addr)
	probe := "trove-probe"
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		err := weedReady(ctx, client, probe)
		if err == nil {
			return w, nil
		}
		select {
		case <-w.exited:
			w.Stop()
			return nil, fmt.Errorf("weed exited before serving %s: %s", w.addr, w.out)
		case <-ctx.Done():
			w.Stop()
			return nil, fmt.Errorf("weed did not serve S3 on %s within %v: %v: %s", w.addr, timeout, err, w.out)
		case <-tick.C:
		}
	}
}

func weedReady(ctx context.Context, client *s3.Client, bucket string) error {
	rctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if _, err := client.HeadBucket(rctx, &s3.HeadBucketInput{Bucket: aws.String(bucket)}); err != nil {
		if _, err := client.CreateBucket(rctx, &s3.CreateBucketInput{Bucket: aws.String(bucket)}); err != nil {
			return err
		}
	}
	_, err := client.PutObject(rctx, &s3.PutObjectInput{Bucket: aws.String(bucket), Key: aws.String("ready"), Body: strings.NewReader("ok")})
	return err
}

// s3Client is an S3 client for the server at addr, dialling nothing else.
func s3Client(addr string) *s3.Client {
	return s3.New(s3.Options{
		Region:       "us-east-1",
		BaseEndpoint: aws.String("http://" + addr),
		UsePathStyle: true,
		HTTPClient:   localClient(addr),
		Credentials:  credentials.NewStaticCredentialsProvider("trove", "trove", ""),
	})
}

// SeaweedFS is a weed mini server on 127.0.0.1, started on first use and
// stopped when the tb given to StartSeaweedFS ends.
type SeaweedFS struct {
	tb       testing.TB
	wrappers []func(http.Handler) http.Handler
	once     sync.Once
	addr     string // what clients dial: weed, or the wrapping proxy
	err      error
	skip     bool
	next     atomic.Int64
}

// StartSeaweedFS returns a SeaweedFS server. weed starts on the first
// Bucket or New, so a matrix that lists it pays nothing when it does not
// use it. It runs SeaweedFSBinary(); when that is missing, Bucket skips the
// test (fails it under TROVE_REQUIRE_ALL=1). Wrappers, if any, see every
// request first, in a reverse proxy in front of weed.
func StartSeaweedFS(tb testing.TB, wrappers ...func(http.Handler) http.Handler) *SeaweedFS {
	return &SeaweedFS{tb: tb, wrappers: wrappers}
}

func (s *SeaweedFS) start(tb testing.TB) {
	tb.Helper()
	s.once.Do(func() {
		bin, skip, err := findWeed()
		if err != nil {
			s.skip, s.err = skip, err
			return
		}
		w, err := LaunchSeaweedFS(bin, s.tb.TempDir(), 2*time.Minute)
		if err != nil {
			s.err = err
			return
		}
		s.tb.Cleanup(w.Stop)
		s.addr = w.Addr()
		if len(s.wrappers) > 0 {
			s.addr = proxy(s.tb, w.Addr(), s.wrappers)
		}
	})
	switch {
	case s.err == nil:
	case s.skip && os.Getenv("TROVE_REQUIRE_ALL") != "1":
		tb.Skipf("seaweedfs: %v (run scripts/install-test-servers)", s.err)
	default:
		tb.Fatalf("seaweedfs: %v", s.err)
	}
}

// proxy serves a reverse proxy to addr behind wrappers on 127.0.0.1 until
// tb ends, and returns its address.
func proxy(tb testing.TB, addr string, wrappers []func(http.Handler) http.Handler) string {
	rp := httputil.NewSingleHostReverseProxy(&url.URL{Scheme: "http", Host: addr})
	rp.Transport = localClient(addr).Transport
	var h http.Handler = rp
	for _, w := range wrappers {
		h = w(h)
	}
	srv := httptest.NewServer(h)
	tb.Cleanup(srv.Close)
	return srv.Listener.Addr().String()
}

// URL is the S3 endpoint, http://127.0.0.1:PORT, starting weed if needed.
func (s *SeaweedFS) URL(tb testing.TB) string {
	s.start(tb)
	return "http://" + s.addr
}

// StoreURL is the s3:// URL that opens bucket on this server by open.URL.
func (s *SeaweedFS) StoreURL(tb testing.TB, bucket string) string {
	return "s3://" + bucket + "?endpoint=" + url.QueryEscape(s.URL(tb)) + "&region=us-east-1&use_path_style=true"
}

// CreateBucket creates a fresh bucket and returns its name.
func (s *SeaweedFS) CreateBucket(tb testing.TB) string {
	s.start(tb)
	name := fmt.Sprintf("trove-%d", s.next.Add(1))
	if _, err := s3Client(s.addr).CreateBucket(context.Background(), &s3.CreateBucketInput{Bucket: aws.String(name)}); err != nil {
		tb.Fatalf("create bucket %s: %v", name, err)
	}
	// Dropped at the end (objects and all: -s3.allowDeleteBucketNotEmpty),
	// so its volumes do not pile up in weed over thousands of tests.
	tb.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		s3Client(s.addr).DeleteBucket(ctx, &s3.DeleteBucketInput{Bucket: aws.String(name)})
	})
	return name
}

// Bucket creates a fresh bucket and opens it with a client that dials this
// server only.
func (s *SeaweedFS) Bucket(tb testing.TB) *blob.Bucket {
	name := s.CreateBucket(tb) // starts weed: s.addr is known after
	return openS3Bucket(tb, s3Client(s.addr), name)
}

// Open opens the bucket name, which need not exist, as Bucket does: a
// second handle on a bucket is another machine's.
func (s *SeaweedFS) Open(tb testing.TB, name string) *blob.Bucket {
	s.start(tb)
	return openS3Bucket(tb, s3Client(s.addr), name)
}

// New returns a fresh Storage on a new bucket, with the options
// backend/open gives an S3 store on SeaweedFS.
func (s *SeaweedFS) New(tb testing.TB) backend.Storage {
	name := s.CreateBucket(tb)
	return s3Storage(tb, s3Client(s.addr), name, cloud.WithEmptyPrefixes())
}
