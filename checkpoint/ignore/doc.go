// Package ignore is the gitignore engine of checkpoint's tree snapshots:
// patterns compiled as git reads them (anchoring, "!" negation, "dir/",
// "**", character classes, escapes), nested .gitignore files applied from
// the root down, and a fast path for sets without negation, where a path is
// ignored when any rule matches it. TestIgnoreMatchesGit holds it to
// `git check-ignore` on random trees.
//
// Imports: the standard library.
package ignore
