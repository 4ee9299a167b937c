// Package memtrim hands back the memory a process only needed to start.
//
// ripcord is one binary: the server, the CLI and the cluster agent. Go runs
// every linked package's init at start, so the server touches pages of
// code and read-only data from client-go, cosign and the CDEvents SDK that
// it never runs again; those clean, file-backed pages stay resident and
// were two thirds of an idle server's RSS. DropColdExecutablePages unmaps
// them (madvise MADV_DONTNEED on the executable's read-only mappings): the
// kernel refills any page from the file on its next use, so only what the
// server keeps running comes back.
package memtrim
