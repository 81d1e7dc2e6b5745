//go:build race

package ledger

// The race detector keeps shadow memory outside the Go runtime's classes,
// which the ledger rightly cannot name.
const raceEnabled = true
