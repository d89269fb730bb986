// Package redact finds secrets in text and replaces them: credentials of
// known formats (the rule set of gitleaks, taken as a library: cloud keys,
// GitHub, GitLab, Slack, Stripe, OpenAI and Anthropic tokens, private keys,
// JWTs and some 200 more), database and other URLs with a password, .env
// assignments of secret-named variables, high-entropy strings, and rules of
// the user's own. It works on plain text and on JSON, where it rewrites
// string values only, so what it writes still parses.
//
// Imports: the standard library, internal/jsonscan,
// github.com/zricethezav/gitleaks/v8/config (the rules),
// github.com/spf13/viper (which reads them), and
// github.com/BobuSumisu/aho-corasick (the rules' keyword filter).
package redact
