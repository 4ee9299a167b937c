// Package configload is the room where ripcord reads a repository's
// .github/ripcord.yml through the App: from the default branch (or a given
// commit), with the organisation's .github repository as the fallback, every
// read revalidated with its ETag by ghclient's cache so a re-read costs a 304.
//
// It also makes a config that fails to load visible instead of silent: a push
// that changes the file gets a `ripcord/config` check run on its head commit,
// failing with one annotation per problem, and POST /api/v1/validate lints a
// file for CI. Parsing and validation themselves are repoconfig's.
package configload
