//go:build race

package supervisor

// burstLines is smaller under the race detector, which makes the JSON
// codec about ten times slower.
const burstLines = 3_000_000
