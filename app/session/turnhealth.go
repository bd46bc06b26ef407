package session

import "sandbar/app/store"

// A Claude Code turn's health, as the run follows it: retries of the
// model API show as the session's activity, and a turn that ends with an
// error ends the session as failed, with the reason in words.

// apiRetrying shows a retry of the model API as the session's activity.
func (r *run) apiRetrying(e Entry) {
	r.setActivity(r.ctx, ActivityRetrying, e.Text)
}

// apiAnswers ends a retrying activity: the agent got on with its turn.
func (r *run) apiAnswers() {
	r.mu.Lock()
	retrying := r.activity == ActivityRetrying
	r.mu.Unlock()
	if retrying {
		r.setActivity(r.ctx, ActivityWorking, "working")
	}
}

// turnFailed ends the session as failed: the agent's turn ended with an
// error (e, its result), which no message of the person's can mend
// (a refused key, an API that cannot be reached). Its work is saved as
// on any stop.
func (r *run) turnFailed(e Entry) {
	reason := FailureReason(e)
	r.systemLine("the agent's turn failed: " + reason)
	r.stopOnce.Do(func() {
		r.stopMu.Lock()
		r.stopReason, r.stopFailed = reason, true
		r.stopMu.Unlock()
		close(r.stopReq)
	})
}

// stoppedAs is the state a run that was asked to stop ends in: failed
// when its agent's turn failed, else stopped.
func (r *run) stoppedAs() store.State {
	r.stopMu.Lock()
	defer r.stopMu.Unlock()
	if r.stopFailed {
		return StateFailed
	}
	return StateStopped
}
