package rpc

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/creachadair/jrpc2"

	"github.com/task-x/runtime/steps/llm"
	"github.com/task-x/runtime/workflow"
)

// Session is what initialize settles for the rest of the connection.
type Session struct {
	Client  ClientInfo
	DataDir string // absolute; empty when the client gave none
	Sandbox bool
}

// ClientInfo names the client.
type ClientInfo struct {
	Name    string `json:"name"`
	Version string `json:"version,omitempty"`
}

// InitializeParams are initialize's params.
type InitializeParams struct {
	ProtocolVersion *int        `json:"protocolVersion"`
	ClientInfo      *ClientInfo `json:"clientInfo,omitempty"`
	DataDir         string      `json:"dataDir,omitempty"`
	Sandbox         *bool       `json:"sandbox,omitempty"`
}

// Validate checks what the JSON shape does not.
func (p *InitializeParams) Validate() error {
	switch {
	case p.ProtocolVersion == nil:
		return errors.New("protocolVersion: required")
	case p.ClientInfo != nil && p.ClientInfo.Name == "":
		return errors.New("clientInfo.name: required when clientInfo is given")
	case p.DataDir != "" && !filepath.IsAbs(p.DataDir):
		return errors.New("dataDir: must be an absolute path")
	}
	return nil
}

// ServerInfo names the runtime.
type ServerInfo struct {
	Name    string `json:"name"`
	Version string `json:"version"`
}

// InitializeResult is initialize's result.
type InitializeResult struct {
	ProtocolVersion int                `json:"protocolVersion"`
	ServerInfo      ServerInfo         `json:"serverInfo"`
	Providers       []llm.ProviderInfo `json:"providers"`
}

// initializeHandler answers initialize and moves the lifecycle on, whatever
// the outcome (a failed initialize may be sent again). The version is checked
// before the rest of the params, so a newer client with fields this runtime
// does not know still learns that the versions differ.
func (s *Server) initializeHandler() handlerFunc {
	decodeAndRun := typed(s, s.initialize)
	return func(ctx context.Context, req *jrpc2.Request) (result any, err error) {
		defer func() {
			if ferr := s.life.settleInitialize(err == nil && result != nil); ferr != nil {
				s.log.Debug("initialize answered after exit", "err", ferr.Error())
			}
		}()
		var raw json.RawMessage
		if err := req.UnmarshalParams(&raw); err != nil {
			return nil, err
		}
		if v, ok := peekProtocolVersion(raw); ok && v != ProtocolVersion {
			return nil, versionMismatch(v)
		}
		return decodeAndRun(ctx, req)
	}
}

// initialize settles the session.
func (s *Server) initialize(_ context.Context, p *InitializeParams) (*InitializeResult, error) {
	if *p.ProtocolVersion != ProtocolVersion {
		return nil, versionMismatch(*p.ProtocolVersion)
	}
	session := &Session{Sandbox: p.Sandbox == nil || *p.Sandbox}
	if p.ClientInfo != nil {
		session.Client = *p.ClientInfo
	}
	if p.DataDir != "" {
		dir := filepath.Clean(p.DataDir)
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return nil, invalidParams("dataDir: cannot create %s: %v", dir, errors.Unwrap(err))
		}
		if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
			return nil, invalidParams("dataDir: %s is not a directory", dir)
		}
		session.DataDir = dir
		// Nothing of this process runs yet: a run its log leaves running
		// belongs to a runtime that was killed.
		if ids, err := workflow.MarkInterrupted(dir, time.Now()); err != nil {
			s.log.Warn("marking interrupted runs", "err", err.Error())
		} else if len(ids) > 0 {
			s.log.Info("runs marked interrupted", "runs", len(ids))
		}
	}
	s.mu.Lock()
	s.session = session
	s.mu.Unlock()
	s.log.Info("initialized", "client", session.Client.Name, "clientVersion", session.Client.Version,
		"dataDir", session.DataDir, "sandbox", session.Sandbox)
	return &InitializeResult{
		ProtocolVersion: ProtocolVersion,
		ServerInfo:      ServerInfo{Name: ServerName, Version: Version},
		Providers:       llm.Providers(),
	}, nil
}

func versionMismatch(got int) *jrpc2.Error {
	return rpcError(CodeProtocolVersion, map[string]int{"serverProtocolVersion": ProtocolVersion},
		"protocol version mismatch: the client speaks %d, this runtime speaks %d", got, ProtocolVersion)
}

// peekProtocolVersion reads protocolVersion alone, leniently, so a version
// mismatch is reported as such even when the rest of the params would not
// decode.
func peekProtocolVersion(raw json.RawMessage) (int, bool) {
	var head struct {
		ProtocolVersion json.RawMessage `json:"protocolVersion"`
	}
	if json.Unmarshal(raw, &head) != nil {
		return 0, false
	}
	var v int
	if json.Unmarshal(head.ProtocolVersion, &v) != nil {
		return 0, false
	}
	return v, true
}

// shutdown cancels in-flight work; new requests already fail (the lifecycle
// moved on when shutdown arrived).
func (s *Server) shutdown(ctx context.Context, _ *noParams) (any, error) {
	s.calls.cancelAll(errShuttingDown, callFrom(ctx))
	s.log.Info("shutdown")
	return nil, nil
}

// exit ends the session; Serve does the waiting and the exit code.
func (s *Server) exit(context.Context, *jrpc2.Request) (any, error) {
	s.exitOnce.Do(func() { close(s.exitCh) })
	return nil, nil
}

// CancelParams are $/cancelRequest's params.
type CancelParams struct {
	ID json.RawMessage `json:"id"`
}

// cancelRequest cancels a request in flight; an unknown id is ignored.
func (s *Server) cancelRequest(_ context.Context, p *CancelParams) (any, error) {
	key, ok := canonicalID(p.ID)
	if !ok {
		return nil, fmt.Errorf("$/cancelRequest: id must be a string or an integer")
	}
	if c := s.calls.get(key); c != nil {
		s.log.Debug("cancel", "method", c.method, "id", string(p.ID))
		c.cancelWith(errCancelledByClient)
	}
	return nil, nil
}

// providerCapabilities answers provider/capabilities: initialize's list.
func (s *Server) providerCapabilities(context.Context, *noParams) ([]llm.ProviderInfo, error) {
	return llm.Providers(), nil
}
