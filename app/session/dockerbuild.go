package session

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"sandbar/app/env/dockerbuild"
	"sandbar/app/env/ociimage"
	"sandbar/vm"
)

// buildImage builds the image a new session's devcontainer.json builds
// from a Dockerfile (build.dockerfile; none: nothing to do), in a VM of
// Sandbar's own image under the session's network rules, from the
// repository at the session's commit, and records it as the session's
// root, for this boot and every restart, as pullImage does a pulled one.
// An unchanged build (the same Dockerfile, context tree, arguments,
// target and base images) is not redone. It runs once the workspace disk
// is made: that disk is the build's context.
func (r *run) buildImage(ctx context.Context) error {
	cfg := r.envCfg
	if cfg == nil || cfg.Build == nil || cfg.Image != "" || r.root != nil {
		return nil
	}
	began := time.Now()
	df := cfg.Build.Dockerfile
	fail := func(err error) error {
		return fmt.Errorf("environment: the image %s builds from %s: %w (or start in Sandbar's own image: --env default)", r.envFile, df, err)
	}
	commit, err := readSmallFile(r.dir.BaseCommit())
	if err != nil {
		return fail(fmt.Errorf("the session's commit: %w", err))
	}
	mr, unlock, err := r.m.mirror(ctx, r.s.ProjectID)
	if err != nil {
		return fail(err)
	}
	dfObj, err := mr.ObjectAt(ctx, commit, df, dockerbuild.MaxDockerfile)
	if err == nil && dfObj.Type != "blob" {
		err = fmt.Errorf("%s is a %s, not a file", df, dfObj.Type)
	}
	if err != nil {
		unlock()
		return fail(fmt.Errorf("no Dockerfile: %w: check build.dockerfile in %s (it is relative to the file's folder)", err, r.envFile))
	}
	rec, err := readEnvRecord(r.dir.Environment())
	if err == nil && rec == nil {
		err = fmt.Errorf("the session keeps no copy of %s", r.envFile)
	}
	if err == nil {
		err = checkTrustedBuild(ctx, mr, commit, cfg.Build, dfObj.Data, rec.Build)
	}
	if err != nil {
		unlock()
		return fail(err)
	}
	ctxObj, err := mr.ObjectAt(ctx, commit, cfg.Build.Context, 0)
	unlock()
	if err == nil && ctxObj.Type != "tree" {
		err = fmt.Errorf("%s is a %s, not a folder", cfg.Build.Context, ctxObj.Type)
	}
	if err != nil {
		return fail(fmt.Errorf("the build context: %w: check build.context in %s", err, r.envFile))
	}
	guest, err := r.m.cfg.Image(ctx)
	if err != nil {
		return fail(fmt.Errorf("guest image: %w", err))
	}
	base, err := r.baseDisk()
	if err != nil {
		return fail(err)
	}
	envDir := filepath.Dir(r.m.cfg.Paths.EnvImages())
	b := &dockerbuild.Builder{Hypervisor: r.m.cfg.Hypervisor, Guest: guest,
		Store: &ociimage.Store{Dir: r.m.cfg.Paths.EnvImages()}, Dir: filepath.Join(envDir, "builds"), Logger: r.log}
	var lastState time.Time
	req := dockerbuild.Request{
		Label: r.id, Dockerfile: df, Context: cfg.Build.Context,
		DockerfileData: dfObj.Data, DockerfileID: dfObj.ID, ContextID: ctxObj.ID,
		Args: cfg.Build.Args, Target: cfg.Build.Target, Workspace: base,
		Pull:         ociimage.PullOptions{Proxy: r.m.cfg.Proxy.HTTPProxy},
		ReadyTimeout: r.m.cfg.ReadyTimeout,
		CPUs:         r.s.Limits.CPUs, Memory: uint64(max(r.s.Limits.MemoryMiB, 2048)) << 20,
		Progress: func(p dockerbuild.Progress) {
			line := r.red.Redact(p.Line)
			r.systemLine("build: " + line)
			now := time.Now()
			if now.Sub(lastState) < 500*time.Millisecond {
				return
			}
			lastState = now
			what := line
			if p.Step != "" {
				what = r.red.Redact(p.Step)
			}
			r.m.hub.publish(Event{Session: r.id, Time: now, Kind: EventState, State: StateProvisioning,
				Reason: "building the image: " + clipReason(what)})
		},
	}
	if r.s.Limits.Network {
		req.Network = func(ctx context.Context) (*vm.NIC, string, func(), error) {
			sn, nic, arg, err := r.startNet(ctx)
			if err != nil {
				return nil, "", nil, err
			}
			return nic, arg, sn.close, nil
		}
	}
	res, err := b.Build(ctx, req)
	if err != nil {
		return fail(err)
	}
	if res.Note != "" {
		r.systemLine("environment: " + r.red.Redact(res.Note))
	}
	img := res.Image
	name := "built from " + df
	ri := &RootImage{Path: img.Path, Name: name, Digest: img.Digest, User: r.envUser,
		Env: img.Config.Env, WorkingDir: img.Config.WorkingDir}
	if ri.User == "" {
		ri.User = img.Config.User
	}
	if err := ri.check(); err != nil {
		return fail(err)
	}
	if err := writeRootImage(r.dir.RootImage(), ri); err != nil {
		return err
	}
	r.applyEnvVars(ri.Env)
	how := fmt.Sprintf("built in a VM (%s) in %s", res.Kernel, time.Since(began).Round(time.Millisecond))
	if res.Cached {
		how = "as built before (nothing it is built from changed)"
	}
	r.systemLine(fmt.Sprintf("environment: image %s at %s (%s, %s, %d MB) %s", name, short(commit), img.Digest, img.Platform, img.Size>>20, how))
	return nil
}

// clipReason keeps a state's reason to one short line.
func clipReason(s string) string {
	s = strings.TrimSpace(s)
	if len(s) > 120 {
		return s[:117] + "..."
	}
	return s
}
