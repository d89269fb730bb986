package redact

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/url"
	"strings"
	"testing"
)

// A second corpus, written apart from the first and from the rules, as a
// held-out probe would be: the credential formats of the services agents
// touch (cloud, forges, chat, payments, model APIs, package registries),
// as they show up in agent transcripts: JSON tool outputs whose strings hold
// escaped newlines (a service-account file, `aws sts` output), .env and
// INI files, URLs, headers; and the clean text of the same transcripts:
// message and tool-call ids, code, lock files, images, digests and links.

// wideSecret is one fake secret and the text it sits in.
type wideSecret struct {
	kind, text, secret string
}

// wideKinds make a secret each, already embedded.
var wideKinds = []func(g gen) wideSecret{
	func(g gen) wideSecret { // ~/.aws/credentials
		id, sec := "AKIA"+g.s(upperA+"234567", 16), g.s(b64A, 40)
		return wideSecret{"aws-secret-ini", "[default]\naws_access_key_id = " + id + "\naws_secret_access_key = " + sec + "\n", sec}
	},
	func(g gen) wideSecret { // aws sts assume-role, pretty-printed
		sec := g.s(b64A, 40)
		return wideSecret{"aws-sts-json", fmt.Sprintf(`{"Credentials": {"AccessKeyId": "ASIA%s", "SecretAccessKey": "%s", "Expiration": "2025-01-01T00:00:00Z"}}`, g.s(upperA+"234567", 16), sec), sec}
	},
	func(g gen) wideSecret {
		tok := "FwoGZXIvYXdzE" + g.s(b64A, 300)
		return wideSecret{"aws-session-token", `"SessionToken": "` + tok + `",`, tok}
	},
	func(g gen) wideSecret {
		id := "AKIA" + g.s(upperA+"234567", 16)
		return wideSecret{"aws-key-id", "aws configure set aws_access_key_id " + id, id}
	},
	func(g gen) wideSecret { // a service-account file, as cat prints it
		key := g.pemBody("PRIVATE KEY", `\n`)
		return wideSecret{"gcp-sa-json", fmt.Sprintf(`{"type": "service_account", "project_id": "acme-prod", "private_key_id": "%s", "private_key": "%s", "client_email": "ci@acme-prod.iam.gserviceaccount.com"}`, g.s(hexA, 40), key), key}
	},
	func(g gen) wideSecret { // the same, as a JSONL line holds it (escaped twice)
		key := g.pemBody("PRIVATE KEY", `\\n`)
		return wideSecret{"gcp-sa-jsonl", fmt.Sprintf(`{"type":"tool_result","content":"{\"private_key\": \"%s\", \"client_id\": \"1%s\"}"}`, key, g.s(digitsA, 20)), key}
	},
	func(g gen) wideSecret {
		key := g.s(b64A, 86) + "=="
		return wideSecret{"azure-storage-conn", "DefaultEndpointsProtocol=https;AccountName=acme" + g.s(lowerA, 5) + ";AccountKey=" + key + ";EndpointSuffix=core.windows.net", key}
	},
	func(g gen) wideSecret {
		sig := url.QueryEscape(base64.StdEncoding.EncodeToString([]byte(g.s(alnum, 32))))
		return wideSecret{"azure-sas", "https://acme.blob.core.windows.net/backups/db.bak?sv=2022-11-02&ss=b&srt=co&sp=rl&se=2025-12-31T00:00:00Z&spr=https&sig=" + sig, sig}
	},
	func(g gen) wideSecret {
		key := g.s(b64A, 43) + "="
		return wideSecret{"azure-servicebus", "Endpoint=sb://acme.servicebus.windows.net/;SharedAccessKeyName=RootManageSharedAccessKey;SharedAccessKey=" + key, key}
	},
	func(g gen) wideSecret {
		tok := g.pick("ghp_", "gho_", "ghu_", "ghs_", "ghr_") + g.s(alnum, 36)
		return wideSecret{"github-classic", g.pick("git remote set-url origin https://x-access-token:"+tok+"@github.com/acme/app.git", "GH_TOKEN="+tok, "using token "+tok+" for the API"), tok}
	},
	func(g gen) wideSecret {
		tok := "github_pat_11" + g.s(upperA+digitsA, 20) + "_" + g.s(alnum, 59)
		return wideSecret{"github-fine-grained", `"token": "` + tok + `"`, tok}
	},
	func(g gen) wideSecret {
		tok := g.pick("glpat-", "gldt-", "glrt-", "glptt-") + g.s(urlA, 20)
		return wideSecret{"gitlab", g.pick("git clone https://oauth2:"+tok+"@gitlab.com/acme/app.git", "PRIVATE-TOKEN: "+tok, "CI_JOB_TOKEN="+tok), tok}
	},
	func(g gen) wideSecret {
		tok := "xoxb-" + g.s(digitsA, 11) + "-" + g.s(digitsA, 13) + "-" + g.s(alnum, 24)
		return wideSecret{"slack-bot", "SLACK_BOT_TOKEN=" + tok, tok}
	},
	func(g gen) wideSecret {
		tok := "xoxp-" + g.s(digitsA, 11) + "-" + g.s(digitsA, 11) + "-" + g.s(digitsA, 13) + "-" + g.s(hexA, 32)
		return wideSecret{"slack-user", `{"ok": true, "access_token": "` + tok + `"}`, tok}
	},
	func(g gen) wideSecret {
		hook := "https://hooks.slack.com/services/T" + g.s(upperA+digitsA, 10) + "/B" + g.s(upperA+digitsA, 10) + "/" + g.s(alnum, 24)
		return wideSecret{"slack-webhook", `curl -X POST -d '{"text":"deployed"}' ` + hook, hook}
	},
	func(g gen) wideSecret {
		k := g.pick("sk_live_", "sk_test_", "rk_live_", "rk_test_") + g.s(alnum, 99)
		return wideSecret{"stripe", "stripe.api_key = '" + k + "'", k}
	},
	func(g gen) wideSecret {
		k := "whsec_" + g.s(alnum, 32)
		return wideSecret{"stripe-webhook", "STRIPE_WEBHOOK_SECRET=" + k, k}
	},
	func(g gen) wideSecret {
		k := g.pick("sk-proj-", "sk-svcacct-", "sk-admin-") + g.s(urlA, 74) + "T3BlbkFJ" + g.s(urlA, 74)
		return wideSecret{"openai", g.pick("OPENAI_API_KEY="+k, "client = OpenAI(api_key=\""+k+"\")"), k}
	},
	func(g gen) wideSecret {
		k := "sk-" + g.s(alnum, 48)
		return wideSecret{"openai-legacy", "openai.api_key = \"" + k + "\"", k}
	},
	func(g gen) wideSecret {
		k := g.pick("sk-ant-api03-", "sk-ant-admin01-") + g.s(urlA, 93) + "AA"
		return wideSecret{"anthropic", g.pick(`"x-api-key": "`+k+`"`, "ANTHROPIC_API_KEY="+k, "export ANTHROPIC_API_KEY="+k), k}
	},
	func(g gen) wideSecret {
		k := "npm_" + g.s(alnum, 36)
		return wideSecret{"npm", "//registry.npmjs.org/:_authToken=" + k, k}
	},
	func(g gen) wideSecret {
		k := "pypi-AgEIcHlwaS5vcmc" + g.s(urlA, 70)
		return wideSecret{"pypi", "[pypi]\n  username = __token__\n  password = " + k, k}
	},
	func(g gen) wideSecret {
		k := g.s(hexA, 32)
		return wideSecret{"twilio-auth", "TWILIO_ACCOUNT_SID=AC" + g.s(hexA, 32) + "\nTWILIO_AUTH_TOKEN=" + k, k}
	},
	func(g gen) wideSecret {
		k := "SK" + g.s(hexA, 32)
		return wideSecret{"twilio-key", "twilio api:core:keys:list -> " + k + " (secret in 1Password)", k}
	},
	func(g gen) wideSecret {
		k := "SG." + g.s(urlA, 22) + "." + g.s(urlA, 43)
		return wideSecret{"sendgrid", "sg = SendGridAPIClient('" + k + "')", k}
	},
	func(g gen) wideSecret {
		k := g.pick("key-"+g.s(hexA[:10]+lowerA, 32), g.s(hexA, 32)+"-"+g.s(hexA, 8)+"-"+g.s(hexA, 8))
		return wideSecret{"mailgun", "MAILGUN_API_KEY=" + k, k}
	},
	func(g gen) wideSecret {
		k := "HRKU-AA" + g.s(urlA, 58)
		return wideSecret{"heroku", "HEROKU_API_KEY=" + k, k}
	},
	func(g gen) wideSecret {
		k := g.s(hexA, 8) + "-" + g.s(hexA, 4) + "-" + g.s(hexA, 4) + "-" + g.s(hexA, 4) + "-" + g.s(hexA, 12)
		return wideSecret{"heroku-uuid", "export HEROKU_API_KEY=" + k, k}
	},
	func(g gen) wideSecret {
		k := g.pick("dop_v1_", "doo_v1_", "dor_v1_") + g.s(hexA, 64)
		return wideSecret{"digitalocean", "doctl auth init -t " + k, k}
	},
	func(g gen) wideSecret {
		k := "hf_" + g.s(lowerA+upperA, 34)
		return wideSecret{"huggingface", "huggingface-cli login --token " + k, k}
	},
	func(g gen) wideSecret {
		id := base64.RawStdEncoding.EncodeToString([]byte("1" + g.s(digitsA, 18)))
		k := id + "." + g.s(urlA, 6) + "." + g.s(urlA, 38)
		return wideSecret{"discord-bot", "client.login('" + k + "')", k}
	},
	func(g gen) wideSecret {
		k := "https://discord.com/api/webhooks/1" + g.s(digitsA, 18) + "/" + g.s(urlA, 68)
		return wideSecret{"discord-webhook", "DISCORD_WEBHOOK=" + k, k}
	},
	func(g gen) wideSecret {
		k := "1" + g.s(digitsA, 9) + ":AA" + g.s(urlA, 33)
		return wideSecret{"telegram", g.pick("TELEGRAM_BOT_TOKEN="+k, "https://api.telegram.org/bot"+k+"/getUpdates", "bot = telebot.TeleBot('"+k+"')"), k}
	},
	func(g gen) wideSecret {
		hdr := base64.RawURLEncoding.EncodeToString([]byte(g.pick(`{"alg":"RS256","kid":"`+g.s(alnum, 16)+`","typ":"JWT"}`, `{"typ":"JWT","alg":"ES256"}`)))
		body := base64.RawURLEncoding.EncodeToString(fmt.Appendf(nil, `{"iss":"https://auth.acme.io/","sub":"auth0|%s","aud":["api"],"exp":%d,"scope":"openid profile"}`, g.s(hexA, 24), 1700000000+g.r.IntN(1e7)))
		k := hdr + "." + body + "." + g.s(urlA, 86)
		return wideSecret{"jwt", g.pick("Cookie: session="+k, `{"id_token":"`+k+`"}`, "token: "+k), k}
	},
	func(g gen) wideSecret {
		kind := g.pick("RSA PRIVATE KEY", "EC PRIVATE KEY", "OPENSSH PRIVATE KEY", "PGP PRIVATE KEY BLOCK", "ENCRYPTED PRIVATE KEY", "DSA PRIVATE KEY")
		k := g.pemBody(kind, "\n")
		return wideSecret{"pem", "$ cat ~/.ssh/id_deploy\n" + k + "\n$ ", k}
	},
	func(g gen) wideSecret { // a key file read by a tool, inside the JSON of a transcript line
		k := g.pemBody(g.pick("RSA PRIVATE KEY", "OPENSSH PRIVATE KEY", "EC PRIVATE KEY"), `\n`)
		return wideSecret{"pem-jsonl", `{"type":"tool_result","tool_use_id":"toolu_01` + g.s(alnum, 22) + `","content":"` + k + `\n"}`, k}
	},
	func(g gen) wideSecret {
		pw := g.s(alnum, 12) + g.pick("%21", "%40", "!", "") + g.s(digitsA, 2)
		scheme := g.pick("postgres", "postgresql", "mysql", "mongodb+srv", "redis", "rediss", "amqp", "amqps")
		return wideSecret{"db-url", g.pick("DATABASE_URL=", `"url": "`, "psql ", "connecting to ") + scheme + "://" + g.pick("app", "admin", "default", "guest") + ":" + pw + "@" + g.pick("db.acme.internal:5432", "cluster0.x1y2z.mongodb.net", "redis-12345.c1.us-east-1.ec2.cloud.redislabs.com:12345", "rabbit:5672") + "/" + g.pick("prod", "0", "vhost"), pw}
	},
	func(g gen) wideSecret {
		pw := g.s(alnum, 10) + g.s(digitsA, 2)
		return wideSecret{"basic-auth-url", g.pick("pip install --index-url https://deploy:"+pw+"@pypi.acme.io/simple pkg", "GET https://admin:"+pw+"@grafana.acme.io/api/health"), pw}
	},
	func(g gen) wideSecret {
		name := g.pick("PASSWORD", "SECRET", "TOKEN", "API_KEY", "DB_PASSWORD", "JWT_SECRET", "SESSION_SECRET", "MYSQL_ROOT_PASSWORD", "ADMIN_TOKEN", "APP_SECRET", "ENCRYPTION_KEY", "POSTGRES_PASSWORD")
		v := g.s(alnum, 8+g.r.IntN(24)) + g.s(digitsA, 1)
		return wideSecret{"dotenv", g.pick("", "export ") + name + "=" + g.pick(v, `"`+v+`"`, "'"+v+"'"), v}
	},
	func(g gen) wideSecret {
		tok := g.s(alnum, 24+g.r.IntN(40))
		return wideSecret{"bearer", g.pick("Authorization: Bearer "+tok, "authorization: bearer "+tok, `"headers": {"Authorization": "Bearer `+tok+`"}`, "> Authorization: Bearer "+tok), tok}
	},
	func(g gen) wideSecret {
		tok := g.s(alnum, 32+g.r.IntN(32))
		return wideSecret{"high-entropy", g.pick("the key is "+tok, "use `"+tok+"` as the signing key", "secret rotated to "+tok+" today"), tok}
	},
}

// pemBody is a private key in PEM with its line breaks written as nl
// (a newline, or the two or three characters JSON escapes it to).
func (g gen) pemBody(kind, nl string) string {
	lines := []string{"-----BEGIN " + kind + "-----"}
	for range 8 + g.r.IntN(10) {
		lines = append(lines, g.s(b64A, 64))
	}
	lines = append(lines, g.s(b64A, 20)+"==", "-----END "+kind+"-----")
	return strings.Join(lines, nl)
}

// wideClean is text of agent transcripts that holds no secret.
func (g gen) wideClean() string {
	id := func(prefix string, n int) string { return prefix + g.s(alnum, n) }
	uuid := func() string {
		return g.s(hexA, 8) + "-" + g.s(hexA, 4) + "-4" + g.s(hexA, 3) + "-" + g.s(hexA, 4) + "-" + g.s(hexA, 12)
	}
	words := []string{"parse", "config", "user", "handler", "request", "token", "secret", "session", "cache", "build", "deploy", "key", "password", "auth"}
	w := func() string { return words[g.r.IntN(len(words))] }
	title := func(s string) string { return strings.ToUpper(s[:1]) + s[1:] }
	switch g.r.IntN(40) {
	case 0:
		return fmt.Sprintf(`{"id":"msg_01%s","type":"message","role":"assistant","model":"claude-sonnet-4-5"}`, g.s(alnum, 22))
	case 1:
		return fmt.Sprintf(`{"type":"tool_use","id":"%s","name":"Bash","input":{"command":"go test ./..."}}`, id("toolu_01", 22))
	case 2:
		return fmt.Sprintf(`{"id":"chatcmpl-%s","object":"chat.completion","tool_calls":[{"id":"call_%s"}]}`, g.s(alnum, 29), g.s(alnum, 24))
	case 3:
		return fmt.Sprintf(`{"requestId":"req_%s","uuid":"%s"}`, g.s(alnum, 24), uuid())
	case 4:
		return fmt.Sprintf("%s %s", g.s(hexA, 40), g.pick("refs/heads/main", "HEAD", "refs/tags/v1.2.3"))
	case 5:
		return fmt.Sprintf("[main %s] %s the %s %s", g.s(hexA, 7), title(w()), w(), w())
	case 6:
		return fmt.Sprintf(`"%s": {"version": "1.%d.0", "resolved": "https://registry.npmjs.org/%s/-/%s-1.%d.0.tgz", "integrity": "sha512-%s=="}`, w(), g.r.IntN(9), w(), w(), g.r.IntN(9), g.s(b64A, 86))
	case 7:
		return fmt.Sprintf(`checksum = "%s"`, g.s(hexA, 64))
	case 8:
		return fmt.Sprintf("    --hash=sha256:%s \\", g.s(hexA, 64))
	case 9:
		return fmt.Sprintf(`  resolution: "%s@npm:4.1.%d"`+"\n  checksum: %s", w(), g.r.IntN(9), g.s(hexA, 128))
	case 10:
		return fmt.Sprintf(`{"type":"image","source":{"type":"base64","media_type":"image/png","data":"iVBORw0KGgoAAAANSUhEUgAA%s"}}`, g.s(b64A, 400))
	case 11:
		return fmt.Sprintf("![screenshot](data:image/jpeg;base64,/9j/4AAQSkZJRgABAQ%s)", g.s(b64A, 300))
	case 12:
		return fmt.Sprintf("const %s%s%s%s = %q", w(), title(w()), title(w()), title(w()), w())
	case 13:
		return fmt.Sprintf("func (s *%sStore) %s%sFor%s(ctx context.Context) (*%s%s, error) {", title(w()), title(w()), title(w()), title(w()), title(w()), title(w()))
	case 14:
		return fmt.Sprintf("def %s_%s_%s(self, %s_id: str) -> Optional[%s]:", w(), w(), w(), w(), title(w()))
	case 15:
		return fmt.Sprintf("https://%s.example.com/api/v2/%s?page=%d&per_page=50&sort=created_at", w(), w(), g.r.IntN(40))
	case 16:
		return fmt.Sprintf("https://github.com/acme/%s/pull/%d/files#diff-%s", w(), g.r.IntN(9000), g.s(hexA, 64))
	case 17:
		return fmt.Sprintf("/Users/%s/Library/Caches/go-build/%s/%s-d", g.s(lowerA, 6), g.s(hexA, 2), g.s(hexA, 64))
	case 18:
		return fmt.Sprintf("/nix/store/%s-go-1.22.%d/bin/go", g.s("0123456789abcdfghijklmnpqrsvwxyz", 32), g.r.IntN(9))
	case 19:
		return fmt.Sprintf("web-%s-%s   1/1     Running   0          %dm", g.s(hexA, 10), g.s(lowerA+digitsA, 5), g.r.IntN(60))
	case 20:
		return fmt.Sprintf("arn:aws:iam::%s:role/%s-%s-role", g.s(digitsA, 12), w(), w())
	case 21:
		return fmt.Sprintf("x-amz-request-id: %s\nx-amz-id-2: %s", g.s(upperA+digitsA, 16), g.s(b64A, 76))
	case 22:
		return fmt.Sprintf("i-0%s  t3.micro  running  %d.%d.%d.%d", g.s(hexA, 16), g.r.IntN(255), g.r.IntN(255), g.r.IntN(255), g.r.IntN(255))
	case 23:
		return fmt.Sprintf("%s@sha256:%s", g.pick("ghcr.io/acme/api", "docker.io/library/postgres"), g.s(hexA, 64))
	case 24:
		return fmt.Sprintf("CONTAINER ID   IMAGE\n%s   postgres:16", g.s(hexA, 12))
	case 25:
		return fmt.Sprintf("01%s", g.s("0123456789ABCDEFGHJKMNPQRSTVWXYZ", 24))
	case 26:
		return fmt.Sprintf("go: downloading golang.org/x/%s v0.%d.0\ngolang.org/x/%s v0.%d.0 h1:%s=", w(), g.r.IntN(30), w(), g.r.IntN(30), g.s(b64A, 43))
	case 27:
		return g.pick("TOKEN_URL=https://oauth2.googleapis.com/token", "PASSWORD_RESET_TTL=3600", "SECRET_NAME=prod/db", "API_KEY_HEADER=X-Api-Key", "AUTH_DOMAIN=acme.auth0.com", "KEY_PREFIX=trove:", "export TOKEN=$(gh auth token)", `password: "{{ .Values.db.password }}"`, "DB_PASSWORD=${DB_PASSWORD:?required}", `secret = os.getenv("SECRET")`)
	case 28:
		return fmt.Sprintf("-----BEGIN PUBLIC KEY-----\\n%s\\n%s\\n-----END PUBLIC KEY-----", g.s(b64A, 64), g.s(b64A, 56))
	case 29:
		return fmt.Sprintf("ssh-rsa AAAAB3NzaC1yc2EAAAADAQABAAABgQ%s %s@%s", g.s(b64A, 360), g.s(lowerA, 5), g.s(lowerA, 6))
	case 30:
		return fmt.Sprintf("%s.%s.%s.%s", w(), w(), w(), g.pick("ts", "go", "py", "rs"))
	case 31:
		return fmt.Sprintf("SELECT id, %s_id, created_at FROM %ss WHERE %s = $1 ORDER BY created_at DESC LIMIT %d;", w(), w(), w(), g.r.IntN(100))
	case 32:
		return fmt.Sprintf("    at %s.%s (/app/node_modules/%s/dist/index.js:%d:%d)", title(w()), w(), w(), g.r.IntN(900), g.r.IntN(80))
	case 33:
		return fmt.Sprintf("sha256sum: %s  %s.tar.gz", g.s(hexA, 64), w())
	case 34:
		return fmt.Sprintf("https://www.youtube.com/watch?v=%s&t=%ds", g.s(urlA, 11), g.r.IntN(600))
	case 35:
		return fmt.Sprintf("%s@%s.com wrote on 2025-0%d-1%d:", g.s(lowerA, 6), w(), 1+g.r.IntN(8), g.r.IntN(9))
	case 36:
		return fmt.Sprintf("git-lfs: oid sha256:%s size %d", g.s(hexA, 64), g.r.IntN(1e7))
	case 37:
		return fmt.Sprintf("  %s%s%s%sTest.java:%d", title(w()), title(w()), title(w()), title(w()), g.r.IntN(400))
	case 38:
		return fmt.Sprintf(`{"event":"%s.%s","idempotency_key":"%s","ts":%d}`, w(), w(), uuid(), 1700000000000+g.r.IntN(1e9))
	default:
		return fmt.Sprintf("I'll update the %s %s so the %s is checked before the %s; then run the tests again.", w(), w(), w(), w())
	}
}

// TestWideCorpus holds the detectors to the goals on the second corpus:
// at least 95% of secrets wholly covered, at most 1% of clean lines
// touched. Each text is also scanned as a JSONL transcript line holds it
// (a JSON string, newlines escaped), as scan and --redact see it.
func TestWideCorpus(t *testing.T) {
	d, err := New()
	if err != nil {
		t.Fatal(err)
	}
	g := gen{rand.New(rand.NewPCG(2026, 11))}
	var tally secretTally
	for rep := range 30 {
		for _, kind := range wideKinds {
			s := kind(g)
			tally.add(t, s.kind, s.text, coveredJSON(t, d, s, rep%2 == 1))
		}
	}
	tally.check(t)
	clean := make([]string, 12000)
	for i := range clean {
		clean[i] = g.wideClean()
	}
	checkClean(t, d, clean, 12000)
}

// coveredJSON checks s's secret is covered in its text, or, with asJSON, in
// the text as a JSON string value decoded the way JSONLines decodes it.
func coveredJSON(t *testing.T, d *Detector, s wideSecret, asJSON bool) bool {
	if !asJSON {
		return covered(d, s.text, s.secret)
	}
	line, err := json.Marshal(map[string]string{"type": "tool_result", "content": s.text})
	if err != nil {
		t.Fatal(err)
	}
	out, _, err := d.JSONLines(append(line, '\n'), nil)
	if err != nil {
		t.Fatal(err)
	}
	var back map[string]string
	if err := json.Unmarshal(out, &back); err != nil {
		t.Fatal(err)
	}
	return !strings.Contains(back["content"], s.secret) && !strings.Contains(back["content"], s.secret[len(s.secret)/2:])
}
