package engine

import (
	"context"

	"sandbar/app/session"
)

// operations is the server's table: every operation but the handshake
// and the shell (serveShell), by name.
func operations() map[string]handler {
	return map[string]handler{
		OpAddProject: unary(func(ctx context.Context, svc session.Service, r AddProjectRequest) (AddProjectReply, error) {
			p, note, err := svc.AddProject(ctx, r.Path)
			return AddProjectReply{Project: p, Note: note}, err
		}),
		OpRemoveProject: unary(func(ctx context.Context, svc session.Service, r RemoveProjectRequest) (None, error) {
			return None{}, svc.RemoveProject(ctx, r.Ref)
		}),
		OpStart: unary(func(ctx context.Context, svc session.Service, r StartRequest) (SessionReply, error) {
			s, err := svc.Start(ctx, r.Options)
			return SessionReply{Session: s}, err
		}),
		OpStop: unary(func(ctx context.Context, svc session.Service, r SessionRef) (SessionReply, error) {
			s, err := svc.Stop(ctx, r.ID)
			return SessionReply{Session: s}, err
		}),
		OpRestart: unary(func(ctx context.Context, svc session.Service, r SessionRef) (SessionReply, error) {
			s, err := svc.Restart(ctx, r.ID)
			return SessionReply{Session: s}, err
		}),
		OpRestartSaved: unary(func(ctx context.Context, svc session.Service, r SessionRef) (SessionReply, error) {
			s, err := svc.RestartFromSaved(ctx, r.ID)
			return SessionReply{Session: s}, err
		}),
		OpResume: unary(func(ctx context.Context, svc session.Service, r SessionRef) (SessionReply, error) {
			s, err := svc.Resume(ctx, r.ID)
			return SessionReply{Session: s}, err
		}),
		OpSuspend: unary(func(ctx context.Context, svc session.Service, r SessionRef) (SessionReply, error) {
			s, err := svc.Suspend(ctx, r.ID)
			return SessionReply{Session: s}, err
		}),
		OpWait: unary(func(ctx context.Context, svc session.Service, r SessionRef) (SessionReply, error) {
			s, err := svc.Wait(ctx, r.ID)
			return SessionReply{Session: s}, err
		}),
		OpRemove: unary(func(ctx context.Context, svc session.Service, r RemoveRequest) (None, error) {
			return None{}, svc.Remove(ctx, r.ID, r.Force)
		}),
		OpMerge: unary(func(ctx context.Context, svc session.Service, r MergeRequest) (MergeReply, error) {
			res, err := svc.Merge(ctx, r.ID, session.MergeOptions{Into: r.Into, Force: r.Force, AcceptSteering: r.AcceptSteering, Stash: r.Stash})
			return MergeReply{Result: res}, err
		}),
		OpPrepareEnv: unary(func(ctx context.Context, svc session.Service, r PrepareEnvRequest) (PrepareEnvReply, error) {
			v, err := svc.PrepareEnvironment(ctx, r.Project, r.Rebuild)
			return PrepareEnvReply{Prepared: v}, err
		}),
		OpRemovePrepared: unary(func(ctx context.Context, svc session.Service, r RemovePreparedRequest) (None, error) {
			return None{}, svc.RemovePreparedEnvironment(ctx, r.Project, r.Key)
		}),
		OpRename: unary(func(ctx context.Context, svc session.Service, r RenameRequest) (SessionReply, error) {
			s, err := svc.Rename(ctx, r.ID, r.Title)
			return SessionReply{Session: s}, err
		}),
		OpChat: unary(func(ctx context.Context, svc session.Service, r ChatRequest) (None, error) {
			return None{}, svc.Chat(ctx, r.ID, r.Text)
		}),
		OpCommit: unary(func(ctx context.Context, svc session.Service, r CommitRequest) (CommitReply, error) {
			res, err := svc.Commit(ctx, r.ID, r.Message)
			return CommitReply{Result: res}, err
		}),
		OpInterrupt: unary(func(ctx context.Context, svc session.Service, r SessionRef) (None, error) {
			return None{}, svc.Interrupt(ctx, r.ID)
		}),
		OpSync: unary(func(ctx context.Context, svc session.Service, r SyncRequest) (session.SyncResult, error) {
			return svc.Sync(ctx, r.ID, r.Mode)
		}),
		OpExec: streaming(func(ctx context.Context, s *Server, r ExecRequest, st emitter[Output]) (ExecReply, error) {
			ctx, cancel := context.WithCancel(ctx)
			defer cancel()
			q := newOutputQueue(st.out, cancel)
			stdout, stderr := q.writers()
			res, err := s.m.Exec(ctx, r.ID, r.Exec, stdout, stderr)
			if qerr := q.close(); qerr != nil {
				return ExecReply{}, qerr
			}
			return ExecReply{Result: res}, err
		}),
		OpChanges: unary(func(ctx context.Context, svc session.Service, r SessionRef) (ChangesReply, error) {
			ch, err := svc.Changes(ctx, r.ID)
			return ChangesReply{Changes: ch}, err
		}),
		OpFileDiff: unary(func(ctx context.Context, svc session.Service, r FileDiffRequest) (FileDiffReply, error) {
			d, err := svc.FileDiff(ctx, r.ID, r.File)
			return FileDiffReply{Diff: d}, err
		}),
		OpExport: unary(func(ctx context.Context, svc session.Service, r SessionRef) (ExportReply, error) {
			dir, when, err := svc.Export(ctx, r.ID)
			return ExportReply{Dir: dir, When: when}, err
		}),
		OpSubscribe: streaming(func(ctx context.Context, s *Server, r SubscribeRequest, st emitter[session.Event]) (None, error) {
			events := s.m.Subscribe(ctx, r.Session)
			s.subscribed(+1)
			defer s.subscribed(-1)
			if err := st.Started(); err != nil {
				return None{}, err
			}
			for ev := range events {
				if err := st.Send(ev); err != nil {
					return None{}, err
				}
			}
			return None{}, nil
		}),
		OpAddNetRule: unary(func(ctx context.Context, svc session.Service, r AddNetRuleRequest) (AddNetRuleReply, error) {
			rule, err := svc.AddNetRule(ctx, r.Ref, r.Scope, r.Action, r.Target)
			return AddNetRuleReply{Rule: rule}, err
		}),
		OpSetNetRules: unary(func(ctx context.Context, svc session.Service, r SetNetRulesRequest) (None, error) {
			return None{}, svc.SetNetworkRules(ctx, r.Scope, r.Ref, r.Text, r.ProjectID)
		}),
		OpReloadNet: unary(func(ctx context.Context, svc session.Service, _ None) (None, error) {
			return None{}, svc.ReloadNetworks(ctx)
		}),
		OpPorts: unary(func(ctx context.Context, svc session.Service, r SessionRef) (PortsReply, error) {
			ports, err := svc.Ports(ctx, r.ID)
			return PortsReply{Ports: ports}, err
		}),
		OpPublish: unary(func(ctx context.Context, svc session.Service, r PublishRequest) (PortReply, error) {
			p, err := svc.PublishPort(ctx, r.ID, r.Guest, r.Host)
			return PortReply{Port: p}, err
		}),
		OpUnpublish: unary(func(ctx context.Context, svc session.Service, r UnpublishRequest) (None, error) {
			return None{}, svc.UnpublishPort(ctx, r.ID, r.Guest)
		}),
		OpRestore: unary(func(ctx context.Context, svc session.Service, r SessionRef) (SessionReply, error) {
			s, err := svc.Restore(ctx, r.ID)
			return SessionReply{Session: s}, err
		}),
		OpEmptyTrash: unary(func(ctx context.Context, svc session.Service, r EmptyTrashRequest) (EmptyTrashReply, error) {
			n, err := svc.EmptyTrash(ctx, r.IDs)
			return EmptyTrashReply{Deleted: n}, err
		}),
	}
}

type writerFunc func(p []byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }
