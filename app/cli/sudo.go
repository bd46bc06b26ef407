package cli

import (
	"context"
	"fmt"
)

func projectSudo(ctx context.Context, env *Env, args []string) error {
	fs := newFlags(env, "sandbar project sudo")
	fs.Usage = func() {
		fmt.Fprintln(env.Stderr, "usage: sandbar project sudo PROJECT [on|off]\n\nWith on or off, lets the project's agent use sudo inside its VM (on, the\ndefault: the VM is the boundary), or not, from its sessions' next start;\nwithout, says which.")
	}
	pos, err := interleaved(fs, args)
	if err != nil {
		return err
	}
	if len(pos) == 0 || len(pos) > 2 {
		return UsageError{Msg: "sandbar project sudo: give a project (id, name or path), and on or off to change it"}
	}
	m, err := sessions(ctx, env)
	if err != nil {
		return err
	}
	if len(pos) == 2 {
		var on bool
		switch pos[1] {
		case "on":
			on = true
		case "off":
		default:
			return UsageError{Msg: fmt.Sprintf("sandbar project sudo: %q is neither on nor off", pos[1])}
		}
		if err := m.SetProjectSudo(ctx, pos[0], on); err != nil {
			return err
		}
	}
	proj, err := m.FindProject(ctx, pos[0])
	if err != nil {
		return err
	}
	on, err := m.ProjectSudo(ctx, proj.ID)
	if err != nil {
		return err
	}
	if on {
		fmt.Fprintln(env.Stdout, "the project's agent may use sudo inside its VM (from each session's next start)")
	} else {
		fmt.Fprintln(env.Stdout, "the project's agent may not use sudo (from each session's next start)")
	}
	return nil
}
