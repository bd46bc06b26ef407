//go:build linux

package bench

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"sandbar/app/session"
	"sandbar/app/store"
)

// preparedBenchFile's creation commands leave what a real project's do:
// a dependency folder of some thousand files in the workspace (ignored)
// and a tool under the agent's home, and take a known time of their own.
const preparedBenchFile = `{
	"onCreateCommand": "mkdir -p node_modules && for i in $(seq 1 400); do mkdir -p node_modules/p$i && echo \"module.exports = $i\" > node_modules/p$i/index.js; done",
	"postCreateCommand": "mkdir -p $HOME/.local/bin && head -c 8000000 /dev/urandom > $HOME/.local/bin/tool && sleep 2",
}
`

// BenchmarkPreparedEnvironment: a project's environment prepared once
// (features none; onCreate writes 400 packages into an ignored folder,
// postCreate 8 MB into the home and sleeps 2 s), then Start → agent
// started (boot, ready, agent spawn; the clone is the same either way
// and left out) of a session on the prepared environment against one in
// Sandbar's default image, alternated in one run, and their ratio per
// pair; the disk of the fifth session on the one environment (whose
// agent writes nothing: all of it is Sandbar's); and the preparing time
// beyond the commands' own run time.
func BenchmarkPreparedEnvironment(b *testing.B) {
	e := setup(b)
	root := b.TempDir()
	repo := emptyRepo(b, root)
	os.MkdirAll(filepath.Join(repo, ".devcontainer"), 0o755)
	os.WriteFile(filepath.Join(repo, ".devcontainer", "devcontainer.json"), []byte(preparedBenchFile), 0o644)
	os.WriteFile(filepath.Join(repo, ".gitignore"), []byte("node_modules/\n"), 0o644)
	for _, args := range [][]string{{"add", "."}, {"-c", "user.name=B", "-c", "user.email=b@example.com", "commit", "-qm", "env"}} {
		if out, err := exec.Command("git", append([]string{"-C", repo}, args...)...).CombinedOutput(); err != nil {
			b.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	m, _ := e.manager(b, root)
	ctx := context.Background()
	if _, _, err := m.AddProject(ctx, repo); err != nil {
		b.Fatal(err)
	}
	rev, err := m.RepoTrust(ctx, repo)
	if err != nil {
		b.Fatal(err)
	}
	hashes := map[string]string{}
	for _, p := range rev.Pending() {
		hashes[p.Kind] = p.Hash
	}
	if err := m.DecideRepoTrust(ctx, repo, store.TrustTrusted, hashes); err != nil {
		b.Fatal(err)
	}

	began := time.Now()
	if _, err := m.PrepareEnvironment(ctx, repo, false); err != nil {
		b.Fatal(err)
	}
	var env session.PreparedEnv
	for {
		v, err := m.Environment(ctx, repo)
		if err != nil || v.Prepared == nil {
			b.Fatalf("the environment: %+v %v", v, err)
		}
		if p := v.Prepared; p.State == session.PrepFailed {
			b.Fatalf("preparing failed: %s", p.Error)
		} else if p.State == session.PrepReady && p.Serving != nil {
			env = *p.Serving
			break
		}
		if time.Since(began) > 15*time.Minute {
			b.Fatal("the environment was not prepared in 15 minutes")
		}
		time.Sleep(200 * time.Millisecond)
	}
	beyond := &series{Metric: "preparing beyond the commands' own run time (boot, capture; commands took " + env.SetupTook.Round(time.Millisecond).String() + ")", Key: "prep-beyond", Unit: "ms"}
	beyond.add(ms(env.Took - env.SetupTook))
	size := &series{Metric: "the prepared environment's disk", Key: "prep-size", Unit: "MiB"}
	size.add(float64(env.Size) / (1 << 20))

	start := func(envName string) (float64, string) {
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
		defer cancel()
		s, err := m.Start(ctx, session.Options{Repo: repo, CPUs: 2, MemoryMiB: 2048, DiskGiB: 1, NoNetwork: true,
			Agent: session.AgentSpec{Command: "true"}, Env: envName})
		if err != nil {
			b.Fatal(err)
		}
		s, err = m.Wait(ctx, s.ID)
		if err != nil || s.State != session.StateStopped {
			b.Fatalf("session %s: %v %s %q", s.ID, err, s.State, s.Reason)
		}
		var sum time.Duration
		for _, k := range []string{"boot", "ready", "agent"} {
			d, ok := s.Timings[k]
			if !ok {
				b.Fatalf("no %s timing: %v", k, s.Timings)
			}
			sum += d
		}
		return ms(sum), s.ID
	}
	own := &series{Metric: "boot + agent start, Sandbar's default image (2 vCPU, 2 GiB)", Key: "prep-default", Unit: "ms"}
	onEnv := &series{Metric: "boot + agent start, on the prepared environment", Key: "prep-env", Unit: "ms"}
	ratio := &series{Metric: "prepared / default (same run, pairs)", Key: "prep-ratio", Unit: "x"}
	fifth := &series{Metric: "disk of the fifth session on the prepared environment (its agent writes nothing)", Key: "prep-fifth-disk", Unit: "MiB"}
	var kept []string
	for i := range max(e.runs, 5) {
		a, idA := start(session.EnvDefault)
		c, idC := start(session.EnvProject)
		m.Remove(context.Background(), idA, true)
		own.add(a)
		onEnv.add(c)
		ratio.add(c / a)
		kept = append(kept, idC)
		if i == 4 {
			use, err := m.DiskUsage(ctx)
			if err != nil {
				b.Fatal(err)
			}
			fifth.add(float64(use[idC]) / (1 << 20))
		}
	}
	for _, id := range kept {
		m.Remove(context.Background(), id, true)
	}
	e.report(b, own, onEnv, ratio, fifth, size, beyond)
}
