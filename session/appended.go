package session

import (
	"context"
	"encoding/json"

	"github.com/trovekit/trove/backend"
	"github.com/trovekit/trove/session/tree"
)

// MetadataAppended updates the sidecar of the session file name after
// lines (whole entries) were appended to it by a writer other than a
// Handle, such as an import following its source: the sidecar's counts
// take the new entries without the file being read again, then update
// runs as in UpdateMetadata. A session without a readable sidecar gets
// UpdateMetadata's.
func (s *Store) MetadataAppended(ctx context.Context, name string, lines []byte, update func(*Metadata)) error {
	wl, err := s.lock(ctx, name, false)
	if err != nil {
		return err
	}
	var m Metadata
	data, err := s.st.ReadFile(ctx, backend.Join(SidecarDir(name), MetaFile))
	if err != nil || json.Unmarshal(data, &m) != nil || m.ID == "" {
		wl.unlock()
		return s.UpdateMetadata(ctx, name, update)
	}
	defer wl.unlock()
	for _, e := range tree.Lines(lines) {
		m.take(e)
	}
	update(&m)
	m.Path = name
	// Exact only if the sidecar was: a lagging one stays found out.
	size := int64(0)
	if m.FileSize > 0 {
		size = m.FileSize + int64(len(lines))
	}
	if err := s.writeMeta(ctx, m, size, false); err != nil {
		return err
	}
	s.forget(ctx, name)
	return nil
}
