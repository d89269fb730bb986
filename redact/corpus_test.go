package redact

import (
	"encoding/base64"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The corpus: fake secrets of many formats, each embedded in prose, code,
// JSON, env dumps, shell commands, YAML or logs; and clean text, generated
// (hashes, UUIDs, blob refs, paths, identifiers, base64 of text, logs)
// and read from this module's own sources and docs. Generated from a fixed
// seed, so a failure repeats.

const (
	lowerA  = "abcdefghijklmnopqrstuvwxyz"
	upperA  = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
	digitsA = "0123456789"
	alnum   = lowerA + upperA + digitsA
	hexA    = "0123456789abcdef"
	b64A    = alnum + "+/"
	urlA    = alnum + "-_"
)

type gen struct{ r *rand.Rand }

func (g gen) s(alpha string, n int) string {
	b := make([]byte, n)
	for i := range b {
		b[i] = alpha[g.r.IntN(len(alpha))]
	}
	return string(b)
}

func (g gen) pick(xs ...string) string { return xs[g.r.IntN(len(xs))] }

func (g gen) pem(kind string) string {
	var lines []string
	for range 6 + g.r.IntN(8) {
		lines = append(lines, g.s(b64A, 64))
	}
	return "-----BEGIN " + kind + "-----\n" + strings.Join(lines, "\n") + "\n-----END " + kind + "-----"
}

func (g gen) jwt() string {
	hdr := base64.RawURLEncoding.EncodeToString([]byte(`{"alg":"HS256","typ":"JWT"}`))
	body := base64.RawURLEncoding.EncodeToString(fmt.Appendf(nil, `{"sub":"%d","name":"%s","iat":%d}`, g.r.IntN(1e6), g.s(lowerA, 8), 1700000000+g.r.IntN(1e7)))
	return hdr + "." + body + "." + g.s(urlA, 43)
}

// secretKinds make one fake secret each, with a name that suits it.
var secretKinds = []func(g gen) (name, secret string){
	func(g gen) (string, string) {
		return "AWS_ACCESS_KEY_ID", g.pick("AKIA", "ASIA") + g.s(upperA+"234567", 16)
	},
	func(g gen) (string, string) { return "aws_secret_access_key", g.s(b64A, 40) },
	func(g gen) (string, string) { return "GOOGLE_API_KEY", "AIza" + g.s(urlA, 35) },
	func(g gen) (string, string) {
		return "private_key", g.pem(g.pick("RSA PRIVATE KEY", "PRIVATE KEY", "EC PRIVATE KEY", "OPENSSH PRIVATE KEY"))
	},
	func(g gen) (string, string) { return "AZURE_STORAGE_KEY", g.s(b64A, 86) + "==" },
	func(g gen) (string, string) {
		return "AZURE_CLIENT_SECRET", g.s(alnum, 3) + g.s(digitsA, 1) + "Q~" + g.s(alnum+"_~.-", 34)
	},
	func(g gen) (string, string) {
		return "GITHUB_TOKEN", g.pick("ghp_", "gho_", "ghs_", "ghu_") + g.s(alnum, 36)
	},
	func(g gen) (string, string) { return "GH_PAT", "github_pat_" + g.s(alnum, 22) + "_" + g.s(alnum, 59) },
	func(g gen) (string, string) { return "GITLAB_TOKEN", "glpat-" + g.s(urlA, 20) },
	func(g gen) (string, string) {
		return "SLACK_BOT_TOKEN", "xoxb-" + g.s(digitsA, 12) + "-" + g.s(digitsA, 13) + "-" + g.s(alnum, 24)
	},
	func(g gen) (string, string) {
		return "SLACK_WEBHOOK", "https://hooks.slack.com/services/T" + g.s(upperA+digitsA, 8) + "/B" + g.s(upperA+digitsA, 10) + "/" + g.s(alnum, 24)
	},
	func(g gen) (string, string) {
		return "STRIPE_SECRET_KEY", g.pick("sk_live_", "rk_live_", "sk_test_") + g.s(alnum, 24+g.r.IntN(70))
	},
	func(g gen) (string, string) {
		return "OPENAI_API_KEY", g.pick("sk-proj-"+g.s(urlA, 58)+"T3BlbkFJ"+g.s(urlA, 58), "sk-"+g.s(alnum, 20)+"T3BlbkFJ"+g.s(alnum, 20))
	},
	func(g gen) (string, string) { return "ANTHROPIC_API_KEY", "sk-ant-api03-" + g.s(urlA, 93) + "AA" },
	func(g gen) (string, string) { return "token", g.jwt() },
	func(g gen) (string, string) { return "SENDGRID_API_KEY", "SG." + g.s(urlA, 22) + "." + g.s(urlA, 43) },
	func(g gen) (string, string) { return "NPM_TOKEN", "npm_" + g.s(alnum, 36) },
	func(g gen) (string, string) { return "HF_TOKEN", "hf_" + g.s(lowerA+upperA, 34) },
	func(g gen) (string, string) { return "SHOPIFY_TOKEN", "shpat_" + g.s(hexA, 32) },
	func(g gen) (string, string) { return "DIGITALOCEAN_TOKEN", "dop_v1_" + g.s(hexA, 64) },
	func(g gen) (string, string) { return "PYPI_TOKEN", "pypi-AgEIcHlwaS5vcmc" + g.s(urlA, 60) },
	func(g gen) (string, string) { return "TWILIO_API_KEY", "SK" + g.s(hexA, 32) },
	func(g gen) (string, string) { return "DATABASE_URL", g.s(alnum+"!*-", 10+g.r.IntN(14)) },
	func(g gen) (string, string) {
		return "DB_PASSWORD", g.s(lowerA, 5) + g.s(digitsA, 2) + g.pick("!", "#", "@", "") + g.s(upperA, 2)
	},
	func(g gen) (string, string) { return "SECRET_KEY_BASE", g.s(hexA, 128) },
	func(g gen) (string, string) { return "api_token", g.s(alnum, 32+g.r.IntN(16)) },
	func(g gen) (string, string) { return "Bearer", g.s(alnum+"-_", 40) },
	func(g gen) (string, string) {
		return "password", g.s(alnum, 6) + g.pick("!", "$", "#", "%", "&") + g.s(alnum, 4)
	},
	func(g gen) (string, string) { return "DOCKER_TOKEN", "dckr_pat_" + g.s(urlA, 27) },
	func(g gen) (string, string) { return "GOOGLE_CLIENT_SECRET", "GOCSPX-" + g.s(urlA, 28) },
	func(g gen) (string, string) {
		return "Authorization", "Basic " + base64.StdEncoding.EncodeToString([]byte(g.s(lowerA, 6)+":"+g.s(alnum, 12)))
	},
	func(g gen) (string, string) {
		return "ConnectionString", g.s(alnum, 8) + g.pick("!", "#", "") + g.s(digitsA, 2)
	},
}

// contextual are the kinds no detector can tell from other words without
// the name beside them: short passwords, long hex keys (hashes look alike).
var contextual = map[string]bool{"DB_PASSWORD": true, "password": true, "SECRET_KEY_BASE": true}

// embed puts a secret in one of many settings, the way transcripts show
// them.
func (g gen) embed(name, secret string) string {
	upper := strings.ToUpper(name)
	switch name {
	case "Authorization":
		return g.pick("Authorization: ", `"Authorization": "`, "> authorization: ") + secret
	case "ConnectionString":
		return fmt.Sprintf("Server=tcp:%s.database.windows.net,1433;Database=app;User Id=sa;Password=%s;Encrypt=true;", g.s(lowerA, 6), secret)
	}
	if name == "DATABASE_URL" {
		return g.pick("DATABASE_URL=", "connecting to ", `"dsn": "`, "mongo ") + g.pick("postgres", "postgresql", "mysql", "mongodb+srv", "redis", "amqp") + "://" +
			g.pick("app", "admin", "svc_"+g.s(lowerA, 4)) + ":" + secret + "@" + g.pick("db.internal", "10.0.3.7:5432", "cluster0.ab1cd.mongodb.net", "localhost:6379") + "/" + g.pick("prod", "app", "0")
	}
	n := 9
	if contextual[name] {
		n = 5
	}
	switch g.r.IntN(n) {
	case 0:
		return upper + "=" + secret
	case 1:
		return "export " + upper + "=\"" + secret + "\""
	case 2:
		return fmt.Sprintf(`{"%s": "%s", "region": "us-east-1"}`, strings.ToLower(name), secret)
	case 3:
		return fmt.Sprintf("%s: %q", strings.ToLower(name), secret)
	case 4:
		return fmt.Sprintf("    %s = %q  # set by the deploy script", strings.ToLower(name), secret)
	case 5:
		return fmt.Sprintf("I found the key in the logs, it is %s and it still works.", secret)
	case 6:
		return fmt.Sprintf(`curl -H "Authorization: Bearer %s" https://api.example.com/v1/items`, secret)
	case 7:
		return fmt.Sprintf("2025-03-04T10:11:12Z INFO config loaded %s=%s pid=%d", strings.ToLower(name), secret, g.r.IntN(99999))
	default:
		return fmt.Sprintf("client := api.New(%q)", secret)
	}
}

// cleanGenerated is text that looks busy but holds no secret.
func (g gen) cleanGenerated() string {
	words := []string{"session", "tree", "blob", "checkpoint", "writer", "index", "flush", "entry", "parent", "leaf", "config", "handler", "request", "response", "manager", "cache", "store", "token", "key", "secret"}
	w := func() string { return words[g.r.IntN(len(words))] }
	title := func(s string) string { return strings.ToUpper(s[:1]) + s[1:] }
	uuid := func() string {
		return g.s(hexA, 8) + "-" + g.s(hexA, 4) + "-4" + g.s(hexA, 3) + "-" + g.s(hexA, 4) + "-" + g.s(hexA, 12)
	}
	switch g.r.IntN(28) {
	case 0:
		return "blob:sha256:" + g.s(hexA, 64)
	case 1:
		return fmt.Sprintf(`{"type":"image","data":"blob:sha256:%s","mimeType":"image/png"}`, g.s(hexA, 64))
	case 2:
		return "commit " + g.s(hexA, 40)
	case 3:
		return fmt.Sprintf("%s Merge branch '%s-%s' into main", g.s(hexA, 7), w(), w())
	case 4:
		return fmt.Sprintf(`{"id":"%s","parentId":"%s","session_id":"%s"}`, g.s(hexA, 8), g.s(hexA, 8), uuid())
	case 5:
		return fmt.Sprintf("/home/%s/src/%s/%s/%s_test.go:%d:%d", g.s(lowerA, 5), w(), w(), w(), g.r.IntN(900), g.r.IntN(80))
	case 6:
		return fmt.Sprintf("func (s *%s%s) %s%s%s(ctx context.Context, %s string) error {", title(w()), title(w()), title(w()), title(w()), title(w()), w())
	case 7:
		return fmt.Sprintf("Test%s%s%s%d", title(w()), title(w()), title(w()), g.r.IntN(100))
	case 8:
		text := fmt.Sprintf("the %s of the %s is written before the %s", w(), w(), w())
		return base64.StdEncoding.EncodeToString([]byte(text))
	case 9:
		return fmt.Sprintf("2025-03-04T10:%02d:%02dZ INFO request_id=%s duration=%dms status=200", g.r.IntN(60), g.r.IntN(60), uuid(), g.r.IntN(900))
	case 10:
		return fmt.Sprintf("github.com/%s/%s v1.%d.%d h1:%s=", w(), w(), g.r.IntN(20), g.r.IntN(20), g.s(b64A, 43))
	case 11:
		return fmt.Sprintf(`"integrity": "sha512-%s==",`, g.s(b64A, 86))
	case 12:
		return fmt.Sprintf("docker pull ghcr.io/%s/%s@sha256:%s", w(), w(), g.s(hexA, 64))
	case 13:
		return fmt.Sprintf("%s_%s_TIMEOUT=30s", strings.ToUpper(w()), strings.ToUpper(w()))
	case 14:
		return g.pick("PATH=/usr/local/go/bin:/usr/bin:/bin", "HOME=/root", "GOFLAGS=-mod=mod", "TERM=xterm-256color", "MAX_TOKENS=4096", "TOKEN_FILE=/run/secrets/token", "API_KEY_ID=12345", "AUTH_METHOD=oauth", "SECRET_BACKEND=vault", "PASSWORD_MIN_LENGTH=12")
	case 15:
		return g.pick(`password: ${DB_PASSWORD}`, `DATABASE_URL=postgres://app:${PGPASSWORD}@db:5432/app`, `redis://localhost:6379/0`, `token = getToken(ctx)`, `api_key = os.environ["API_KEY"]`, `secret := cfg.Secret`, `if token == "" { return errNoToken }`, `password = "changeme"`, `auth_token: "<your token here>"`)
	case 16:
		return fmt.Sprintf("goroutine %d [running]:\nmain.main()\n\t/tmp/%s/main.go:%d +0x%s", g.r.IntN(99), w(), g.r.IntN(300), g.s(hexA, 3))
	case 17:
		return fmt.Sprintf("https://github.com/%s/%s/blob/%s/%s/%s.go#L%d", w(), w(), g.s(hexA, 40), w(), w(), g.r.IntN(500))
	case 18:
		return fmt.Sprintf("--- FAIL: Test%s%s (0.%02ds)", title(w()), title(w()), g.r.IntN(99))
	case 19:
		return fmt.Sprintf("%s-%s-%s", uuid(), w(), g.s(digitsA, 6))
	case 20:
		return fmt.Sprintf("const %s%sKey = %q", w(), title(w()), w()+"."+w())
	case 21:
		return fmt.Sprintf("sessions/--home-%s-src--/2025-03-04T10-11-12-000Z_%s.jsonl", g.s(lowerA, 6), uuid())
	case 22:
		return fmt.Sprintf("ok  \tgithub.com/trovekit/trove/%s\t%d.%03ds", w(), g.r.IntN(9), g.r.IntN(999))
	case 24:
		var lines []string
		for range 8 {
			lines = append(lines, g.s(b64A, 64))
		}
		return "-----BEGIN CERTIFICATE-----\nMIID" + g.s(b64A, 60) + "\n" + strings.Join(lines, "\n") + "\n-----END CERTIFICATE-----"
	case 25:
		key := append([]byte{0, 0, 0, 11}, "ssh-ed25519"...)
		key = append(key, 0, 0, 0, 32)
		for range 32 {
			key = append(key, byte(g.r.Uint32()))
		}
		return "ssh-ed25519 " + base64.StdEncoding.EncodeToString(key) + " " + w() + "@" + w()
	case 26:
		return g.pick(`Authorization: Bearer ${GITHUB_TOKEN}`, `-H "Authorization: Bearer $TOKEN"`, `Server=db;Database=app;User Id=sa;Password=${DB_PASSWORD};`, `the Authorization header carries a bearer token`)
	default:
		return fmt.Sprintf("The %s keeps its %s until the %s is flushed; see docs/%s.md.", w(), w(), w(), w())
	}
}

// plantedSecrets are the tests elsewhere that hold fake secrets on purpose.
var plantedSecrets = map[string]bool{"../mirror_redact_test.go": true, "../cmd/internal/cli/scan_test.go": true}

// cleanFiles are real text: this module's Go sources and docs, but not
// this package, whose tests hold fake secrets on purpose, nor test data.
func cleanFiles(t *testing.T) []string {
	t.Helper()
	var lines []string
	root := ".."
	err := filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			switch d.Name() {
			case "redact", "testdata", ".git", ".tools":
				return filepath.SkipDir
			}
			return nil
		}
		if plantedSecrets[filepath.ToSlash(p)] {
			return nil
		}
		if !strings.HasSuffix(p, ".go") && !strings.HasSuffix(p, ".md") {
			return nil
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		// Every third line: as varied, and the test stays quick under
		// -race.
		for i, l := range strings.Split(string(b), "\n") {
			if i%3 == 0 && strings.TrimSpace(l) != "" {
				lines = append(lines, l)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return lines
}

// TestCorpus holds the detectors to their goals: at least 95% of secrets
// found (wholly covered by findings), at most 1% of clean lines touched.
func TestCorpus(t *testing.T) {
	d, err := New()
	if err != nil {
		t.Fatal(err)
	}
	g := gen{rand.New(rand.NewPCG(32, 4))}
	var tally secretTally
	for range 40 {
		for _, kind := range secretKinds {
			name, secret := kind(g)
			text := g.embed(name, secret)
			tally.add(t, name, text, covered(d, text, strings.TrimPrefix(secret, "Basic ")))
		}
	}
	tally.check(t)

	// Clean texts are judged whole (a certificate is a block of lines),
	// and each line a finding touches counts.
	var clean []string
	for range 3000 {
		clean = append(clean, g.cleanGenerated())
	}
	checkClean(t, d, append(clean, cleanFiles(t)...), 10000)
}

// secretTally counts the secrets found, and the missed by kind.
type secretTally struct {
	found, total int
	missed       map[string]int
}

func (s *secretTally) add(t *testing.T, kind, text string, found bool) {
	s.total++
	if found {
		s.found++
		return
	}
	if s.missed == nil {
		s.missed = map[string]int{}
	}
	s.missed[kind]++
	if s.missed[kind] <= 2 {
		t.Logf("missed %s in %q", kind, text)
	}
}

// check fails under 95% found.
func (s *secretTally) check(t *testing.T) {
	rate := float64(s.found) / float64(s.total)
	t.Logf("secrets: %d of %d found (%.1f%%); missed by kind: %v", s.found, s.total, 100*rate, s.missed)
	if rate < 0.95 {
		t.Errorf("found %.1f%% of secrets, want >= 95%%", 100*rate)
	}
}

// checkClean fails when findings touch over 1% of the lines of texts, or
// when they are fewer than minLines. Each text is judged whole (a
// certificate is a block of lines) and each line a finding touches counts.
func checkClean(t *testing.T, d *Detector, texts []string, minLines int) {
	touched, lines := 0, 0
	for _, text := range texts {
		lines += strings.Count(text, "\n") + 1
		hit := map[int]bool{}
		for _, f := range d.Find(text) {
			first := strings.Count(text[:f.Start], "\n")
			for l := first; l <= first+strings.Count(text[f.Start:f.End], "\n"); l++ {
				hit[l] = true
			}
			if touched+len(hit) <= 25 {
				t.Logf("clean text touched by %s: %q", f.Detector, text)
			}
		}
		touched += len(hit)
	}
	frac := float64(touched) / float64(lines)
	t.Logf("clean: %d of %d lines touched (%.2f%%)", touched, lines, 100*frac)
	if lines < minLines || frac > 0.01 {
		t.Errorf("touched %.2f%% of %d clean lines, want <= 1%% of at least %d", 100*frac, lines, minLines)
	}
}

// covered says whether findings in text cover every byte of secret.
func covered(d *Detector, text, secret string) bool {
	at := strings.Index(text, secret)
	if at < 0 {
		// Embedded with %q: look for the quoted form's inside.
		q := fmt.Sprintf("%q", secret)
		q = q[1 : len(q)-1]
		at = strings.Index(text, q)
		secret = q
	}
	pos := at
	for _, f := range d.Find(text) {
		if f.Start <= pos && f.End > pos {
			pos = f.End
		}
	}
	return pos >= at+len(secret)
}
