package gcs

import (
	"net/http"
	"net/url"
	"strings"
	"testing"
)

// The URL options: gcsblob's that mean something here, errors for the
// rest. None of these cases looks for credentials (they could be looked
// for off this machine).
func TestURLOptions(t *testing.T) {
	for _, c := range []struct {
		query, emulator string
		endpoint        string // "" is DefaultEndpoint
		err             string // part of the error, "" for none
	}{
		{query: "anonymous=true"},
		{query: "access_id=-"},
		{query: "anonymous=1&grpc=false&zonal=false"},
		{query: "anonymous=true&universe_domain=example.com", endpoint: "https://storage.example.com"},
		{query: "", emulator: "127.0.0.1:4443", endpoint: "http://127.0.0.1:4443"},
		{query: "prefix=p/", emulator: "https://127.0.0.1:4443", err: `invalid query parameter "prefix"`},
		{query: "anonymous=maybe", err: "invalid value"},
		{query: "anonymous=true&grpc=true", err: "grpc=true"},
		{query: "anonymous=true&zonal=true", err: "zonal=true"},
		{query: "access_id=me@example.com", err: "signed URLs"},
		{query: "anonymous=true&private_key_path=/k.pem", err: "signed URLs"},
		{query: "anonymous=true&region=x", err: `invalid query parameter "region"`},
	} {
		q, err := url.ParseQuery(c.query)
		if err != nil {
			t.Fatal(err)
		}
		opts, err := urlOptions(t.Context(), q, c.emulator)
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("%q: %v, want an error saying %q", c.query, err, c.err)
			}
			continue
		}
		if err != nil {
			t.Errorf("%q: %v", c.query, err)
			continue
		}
		b, err := newBucket("b", opts)
		if err != nil {
			t.Fatal(err)
		}
		want := c.endpoint
		if want == "" {
			want = DefaultEndpoint
		}
		if b.base != want || b.client != http.DefaultClient {
			t.Errorf("%q: endpoint %s, client %v; want %s without credentials", c.query, b.base, b.client, want)
		}
	}
}
