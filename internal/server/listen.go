package server

import (
	"crypto/tls"
	"fmt"
	"net"
	"net/http"

	"github.com/glassbox-llm/glassbox/internal/openai"
)

// Listeners are the API port and, when asked for, the metrics port and the
// simulated GPU's dcgm-exporter port, all wrapped in TLS when a
// certificate is given.
type Listeners struct{ API, Metrics, DCGM net.Listener }

// ListenConfig says where to listen. An empty MetricsPort or DCGMPort means
// no such listener; port "0" picks a free one.
type ListenConfig struct {
	Host, Port, MetricsPort, DCGMPort string
	CertFile, KeyFile                 string // --ssl-certfile and --ssl-keyfile, both or neither
}

// Listen opens the listeners; on error nothing is left open.
func Listen(c ListenConfig) (*Listeners, error) {
	var tcfg *tls.Config
	if c.CertFile != "" {
		cert, err := tls.LoadX509KeyPair(c.CertFile, c.KeyFile)
		if err != nil {
			return nil, fmt.Errorf("load TLS certificate: %w", err)
		}
		tcfg = &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
	}
	open := func(port string) (net.Listener, error) {
		ln, err := net.Listen("tcp", net.JoinHostPort(c.Host, port))
		if err != nil {
			return nil, fmt.Errorf("listen: %w", err)
		}
		if tcfg != nil {
			ln = tls.NewListener(ln, tcfg)
		}
		return ln, nil
	}
	api, err := open(c.Port)
	if err != nil {
		return nil, err
	}
	l := &Listeners{API: api}
	if c.MetricsPort != "" {
		if l.Metrics, err = open(c.MetricsPort); err != nil {
			l.Close()
			return nil, err
		}
	}
	if c.DCGMPort != "" {
		if l.DCGM, err = open(c.DCGMPort); err != nil {
			l.Close()
			return nil, err
		}
	}
	return l, nil
}

// Close closes every listener.
func (l *Listeners) Close() {
	for _, ln := range []net.Listener{l.API, l.Metrics, l.DCGM} {
		if ln != nil {
			ln.Close()
		}
	}
}

// MetricsRoutes are the metrics port's routes: /metrics, behind creds when
// given (nil: open, for scrapers and routers that send no credentials), and
// an open /health for probes: health's answer (the API's /health, 503 once
// the engine is dead, so a probe on this port sees what one on the API
// port sees), or always 200 when nil (the dcgm-exporter's port, whose
// health is the exporter's own).
func MetricsRoutes(metrics, dashboard http.Handler, creds *Credentials, health http.Handler) http.Handler {
	if creds != nil {
		metrics = creds.Wrap(metrics)
	}
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", metrics)
	mux.Handle("GET /metrics/", metrics)
	if dashboard != nil {
		mux.Handle("GET /dashboard", dashboard)
		mux.Handle("GET /dashboard/", dashboard)
		api := dashboard
		if creds != nil {
			api = creds.Wrap(dashboard)
		}
		mux.Handle("GET /dashboard/api/", api)
	}
	if health == nil {
		health = http.HandlerFunc(func(http.ResponseWriter, *http.Request) {})
	}
	mux.Handle("GET /health", health)
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) { openai.WriteError(w, noRoute(mux, r)) })
	return mux
}
