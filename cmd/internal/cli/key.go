package cli

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"golang.org/x/term"

	"github.com/trovekit/trove/backend"
	"github.com/trovekit/trove/backend/crypt"
)

// Where an encrypted store's passphrase comes from, first found first:
// --password-file, $TROVE_PASSWORD, the user's key file (for hooks and
// services; readable by the user only), a prompt on a terminal.
const (
	envPassword    = "TROVE_PASSWORD"
	envNewPassword = "TROVE_NEW_PASSWORD"
	envDstPassword = "TROVE_DST_PASSWORD"
)

func addCryptFlags(pf *pflag.FlagSet, a *app) {
	pf.StringVar(&a.passwordFile, "password-file", "", "read an encrypted store's passphrase from this file (else $"+envPassword+", the key file in the config directory, a prompt)")
}

// keyFilePath is the user's key file: <config dir>/trove/key.
func keyFilePath() (string, error) {
	dir, err := os.UserConfigDir()
	if err != nil {
		return "", err
	}
	return filepath.Join(dir, "trove", "key"), nil
}

// readSecretFile reads a passphrase or key file, without its final newline.
func readSecretFile(path string) ([]byte, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	b = bytes.TrimRight(b, "\r\n")
	if len(b) == 0 {
		return nil, fmt.Errorf("%s: empty passphrase: %w", path, fs.ErrInvalid)
	}
	return b, nil
}

// secret finds a passphrase: file, then env, then (useKeyFile) the key
// file, then a prompt (twice when confirm). ok is false when none was found.
func (a *app) secret(file, env, prompt string, useKeyFile, confirm bool) ([]byte, bool, error) {
	if file != "" {
		b, err := readSecretFile(file)
		return b, err == nil, err
	}
	if v := os.Getenv(env); v != "" {
		return []byte(v), true, nil
	}
	if useKeyFile {
		if b, ok, err := readKeyFile(); ok || err != nil {
			return b, ok, err
		}
	}
	f, ok := a.stdin.(*os.File)
	if !ok || !term.IsTerminal(int(f.Fd())) {
		return nil, false, nil
	}
	read := func(p string) ([]byte, error) {
		fmt.Fprint(a.stderr, p)
		b, err := term.ReadPassword(int(f.Fd()))
		fmt.Fprintln(a.stderr)
		return b, err
	}
	b, err := read(prompt)
	if err != nil || len(b) == 0 {
		return nil, false, err
	}
	if confirm {
		again, err := read("enter it again: ")
		if err != nil {
			return nil, false, err
		}
		if !bytes.Equal(b, again) {
			return nil, false, fmt.Errorf("the passphrases differ: %w", fs.ErrInvalid)
		}
	}
	return b, true, nil
}

// readKeyFile reads the user's key file; ok is false when there is none.
// One that others may read is refused.
func readKeyFile() (b []byte, ok bool, err error) {
	p, err := keyFilePath()
	if err != nil {
		return nil, false, nil
	}
	fi, err := os.Stat(p)
	if err != nil {
		return nil, false, nil
	}
	if fi.Mode().Perm()&0o077 != 0 {
		return nil, false, fmt.Errorf("key file %s is readable by others (mode %04o; chmod 600 it): %w", p, fi.Mode().Perm(), fs.ErrPermission)
	}
	b, err = readSecretFile(p)
	return b, err == nil, err
}

// storeSecret is the passphrase of the --store, or an error saying how to
// give one.
func (a *app) storeSecret() ([]byte, error) {
	b, ok, err := a.secret(a.passwordFile, envPassword, "passphrase for "+a.storeName()+": ", true, false)
	if err == nil && !ok {
		err = fmt.Errorf("%w: set $%s, pass --password-file, or write the key file %s", crypt.ErrEncrypted, envPassword, keyFileHint())
	}
	return b, err
}

func keyFileHint() string {
	p, err := keyFilePath()
	if err != nil {
		return "(no config directory)"
	}
	return p
}

// unlockStore returns st, or the encrypted storage over it when st holds
// an encrypted store. A passphrase given on purpose (--password-file) for
// a plain store is an error.
func (a *app) unlockStore(ctx context.Context, st backend.Storage) (backend.Storage, error) {
	enc, err := crypt.IsEncrypted(ctx, st)
	if err != nil {
		return nil, err
	}
	if !enc {
		if a.passwordFile != "" {
			return nil, fmt.Errorf("--password-file: %s: %w", a.storeName(), crypt.ErrNotEncrypted)
		}
		return st, nil
	}
	secret, err := a.storeSecret()
	if err != nil {
		return nil, err
	}
	return crypt.Open(ctx, st, secret)
}

// rawStore opens the --store without unlocking it.
func (a *app) rawStore(ctx context.Context) (backend.Storage, error) {
	if a.st != nil {
		if cs, ok := a.st.(*crypt.Storage); ok {
			return cs.Inner(), nil
		}
		return a.st, nil
	}
	a.locked = true
	defer func() { a.locked = false }()
	return a.store(ctx)
}

// rawStoreSecret opens the --store without unlocking it and finds its
// passphrase, for the key commands.
func (a *app) rawStoreSecret(ctx context.Context) (backend.Storage, []byte, error) {
	st, err := a.rawStore(ctx)
	if err != nil {
		return nil, nil, err
	}
	secret, err := a.storeSecret()
	return st, secret, err
}

func newKeyCmd(a *app) *cobra.Command {
	cmd := &cobra.Command{Use: "key", Short: "List, add, change and remove the passphrases of an encrypted store"}
	var newFile string
	var genKeyFile bool
	newSecret := func() ([]byte, error) {
		b, ok, err := a.secret(newFile, envNewPassword, "new passphrase: ", false, true)
		if err == nil && !ok {
			err = usageErr("a new passphrase is needed: $%s, --new-password-file or a terminal", envNewPassword)
		}
		return b, err
	}
	list := &cobra.Command{
		Use: "list", Short: "List the store's keys (no passphrase needed)", Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			st, err := a.rawStore(cmd.Context())
			if err != nil {
				return err
			}
			keys, err := crypt.ListKeys(cmd.Context(), st)
			if err != nil {
				return err
			}
			if len(keys) == 0 {
				return fmt.Errorf("%s: %w", a.storeName(), crypt.ErrNotEncrypted)
			}
			if a.jsonOut {
				return a.printJSON(keys)
			}
			for _, k := range keys {
				a.printf("%s  %s  %s\n", k.ID, k.KDF, k.Created.Format("2006-01-02 15:04:05Z"))
			}
			return nil
		},
	}
	add := &cobra.Command{
		Use: "add", Short: "Add a passphrase, or with --generate-key-file a key file for hooks and services", Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			st, secret, err := a.rawStoreSecret(ctx)
			if err != nil {
				return err
			}
			var ns []byte
			var path string
			var opts []crypt.Option
			if genKeyFile {
				if path, ns, err = writeKeyFile(); err != nil {
					return err
				}
				// 256 random bits: HKDF, so that a hook opens the
				// store in microseconds, not scrypt's 80 ms.
				opts = append(opts, crypt.RandomSecret())
			} else if ns, err = newSecret(); err != nil {
				return err
			}
			id, err := crypt.AddKey(ctx, st, secret, ns, opts...)
			if err != nil {
				if path != "" {
					os.Remove(path)
				}
				return err
			}
			if path != "" {
				a.printf("added key %s, in %s (mode 0600)\n", id, path)
			} else {
				a.printf("added key %s\n", id)
			}
			return nil
		},
	}
	add.Flags().StringVar(&newFile, "new-password-file", "", "read the new passphrase from this file (else $"+envNewPassword+" or a prompt)")
	add.Flags().BoolVar(&genKeyFile, "generate-key-file", false, "write a random key to the user's key file (0600) and add it")
	passwd := &cobra.Command{
		Use: "passwd", Short: "Change the passphrase that opens the store (only its key object is rewritten)", Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			st, secret, err := a.rawStoreSecret(ctx)
			if err != nil {
				return err
			}
			ns, err := newSecret()
			if err != nil {
				return err
			}
			id, err := crypt.ChangeKey(ctx, st, secret, ns)
			if err != nil {
				return err
			}
			a.printf("passphrase changed (key %s)\n", id)
			return nil
		},
	}
	passwd.Flags().StringVar(&newFile, "new-password-file", "", "read the new passphrase from this file (else $"+envNewPassword+" or a prompt)")
	remove := &cobra.Command{
		Use: "remove ID", Short: "Remove a key (never the last)", Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			st, secret, err := a.rawStoreSecret(ctx)
			if err != nil {
				return err
			}
			if err := crypt.RemoveKey(ctx, st, secret, args[0]); err != nil {
				return err
			}
			a.printf("removed key %s\n", args[0])
			return nil
		},
	}
	cmd.AddCommand(list, add, passwd, remove)
	return cmd
}

// writeKeyFile writes a random key to the user's key file, which must not
// exist, readable by the user only.
func writeKeyFile() (string, []byte, error) {
	p, err := keyFilePath()
	if err != nil {
		return "", nil, err
	}
	if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
		return "", nil, err
	}
	var k [32]byte
	rand.Read(k[:])
	secret := []byte(hex.EncodeToString(k[:]))
	f, err := os.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		if errors.Is(err, fs.ErrExist) {
			err = fmt.Errorf("key file %s exists (remove it, or its key, first): %w", p, err)
		}
		return "", nil, err
	}
	_, err = f.Write(append(secret, '\n'))
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(p)
		return "", nil, err
	}
	return p, secret, nil
}

// unlockMirrorSource opens an encrypted mirror source with its passphrase
// ($TROVE_PASSWORD, --password-file, the key file, a prompt).
func (a *app) unlockMirrorSource(ctx context.Context, src backend.Storage) (backend.Storage, error) {
	enc, err := crypt.IsEncrypted(ctx, src)
	if err != nil || !enc {
		return src, err
	}
	secret, err := a.storeSecret()
	if err != nil {
		return nil, fmt.Errorf("mirror source: %w", err)
	}
	cs, err := crypt.Open(ctx, src, secret)
	if err != nil {
		return nil, fmt.Errorf("mirror source: %w", err)
	}
	return cs, nil
}

// encryptedDestination opens dst as an encrypted store with its passphrase,
// making it one when it is empty (not in a dry run, which writes nothing).
func (a *app) encryptedDestination(ctx context.Context, dst backend.Storage, file string, dry bool) (backend.Storage, error) {
	secret, ok, err := a.secret(file, envDstPassword, "passphrase for the destination: ", false, true)
	if err != nil {
		return nil, fmt.Errorf("mirror destination: %w", err)
	}
	if !ok {
		return nil, usageErr("mirror --encrypt needs the destination's passphrase: $%s, --dst-password-file or a terminal", envDstPassword)
	}
	cs, err := crypt.Open(ctx, dst, secret)
	switch {
	case err == nil:
		return cs, nil
	case !errors.Is(err, crypt.ErrNotEncrypted):
		return nil, fmt.Errorf("mirror destination: %w", err)
	case dry:
		key := make([]byte, crypt.KeySize)
		rand.Read(key)
		return crypt.New(dst, key)
	}
	cs, err = crypt.Init(ctx, dst, secret)
	if err != nil {
		return nil, fmt.Errorf("mirror destination: %w", err)
	}
	return cs, nil
}
