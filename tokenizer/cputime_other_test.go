//go:build !unix

package tokenizer

import "time"

// cpuTime returns 0: CPU time is not measured on this platform.
func cpuTime() time.Duration { return 0 }
