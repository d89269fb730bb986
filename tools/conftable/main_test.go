package main

import (
	"bytes"
	"strings"
	"testing"
)

func TestTable(t *testing.T) {
	in := strings.Join([]string{
		`{"Action":"run","Test":"TestMatrix"}`,
		`{"Action":"run","Test":"TestMatrix/mem"}`,
		`{"Action":"run","Test":"TestMatrix/mem/storage"}`,
		`{"Action":"run","Test":"TestMatrix/mem/storage/a"}`,
		`{"Action":"pass","Test":"TestMatrix/mem/storage/a"}`,
		`{"Action":"run","Test":"TestMatrix/mem/storage/b"}`,
		`{"Action":"output","Test":"TestMatrix/mem/storage/b","Output":"    storage.go:10: backend has no locks\n"}`,
		`{"Action":"skip","Test":"TestMatrix/mem/storage/b"}`,
		`{"Action":"pass","Test":"TestMatrix/mem/storage"}`,
		`{"Action":"run","Test":"TestMatrix/fs"}`,
		`{"Action":"run","Test":"TestMatrix/fs/storage"}`,
		`{"Action":"run","Test":"TestMatrix/fs/storage/a"}`,
		`{"Action":"pass","Test":"TestMatrix/fs/storage/a"}`,
		`{"Action":"pass","Test":"TestMatrix"}`,
		`{"Action":"pass"}`,
	}, "\n")
	var out, errOut bytes.Buffer
	if code := run(strings.NewReader(in), &out, &errOut); code != 0 {
		t.Fatalf("exit %d, stderr %s", code, errOut.String())
	}
	want := "fs storage pass=1 fail=0 skip=0\nmem storage pass=1 fail=0 skip=1\n    skip mem/storage/b: backend has no locks\n"
	if out.String() != want {
		t.Fatalf("got\n%s\nwant\n%s", out.String(), want)
	}
}

func TestFailureAndNothing(t *testing.T) {
	in := `{"Action":"run","Test":"TestMatrix/mem/storage/a"}
{"Action":"output","Test":"TestMatrix/mem/storage/a","Output":"    x.go:1: boom\n"}
{"Action":"fail","Test":"TestMatrix/mem/storage/a"}`
	var out, errOut bytes.Buffer
	if code := run(strings.NewReader(in), &out, &errOut); code == 0 {
		t.Fatal("a failed case must give a non-zero exit")
	}
	if !strings.Contains(errOut.String(), "boom") {
		t.Fatalf("failure output not shown: %s", errOut.String())
	}
	out.Reset()
	errOut.Reset()
	if code := run(strings.NewReader("# build failed\n"), &out, &errOut); code == 0 {
		t.Fatal("no test at all must give a non-zero exit")
	}
	// A case without a verdict (the binary died) counts as a failure.
	if code := run(strings.NewReader(`{"Action":"run","Test":"TestMatrix/mem/storage/a"}`), &out, &errOut); code == 0 {
		t.Fatal("a case with no verdict must fail")
	}
}
