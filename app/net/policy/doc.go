// Package policy reads Sandbar's network rules and decides which outbound
// connections a session's guest may open.
//
// It is pure data and logic: it parses bytes handed to it and answers
// questions about them. It does no I/O, no DNS and knows nothing of VMs.
package policy
