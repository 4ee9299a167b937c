// Package setup is the room where a repo admin gives ripcord its GitHub App
// without copying keys around: GET /setup posts a GitHub App manifest (the
// permissions and events ripcord really uses, nothing more) to GitHub for a
// personal account or an organisation, and GET /setup/callback checks the
// state it sent, exchanges GitHub's one-time code for the App's id, private
// key and secrets, stores them encrypted, hands them to the running server
// and sends the admin on to install the App.
//
// Building the manifest is pure (manifest.go); the page, the callback, the
// encrypted credential store and the code exchange are the shell around it.
// A GitHub Enterprise Server works the same way: every GitHub address comes
// from github.api_url.
package setup
