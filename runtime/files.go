package runtime

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/rs/zerolog"
	"github.com/trl-project/trl/files"
	"github.com/trl-project/trl/metrics"
	"github.com/trl-project/trl/protocol"
	"github.com/trl-project/trl/session"
)

// The file methods (SPEC §15): each resolves its session like exec.*,
// works in the session's current directory and as the session's uid (see
// files.Scope), counts itself in the metrics, and — when it changes a
// file — writes an audit event with the path, size and SHA-256, never the
// content.

var (
	defaultFSOnce sync.Once
	defaultFS     *files.FS
	defaultFSErr  error
)

// fsys is the file tree the methods work on: Options.Files, or the whole
// filesystem.
func (rt *Runtime) fsys() (*files.FS, error) {
	if rt.opts.Files != nil {
		return rt.opts.Files, nil
	}
	defaultFSOnce.Do(func() { defaultFS, defaultFSErr = files.New(files.Options{}) })
	return defaultFS, defaultFSErr
}

// fsScope is where and as whom the session's file operations run: its
// current directory, and its uid and gid when it is isolated. An isolated
// session that has ended has given its uid back, so it has no identity
// to act with any more. An isolated session also has a mount namespace of
// its own (its /tmp is not the daemon's): its paths are resolved in its
// tree, from its namespace's root (files.FS.Within), so that fs.write
// /tmp/x writes the file its shell reads as /tmp/x. The caller calls done
// when the operation is over.
func (rt *Runtime) fsScope(ref string) (fs *files.FS, sc files.Scope, s *session.Session, done func(), err error) {
	done = func() {}
	if fs, err = rt.fsys(); err != nil {
		return nil, sc, nil, done, err
	}
	if s, err = rt.execSession(ref); err != nil {
		return nil, sc, nil, done, err
	}
	info := s.Info()
	sc = files.Scope{Dir: info.WorkingDir, Self: info.PID}
	if uid, gid, ok := s.Credential(); ok {
		if info.State == session.StateExited {
			return nil, sc, nil, done, &session.Error{Kind: session.ErrExited, Msg: fmt.Sprintf("session %s has exited; its files can no longer be reached as its user", s.ID())}
		}
		sc.Identity = &files.Identity{UID: uid, GID: gid}
	}
	dir, own, err := s.RootDir()
	if err != nil {
		return nil, sc, nil, done, err
	}
	if own {
		in, err := fs.Within(dir)
		dir.Close()
		if err != nil {
			return nil, sc, nil, done, err
		}
		fs, done = in, func() { in.Close() }
	}
	return fs, sc, s, done, nil
}

// FSRead answers a chunk of a file (fs.read).
func (rt *Runtime) fsRead(_ context.Context, p protocol.FSReadParams) (res protocol.FSReadResult, err error) {
	defer func() { recordFile(protocol.MethodFSRead, err, res.Length) }()
	enc := p.Encoding
	if enc == "" {
		enc = protocol.EncodingAuto
	}
	if enc != protocol.EncodingAuto && enc != protocol.EncodingUTF8 && enc != protocol.EncodingBase64 {
		return res, protocol.Errorf(protocol.CodeInvalidParams, "encoding must be \"auto\", \"utf-8\" or \"base64\", got %q", clip(enc, 32))
	}
	fs, sc, s, done, err := rt.fsScope(p.SessionID)
	if err != nil {
		return res, err
	}
	defer done()
	c, err := fs.Read(sc, p.Path, files.ReadOptions{Offset: p.Offset, Length: p.Length, LineOffset: p.LineOffset, LineLimit: p.LineLimit})
	if err != nil {
		return res, err
	}
	data := c.Data
	if enc != protocol.EncodingBase64 {
		// A chunk may end inside a character: answer up to it, and the
		// next chunk starts there.
		if !c.Complete {
			data = data[:textEnd(data)]
		}
		switch {
		case utf8.Valid(data):
			enc = protocol.EncodingUTF8
		case enc == protocol.EncodingAuto:
			data, enc = c.Data, protocol.EncodingBase64
		default:
			return res, protocol.Errorf(protocol.CodeInvalidParams, "%s is not UTF-8 text at offset %d; read it with encoding \"base64\" or \"auto\"", c.Path, c.Offset)
		}
	}
	res = protocol.FSReadResult{
		Path: c.Path, Size: c.Size, Offset: c.Offset, Length: int64(len(data)), Encoding: enc,
		Complete: c.Complete && len(data) == len(c.Data), Mode: modeString(c.Mode), MTime: timeString(c.MTime),
		LineOffset: c.FirstLine, Lines: c.Lines,
	}
	// The session's secrets are masked as in its output, the part of one
	// the chunk's start or end cuts too (the bytes around it are read for
	// that); length still counts the file's bytes, so the next chunk's
	// offset is offset+length.
	if l := int64(s.LongestSecret()); l > 1 {
		around := func(from, to int64) []byte {
			if from >= to {
				return nil
			}
			b, err := fs.Read(sc, p.Path, files.ReadOptions{Offset: from, Length: to - from})
			if err != nil {
				return nil
			}
			return b.Data
		}
		end := c.Offset + res.Length
		data, res.Masked = s.MaskChunk(around(max(0, c.Offset-(l-1)), c.Offset), data, around(end, min(c.Size, end+l-1)))
	}
	if enc == protocol.EncodingBase64 {
		res.Data = base64.StdEncoding.EncodeToString(data)
	} else {
		res.Data = bytesView(data) // data is this answer's alone
	}
	return res, nil
}

// textEnd is where b ends without a character cut at its end.
func textEnd(b []byte) int {
	for i := 1; i <= 3 && i <= len(b); i++ {
		c := b[len(b)-i]
		if c < 0x80 {
			return len(b) // ASCII: nothing cut
		}
		if utf8.RuneStart(c) {
			if !utf8.FullRune(b[len(b)-i:]) {
				return len(b) - i
			}
			return len(b)
		}
	}
	return len(b)
}

// FSWrite writes a file (fs.write): atomically unless appending.
func (rt *Runtime) fsWrite(ctx context.Context, p protocol.FSWriteParams) (res protocol.FSWriteResult, err error) {
	actor := protocol.CallerFrom(ctx).Actor
	var size int64
	defer func() { recordFile(protocol.MethodFSWrite, err, size) }()
	if p.Data == nil {
		return res, protocol.Errorf(protocol.CodeInvalidParams, "data is required (\"\" writes an empty file)")
	}
	var data []byte
	switch p.Encoding {
	case "", protocol.EncodingUTF8:
		data = []byte(*p.Data)
	case protocol.EncodingBase64:
		if data, err = base64.StdEncoding.DecodeString(*p.Data); err != nil {
			return res, protocol.Errorf(protocol.CodeInvalidParams, "data is not valid base64: %v", err)
		}
	default:
		return res, protocol.Errorf(protocol.CodeInvalidParams, "encoding must be \"utf-8\" or \"base64\", got %q", clip(p.Encoding, 32))
	}
	size = int64(len(data))
	createDirs := p.CreateDirs == nil || *p.CreateDirs
	return rt.writeFile(actor, protocol.MethodFSWrite, p.SessionID, p.Path, bytes.NewReader(data), p.Mode, p.Append, createDirs, p.IfSHA256)
}

// PutFile writes a file from a stream (PUT /files), atomically: r is
// copied to a temporary file, never held whole.
func (rt *Runtime) PutFile(ctx context.Context, sessionRef, path string, r io.Reader, mode string, createDirs bool) (res protocol.FSWriteResult, err error) {
	actor := protocol.CallerFrom(ctx).Actor
	defer func() { recordFile("http.put", err, res.Size) }()
	res, err = rt.writeFile(actor, "http.put", sessionRef, path, r, mode, false, createDirs, "")
	if err != nil {
		return res, wireError(err) // the transport sees wire errors only
	}
	return res, nil
}

func (rt *Runtime) writeFile(actor, op, ref, path string, r io.Reader, mode string, appendTo, createDirs bool, ifSHA string) (protocol.FSWriteResult, error) {
	o := files.WriteOptions{Append: appendTo, CreateDirs: createDirs, IfSHA256: ifSHA}
	if mode != "" {
		m, err := strconv.ParseUint(mode, 8, 32)
		if err != nil || m > 0o777 {
			return protocol.FSWriteResult{}, protocol.Errorf(protocol.CodeInvalidParams, "mode must be octal permission bits such as \"0644\", got %q", clip(mode, 16))
		}
		fm := os.FileMode(m)
		o.Mode = &fm
	}
	fs, sc, s, done, err := rt.fsScope(ref)
	if err != nil {
		return protocol.FSWriteResult{}, err
	}
	defer done()
	w, err := fs.Write(sc, path, r, o)
	rt.auditFile(op, actor, s, err, w.Path, w.Size, w.SHA256, nil)
	if err != nil {
		return protocol.FSWriteResult{}, err
	}
	return protocol.FSWriteResult{Path: w.Path, Size: w.Size, SHA256: w.SHA256}, nil
}

// FSEdit replaces exact text in a file (fs.edit).
func (rt *Runtime) fsEdit(ctx context.Context, p protocol.FSEditParams) (res protocol.FSEditResult, err error) {
	actor := protocol.CallerFrom(ctx).Actor
	defer func() { recordFile(protocol.MethodFSEdit, err, res.Size) }()
	if p.Old == nil || p.New == nil {
		return res, protocol.Errorf(protocol.CodeInvalidParams, "old and new are required: the exact text to replace and its replacement")
	}
	fs, sc, s, done, err := rt.fsScope(p.SessionID)
	if err != nil {
		return res, err
	}
	defer done()
	e, err := fs.Edit(sc, p.Path, *p.Old, *p.New, p.ReplaceAll)
	rt.auditFile(protocol.MethodFSEdit, actor, s, err, e.Path, e.Size, e.SHA256, func(ev *zerolog.Event) { ev.Int("replacements", e.Replacements) })
	if err != nil {
		return res, err
	}
	res = protocol.FSEditResult{Path: e.Path, Size: e.Size, SHA256: e.SHA256, Replacements: e.Replacements,
		Lines: make([]protocol.FSLine, len(e.Lines)), LinesCut: e.LinesCut}
	for i, l := range e.Lines {
		res.Lines[i] = protocol.FSLine{Line: l.Number, Text: s.MaskText(l.Text)}
	}
	return res, nil
}

// FSList lists a directory tree (fs.list).
func (rt *Runtime) fsList(_ context.Context, p protocol.FSListParams) (res protocol.FSListResult, err error) {
	defer func() { recordFile(protocol.MethodFSList, err, 0) }()
	fs, sc, _, done, err := rt.fsScope(p.SessionID)
	if err != nil {
		return res, err
	}
	defer done()
	if p.Path == "" {
		p.Path = "."
	}
	l, err := fs.List(sc, p.Path, files.ListOptions{Depth: p.Depth, Limit: p.Limit, Offset: p.Offset, NoHidden: p.Hidden != nil && !*p.Hidden})
	if err != nil {
		return res, err
	}
	res = protocol.FSListResult{Path: l.Path, Total: l.Total, Complete: l.Complete, Entries: make([]protocol.FSEntry, len(l.Entries))}
	for i, e := range l.Entries {
		res.Entries[i] = wireEntry(e)
	}
	return res, nil
}

// FSStat describes a file (fs.stat).
func (rt *Runtime) fsStat(_ context.Context, p protocol.FSPathParams) (res protocol.FSEntry, err error) {
	defer func() { recordFile(protocol.MethodFSStat, err, 0) }()
	fs, sc, _, done, err := rt.fsScope(p.SessionID)
	if err != nil {
		return res, err
	}
	defer done()
	e, err := fs.Stat(sc, p.Path)
	if err != nil {
		return res, err
	}
	return wireEntry(e), nil
}

// FSMkdir makes a directory (fs.mkdir).
func (rt *Runtime) fsMkdir(_ context.Context, p protocol.FSMkdirParams) (res protocol.FSPathResult, err error) {
	defer func() { recordFile(protocol.MethodFSMkdir, err, 0) }()
	fs, sc, _, done, err := rt.fsScope(p.SessionID)
	if err != nil {
		return res, err
	}
	defer done()
	abs, err := fs.Mkdir(sc, p.Path, p.Parents)
	if err != nil {
		return res, err
	}
	return protocol.FSPathResult{Path: abs}, nil
}

// FSRemove removes a file or a directory (fs.remove).
func (rt *Runtime) fsRemove(ctx context.Context, p protocol.FSRemoveParams) (res protocol.FSRemoveResult, err error) {
	actor := protocol.CallerFrom(ctx).Actor
	defer func() { recordFile(protocol.MethodFSRemove, err, 0) }()
	fs, sc, s, done, err := rt.fsScope(p.SessionID)
	if err != nil {
		return res, err
	}
	defer done()
	abs, n, err := fs.Remove(sc, p.Path, p.Recursive)
	rt.auditFile(protocol.MethodFSRemove, actor, s, err, abs, 0, "", func(ev *zerolog.Event) {
		ev.Bool("recursive", p.Recursive).Int("removed", n)
	})
	if err != nil {
		return res, err
	}
	return protocol.FSRemoveResult{Path: abs, Removed: n}, nil
}

// FSMove renames a file or directory (fs.move).
func (rt *Runtime) fsMove(ctx context.Context, p protocol.FSMoveParams) (res protocol.FSMoveResult, err error) {
	actor := protocol.CallerFrom(ctx).Actor
	defer func() { recordFile(protocol.MethodFSMove, err, 0) }()
	fs, sc, s, done, err := rt.fsScope(p.SessionID)
	if err != nil {
		return res, err
	}
	defer done()
	from, to, err := fs.Move(sc, p.From, p.To, p.Overwrite)
	rt.auditFile(protocol.MethodFSMove, actor, s, err, from, 0, "", func(ev *zerolog.Event) { ev.Str("to", to) })
	if err != nil {
		return res, err
	}
	return protocol.FSMoveResult{From: from, To: to}, nil
}

// OpenFile opens a regular file for GET /files, as the session's uid:
// the caller serves it (ranges included) and closes it.
func (rt *Runtime) OpenFile(_ context.Context, sessionRef, path string) (*os.File, error) {
	fs, sc, _, done, err := rt.fsScope(sessionRef)
	if err != nil {
		recordFile("http.get", err, 0)
		return nil, wireError(err)
	}
	defer done()
	f, _, _, err := fs.Open(sc, path)
	if err != nil {
		recordFile("http.get", err, 0)
		return nil, wireError(err)
	}
	return f, nil
}

// FileServed counts a GET /files that sent n bytes.
func (rt *Runtime) FileServed(n int64) { recordFile("http.get", nil, n) }

// recordFile counts one file operation in the metrics.
func recordFile(op string, err error, n int64) {
	code := "OK"
	if err != nil {
		code = string(wireError(err).Code)
	}
	metrics.Get().FileOp(op, code, n)
}

// auditFile writes the audit event of a change to a file: who changed
// which file in which session, how big it is now and its hash; never its
// content. A refused change is recorded too, with its code.
func (rt *Runtime) auditFile(op, actor string, s *session.Session, err error, path string, size int64, sha string, more func(*zerolog.Event)) {
	ev := rt.audit.Info().
		Str("event", "file").
		Str("method", op).
		Str("session", s.ID()).
		Str("actor", actor).
		Str("path", path)
	if err != nil {
		var fe *files.Error
		if path == "" && errors.As(err, &fe) {
			ev.Str("path", fe.Path)
		}
		ev.Str("code", string(wireError(err).Code))
	} else if op != protocol.MethodFSRemove && op != protocol.MethodFSMove {
		ev.Int64("size", size).Str("sha256", sha)
	}
	if more != nil && err == nil {
		more(ev)
	}
	ev.Msg("file changed")
}

func wireEntry(e files.Entry) protocol.FSEntry {
	return protocol.FSEntry{Name: e.Name, Path: e.Path, Type: e.Type, Size: e.Size,
		Mode: modeString(e.Mode), MTime: timeString(e.MTime), Target: e.Target}
}

// modeString is a mode as octal permission text ("0644", "4755").
func modeString(m os.FileMode) string {
	n := uint32(m.Perm())
	if m&os.ModeSetuid != 0 {
		n |= 0o4000
	}
	if m&os.ModeSetgid != 0 {
		n |= 0o2000
	}
	if m&os.ModeSticky != 0 {
		n |= 0o1000
	}
	return fmt.Sprintf("%04o", n)
}

func timeString(t time.Time) string { return t.UTC().Format(time.RFC3339Nano) }

// FSRead is the typed fs.read.
func (rt *Runtime) FSRead(ctx context.Context, p protocol.FSReadParams) (protocol.FSReadResult, error) {
	return serve(rt, ctx, protocol.MethodFSRead, func() (protocol.FSReadResult, error) { return rt.fsRead(ctx, p) })
}

// FSWrite is the typed fs.write.
func (rt *Runtime) FSWrite(ctx context.Context, p protocol.FSWriteParams) (protocol.FSWriteResult, error) {
	return serve(rt, ctx, protocol.MethodFSWrite, func() (protocol.FSWriteResult, error) { return rt.fsWrite(ctx, p) })
}

// FSEdit is the typed fs.edit.
func (rt *Runtime) FSEdit(ctx context.Context, p protocol.FSEditParams) (protocol.FSEditResult, error) {
	return serve(rt, ctx, protocol.MethodFSEdit, func() (protocol.FSEditResult, error) { return rt.fsEdit(ctx, p) })
}

// FSList is the typed fs.list.
func (rt *Runtime) FSList(ctx context.Context, p protocol.FSListParams) (protocol.FSListResult, error) {
	return serve(rt, ctx, protocol.MethodFSList, func() (protocol.FSListResult, error) { return rt.fsList(ctx, p) })
}

// FSStat is the typed fs.stat.
func (rt *Runtime) FSStat(ctx context.Context, p protocol.FSPathParams) (protocol.FSEntry, error) {
	return serve(rt, ctx, protocol.MethodFSStat, func() (protocol.FSEntry, error) { return rt.fsStat(ctx, p) })
}

// FSMkdir is the typed fs.mkdir.
func (rt *Runtime) FSMkdir(ctx context.Context, p protocol.FSMkdirParams) (protocol.FSPathResult, error) {
	return serve(rt, ctx, protocol.MethodFSMkdir, func() (protocol.FSPathResult, error) { return rt.fsMkdir(ctx, p) })
}

// FSRemove is the typed fs.remove.
func (rt *Runtime) FSRemove(ctx context.Context, p protocol.FSRemoveParams) (protocol.FSRemoveResult, error) {
	return serve(rt, ctx, protocol.MethodFSRemove, func() (protocol.FSRemoveResult, error) { return rt.fsRemove(ctx, p) })
}

// FSMove is the typed fs.move.
func (rt *Runtime) FSMove(ctx context.Context, p protocol.FSMoveParams) (protocol.FSMoveResult, error) {
	return serve(rt, ctx, protocol.MethodFSMove, func() (protocol.FSMoveResult, error) { return rt.fsMove(ctx, p) })
}
