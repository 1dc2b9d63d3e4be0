// Package docs is Mailroom's documentation by reader (operators, agent
// developers, those who run it), in Markdown beside this file. It has no
// code: its tests keep the pages true. Every relative link and anchor in
// README.md, ARCHITECTURE.md and these pages resolves, and every shell
// block is run by a test or says, in the comment before it, why it is not.
package docs
