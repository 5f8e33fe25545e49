package gateway

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"time"

	"github.com/trl-project/trl/protocol"
)

// slot is the gateway's handle on the session of one (tenant, workspace,
// ctx.sessionId) key. Calls of one key take turns: sem is held by the call
// (or the reaper) using the session.
type slot struct {
	key  string
	name string
	// tenant names the slot's (tenant, workspace): under --isolate, the
	// sessions of one tenant's workspace share a uid.
	tenant string
	sem    chan struct{}

	// Guarded by Gateway.mu.
	users    int // calls holding or waiting for sem, and the reaper
	lastUsed time.Time
	live     bool // a session was created for it and not reaped
}

// sessionName is the name of a key's session: stable, so that a run's calls
// find it, and opaque, so that tenant names never reach the shell.
func sessionName(tenant, workspace, sessionID string) string {
	sum := sha256.Sum256([]byte(joinKey(tenant, workspace, sessionID)))
	return "gw-" + hex.EncodeToString(sum[:])[:24]
}

// isolationKey is the opaque key of one tenant's workspace.
func isolationKey(tenant, workspace string) string {
	sum := sha256.Sum256([]byte(joinKey(tenant, workspace)))
	return "gw-" + hex.EncodeToString(sum[:16])
}

// acquire returns the key's slot with its turn taken, waiting for the call
// before it until ctx ends.
func (g *Gateway) acquire(ctx context.Context, tenant, workspace, sessionID string) (*slot, error) {
	key := joinKey(tenant, workspace, sessionID)
	g.mu.Lock()
	s := g.slots[key]
	if s == nil {
		s = &slot{key: key, name: sessionName(tenant, workspace, sessionID), tenant: isolationKey(tenant, workspace), sem: make(chan struct{}, 1)}
		g.slots[key] = s
	}
	s.users++
	g.mu.Unlock()
	select {
	case s.sem <- struct{}{}:
		return s, nil
	case <-ctx.Done():
		g.leave(s)
		return nil, ctx.Err()
	}
}

// release gives the turn back and marks the session used now.
func (g *Gateway) release(s *slot) {
	<-s.sem
	g.leave(s)
}

// leave drops a user; a slot with no users and no session is forgotten, so
// the map holds only live sessions and calls in progress.
func (g *Gateway) leave(s *slot) {
	g.mu.Lock()
	defer g.mu.Unlock()
	s.users--
	s.lastUsed = g.opts.now()
	if s.users == 0 && !s.live && g.slots[s.key] == s {
		delete(g.slots, s.key)
	}
}

// setLive records whether the slot's session exists.
func (g *Gateway) setLive(s *slot, live bool) {
	g.mu.Lock()
	s.live = live
	g.mu.Unlock()
}

// reap runs until the gateway closes, destroying sessions no call has
// used for IdleTimeout.
func (g *Gateway) reap() {
	defer close(g.reaped)
	every := min(max(g.opts.IdleTimeout/4, 10*time.Millisecond), time.Minute)
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-g.ctx.Done():
			return
		case <-t.C:
			g.reapIdle()
		}
	}
}

// reapIdle destroys the sessions idle for longer than IdleTimeout. The
// reaper counts as a user while it works, so a call arriving meanwhile
// waits for it and then finds the session gone and creates a new one.
func (g *Gateway) reapIdle() {
	now := g.opts.now()
	var idle []*slot
	var idleFor []time.Duration
	g.mu.Lock()
	for _, s := range g.slots {
		if d := now.Sub(s.lastUsed); s.users == 0 && s.live && d >= g.opts.IdleTimeout {
			s.users++
			idle = append(idle, s)
			idleFor = append(idleFor, d)
		}
	}
	g.mu.Unlock()
	for i, s := range idle {
		s.sem <- struct{}{} // free: it had no users
		ctx := protocol.WithCaller(g.ctx, protocol.Caller{Transport: "gateway", Actor: "gateway reaper"})
		_, err := g.api.SessionDestroy(ctx, protocol.SessionDestroyParams{SessionID: s.name, Force: true})
		gone := err == nil || protocol.AsError(err).Code == protocol.CodeSessionNotFound
		if gone {
			g.log.Info().Str("session", s.name).Dur("idle", idleFor[i]).Msg("gateway: destroyed an idle session")
		} else {
			// Kept, to be tried again on the next tick.
			g.log.Warn().Err(err).Str("session", s.name).Msg("gateway: could not destroy an idle session")
		}
		// live is settled before the turn is given back: a call waiting
		// for it may create the session again and mark it live.
		g.mu.Lock()
		s.live = !gone
		s.users--
		if s.users == 0 && !s.live && g.slots[s.key] == s {
			delete(g.slots, s.key)
		}
		g.mu.Unlock()
		<-s.sem
	}
}

// sessionCount returns how many keys have a live session or a call.
func (g *Gateway) sessionCount() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return len(g.slots)
}
