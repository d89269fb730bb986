// Package jsonscan reads and edits JSON text as bytes, where trove must keep
// values as written and encoding/json would decode and re-encode them: it
// splits objects and arrays into raw members without allocating, checks a
// line is one valid JSON value in one pass, edits an object's members in
// place, and renders values the way the JavaScript reference does
// (truthiness, template strings, UTF-16 lengths, UTF-8 decoding with one
// U+FFFD per maximal ill-formed subpart). Session trees, their listing
// index and the exporters share it.
//
// Imports: the standard library.
package jsonscan
