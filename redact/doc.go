// Package redact finds secrets in text and replaces them: credentials of
// known formats (the rule set of gitleaks: cloud keys,
// GitHub, GitLab, Slack, Stripe, OpenAI and Anthropic tokens, private keys,
// JWTs and some 200 more), database and other URLs with a password, .env
// assignments of secret-named variables, high-entropy strings, and rules of
// the user's own. It works on plain text and on JSON, where it rewrites
// string values only, so what it writes still parses.
//
// gitleaks's rules are a snapshot (gitleaks.json) of what gitleaks's config
// code makes of its default set, held to the gitleaks of go.mod by a test:
// linking that code and viper cost every trove process their package
// initialisation.
//
// Imports: the standard library, internal/jsonscan and
// github.com/BobuSumisu/aho-corasick (the rules' keyword filter and
// gitleaks's stop words).
package redact
