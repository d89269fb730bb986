package session

import "time"

// WithMonotonic sets the clock a lease's validity is measured on.
func WithMonotonic(now func() time.Time) Option { return func(c *config) { c.mono = now } }

// RenewLease renews h's writer lease once, as its background loop does.
func RenewLease(h *Handle) error { return h.lease.renew() }

// WithoutRenewal stops leases renewing themselves: the test does.
func WithoutRenewal() Option { return func(c *config) { c.noRenew = true } }
