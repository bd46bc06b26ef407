package ui

import (
	"fmt"
	"slices"

	"sandbar/app/doctor"
	"sandbar/vm"
)

// New Session's memory: chosen from steps of 1, 2, 4, 8… GiB that fit in
// what the budget leaves free, never typed in MiB.

// memoryCeilingMiB bounds the steps when the budget is unknown.
const memoryCeilingMiB = 64 << 10

// memorySteps are the sizes offered, in MiB, smallest first: the powers
// of two GiB up to free, and the default (the one in Settings, which may
// be any size) when it fits. A half and a quarter of a GiB are offered
// only when not even 1 GiB is free, down to the guest's floor.
func memorySteps(freeMiB, defMiB int) []int {
	floor := int(vm.MinMemory / vm.MiB)
	var steps []int
	for s := 1024; s <= freeMiB; s *= 2 {
		steps = append(steps, s)
	}
	if len(steps) == 0 {
		for _, s := range []int{256, 512} {
			if s >= floor && s <= freeMiB {
				steps = append(steps, s)
			}
		}
	}
	if defMiB >= floor && defMiB <= freeMiB && !slices.Contains(steps, defMiB) {
		steps = append(steps, defMiB)
		slices.Sort(steps)
	}
	return steps
}

// memoryName is how a step reads: "4 GiB", or "512 MiB".
func memoryName(mib int) string {
	if mib%1024 == 0 {
		return fmt.Sprintf("%d GiB", mib/1024)
	}
	return fmt.Sprintf("%d MiB", mib)
}

// pickMemory is the step to select for want MiB: the largest that is no
// more than it, else the smallest; 0 when there is none.
func pickMemory(steps []int, want int) int {
	if len(steps) == 0 {
		return 0
	}
	best := steps[0]
	for _, s := range steps {
		if s <= want {
			best = s
		}
	}
	return best
}

// setMemorySteps offers the steps the budget allows, keeping want (MiB)
// selected, or the nearest step below it.
func (w *newSessionWindow) setMemorySteps(want int) {
	free := memoryCeilingMiB
	if w.budgetErr == nil {
		free = int(w.budget.Free() / vm.MiB)
	}
	w.memorySteps = memorySteps(free, want)
	names := make([]string, len(w.memorySteps))
	for i, s := range w.memorySteps {
		names[i] = memoryName(s)
	}
	w.memory.SetOptions(names)
	if len(names) == 0 {
		w.memory.PlaceHolder = "none free"
		w.memory.ClearSelected()
		w.memory.Disable()
		return
	}
	w.memory.Enable()
	w.memory.SetSelected(memoryName(pickMemory(w.memorySteps, want)))
}

// memoryMiB is the chosen memory, 0 for none.
func (w *newSessionWindow) memoryMiB() int {
	i := w.memory.SelectedIndex()
	if i < 0 || i >= len(w.memorySteps) {
		return 0
	}
	return w.memorySteps[i]
}

// memoryProblem says why no memory can be chosen, "" when one is.
func (w *newSessionWindow) memoryProblem() string {
	if w.memoryMiB() > 0 || !w.loaded {
		return ""
	}
	if len(w.memorySteps) == 0 {
		return fmt.Sprintf("Memory: only %s is free for sessions, less than a session needs: stop a session to free some.",
			doctor.HumanBytes(int64(w.budget.Free())))
	}
	return "Memory: choose how much."
}

// memoryHintText says what the choice is out of.
func (w *newSessionWindow) memoryHintText() string {
	if w.budgetErr != nil {
		return "(the memory budget is unknown: " + w.budgetErr.Error() + ")"
	}
	if !w.loaded {
		return ""
	}
	return fmt.Sprintf("of %s free (%.0f%% of %s for sessions)",
		doctor.HumanBytes(int64(w.budget.Free())), w.budget.Share*100, doctor.HumanBytes(int64(w.budget.Host)))
}
