package testdb

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"net/url"
	"os"
	"os/user"
	"path/filepath"
	"syscall"
	"testing"
)

// smallDiskSize is the size of a SmallDisk: room for a migrated ripcord
// database (about 10 MiB) and its first writes.
const smallDiskSize = "64m"

// SmallDisk is the disk of a test database: a tmpfs of its own, mounted
// for the test, that holds the database's files (a PostgreSQL tablespace,
// a SQLite file), and that the test fills (Fill), so that every write that
// needs a new block fails as on a full disk (PostgreSQL: SQLSTATE 53100;
// SQLite: SQLITE_FULL), and frees again (Free).
type SmallDisk struct {
	t      testing.TB
	filler string
}

// PostgresOnSmallDisk returns the URL of a fresh database on the server of
// RIPCORD_TEST_POSTGRES whose files live on a SmallDisk. Mounting needs
// root and a server on this machine that runs as the postgres user (as
// scripts/with-postgres.sh and .ci/run start it); otherwise the test is
// skipped, saying why.
func PostgresOnSmallDisk(t testing.TB) (string, *SmallDisk) {
	t.Helper()
	admin := adminURL(t)
	u, err := url.Parse(admin)
	if err != nil {
		t.Fatalf("parse %s: %v", PostgresEnv, err)
	}
	if ip := net.ParseIP(u.Hostname()); u.Hostname() != "localhost" && (ip == nil || !ip.IsLoopback()) {
		t.Skipf("needs the PostgreSQL of %s on this machine, to put a tablespace on a disk the test mounts; it is on %s", PostgresEnv, u.Hostname())
	}
	pgUser, err := user.Lookup("postgres")
	if err != nil {
		t.Skipf("needs the postgres user PostgreSQL runs as, to give it the small disk: %v", err)
	}
	mnt := mountSmallDisk(t, pgUser.Uid, pgUser.Gid)

	db, err := sql.Open("pgx", admin)
	if err != nil {
		t.Fatalf("open %s: %v", PostgresEnv, err)
	}
	t.Cleanup(func() { db.Close() })
	name := fmt.Sprintf("ripcord_test_small_disk_%d", rand.Int64())
	ctx := context.Background()
	if _, err := db.ExecContext(ctx, "CREATE TABLESPACE "+name+" LOCATION '"+mnt+"'"); err != nil {
		t.Fatalf("create a tablespace on the small disk: %v", err)
	}
	t.Cleanup(func() { _, _ = db.ExecContext(context.Background(), "DROP TABLESPACE IF EXISTS "+name) })
	if _, err := db.ExecContext(ctx, "CREATE DATABASE "+name+" TABLESPACE "+name); err != nil {
		t.Fatalf("create a database on the small disk: %v", err)
	}
	t.Cleanup(func() { _, _ = db.ExecContext(context.Background(), "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)") })
	u.Path = "/" + name
	return u.String(), &SmallDisk{t: t, filler: filepath.Join(mnt, "filler")}
}

// SQLiteOnSmallDisk returns the URL of a SQLite database file on a
// SmallDisk; without root the test is skipped, saying why.
func SQLiteOnSmallDisk(t testing.TB) (string, *SmallDisk) {
	t.Helper()
	mnt := mountSmallDisk(t, "0", "0")
	return "sqlite://" + filepath.Join(mnt, "ripcord.db"), &SmallDisk{t: t, filler: filepath.Join(mnt, "filler")}
}

// mountSmallDisk mounts a tmpfs of smallDiskSize for the test, owned by
// uid and gid, and returns its path.
func mountSmallDisk(t testing.TB, uid, gid string) string {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root, to mount the small disk (a tmpfs) that a full disk is made of")
	}
	dir, err := os.MkdirTemp("", "ripcord-small-disk")
	if err != nil {
		t.Fatal(err)
	}
	mnt := filepath.Join(dir, "disk")
	if err := errors.Join(os.Chmod(dir, 0o755), os.Mkdir(mnt, 0o700)); err != nil {
		os.RemoveAll(dir)
		t.Fatal(err)
	}
	opts := fmt.Sprintf("size=%s,mode=0700,uid=%s,gid=%s", smallDiskSize, uid, gid)
	if err := syscall.Mount("tmpfs", mnt, "tmpfs", 0, opts); err != nil {
		os.RemoveAll(dir)
		t.Skipf("cannot mount a tmpfs for the small disk (a container without CAP_SYS_ADMIN?): %v", err)
	}
	t.Cleanup(func() {
		_ = syscall.Unmount(mnt, syscall.MNT_DETACH)
		os.RemoveAll(dir)
	})
	return mnt
}

// Fill takes every free block of the disk.
func (d *SmallDisk) Fill() {
	d.t.Helper()
	f, err := os.OpenFile(d.filler, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		d.t.Fatal(err)
	}
	defer f.Close()
	chunk := make([]byte, 1<<20)
	for {
		if _, err := f.Write(chunk); errors.Is(err, syscall.ENOSPC) {
			break
		} else if err != nil {
			d.t.Fatalf("fill the small disk: %v", err)
		}
	}
	var st syscall.Statfs_t
	if err := syscall.Statfs(filepath.Dir(d.filler), &st); err != nil {
		d.t.Fatal(err)
	}
	if st.Bavail != 0 {
		d.t.Fatalf("the small disk still has %d free blocks after filling it", st.Bavail)
	}
}

// Free gives the blocks Fill took back.
func (d *SmallDisk) Free() {
	d.t.Helper()
	if err := os.Remove(d.filler); err != nil && !errors.Is(err, os.ErrNotExist) {
		d.t.Fatal(err)
	}
}
