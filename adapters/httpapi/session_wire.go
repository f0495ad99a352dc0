package httpapi

import (
	"github.com/sandgate/sandgate/core/domain"
	"github.com/sandgate/sandgate/core/gatewire"
	"github.com/sandgate/sandgate/core/sandbox"
	"github.com/sandgate/sandgate/core/session"
	"github.com/sandgate/sandgate/ports"
)

// The session bodies of the executor API (openapi.json) are declared here,
// at the HTTP edge, so the service's types (session.Request,
// ports.SessionInfo) carry no JSON keys and can change without moving one.
// The networking policy keeps domain.Networking's own JSON form: it is also
// how the session store keeps it, and the two must stay one shape.

// SessionRequest is the wire form of session.Request: the body of `PUT
// /v1/sessions/{id}`.
type SessionRequest struct {
	Image       string              `json:"image,omitempty"`
	Workdir     string              `json:"workdir,omitempty"`
	Networking  domain.Networking   `json:"networking"`
	Isolation   sandbox.Isolation   `json:"isolation,omitempty"`
	Env         map[string]string   `json:"env,omitempty"`
	Credentials []CredentialRequest `json:"credentials,omitempty"`
}

// CredentialRequest is the wire form of one session.Credential of a
// SessionRequest. Its Secret stays a gatewire.Secret, so a body printed by
// accident shows no secret.
type CredentialRequest struct {
	ID           string              `json:"id"`
	Name         string              `json:"name"`
	Secret       gatewire.Secret     `json:"secret"`
	AllowedHosts []string            `json:"allowed_hosts"`
	Locations    []gatewire.Location `json:"locations"`
}

// NewSessionRequest is the wire form of req.
func NewSessionRequest(req session.Request) SessionRequest {
	out := SessionRequest{Image: req.Image, Workdir: req.Workdir, Networking: req.Networking, Isolation: req.Isolation, Env: req.Env}
	if req.Credentials != nil {
		out.Credentials = make([]CredentialRequest, len(req.Credentials))
	}
	for i, c := range req.Credentials {
		out.Credentials[i] = CredentialRequest(c)
	}
	return out
}

// Request is the session.Request r carries.
func (r SessionRequest) Request() session.Request {
	out := session.Request{Image: r.Image, Workdir: r.Workdir, Networking: r.Networking, Isolation: r.Isolation, Env: r.Env}
	if r.Credentials != nil {
		out.Credentials = make([]session.Credential, len(r.Credentials))
	}
	for i, c := range r.Credentials {
		out.Credentials[i] = session.Credential(c)
	}
	return out
}

// SessionResponse is the wire form of ports.SessionInfo: the answer of PUT
// and GET /v1/sessions/{id}, and `executor create --json`.
type SessionResponse struct {
	ID         domain.ID          `json:"id"`
	SandboxID  string             `json:"sandbox_id,omitempty"`
	Image      string             `json:"image,omitempty"`
	Workdir    string             `json:"workdir,omitempty"`
	Networking *domain.Networking `json:"networking,omitempty"`
	Isolation  sandbox.Isolation  `json:"isolation,omitempty"`
	Gated      bool               `json:"gated"`
	State      string             `json:"state"`
}

// NewSessionResponse is the wire form of info.
func NewSessionResponse(info ports.SessionInfo) SessionResponse { return SessionResponse(info) }

// Info is the ports.SessionInfo r carries.
func (r SessionResponse) Info() ports.SessionInfo { return ports.SessionInfo(r) }

// SessionList is the answer of GET /v1/sessions, and `executor ls --json`.
type SessionList struct {
	Sessions []SessionResponse `json:"sessions"`
}

// NewSessionList is the wire form of infos; none is an empty list, never
// null.
func NewSessionList(infos []ports.SessionInfo) SessionList {
	out := SessionList{Sessions: make([]SessionResponse, len(infos))}
	for i, info := range infos {
		out.Sessions[i] = NewSessionResponse(info)
	}
	return out
}

// Infos is the ports.SessionInfo of every session l lists.
func (l SessionList) Infos() []ports.SessionInfo {
	if l.Sessions == nil {
		return nil
	}
	out := make([]ports.SessionInfo, len(l.Sessions))
	for i, s := range l.Sessions {
		out[i] = s.Info()
	}
	return out
}
