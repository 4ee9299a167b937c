package setup

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/ripcord/ripcord/internal/store"
)

// KeyFileName is the key file made when the secrets_key setting is empty.
const KeyFileName = "ripcord-secrets.key"

// keySize is AES-256's.
const keySize = 32

// KeyFile is where the key lives when secrets_key is empty: beside the
// SQLite database, or in the working directory for PostgreSQL (where every
// replica must then share it, so secrets_key is the better choice there).
func KeyFile(database string) string {
	if path, err := store.SQLitePath(database); err == nil && strings.HasPrefix(database, "sqlite:") {
		return filepath.Join(filepath.Dir(path), KeyFileName)
	}
	return KeyFileName
}

// Keyring holds the key that seals the stored credentials: the secrets_key
// setting, or the key file, read (or made) on first use so a server that
// never registers an App never writes one.
type Keyring struct {
	file string

	mu   sync.Mutex
	aead cipher.AEAD
}

// NewKeyring uses key (32 bytes) when set, and the key file otherwise.
func NewKeyring(key []byte, file string) (*Keyring, error) {
	k := &Keyring{}
	if key == nil {
		k.file = file
	} else {
		aead, err := newAEAD(key)
		if err != nil {
			return nil, fmt.Errorf("secrets_key: %w", err)
		}
		k.aead = aead
	}
	return k, nil
}

// Source names where the key comes from, for logs and error messages.
func (k *Keyring) Source() string {
	if k.file == "" {
		return "the secrets_key setting"
	}
	return "the key file " + k.file + " (or the secrets_key setting)"
}

// Ready makes sure the key can seal: it reads the key file, or makes it
// when there is none. The set-up callback asks before it spends GitHub's
// one-time code, so that a key that cannot be had (a directory ripcord may
// not write to, a damaged file) stops the registration while a reload can
// still finish it.
func (k *Keyring) Ready() error {
	if _, err := k.cipher(true); err != nil {
		return fmt.Errorf("the secrets key (%s): %w", k.Source(), err)
	}
	return nil
}

// cipher returns the AEAD, reading the key file, or making it when create
// is set and there is none.
func (k *Keyring) cipher(create bool) (cipher.AEAD, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.aead != nil {
		return k.aead, nil
	}
	key, err := readKeyFile(k.file)
	if errors.Is(err, fs.ErrNotExist) && create {
		key, err = makeKeyFile(k.file)
	}
	if err != nil {
		return nil, err
	}
	if k.aead, err = newAEAD(key); err != nil {
		return nil, fmt.Errorf("key file %s: %w", k.file, err)
	}
	return k.aead, nil
}

func readKeyFile(file string) ([]byte, error) {
	b, err := os.ReadFile(file)
	if err != nil {
		return nil, fmt.Errorf("read the secrets key file: %w", err)
	}
	key, err := base64.StdEncoding.DecodeString(strings.TrimSpace(string(b)))
	if err != nil {
		return nil, fmt.Errorf("key file %s: not base64: %w", file, err)
	}
	return key, nil
}

// makeKeyFile writes a new random key readable by this user only. O_EXCL:
// when two processes race, the loser reads the winner's key.
func makeKeyFile(file string) ([]byte, error) {
	key := make([]byte, keySize)
	if _, err := rand.Read(key); err != nil {
		return nil, fmt.Errorf("make a secrets key: %w", err)
	}
	f, err := os.OpenFile(file, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if errors.Is(err, fs.ErrExist) {
		return readKeyFile(file)
	}
	if err != nil {
		return nil, fmt.Errorf("make the secrets key file: %w", err)
	}
	_, err = f.WriteString(base64.StdEncoding.EncodeToString(key) + "\n")
	if err = errors.Join(err, f.Sync(), f.Close()); err != nil {
		return nil, fmt.Errorf("write the secrets key file %s: %w", file, err)
	}
	return key, nil
}

func newAEAD(key []byte) (cipher.AEAD, error) {
	if len(key) != keySize {
		return nil, fmt.Errorf("the key is %d bytes, want %d", len(key), keySize)
	}
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, err
	}
	return cipher.NewGCM(block)
}

// seal encrypts plaintext as nonce || ciphertext. label (column and App id)
// is authenticated, so a sealed value copied to another column or row does
// not open.
func seal(aead cipher.AEAD, plaintext []byte, label string) ([]byte, error) {
	nonce := make([]byte, aead.NonceSize(), aead.NonceSize()+len(plaintext)+aead.Overhead())
	if _, err := rand.Read(nonce); err != nil {
		return nil, fmt.Errorf("make a nonce: %w", err)
	}
	return aead.Seal(nonce, nonce, plaintext, []byte(label)), nil
}

func open(aead cipher.AEAD, sealed []byte, label string) ([]byte, error) {
	n := aead.NonceSize()
	if len(sealed) < n+aead.Overhead() {
		return nil, fmt.Errorf("%s: sealed value too short", label)
	}
	plain, err := aead.Open(nil, sealed[:n], sealed[n:], []byte(label))
	if err != nil {
		return nil, fmt.Errorf("%s: cannot decrypt (a different secrets key?): %w", label, err)
	}
	return plain, nil
}
