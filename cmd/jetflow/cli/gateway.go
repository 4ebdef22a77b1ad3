package cli

import (
	"errors"
	"fmt"
	"log/slog"
	"net/http"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/jetflow/jetflow/fleet"
	"github.com/jetflow/jetflow/gateway"
)

// gatewaySettings configure the HTTP/JSON gateway serve and dispatcher
// mount under /api/v1/ on their HTTP endpoint (docs/GATEWAY.md).
type gatewaySettings struct {
	On     bool   `env:"JETFLOW_GATEWAY" flag:"gateway"`
	Grants string `env:"JETFLOW_GATEWAY_TOKENS" flag:"gateway-tokens"`

	flags *pflag.FlagSet
}

// gatewayFlagNames are the gateway's flags.
var gatewayFlagNames = []string{"gateway", "gateway-tokens"}

// gatewayFlagSets are the flag sets addGatewayFlags declared the flags on:
// every command is built, one runs.
var gatewayFlagSets []*pflag.FlagSet

// mountedGateway are the gateway's settings, as the running command's
// flags set them.
var mountedGateway gatewaySettings

// addGatewayFlags declares the gateway's flags on serve and dispatcher.
func addGatewayFlags(cmd *cobra.Command) {
	fs := cmd.Flags()
	gatewayFlagSets = append(gatewayFlagSets, fs)
	fs.BoolVar(&mountedGateway.On, "gateway", false, "serve the HTTP/JSON gateway under /api/v1/ on --http: start, wait for, signal, cancel, read and list runs, and serve tasks by long poll, for programs without NATS (docs/GATEWAY.md); needs --gateway-tokens (env JETFLOW_GATEWAY)")
	fs.StringVar(&mountedGateway.Grants, "gateway-tokens", "", "the gateway's bearer tokens and their roles, ROLE=TOKEN comma-separated, ROLE one of operator, app, publisher, observer, worker, worker:TASK@VERSION; tokens of at least 16 characters; prefer the env var, flags show in ps (env JETFLOW_GATEWAY_TOKENS)")
}

// gatewayGrants are the gateway's grants, nil when it is off; an error
// names the flag at fault.
func gatewayGrants(httpAddr string) ([]gateway.Grant, error) {
	s := mountedGateway
	for _, fs := range gatewayFlagSets {
		for _, name := range gatewayFlagNames {
			if fs.Changed(name) {
				s.flags = fs
			}
		}
	}
	if err := applyEnv(s.flags, &s); err != nil {
		return nil, err
	}
	if !s.On {
		return nil, nil
	}
	if httpAddr == "" || httpAddr == "off" {
		return nil, errors.New("--gateway (JETFLOW_GATEWAY) is served on the HTTP endpoint, which --http off turns off: give --http an address")
	}
	if s.Grants == "" {
		return nil, errors.New("--gateway (JETFLOW_GATEWAY) needs --gateway-tokens (JETFLOW_GATEWAY_TOKENS): the gateway answers bearer tokens only, e.g. JETFLOW_GATEWAY_TOKENS=app=$(openssl rand -hex 16)")
	}
	gs, err := gateway.ParseGrants(s.Grants)
	if err != nil {
		return nil, fmt.Errorf("--gateway-tokens (JETFLOW_GATEWAY_TOKENS): %w", err)
	}
	return gs, nil
}

// mountGateway adds the gateway under /api/v1/ when it is on.
func mountGateway(f *fleet.Fleet, mux *http.ServeMux) {
	log := slog.Default()
	// runService checked the settings before starting.
	gs, err := gatewayGrants(mounted.addr)
	if err != nil || gs == nil {
		if err != nil {
			log.Error("gateway not mounted", slog.Any("error", err))
		}
		return
	}
	g, err := gateway.New(gateway.Config{JS: f.JS, Names: f.Names, Client: f.Client, Registry: f.Registry, Grants: gs, Secret: webhookSecret, Logger: log})
	if err != nil {
		log.Error("gateway not mounted", slog.Any("error", err))
		return
	}
	g.Mount(mux)
	names := make([]string, len(gs))
	for i, gr := range gs {
		names[i] = gr.Name()
	}
	log.Info("gateway mounted", slog.String("path", gateway.Prefix), slog.Any("roles", names))
}
