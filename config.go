package trove

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/trovekit/trove/backend"
	"github.com/trovekit/trove/redact"
)

// ConfigFile is the store's config, at its root.
const ConfigFile = "config.json"

// Config is what a store says of itself in config.json: the user's
// redaction rules and the retention policy `trove gc` applies. A store
// without the file has the zero Config.
type Config struct {
	Redact    RedactConfig     `json:"redact,omitzero"`
	Retention *RetentionConfig `json:"retention,omitempty"`
}

// RedactConfig adds to the built-in secret detectors.
type RedactConfig struct {
	Rules []redact.Rule `json:"rules,omitempty"` // detectors of the user's own
	Allow []string      `json:"allow,omitempty"` // regexps of values never redacted
	// NoEntropy turns the high-entropy detector off.
	NoEntropy bool `json:"noEntropy,omitempty"`
}

// RetentionConfig is a retention policy as written in config.json:
// durations as "720h", "30d", "2w" or "1w3d12h".
type RetentionConfig struct {
	KeepWithin string `json:"keepWithin,omitempty"`
	KeepLast   int    `json:"keepLast,omitempty"`
}

// ErrBadConfig is wrapped by errors about a config.json that does not
// parse or holds bad values.
var ErrBadConfig = fmt.Errorf("trove: bad %s: %w", ConfigFile, fs.ErrInvalid)

// Config reads the store's config.json; a store without one has the zero
// Config.
func (s *Store) Config(ctx context.Context) (Config, error) { return ReadConfig(ctx, s.st) }

// ReadConfig reads the config.json of the store in st.
func ReadConfig(ctx context.Context, st backend.Storage) (Config, error) {
	var c Config
	b, err := st.ReadFile(ctx, ConfigFile)
	if errors.Is(err, fs.ErrNotExist) {
		return c, nil
	}
	if err != nil {
		return c, err
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&c); err != nil {
		return c, fmt.Errorf("%w: %v", ErrBadConfig, err)
	}
	if c.Retention != nil {
		if _, err := c.Retention.Policy(); err != nil {
			return c, err
		}
	}
	return c, nil
}

// SetConfig writes the store's config.json (atomically).
func (s *Store) SetConfig(ctx context.Context, c Config) error {
	b, err := json.MarshalIndent(c, "", "  ")
	if err != nil {
		return err
	}
	return s.st.WriteFile(ctx, ConfigFile, append(b, '\n'))
}

// Redactor builds the secret detector of this store: the built-in
// detectors and the rules of its config.
func (s *Store) Redactor(ctx context.Context) (*redact.Detector, error) {
	c, err := s.Config(ctx)
	if err != nil {
		return nil, err
	}
	return c.Redact.Detector()
}

// Detector builds the built-in detectors with these rules.
func (c RedactConfig) Detector() (*redact.Detector, error) {
	opts := []redact.Option{redact.WithRules(c.Rules...), redact.WithAllow(c.Allow...)}
	if c.NoEntropy {
		opts = append(opts, redact.WithoutEntropy())
	}
	d, err := redact.New(opts...)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrBadConfig, err)
	}
	return d, nil
}

// Policy is the retention policy the config describes.
func (r RetentionConfig) Policy() (Policy, error) {
	p := Policy{KeepLast: r.KeepLast}
	if r.KeepWithin != "" {
		d, err := ParseDuration(r.KeepWithin)
		if err != nil {
			return p, fmt.Errorf("%w: retention.keepWithin: %v", ErrBadConfig, err)
		}
		p.KeepWithin = d
	}
	if p.KeepLast < 0 {
		return p, fmt.Errorf("%w: retention.keepLast %d < 0", ErrBadConfig, p.KeepLast)
	}
	if p.KeepLast == 0 && p.KeepWithin == 0 {
		return p, fmt.Errorf("%w: retention keeps nothing: set keepWithin or keepLast", ErrBadConfig)
	}
	return p, nil
}

// daysRe is compiled at first use: every program linking trove would pay
// for it at start otherwise.
var daysRe = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^(?:(\d+)w)?(?:(\d+)d)?(.*)$`) })

// ParseDuration reads a Go duration ("36h", "90m") with weeks and days
// ahead of it as restic writes them: "30d", "2w", "1w3d12h".
func ParseDuration(s string) (time.Duration, error) {
	m := daysRe().FindStringSubmatch(strings.TrimSpace(s))
	if m == nil || s == "" {
		return 0, fmt.Errorf("duration %q: %w", s, fs.ErrInvalid)
	}
	var d time.Duration
	for i, unit := range []time.Duration{7 * 24 * time.Hour, 24 * time.Hour} {
		if m[i+1] == "" {
			continue
		}
		n, err := strconv.Atoi(m[i+1])
		if err != nil || n > 100000 {
			return 0, fmt.Errorf("duration %q: %w", s, fs.ErrInvalid)
		}
		d += time.Duration(n) * unit
	}
	if m[3] != "" {
		rest, err := time.ParseDuration(m[3])
		if err != nil {
			return 0, fmt.Errorf("duration %q: %w", s, fs.ErrInvalid)
		}
		d += rest
	}
	if d < 0 {
		return 0, fmt.Errorf("duration %q < 0: %w", s, fs.ErrInvalid)
	}
	return d, nil
}
