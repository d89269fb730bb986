package checkpoint

import (
	"crypto/sha256"
	"encoding/hex"
)

func sumRef(data []byte) string {
	h := sha256.Sum256(data)
	return "blob:sha256:" + hex.EncodeToString(h[:])
}
