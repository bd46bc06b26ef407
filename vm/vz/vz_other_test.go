//go:build !darwin

package vz

import (
	"context"
	"errors"
	"testing"

	"sandbar/vm"
)

func TestUnavailableOffMacOS(t *testing.T) {
	var h vm.Hypervisor = New(Config{})
	if h.Name() != "vz" {
		t.Errorf("Name = %q", h.Name())
	}
	if st := h.Check(context.Background()); st.Available || st.Detail == "" {
		t.Errorf("Check = %+v, want unavailable with a reason", st)
	}
	if _, err := h.Boot(context.Background(), testSpec()); !errors.Is(err, vm.ErrUnavailable) {
		t.Errorf("Boot error %v, want vm.ErrUnavailable", err)
	}
}
