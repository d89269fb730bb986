package importer

// The formats Import reads, by the names trove uses (docs/formats.md):
// "claude" (Claude Code projects), "codex" (Codex rollouts), "pi" and
// "omp" (pi session files, any version; oh-my-pi's), "agent-jsonl" (the
// snake_case agent JSONL dialect), and "auto" to tell from the lines.

// CanonicalFormat is the name in use for a format name or an old spelling
// of one ("spec002" is "agent-jsonl"), and whether it names a format
// Import reads ("" and "auto" do: told from each file's lines).
func CanonicalFormat(name string) (string, bool) {
	switch name {
	case "spec002": // the spec's number, the name before trove had its own
		return "agent-jsonl", true
	case "", "auto", "claude", "codex", "pi", "omp", "agent-jsonl":
		return name, true
	}
	return name, false
}

// idKind is the format's part of the key a session id is derived from:
// agent JSONL keeps its old spelling, so a source imported before the
// rename keeps its session.
func idKind(format string) string {
	if format == "agent-jsonl" {
		return "spec002"
	}
	return format
}
