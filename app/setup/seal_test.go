package setup

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

func TestSealedValuesOpenOnlyWithTheirKeyAndLabel(t *testing.T) {
	k1, _ := NewKeyring(bytes.Repeat([]byte{1}, 32), "")
	k2, _ := NewKeyring(bytes.Repeat([]byte{2}, 32), "")
	a1, err := k1.cipher(false)
	if err != nil {
		t.Fatal(err)
	}
	a2, _ := k2.cipher(false)
	sealed, err := seal(a1, []byte("-----BEGIN RSA PRIVATE KEY-----"), label("private_key", 7))
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(sealed, []byte("PRIVATE KEY")) {
		t.Fatalf("sealed value holds the plaintext: %q", sealed)
	}
	if got, err := open(a1, sealed, label("private_key", 7)); err != nil || string(got) != "-----BEGIN RSA PRIVATE KEY-----" {
		t.Errorf("open with the same key and label = %q, %v", got, err)
	}
	cases := []struct {
		name string
		open func() error
	}{
		{"another key", func() error { _, err := open(a2, sealed, label("private_key", 7)); return err }},
		{"copied to another column", func() error { _, err := open(a1, sealed, label("webhook_secret", 7)); return err }},
		{"copied to another App's row", func() error { _, err := open(a1, sealed, label("private_key", 8)); return err }},
		{"truncated", func() error { _, err := open(a1, sealed[:5], label("private_key", 7)); return err }},
	}
	for _, c := range cases {
		if err := c.open(); err == nil {
			t.Errorf("%s: opened", c.name)
		}
	}
}

func TestTheKeyFileIsMadeOnceAndPrivate(t *testing.T) {
	file := filepath.Join(t.TempDir(), KeyFileName)
	k, err := NewKeyring(nil, file)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := k.cipher(false); err == nil {
		t.Fatal("reading a missing key file without create succeeded; it must not make a key only to read")
	}
	if _, err := os.Stat(file); !os.IsNotExist(err) {
		t.Fatalf("a read made the key file: %v", err)
	}
	a, err := k.cipher(true)
	if err != nil {
		t.Fatal(err)
	}
	info, err := os.Stat(file)
	if err != nil {
		t.Fatal(err)
	}
	if info.Mode().Perm() != 0o600 {
		t.Errorf("key file mode = %v, want 0600", info.Mode().Perm())
	}
	sealed, _ := seal(a, []byte("secret"), "l")
	again, _ := NewKeyring(nil, file) // a restart reads the same key
	b, err := again.cipher(true)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := open(b, sealed, "l"); err != nil || string(got) != "secret" {
		t.Errorf("after a restart: open = %q, %v", got, err)
	}
}

func TestKeyFileLivesBesideTheSQLiteDatabase(t *testing.T) {
	cases := []struct{ name, database, want string }{
		{"relative SQLite file", "sqlite://data/ripcord.db", filepath.Join("data", KeyFileName)},
		{"absolute SQLite file", "sqlite:///var/lib/ripcord/ripcord.db", filepath.Join("/var/lib/ripcord", KeyFileName)},
		{"PostgreSQL: the working directory", "postgres://u@h/db", KeyFileName},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := KeyFile(c.database); got != c.want {
				t.Errorf("KeyFile(%q) = %q, want %q", c.database, got, c.want)
			}
		})
	}
}

func TestASecretsKeyOfTheWrongSizeIsRefused(t *testing.T) {
	if _, err := NewKeyring([]byte("short"), ""); err == nil {
		t.Error("a 5-byte key was accepted for AES-256")
	}
}
