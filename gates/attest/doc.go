// Package attest is the room where an image digest's supply-chain evidence
// is checked: the digest exists in its registry, carries a cosign signature
// from a trusted key or keyless identity, and has signed in-toto
// attestations (SLSA provenance, SBOM, vulnerability scan) for it. The
// provenance, sbom and image-scan gates judge that evidence.
//
// Verification uses cosign as a library, with the trust material the
// repository's configuration names and no transparency-log lookup: a key
// needs no log, and a keyless signature is checked against the Rekor bundle
// it carries and the trusted root, offline.
//
// Everything that cannot be decided (registry down, unreadable trust
// material) is an error, which the gates turn into a fail-closed verdict;
// only definite answers are cached.
package attest
