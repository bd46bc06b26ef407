//go:build !race

package supervisor

// burstLines of seq output make about 99 MB.
const burstLines = 12_000_000
