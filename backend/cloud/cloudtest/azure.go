package cloudtest

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/container"
	"gocloud.dev/blob"
	"gocloud.dev/blob/azureblob"

	"github.com/trovekit/trove/backend"
	"github.com/trovekit/trove/backend/cloud"
	"github.com/trovekit/trove/backend/open/azure"
)

// Azurite's documented development account and key (public, not a secret).
const (
	AzuriteAccount = "devstoreaccount1"
	AzuriteKey     = "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw=="
)

// azuriteDefault is where scripts/install-test-servers puts azurite-blob,
// relative to the module root.
const azuriteDefault = ".tools/azurite/node_modules/.bin/azurite-blob"

// Azure is an azurite blob server on 127.0.0.1, started on first use and
// stopped when the tb given to StartAzure ends.
type Azure struct {
	tb   testing.TB // owns the process
	once sync.Once
	addr string // 127.0.0.1:PORT once started
	err  error  // why it did not start
	skip bool   // err means "not installed"
	next atomic.Int64
}

// StartAzure returns an Azure server. Azurite starts on the first Bucket or
// New, so a matrix that lists it pays nothing when it does not use it. It runs
// $TROVE_AZURITE, or .tools/azurite/node_modules/.bin/azurite-blob under the
// module root; when that is missing, Bucket skips the test (fails it under
// TROVE_REQUIRE_ALL=1).
func StartAzure(tb testing.TB) *Azure { return &Azure{tb: tb} }

// URL is the service URL, http://127.0.0.1:PORT/devstoreaccount1, starting
// azurite if needed.
func (a *Azure) URL(tb testing.TB) string {
	a.start(tb)
	return "http://" + a.addr + "/" + AzuriteAccount
}

// Bucket creates a fresh container and opens it with an explicitly built
// client that can dial this server only.
func (a *Azure) Bucket(tb testing.TB) *blob.Bucket {
	a.start(tb)
	name := fmt.Sprintf("trove-%d", a.next.Add(1))
	cred, err := container.NewSharedKeyCredential(AzuriteAccount, AzuriteKey)
	if err != nil {
		tb.Fatal(err)
	}
	opts := &container.ClientOptions{ClientOptions: azcore.ClientOptions{Transport: localClient(a.addr)}}
	client, err := container.NewClientWithSharedKeyCredential("http://"+a.addr+"/"+AzuriteAccount+"/"+name, cred, opts)
	if err != nil {
		tb.Fatalf("azure client: %v", err)
	}
	if _, err := client.Create(context.Background(), nil); err != nil {
		tb.Fatalf("create container %s: %v", name, err)
	}
	return a.Open(tb, name)
}

// Open opens the container name, which need not exist, as Bucket does.
func (a *Azure) Open(tb testing.TB, name string) *blob.Bucket {
	a.start(tb)
	cred, err := container.NewSharedKeyCredential(AzuriteAccount, AzuriteKey)
	if err != nil {
		tb.Fatal(err)
	}
	opts := &container.ClientOptions{ClientOptions: azcore.ClientOptions{Transport: localClient(a.addr)}}
	client, err := container.NewClientWithSharedKeyCredential("http://"+a.addr+"/"+AzuriteAccount+"/"+name, cred, opts)
	if err != nil {
		tb.Fatalf("azure client: %v", err)
	}
	b, err := azureblob.OpenBucket(context.Background(), client, nil)
	if err != nil {
		tb.Fatalf("open bucket %s: %v", name, err)
	}
	return b
}

// New returns a fresh Storage on a new container of this server.
func (a *Azure) New(tb testing.TB) backend.Storage {
	return wrap(tb, a.Bucket(tb), cloud.WithHTTPStatus(azure.Status))
}

func (a *Azure) start(tb testing.TB) {
	tb.Helper()
	a.once.Do(func() { a.addr, a.skip, a.err = startAzurite(a.tb) })
	switch {
	case a.err == nil:
	case a.skip && os.Getenv("TROVE_REQUIRE_ALL") != "1":
		tb.Skipf("azure: %v (run scripts/install-test-servers)", a.err)
	default:
		tb.Fatalf("azure: %v", a.err)
	}
}

// startAzurite runs azurite-blob on a free port of 127.0.0.1 until tb ends.
// skip reports that azurite is not installed.
func startAzurite(tb testing.TB) (addr string, skip bool, err error) {
	bin, err := azuritePath()
	if err != nil {
		return "", true, err
	}
	// A port picked by closing a listener can be taken before azurite binds
	// it; try a few.
	for range 3 {
		addr, err = runAzurite(tb, bin)
		if err == nil {
			return addr, false, nil
		}
	}
	return "", false, err
}

func azuritePath() (string, error) {
	bin := os.Getenv("TROVE_AZURITE")
	if bin == "" {
		root, err := moduleRoot()
		if err != nil {
			return "", err
		}
		bin = filepath.Join(root, azuriteDefault)
	}
	if _, err := os.Stat(bin); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return "", fmt.Errorf("azurite-blob not installed at %s", bin)
		}
		return "", err
	}
	return bin, nil
}

// moduleRoot walks up from the working directory to the directory of go.mod.
func moduleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		up := filepath.Dir(dir)
		if up == dir {
			return "", errors.New("no go.mod above the working directory")
		}
		dir = up
	}
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

func runAzurite(tb testing.TB, bin string) (string, error) {
	port, err := freePort()
	if err != nil {
		return "", err
	}
	addr := "127.0.0.1:" + strconv.Itoa(port)
	work := tb.TempDir()
	cmd := exec.Command(bin,
		"--inMemoryPersistence",
		"--blobHost", "127.0.0.1",
		"--blobPort", strconv.Itoa(port),
		"--skipApiVersionCheck",
		"--loose",
		"--disableTelemetry", // azurite reports to Application Insights unless told not to
		"--silent",
	)
	cmd.Dir = work
	out := &tail{max: 16 << 10}
	cmd.Stdout, cmd.Stderr = out, out
	setProcAttr(cmd)
	if err := cmd.Start(); err != nil {
		return "", fmt.Errorf("start %s: %w", bin, err)
	}
	exited := make(chan struct{})
	go func() { cmd.Wait(); close(exited) }()
	stop := func() {
		killGroup(cmd)
		<-exited
	}

	client := localClient(addr)
	client.Timeout = time.Second
	deadline := time.Now().Add(60 * time.Second)
	for {
		resp, err := client.Get("http://" + addr + "/" + AzuriteAccount + "?comp=list")
		if err == nil {
			resp.Body.Close()
			break
		}
		select {
		case <-exited:
			return "", fmt.Errorf("azurite exited before serving %s: %s", addr, out)
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			stop()
			return "", fmt.Errorf("azurite did not serve %s within 60s: %v: %s", addr, err, out)
		}
	}
	client.CloseIdleConnections()
	tb.Cleanup(stop)
	return addr, nil
}

// tail keeps the last max bytes written to it.
type tail struct {
	mu  sync.Mutex
	max int
	b   []byte
}

func (t *tail) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.b = append(t.b, p...)
	if over := len(t.b) - t.max; over > 0 {
		t.b = append(t.b[:0], t.b[over:]...)
	}
	return len(p), nil
}

func (t *tail) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(t.b)
}
