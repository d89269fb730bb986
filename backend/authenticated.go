package backend

// Authenticated is implemented by a Storage that authenticates every
// file's bytes and binds them to the file's name (backend/crypt): a read
// returns bytes written under that name by a holder of its key, or fails.
// A layer that checks what it reads against a digest in the name (cas) may
// leave that check to such a storage on its hot path. Decorators do not
// pass it on: they may change the bytes.
type Authenticated interface {
	Storage
	// AuthenticatesContent reports whether reads are authenticated.
	AuthenticatesContent() bool
}

// AuthenticatesContent says whether s authenticates its reads (Authenticated).
func AuthenticatesContent(s Storage) bool {
	a, ok := s.(Authenticated)
	return ok && a.AuthenticatesContent()
}
