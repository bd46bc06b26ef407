package vm

import (
	"context"
	"errors"
	"testing"
	"time"
)

func TestExitEndsOnceWithTheFirstReason(t *testing.T) {
	e := NewExit()
	if e.Exited() || e.Err() != nil {
		t.Fatal("a new Exit has ended")
	}
	first := errors.New("first")
	if !e.End(first) {
		t.Fatal("the first End was not told it was first")
	}
	if e.End(errors.New("second")) {
		t.Fatal("a second End was told it was first")
	}
	if !e.Exited() {
		t.Fatal("Exited is false after End")
	}
	if err := e.Wait(context.Background()); err != first {
		t.Fatalf("Wait = %v, want the first reason", err)
	}
	select {
	case <-e.Done():
	default:
		t.Fatal("Done is open after End")
	}
}

func TestExitWaitHonoursContext(t *testing.T) {
	e := NewExit()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := e.Wait(ctx); !errors.Is(err, context.Canceled) {
		t.Fatalf("Wait on a cancelled ctx = %v", err)
	}
	if e.WaitFor(0) || e.WaitFor(-time.Second) {
		t.Fatal("WaitFor with no time reported an end that did not come")
	}
	go e.End(nil)
	if !e.WaitFor(10 * time.Second) {
		t.Fatal("WaitFor missed the end")
	}
	if err := e.Wait(context.Background()); err != nil {
		t.Fatalf("Wait after a clean end = %v", err)
	}
}

func TestExitPowerOff(t *testing.T) {
	t.Run("already ended: no press", func(t *testing.T) {
		e := NewExit()
		e.End(nil)
		if !e.PowerOff(context.Background(), func() error { t.Fatal("pressed an ended machine"); return nil }) {
			t.Fatal("an ended machine is not off")
		}
	})
	t.Run("press fails: no wait", func(t *testing.T) {
		e := NewExit()
		start := time.Now()
		if e.PowerOff(context.Background(), func() error { return errors.New("no button") }) {
			t.Fatal("off after a failed press")
		}
		if d := time.Since(start); d > 2*time.Second {
			t.Fatalf("a failed press waited %v", d)
		}
	})
	t.Run("guest powers off", func(t *testing.T) {
		e := NewExit()
		if !e.PowerOff(context.Background(), func() error { go e.End(nil); return nil }) {
			t.Fatal("the guest powered off and PowerOff said it did not")
		}
	})
	t.Run("guest ignores the button until the deadline", func(t *testing.T) {
		e := NewExit()
		ctx, cancel := context.WithTimeout(context.Background(), killMargin+300*time.Millisecond)
		defer cancel()
		deadline, _ := ctx.Deadline()
		if e.PowerOff(ctx, func() error { return nil }) {
			t.Fatal("off though the guest never ended")
		}
		// The kill's margin is left of ctx's deadline.
		if left := time.Until(deadline); left < killMargin/2 {
			t.Fatalf("PowerOff left %v of ctx for the kill, want about %v", left, killMargin)
		}
	})
}
