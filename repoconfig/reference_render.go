package repoconfig

import (
	"fmt"
	"strings"
)

// ReferenceRow is a KeyDoc with its full path, like
// apps.<app>.environments.<env>.rollout.waves[].name.
type ReferenceRow struct {
	Path string
	KeyDoc
}

// ReferenceRows lists every key of Reference, parents before children.
func ReferenceRows() []ReferenceRow {
	var rows []ReferenceRow
	var walk func(prefix string, keys []KeyDoc)
	walk = func(prefix string, keys []KeyDoc) {
		for _, k := range keys {
			path := join(prefix, k.Name)
			rows = append(rows, ReferenceRow{Path: path, KeyDoc: k})
			if k.Shape == Items {
				path += "[]"
			}
			walk(path, k.Keys)
		}
	}
	walk("", Reference)
	return rows
}

// ReferenceMarkdown is docs/ripcord-yml.md: the table of every key.
func ReferenceMarkdown() string {
	var b strings.Builder
	b.WriteString(`# .github/ripcord.yml reference

<!-- Generated from repoconfig.Reference by
     go test ./repoconfig -run TestRipcordYMLReference -update
     Do not edit: the test fails when this file and the code disagree. -->

Every key ripcord reads from ` + "`" + Path + "`" + `. Parsing is strict: a key not listed
here is an error that names it, with its line and column (` + "`ripcord validate`" + `
and the config check run show them). ` + "`<app>`, `<env>`" + ` are names you choose; ` + "`[]`" + `
marks the items of a list. A duration is written like ` + "`30s`, `5m` or `1h30m`" + `;
a number or percentage like ` + "`2` or `\"25%\"`" + `.

| Key | Type | Default | Allowed | Meaning |
|-----|------|---------|---------|---------|
`)
	for _, r := range ReferenceRows() {
		fmt.Fprintf(&b, "| `%s` | %s | %s | %s | %s |\n", r.Path, cell(r.Type), cell(r.Default), cell(r.Allowed), cell(r.Meaning))
	}
	return b.String()
}

// cell escapes a table cell; an empty one shows a dash.
func cell(s string) string {
	if s == "" {
		return "–"
	}
	return strings.ReplaceAll(s, "|", `\|`)
}
