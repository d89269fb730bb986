package redact

import (
	"encoding/base64"
	"math"
	"regexp"
	"strings"
	"sync"
	"unicode/utf8"
)

// ownRules are the detectors gitleaks's set lacks: a password in any URL
// (database URLs above all), .env assignments of secret-named variables,
// and quoted passwords in code and config, which gitleaks's generic rule
// misses when they hold punctuation or little entropy.
func ownRules() []*rule {
	return []*rule{
		{
			id:       "url-password",
			re:       regexp.MustCompile(`(?i)\b[a-z][a-z0-9+.-]{1,20}://[^\s:/@'"<>{}]{1,128}:([^\s@/'"<>{}]{3,128})@[a-z0-9.\-\[\]_]+`),
			group:    1,
			keywords: []string{"://"},
			prio:     prioFormat,
			keep:     func(_, s string) bool { return !placeholder(s) },
		},
		{
			id:       "env-secret",
			re:       regexp.MustCompile(`\b(?:export[ \t]+)?[A-Z0-9_]*(?:KEY|TOKEN|SECRET|PASSWORD|PASSWD|PASS|PWD|CREDENTIALS?|AUTH)(?:_[A-Z0-9]+)*[ \t]*=[ \t]*(?:"([^"\s]{6,})"|'([^'\s]{6,})'|([^\s'";]{6,}))`),
			keywords: []string{"key", "token", "secret", "pass", "pwd", "credential", "auth"},
			prio:     prioGeneric,
			keep: func(m, s string) bool {
				name, _, _ := strings.Cut(m, "=")
				return !envNameNotSecret().MatchString(strings.TrimSpace(name)+"\n") && secretValue(s)
			},
		},
		{
			// HTTP credentials anywhere, not only in curl commands as
			// gitleaks's curl rules: headers printed by tools and logs.
			id:       "authorization-header",
			re:       regexp.MustCompile(`(?i)\b(?:authorization|proxy-authorization)["']?[ \t]*[:=][ \t]*["']?(?:basic[ \t]+([a-z0-9+/]{8,}={0,2})|(?:bearer|token)[ \t]+([a-z0-9._~+/-]{16,}={0,2}))`),
			keywords: []string{"authorization"},
			prio:     prioFormat,
			keep:     func(_, s string) bool { return !placeholder(s) && strings.ContainsAny(s, "0123456789") },
		},
		{
			// Passwords in ADO.NET and ODBC connection strings.
			id:       "connection-string-password",
			re:       regexp.MustCompile(`(?i)(?:^|[;"'\s])(?:password|pwd)[ \t]*=[ \t]*([^;'"\s]{4,})(?:;|$|["'\s])`),
			keywords: []string{"password", "pwd"},
			prio:     prioGeneric,
			keep: func(m, s string) bool {
				return strings.Contains(m, ";") && !placeholder(s) && !strings.Contains(s, "${") && !strings.HasPrefix(s, "$")
			},
		},
		{
			// The signature of an Azure shared access signature URL.
			id:       "azure-sas-signature",
			re:       regexp.MustCompile(`(?i)[?&]sv=\d{4}-\d{2}-\d{2}&[^\s"'<>]*?\bsig=([A-Za-z0-9%+/=]{16,})`),
			group:    1,
			keywords: []string{"sig="},
			prio:     prioFormat,
		},
		{
			id:    "discord-bot-token",
			re:    regexp.MustCompile(`(?:^|[^A-Za-z0-9_.-])([MNO][A-Za-z0-9_-]{23,27}\.[A-Za-z0-9_-]{6}\.[A-Za-z0-9_-]{27,40})(?:[^A-Za-z0-9_.-]|$)`),
			group: 1,
			prio:  prioFormat,
			keep:  func(_, s string) bool { return strings.ContainsAny(s, "0123456789") },
		},
		{
			id:       "discord-webhook-url",
			re:       regexp.MustCompile(`https://(?:ptb\.|canary\.)?discord(?:app)?\.com/api/webhooks/\d{5,20}/[A-Za-z0-9_-]{40,80}`),
			keywords: []string{"discord"},
			prio:     prioFormat,
		},
		{
			// Telegram bot tokens, also in the API's URLs (/bot<token>/).
			id:    "telegram-bot-token",
			re:    regexp.MustCompile(`(?:^|[^A-Za-z0-9_-]|/bot)(\d{8,10}:AA[A-Za-z0-9_-]{32,33})(?:[^A-Za-z0-9_-]|$)`),
			group: 1,
			prio:  prioFormat,
		},
		{
			// AWS session tokens: longer than the entropy detector judges.
			id:       "aws-session-token",
			re:       regexp.MustCompile(`(?:\b(?:FwoGZXIvYXdz|IQoJb3JpZ2lu)[A-Za-z0-9+/]{80,}={0,2})|(?i:aws_session_token|sessiontoken|aws_security_token)["']?[ \t]*[:=][ \t]*["']?([A-Za-z0-9+/]{80,}={0,2})`),
			keywords: []string{"fwogzxivyxdz", "iqojb3jpz2lu", "sessiontoken", "session_token", "security_token"},
			prio:     prioFormat,
		},
		{
			// Unquoted passwords in YAML, INI, flags and prose:
			// `password: S3cr3t!x`, `--password=...`, "the password is ...".
			id:       "password-unquoted",
			re:       regexp.MustCompile(`(?i)(?:^|[^A-Za-z0-9_])(?:password|passwd|passphrase|pwd)(?:[ \t]*[:=]|[ \t]+(?:is|was|=))[ \t]*([^\s"'` + "`" + `,;]{6,64})(?:[\s,;]|$)`),
			group:    1,
			keywords: []string{"pass", "pwd"},
			prio:     prioGeneric,
			keep: func(m, s string) bool {
				// Prose ("the password is needed:") takes a digit.
				named := m[:strings.LastIndex(m, s)]
				prose := !strings.ContainsAny(named, ":=")
				return secretValue(s) && !strings.HasSuffix(s, ":") && (!prose || strings.ContainsAny(s, "0123456789"))
			},
		},
		{
			// mysql -p<password>, mysqldump too.
			id:       "mysql-password-flag",
			re:       regexp.MustCompile(`\bmysql(?:dump|admin)?\b[^\n]*?[ \t]-p([^\s'"` + "`" + `.-][^\s'"` + "`" + `]{3,})`),
			group:    1,
			keywords: []string{"mysql"},
			prio:     prioGeneric,
			keep:     func(_, s string) bool { return secretValue(s) },
		},
		{
			id:       "password-assignment",
			re:       regexp.MustCompile(`(?i)(?:password|passwd|pwd|secret|client[_-]?secret|api[_-]?key|access[_-]?token|auth[_-]?token)["']?[ \t]*(?::=|=|:)[ \t]*(?:"([^"\s]{6,})"|'([^'\s]{6,})')`),
			keywords: []string{"pass", "pwd", "secret", "key", "token"},
			prio:     prioGeneric,
			keep:     func(_, s string) bool { return secretValue(s) },
		},
	}
}

// envNameNotSecret names variables whose values say where or what a secret
// is, not the secret: TOKEN_FILE, API_KEY_ID, PASSWORD_MIN_LENGTH.
var envNameNotSecret = lazyRegexp(`_(?:FILE|PATH|DIR|URL|URI|ID|TYPE|NAME|LENGTH|LEN|SIZE|METHOD|HEADER|ENDPOINT|REGION|EXPIRY|TTL|TIMEOUT|MODE|ENABLED|COUNT|LIMIT|VERSION|PREFIX|FORMAT|ALGORITHM|HOST|PORT|USER|USERNAME|DOMAIN|ISSUER|AUDIENCE|SCOPE|SCOPES|BACKEND|PROVIDER|STORE)\n`)

var placeholderRe = lazyRegexp(`(?i)^(?:x+|\*+|\.+|-+|_+|0+|changeme|change_me|password\d?|passwd|secret|example|sample|dummy|placeholder|redacted|null|none|nil|undefined|true|false|todo|test|pass|admin|root|user|foo|bar|baz|hunter2|` +
	`your[_-].*|my[_-].*|<.*>|\$.*|\{.*\}|%.*%|\[.*\]|.*example.*|.*redacted.*|.*placeholder.*|.*\*\*\*.*|x{4,}.*|.*xxxx.*)$`)

// lazyRegexp compiles expr at first use, not at every start of the
// program that links this package.
func lazyRegexp(expr string) func() *regexp.Regexp {
	return sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(expr) })
}

// placeholder says whether a value stands for a secret rather than being
// one: "changeme", "<password>", "${DB_PASSWORD}", "****".
func placeholder(s string) bool { return placeholderRe().MatchString(s) }

// secretValue says whether an assigned value looks like a secret: no
// placeholder or reference, not a number, path or call, and with a digit,
// a symbol or mixed case, as passwords and keys have and words lack.
func secretValue(s string) bool {
	if placeholder(s) || strings.ContainsAny(s, "()[]{}<>,") || strings.Contains(s, "${") || strings.Contains(s, "$(") {
		return false
	}
	if strings.HasPrefix(s, "./") || strings.HasPrefix(s, "~/") || strings.HasPrefix(s, "http") ||
		strings.HasPrefix(s, "/") && wordLength(s) >= 3.2 {
		return false // a path or a link, not base64 that starts with a slash
	}
	var digit, upper, lower, symbol bool
	for _, c := range s {
		switch {
		case c >= '0' && c <= '9':
			digit = true
		case c >= 'A' && c <= 'Z':
			upper = true
		case c >= 'a' && c <= 'z':
			lower = true
		case c == '.' || c == '-' || c == '_':
		default:
			symbol = true
		}
	}
	if !upper && !lower && !symbol {
		return false // a number, a version
	}
	if !digit && !symbol && (!(upper && lower) || wordLength(s) >= 4) {
		return false // words: "bearer", "VAULT", "read-only", "encodeUserPassword"
	}
	return true
}

// The entropy detector looks at runs of base64 and base62 characters.
var tokenRe = lazyRegexp(`[A-Za-z0-9+/_\-]{20,}={0,2}`)

// Bounds of the runs the entropy detector judges: shorter ones are rarely
// keys, longer ones are data (images, minified code, payloads).
const (
	minEntropyLen = 20
	maxEntropyLen = 200
)

// highEntropy finds random-looking tokens: mixed case and digits, spread
// evenly (high Shannon entropy), not split into words as identifiers and
// paths are, not hex (hashes, git ids, UUIDs, blob refs), and not the
// base64 of text or of a known file type.
func highEntropy(text string) []span {
	var out []span
	var public [][]int
	if strings.Contains(text, "-----BEGIN ") {
		public = publicPEM().FindAllStringIndex(text, -1)
	}
	for _, m := range tokenRe().FindAllStringIndex(text, -1) {
		tok := text[m[0]:m[1]]
		before := text[max(m[0]-40, 0):m[0]]
		if len(tok) > maxEntropyLen || m[0] > 0 && isTokenByte(text[m[0]-1]) || hashed(text[:m[0]]) || inside(public, m[0]) ||
			idLabel().MatchString(before) || passwordHash().MatchString(before) || ipfsCID(tok) {
			continue
		}
		if randomToken(tok) {
			out = append(out, span{"high-entropy", m[0], m[1], prioEntropy})
		}
	}
	return out
}

// idLabel matches the end of text that names the token after it as an id
// or a digest (x-amz-id-2: ..., "request_id": "...", etag=...): random,
// and no secret. A secret named as one (a key id) has a format of its own.
var idLabel = lazyRegexp(`(?i)(?:\bid|[-_.]id|[-_]id-\d|etag|trace|traceparent|digest|checksum|hash|nonce|fingerprint|revision)["']?[ \t]*[:=][ \t]*["']?$`)

// passwordHash matches the end of text that starts a password hash in
// modular crypt form ($2b$12$..., $argon2id$v=19$...$): a hash, no secret.
var passwordHash = lazyRegexp(`\$(?:2[abxy]?\$\d\d|[156]|argon2(?:id|i|d)\$[^\s$]*\$[^\s$]*|scrypt|pbkdf2[-\w]*\$\d+)\$[^\s$]*\$?$`)

// ipfsCID says whether tok is an IPFS content id (CIDv0): a hash.
func ipfsCID(tok string) bool { return len(tok) == 46 && strings.HasPrefix(tok, "Qm") }

// publicPEM matches PEM blocks of what is public: certificates, public
// keys, signatures. Their base64 looks random and is no secret.
var publicPEM = lazyRegexp(`-----BEGIN (?:CERTIFICATE|TRUSTED CERTIFICATE|PUBLIC KEY|RSA PUBLIC KEY|CERTIFICATE REQUEST|NEW CERTIFICATE REQUEST|X509 CRL|PGP PUBLIC KEY BLOCK|PGP SIGNATURE|PGP MESSAGE|SSH2 PUBLIC KEY)-----[\s\S]*?-----END [A-Z0-9 ]+-----`)

// inside says whether offset i falls in one of the spans.
func inside(spans [][]int, i int) bool {
	for _, sp := range spans {
		if i >= sp[0] && i < sp[1] {
			return true
		}
	}
	return false
}

func isTokenByte(c byte) bool {
	return c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '+' || c == '/' || c == '_' || c == '-'
}

// hashed says whether the text before a token ends in the prefix of a
// digest.
func hashed(before string) bool {
	for _, p := range hashPrefixes {
		if strings.HasSuffix(before, p) {
			return true
		}
	}
	return false
}

// hashPrefixes precede base64 digests that are no secret: Go checksums
// (h1:), subresource integrity and npm lock files (sha512-).
var hashPrefixes = []string{"h1:", "sha1-", "sha256-", "sha384-", "sha512-", "sha256:", "sha512:", "md5:", "md5-", "blake3:"}

// idPrefixes start the ids of model APIs' objects, all over agent
// transcripts: messages, tool calls, requests, runs, files. They are
// random, and no secret.
var idPrefixes = []string{"msg_", "toolu_", "srvtoolu_", "call_", "chatcmpl-", "req_", "resp_", "run_", "thread_", "asst_", "file-", "file_", "batch_", "fc_", "rs_", "evt_", "cus_", "pi_", "ch_", "in_", "sub_", "prod_", "price_", "cs_test_", "cs_live_"}

func randomToken(tok string) bool {
	for _, p := range hashPrefixes {
		if strings.HasPrefix(tok, p) {
			return false
		}
	}
	for _, p := range idPrefixes {
		if strings.HasPrefix(tok, p) {
			return false
		}
	}
	core := strings.TrimRight(tok, "=")
	var upper, lower, digit, hex int
	for i := 0; i < len(core); i++ {
		c := core[i]
		switch {
		case c >= '0' && c <= '9':
			digit++
			hex++
		case c >= 'A' && c <= 'Z':
			upper++
			if c <= 'F' {
				hex++
			}
		case c >= 'a' && c <= 'z':
			lower++
			if c <= 'f' {
				hex++
			}
		case c == '-' || c == '_':
			hex++
		}
	}
	// Random base62 has digits in ~1 of 6 characters; a token without
	// any passes only when it is long and split into fragments.
	if hex == len(core) || upper < 2 || lower < 2 || digit == 0 && (len(core) < 24 || wordLength(core) >= 2.2) {
		return false
	}
	if mixedCase(core)*2 < len(core) || entropy(core) < entropyFloor(len(core)) {
		return false
	}
	if wordLength(core) >= 3.2 {
		return false
	}
	return !encodedData(core)
}

// mixedCase counts the characters of tok in parts (between - _ / +) that
// hold both upper and lower case letters: most of a random token, little
// of dates, UUIDs and names joined by dashes.
func mixedCase(tok string) int {
	n := 0
	for part := range strings.FieldsFuncSeq(tok, func(r rune) bool { return r == '-' || r == '_' || r == '/' || r == '+' }) {
		if strings.ContainsAny(part, upperCase) && strings.ContainsAny(part, lowerCase) {
			n += len(part)
		}
	}
	return n
}

const (
	upperCase = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
	lowerCase = "abcdefghijklmnopqrstuvwxyz"
)

// entropyFloor is the least entropy of a random token of n characters:
// about 0.4 bits under the 1st percentile of random base62 strings of
// that length (3.68 bits at 20 characters, 4.44 at 40, 4.85 at 60).
func entropyFloor(n int) float64 {
	return min(math.Log2(float64(n))-1.1, 4.5)
}

// wordLength is the mean length of the words a token splits into at case
// changes, digits and punctuation: identifiers and paths are made of words
// (5-8 characters), random tokens of fragments of one or two.
func wordLength(s string) float64 {
	words, chars := 0, 0
	prev := byte(0)
	for i := 0; i < len(s); i++ {
		c := s[i]
		cl := class(c)
		if cl == 0 {
			prev = 0
			continue
		}
		chars++
		pc := class(prev)
		// A new word starts after punctuation, at a change between
		// letters and digits, and at an upper case letter after a lower
		// case one (camelCase); but digits that end a word (Int64/,
		// sha256-) belong to it.
		newWord := prev == 0 || pc != cl && !(pc == 'A' && cl == 'a') && !(cl == '0' && digitsEndWord(s[i:]))
		// The last capital of a run before a lower case letter starts a
		// word: HTTPServer is HTTP and Server.
		if !newWord && cl == 'A' && pc == 'A' && i+1 < len(s) && class(s[i+1]) == 'a' {
			newWord = true
		}
		if newWord {
			words++
		}
		prev = c
	}
	if words == 0 {
		return 0
	}
	return float64(chars) / float64(words)
}

// digitsEndWord says whether the digits s starts with are followed by
// anything but a letter.
func digitsEndWord(s string) bool {
	i := 0
	for i < len(s) && class(s[i]) == '0' {
		i++
	}
	return i == len(s) || class(s[i]) != 'a' && class(s[i]) != 'A'
}

func class(c byte) byte {
	switch {
	case c >= 'a' && c <= 'z':
		return 'a'
	case c >= 'A' && c <= 'Z':
		return 'A'
	case c >= '0' && c <= '9':
		return '0'
	}
	return 0
}

// encodedData says whether tok is the base64 of text or of a file of a
// known type, which a key is not.
func encodedData(tok string) bool {
	var b []byte
	for _, enc := range []*base64.Encoding{base64.RawStdEncoding, base64.RawURLEncoding} {
		if d, err := enc.DecodeString(tok); err == nil {
			b = d
			break
		}
		if n := len(tok) / 4 * 4; n >= 16 {
			// A token cut at an odd length: decode what fits.
			if d, err := enc.DecodeString(tok[:n]); err == nil {
				b = d
				break
			}
		}
	}
	if len(b) == 0 {
		return false
	}
	for _, magic := range []string{"\x89PNG", "\xff\xd8\xff", "GIF8", "RIFF", "%PDF", "\x1f\x8b", "PK\x03\x04", "\x28\xb5\x2f\xfd"} {
		if strings.HasPrefix(string(b), magic) {
			return true
		}
	}
	// An SSH public key: a length-prefixed algorithm name first.
	if len(b) > 8 && b[0] == 0 && b[1] == 0 && b[2] == 0 && int(b[3]) < len(b)-4 {
		name := string(b[4 : 4+b[3]])
		if strings.HasPrefix(name, "ssh-") || strings.HasPrefix(name, "ecdsa-") || strings.HasPrefix(name, "sk-") {
			return true
		}
	}
	if !utf8.Valid(b) {
		// Cut inside a rune at the end is fine; elsewhere it is binary.
		for len(b) > 0 && !utf8.Valid(b) {
			b = b[:len(b)-1]
		}
		if len(b) < 8 {
			return false
		}
	}
	printable := 0
	for _, r := range string(b) {
		if r >= 0x20 && r != 0x7f || r == '\n' || r == '\t' || r == '\r' {
			printable++
		}
	}
	return printable >= utf8.RuneCount(b)*95/100
}
