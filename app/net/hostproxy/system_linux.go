package hostproxy

import "context"

// System is this machine's proxy setup for Sandbar's own connections: on
// Linux the environment's HTTPS_PROXY, HTTP_PROXY, ALL_PROXY and NO_PROXY
// (see FromEnv).
func System(ctx context.Context, lookup Lookup) (*Config, error) {
	return FromEnv(lookup)
}
