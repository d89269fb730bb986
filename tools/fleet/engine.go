package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/johannesboyne/gofakes3"
	"github.com/johannesboyne/gofakes3/backend/s3mem"

	"github.com/trovekit/trove/backend/cloud/cloudtest"
)

// Engines a fleet runs on.
const (
	EngineSeaweedFS = "seaweedfs" // weed mini, built by scripts/install-test-servers
	EngineGofakes3  = "gofakes3"  // the S3 fake, in a server process of its own
	EngineAuto      = "auto"      // seaweedfs when installed, else gofakes3
)

// Engine is a running object store on 127.0.0.1.
type Engine struct {
	Name     string
	Endpoint string // http://127.0.0.1:PORT
	stop     func()
}

// Stop stops the engine's process.
func (e *Engine) Stop() { e.stop() }

// StartEngine starts kind with its data under dir. serveS3 is the command
// that runs ServeS3 in a process of its own (for gofakes3), with env (nil:
// this process's).
func StartEngine(kind, dir string, serveS3, env []string) (*Engine, error) {
	var bin string
	if kind == EngineAuto || kind == "" || kind == EngineSeaweedFS {
		var err error
		switch bin, err = cloudtest.FindSeaweedFS(); {
		case err == nil:
			kind = EngineSeaweedFS
		case kind == EngineSeaweedFS || !errors.Is(err, fs.ErrNotExist):
			return nil, err
		default:
			kind = EngineGofakes3
		}
	}
	switch kind {
	case EngineSeaweedFS:
		w, err := cloudtest.LaunchSeaweedFS(bin, dir, 2*time.Minute)
		if err != nil {
			return nil, err
		}
		return &Engine{Name: kind, Endpoint: "http://" + w.Addr(), stop: w.Stop}, nil
	case EngineGofakes3:
		cmd := exec.Command(serveS3[0], serveS3[1:]...)
		cmd.Env = env
		out, err := cmd.StdoutPipe()
		if err != nil {
			return nil, err
		}
		cmd.Stderr = os.Stderr
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
		if err := cmd.Start(); err != nil {
			return nil, err
		}
		stop := func() { syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL); cmd.Wait() }
		line, err := bufio.NewReader(out).ReadString('\n')
		if err != nil {
			stop()
			return nil, fmt.Errorf("gofakes3 server: %w", err)
		}
		return &Engine{Name: kind, Endpoint: "http://" + strings.TrimSpace(line), stop: stop}, nil
	}
	return nil, fmt.Errorf("fleet: unknown engine %q", kind)
}

// ServeS3 serves gofakes3 on a free port of 127.0.0.1, printing its
// address on out, until the process is killed.
func ServeS3(out io.Writer) error {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	fmt.Fprintln(out, l.Addr().String())
	return http.Serve(l, gofakes3.New(s3mem.New()).Server())
}

// CreateBuckets creates the named buckets on the engine.
func CreateBuckets(ctx context.Context, endpoint string, names ...string) error {
	client := s3.New(s3.Options{Region: "us-east-1", BaseEndpoint: aws.String(endpoint), UsePathStyle: true,
		Credentials: aws.AnonymousCredentials{}})
	for _, n := range names {
		if _, err := client.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String(n)}); err != nil {
			var owned interface{ ErrorCode() string }
			if errors.As(err, &owned) && strings.HasPrefix(owned.ErrorCode(), "BucketAlready") {
				continue
			}
			return fmt.Errorf("create bucket %s: %w", n, err)
		}
	}
	return nil
}

// StoreURL is the s3:// URL of bucket at endpoint.
func StoreURL(endpoint, bucket string) string {
	return "s3://" + bucket + "?endpoint=" + url.QueryEscape(endpoint) + "&region=us-east-1&use_path_style=true&anonymous=true"
}
