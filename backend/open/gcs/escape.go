package gcs

import (
	"fmt"
	"strconv"
	"strings"
)

// escapeKey names objects as gcsblob does, so that either driver reads what
// the other wrote: "\n", "\r", the "/" of "../", and the first "_" of any
// text that reads as an escape become "__0x<hex>__".
func escapeKey(key string) string {
	if !strings.ContainsAny(key, "\n\r") && !strings.Contains(key, "../") && !strings.Contains(key, "__0x") {
		return key
	}
	rs := []rune(key)
	var sb strings.Builder
	for i, r := range rs {
		dotdot := r == '/' && i >= 2 && rs[i-1] == '.' && rs[i-2] == '.'
		if _, _, seq := escapeAt(rs, i); r == '\n' || r == '\r' || dotdot || seq {
			fmt.Fprintf(&sb, "__%#x__", r)
		} else {
			sb.WriteRune(r)
		}
	}
	return sb.String()
}

// unescapeKey undoes escapeKey.
func unescapeKey(name string) string {
	if !strings.Contains(name, "__0x") {
		return name
	}
	rs := []rune(name)
	var sb strings.Builder
	for i := 0; i < len(rs); i++ {
		if r, end, ok := escapeAt(rs, i); ok {
			sb.WriteRune(r)
			i = end
			continue
		}
		sb.WriteRune(rs[i])
	}
	return sb.String()
}

// escapeAt parses "__0x<hex>__" at rs[i]: the rune it stands for and the
// index of its last "_".
func escapeAt(rs []rune, i int) (r rune, end int, ok bool) {
	const open = "__0x"
	if i+len(open) > len(rs) || string(rs[i:i+len(open)]) != open {
		return 0, 0, false
	}
	j := i + len(open)
	k := j
	for k < len(rs) && rs[k] != '_' {
		k++
	}
	if k+1 >= len(rs) || rs[k+1] != '_' {
		return 0, 0, false
	}
	v, err := strconv.ParseInt(string(rs[j:k]), 16, 32)
	if err != nil {
		return 0, 0, false
	}
	return rune(v), k + 1, true
}
