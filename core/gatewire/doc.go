// Package gatewire is the contract between the egress gate and the two sides
// it talks to, each part defined once: the providers that start a gate (its
// environment, Env, written by Environ and read by ParseEnv; its uid, proxy
// address, firewall chain and CA paths), and the control plane that
// configures it (the config endpoint's document, GET
// <ControlplaneURL>/internal/v1/gate/config, JSON, snake_case, Bearer gate
// token: the session's networking policy and the credentials the gate
// substitutes at egress; the verdict Report; the endpoint paths; the gate
// token's shape and the placeholder prefix).
//
// The gate fetches its config at start and periodically (CONTRACT C-GW-1).
// It must keep its last good config whenever a fetched one fails Parse,
// Validate or egress.Compile: a malformed config never replaces a working
// one, and before the first good one the gate denies everything.
//
// Secrets travel only inside Secret, which redacts itself from every printing
// path; no error of this package quotes a secret.
package gatewire
